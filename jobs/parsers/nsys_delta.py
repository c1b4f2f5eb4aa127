"""CUDA kernels per decode token: two profiled runs at different token counts, subtracted.

Load, warm-up and prefill are the same in both runs, so the difference is decode work alone.
Two ways to the same `cuda_gpu_kern_sum` tables:
- nsys: steps `long` and `short` (the profiled bench runs), `long-stats` and `short-stats`
  (`nsys stats --report cuda_gpu_kern_sum --format csv`);
- cupti-kernsum (workers/tools/cupti_kernsum.py, where nsys is not there): steps `long` and
  `short`, each writing the table to `long.csv` / `short.csv` under {out}.
"""

import csv
import io
import re

from jobs.parsers import mlxcel_lines, profile_timeline
from jobs.parsers.exits import failed_exit, plain
from jobs.parsers.readings import (
    Failure,
    KernelStat,
    ProfileInput,
    ProfileParsed,
    ProfileReading,
    RunOutput,
)

_GENERATED = re.compile(r"^\s*Generated tokens:\s+([0-9]+)\s*$", re.M)
_COLUMNS = ("Name", "Instances", "Total Time (ns)")
# What nsys prints instead of a table when the report holds no kernel at all.
_NO_KERNELS = re.compile(r"^SKIPPED: .* does not contain CUDA kernel data", re.M)
STEPS = ("long", "short", "long-stats", "short-stats")
CUPTI_STEPS = ("long", "short")
CUPTI_FILES = {"long": "long.csv", "short": "short.csv"}


class BadTable(Exception):
    pass


def parse(run: ProfileInput) -> ProfileParsed:
    """The nsys way: the tables are the stats steps' output."""
    failure = _steps_failed(run, STEPS)
    if failure:
        return failure
    try:
        tables = [_table(_text(run.steps[s]), s) for s in ("long-stats", "short-stats")]
    except BadTable as error:
        return Failure(kind="unparseable", reason=str(error))
    return _reading(run, tables[0], tables[1], "nsys-delta")


def parse_cupti(run: ProfileInput) -> ProfileParsed:
    """The cupti-kernsum way: each profiled run wrote its table to a file under {out}."""
    failure = _steps_failed(run, CUPTI_STEPS)
    if failure:
        return failure
    try:
        tables = [_table(run.files[f], s) if f in run.files else _no_file(f, s)
                  for s, f in CUPTI_FILES.items()]
    except BadTable as error:
        return Failure(kind="unparseable", reason=str(error))
    return _reading(run, tables[0], tables[1], "cupti-delta")


def _steps_failed(run: ProfileInput, steps: tuple[str, ...]) -> Failure | None:
    """A step that failed (the steps after it never ran), else a step that is missing."""
    for step in steps:
        failure = failed_exit(run.steps[step]) if step in run.steps else None
        if failure:
            return failure.model_copy(update={"reason": f"step {step}: {failure.reason}"})
    missing = [s for s in steps if s not in run.steps]
    if missing:
        return Failure(kind="unparseable", reason=f"profile lacks steps {', '.join(missing)}")
    return None


def _reading(run: ProfileInput, long_table: dict[str, tuple[int, int]],
             short_table: dict[str, tuple[int, int]], tool: str) -> ProfileParsed:
    try:
        long_tokens, short_tokens = (_generated(run.steps[s], s) for s in ("long", "short"))
    except BadTable as error:
        return Failure(kind="unparseable", reason=str(error))
    if long_tokens <= short_tokens:
        return Failure(kind="unparseable", reason=f"the long run generated {long_tokens} tokens, "
                       f"the short one {short_tokens}: nothing to subtract")
    kernels, notes = delta(long_table, short_table, long_tokens - short_tokens)
    long, short = (_text(run.steps[s]) for s in ("long", "short"))
    timeline, timeline_notes = profile_timeline.read(run, long_tokens, short_tokens,
                                                     {k.name for k in kernels})
    return ProfileReading(tool=tool, tokens=[long_tokens, short_tokens],  # type: ignore[arg-type]
                          kernels=kernels, timeline=timeline,
                          paths=mlxcel_lines.path_delta(long, short, long_tokens - short_tokens),
                          first_call_path=mlxcel_lines.first_call_path(long),
                          arch=mlxcel_lines.arch(long), notes=notes + timeline_notes)


