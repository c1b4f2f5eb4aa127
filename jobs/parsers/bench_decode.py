"""`mlxcel-bench-decode` output: the `[Profile Results]` block, read from stdout and stderr.

Which stream each `[...]` line takes is not settled, so both are read; lines the parser does
not know (backend device lines such as `[mlx-rocm] ...`, `[Memory] ...`, `[phase] ...`) are
skipped wherever they appear, inside the block too.
"""

import re

from jobs.parsers.exits import failed_exit, plain
from jobs.parsers.readings import BenchReading, Failure, Parsed, RunOutput

_NUM = r"([0-9]+(?:\.[0-9]+)?)"
_REQUIRED = {
    "prompt_tokens": re.compile(r"^  Prompt tokens:\s+([0-9]+)\s*$"),
    "generated_tokens": re.compile(r"^  Generated tokens:\s+([0-9]+)\s*$"),
    "prefill": re.compile(rf"^  Prefill:\s+{_NUM} ms \({_NUM} tok/s\)\s*$"),
    "decode": re.compile(rf"^  Decode:\s+{_NUM} ms \({_NUM} tok/s\)\s*$"),
}
# Newer commits print `Decode path:`; very old ones print no `MLX peak memory:` (nor [Load]).
_OPTIONAL = {
    "decode_path": re.compile(r"^  Decode path:\s+(\S.*?)\s*$"),
    "peak_gb": re.compile(rf"^  MLX peak memory:\s+{_NUM} GB\s*$"),
}
_LOAD = re.compile(rf"^\[Load\] wall: {_NUM} s")
_LONG_PROMPT = re.compile(r"^\[long-prompt\] target=([0-9]+) tokens -> using ([0-9]+) tokens"
                          r"(?: \(max_context=(Some\([0-9]+\)|None))?")
_HEADER = "[Profile Results]"


def parse(run: RunOutput) -> Parsed:
    failure = failed_exit(run)
    if failure:
        return failure
    streams = [plain(run.stdout).splitlines(), plain(run.stderr).splitlines()]
    headers = [(s, i) for s, lines in enumerate(streams) for i, line in enumerate(lines)
               if line.strip() == _HEADER]
    if len(headers) != 1:
        what = "no" if not headers else f"{len(headers)}"
        return Failure(kind="unparseable", reason=f"{what} '{_HEADER}' block on stdout or "
                       "stderr (expected exactly one)")
    stream, at = headers[0]
    # The block's own stream after its header first, then the other stream.
    block = streams[stream][at + 1:] + streams[1 - stream]
    found = _fields(block, {**_REQUIRED, **_OPTIONAL})
    missing = [name for name in _REQUIRED if name not in found]
    if missing:
        return Failure(kind="unparseable", reason=f"'{_HEADER}' block lacks "
                       f"{', '.join(missing)} (output truncated or malformed)")
    prefill_ms, prefill_tps = map(float, found["prefill"])
    decode_ms, decode_tps = map(float, found["decode"])
    lines = streams[0] + streams[1]
    return BenchReading(
        prompt_tokens=int(found["prompt_tokens"][0]),
        generated_tokens=int(found["generated_tokens"][0]),
        prefill_ms=prefill_ms, prefill_tps=prefill_tps,
        decode_ms=decode_ms, decode_tps=decode_tps,
        peak_gb=float(found["peak_gb"][0]) if "peak_gb" in found else None,
        load_s=_first_float(_LOAD, lines),
        decode_path=found["decode_path"][0] if "decode_path" in found else None,
        notes=_prompt_notes(lines),
    )


def _fields(lines: list[str], patterns: dict[str, re.Pattern[str]]) -> dict[str, tuple[str, ...]]:
    found: dict[str, tuple[str, ...]] = {}
    for line in lines:
        for name, pattern in patterns.items():
            match = pattern.match(line)
            if match and name not in found:
                found[name] = match.groups()
    return found


def _first_float(pattern: re.Pattern[str], lines: list[str]) -> float | None:
    for line in lines:
        match = pattern.match(line.strip())
        if match:
            return float(match.group(1))
    return None


def _prompt_notes(lines: list[str]) -> list[str]:
    """A shortened prompt, once: `[long-prompt]` is printed once per pass, not per process."""
    notes: list[str] = []
    for line in lines:
        match = _LONG_PROMPT.match(line.strip())
        if match and match.group(1) != match.group(2):
            context = f" (max_context={match.group(3)})" if match.group(3) else ""
            note = f"prompt asked for {match.group(1)} tokens, ran {match.group(2)}{context}"
            if note not in notes:
                notes.append(note)
    return notes
