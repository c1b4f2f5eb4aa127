"""`scripts/bench_mlxlm.py`, the mlx-lm / mlx-vlm baseline driver: its result is a CSV row.

The driver runs each model in a child whose output it keeps (its own stdout carries nothing),
prints progress on stderr, and appends one row per model to
`benchmarks/pylm_<hw>[_vlm]_<date>[_<suffix>][_single_<model>].csv` in its working directory.
It exits 0 even when the model failed: success is read from the row, whose 15th field says why
it failed (`FAIL:<kind>`) or was skipped (`SKIP:oom_estimate`). The parser reads the CSV files
the run created or changed under `{out}` (`RunOutput.files`).
"""

import csv
import io
import re

from jobs.parsers.exits import failed_exit, oom_line, plain
from jobs.parsers.readings import BenchReading, Failure, Parsed, RunOutput

HEADER = ("model", "model_path", "prompt_tokens", "generated_tokens", "prefill_ms",
          "prefill_tok_s", "decode_ms", "decode_tok_s", "date", "hardware", "baseline_version",
          "build_type", "max_tokens", "prompt")
_CSV = re.compile(r"(?:^|/)benchmarks/pylm_[^/]*\.csv$")
_SKIP_DONE = "[skip-done]"


class BadRow(Exception):
    pass


def parse(run: RunOutput) -> Parsed:
    failure = failed_exit(run)
    if failure:
        return failure
    try:
        where, row = _one_row(run)
    except BadRow as error:
        return Failure(kind="unparseable", reason=str(error))
    if len(row) > len(HEADER):
        return _failed_row(row[len(HEADER)].strip(), where, plain(run.stderr))
    try:
        return BenchReading(
            prompt_tokens=int(_number(row, "prompt_tokens", where)),
            generated_tokens=int(_number(row, "generated_tokens", where)),
            prefill_ms=_number(row, "prefill_ms", where),
            prefill_tps=_number(row, "prefill_tok_s", where),
            decode_ms=_number(row, "decode_ms", where),
            decode_tps=_number(row, "decode_tok_s", where),
            baseline_version=row[HEADER.index("baseline_version")] or None)
    except BadRow as error:
        return Failure(kind="unparseable", reason=str(error))


def _one_row(run: RunOutput) -> tuple[str, list[str]]:
    """The one data row the run appended, with the CSV file it is in."""
    found: list[tuple[str, list[str]]] = []
    for path in sorted(p for p in run.files if _CSV.search(p)):
        rows = list(csv.reader(io.StringIO(run.files[path])))
        if not rows:
            continue
        if tuple(rows[0]) != HEADER:
            raise BadRow(f"{path}: the header is not bench_mlxlm.py's ({','.join(HEADER)})")
        found += [(path, row) for row in rows[1:] if "".join(row).strip()]
    if not found:
        raise BadRow("no CSV row: " + _why_no_row(run))
    if len(found) > 1:
        raise BadRow(f"{len(found)} CSV rows in {', '.join(sorted({p for p, _ in found}))} "
                     "(expected one: run one model per cell, with its own --suffix)")
    path, row = found[0]
    if len(row) < len(HEADER):
        raise BadRow(f"{path}: the row has {len(row)} fields, the header {len(HEADER)}")
    return path, row


def _why_no_row(run: RunOutput) -> str:
    stderr = plain(run.stderr)
    if _SKIP_DONE in stderr:
        return ("the driver skipped the model as already done today ([skip-done]); each run "
                "needs its own --suffix or working directory")
    if not any(_CSV.search(p) for p in run.files):
        return ("the driver exited 0 but wrote no benchmarks/pylm_*.csv in its working "
                "directory")
    return "the driver's CSV has a header but no row for the model"


def _failed_row(field: str, where: str, stderr: str) -> Failure:
    if field == "SKIP:oom_estimate":
        return Failure(kind="oom", reason=f"skipped by the driver's memory estimate "
                       f"(SKIP:oom_estimate in {where}; PYLM_BENCH_MAX_GB sets the limit)")
    if field == "FAIL:timeout":
        return Failure(kind="timeout", reason=f"the baseline timed out (FAIL:timeout in "
                       f"{where}; the driver's --timeout)")
    oom = oom_line(stderr)
    if oom:
        return Failure(kind="oom", reason=f"the baseline failed ({field} in {where}): "
                       f"out of memory: {oom}")
    if field.startswith("FAIL:"):
        return Failure(kind="error", reason=f"the baseline failed at {field[5:]} ({field} in "
                       f"{where})")
    return Failure(kind="unparseable", reason=f"{where}: the row's 15th field {field!r} is "
                   "neither FAIL:<kind> nor SKIP:oom_estimate")


def _number(row: list[str], column: str, where: str) -> float:
    text = row[HEADER.index(column)].strip()
    try:
        return float(text)
    except ValueError:
        what = "is empty" if not text else f"is not a number ({text!r})"
        raise BadRow(f"{where}: {column} {what}") from None