def _no_file(name: str, step: str) -> dict[str, tuple[int, int]]:
    raise BadTable(f"step {step} wrote no {name} (cupti-kernsum's --csv)")


def kernel_table(text: str) -> dict[str, tuple[int, int]]:
    """Name -> (instances, total ns) from `cuda_gpu_kern_sum` CSV, after nsys's own chatter."""
    if _NO_KERNELS.search(plain(text)):
        raise BadTable("nsys found no CUDA kernel in the report ('SKIPPED: ... does not contain "
                       "CUDA kernel data'): the program ran none, or, under benchfleet's tool "
                       "stand-ins, does not implement docs/kernel-log.md")
    lines = plain(text).splitlines()
    start = next((i for i, line in enumerate(lines)
                  if all(c in next(csv.reader([line]), []) for c in _COLUMNS)), None)
    if start is None:
        raise BadTable("no cuda_gpu_kern_sum CSV header (Name, Instances, Total Time (ns))")
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header = rows[0]
    at = {c: header.index(c) for c in _COLUMNS}
    table: dict[str, tuple[int, int]] = {}
    for number, row in enumerate(rows[1:], start=start + 2):
        if not row or not "".join(row).strip():
            break
        if len(row) != len(header):
            raise BadTable(f"CSV line {number} has {len(row)} fields, the header {len(header)}")
        try:
            instances, total = int(row[at["Instances"]]), int(float(row[at["Total Time (ns)"]]))
        except ValueError:
            raise BadTable(f"CSV line {number}: Instances or Total Time (ns) is not a "
                           "number") from None
        known = table.get(row[at["Name"]], (0, 0))
        table[row[at["Name"]]] = (known[0] + instances, known[1] + total)
    if not table:
        raise BadTable("cuda_gpu_kern_sum CSV has a header but no kernels")
    return table


def delta(long: dict[str, tuple[int, int]], short: dict[str, tuple[int, int]],
          tokens: int) -> tuple[list[KernelStat], list[str]]:
    """Per-token launches and µs of every kernel that grows with the token count."""
    kernels, notes = [], []
    for name in sorted(set(long) | set(short)):
        (li, lt), (si, st) = long.get(name, (0, 0)), short.get(name, (0, 0))
        if name not in long:
            notes.append(f"{name}: only in the short run ({si} launches); not per-token, left out")
        elif li - si <= 0:
            why = "same launches in both runs" if li == si else "fewer launches in the long run"
            notes.append(f"{name}: {why} ({li} vs {si}); not per-token, left out")
        elif lt - st < 0:
            notes.append(f"{name}: less time in the long run ({lt} vs {st} ns); left out")
        else:
            if name not in short:
                notes.append(f"{name}: only in the long run; counted per token")
            kernels.append(KernelStat(name=name, launches_per_token=(li - si) / tokens,
                                      us_per_token=(lt - st) / tokens / 1000))
    return kernels, notes


def _text(run: RunOutput) -> str:
    return run.stdout + "\n" + run.stderr


def _table(text: str, step: str) -> dict[str, tuple[int, int]]:
    try:
        return kernel_table(text)
    except BadTable as error:
        raise BadTable(f"step {step}: {error}") from None


def _generated(run: RunOutput, step: str) -> int:
    match = _GENERATED.search(plain(_text(run)))
    if not match:
        raise BadTable(f"step {step}: the profiled run printed no 'Generated tokens:' line")
    return int(match.group(1))
