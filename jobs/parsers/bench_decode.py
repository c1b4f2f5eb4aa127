"""`mlxcel-bench-decode` output: the `[Profile Results]` block on stdout."""

import re

from jobs.parsers.exits import failed_exit, plain
from jobs.readings import BenchReading, Failure, Parsed, RunOutput

_NUM = r"([0-9]+(?:\.[0-9]+)?)"
_FIELDS = {
    "prompt_tokens": re.compile(r"^  Prompt tokens:\s+([0-9]+)\s*$"),
    "generated_tokens": re.compile(r"^  Generated tokens:\s+([0-9]+)\s*$"),
    "prefill": re.compile(rf"^  Prefill:\s+{_NUM} ms \({_NUM} tok/s\)\s*$"),
    "decode": re.compile(rf"^  Decode:\s+{_NUM} ms \({_NUM} tok/s\)\s*$"),
    "peak_gb": re.compile(rf"^  MLX peak memory:\s+{_NUM} GB\s*$"),
}
_LOAD = re.compile(rf"^\[Load\] wall: {_NUM} s")
_LONG_PROMPT = re.compile(r"^\[long-prompt\] target=([0-9]+) tokens -> using ([0-9]+) tokens")
_HEADER = "[Profile Results]"


def parse(run: RunOutput) -> Parsed:
    failure = failed_exit(run)
    if failure:
        return failure
    lines = plain(run.stdout).splitlines()
    headers = [i for i, line in enumerate(lines) if line.strip() == _HEADER]
    if len(headers) != 1:
        what = "no" if not headers else f"{len(headers)}"
        return Failure(kind="unparseable",
                       reason=f"{what} '{_HEADER}' block on stdout (expected exactly one)")
    found: dict[str, tuple[str, ...]] = {}
    for line in lines[headers[0] + 1:]:
        for name, pattern in _FIELDS.items():
            match = pattern.match(line)
            if match and name not in found:
                found[name] = match.groups()
    missing = [name for name in _FIELDS if name not in found]
    if missing:
        return Failure(kind="unparseable", reason=f"'{_HEADER}' block lacks "
                       f"{', '.join(missing)} (output truncated or malformed)")
    prefill_ms, prefill_tps = map(float, found["prefill"])
    decode_ms, decode_tps = map(float, found["decode"])
    return BenchReading(
        prompt_tokens=int(found["prompt_tokens"][0]),
        generated_tokens=int(found["generated_tokens"][0]),
        prefill_ms=prefill_ms, prefill_tps=prefill_tps,
        decode_ms=decode_ms, decode_tps=decode_tps,
        peak_gb=float(found["peak_gb"][0]),
        load_s=_first_float(_LOAD, lines),
        notes=_prompt_notes(plain(run.stderr)),
    )


def _first_float(pattern: re.Pattern[str], lines: list[str]) -> float | None:
    for line in lines:
        match = pattern.match(line)
        if match:
            return float(match.group(1))
    return None


def _prompt_notes(stderr: str) -> list[str]:
    notes = []
    for line in stderr.splitlines():
        match = _LONG_PROMPT.match(line.strip())
        if match and match.group(1) != match.group(2):
            notes.append(f"prompt asked for {match.group(1)} tokens, ran {match.group(2)}")
    return notes
