"""mlxcel's diagnostic stderr lines: `[mlxcel arch]` (MLXCEL_TRACE_ARCH) and `path=` lines."""

import re

from jobs.parsers.exits import plain
from jobs.readings import PathCounts

_PATH = re.compile(r"^path=(fused|gather_qmm) tokens=([0-9]+)\s*$")
_FIRST_CALL = re.compile(r"^\[mlxcel arch\] quantized matmul path on first call: (\S+)")
_ARCH = re.compile(r"^\[mlxcel arch\] compute capability \S+ \((sm_[0-9a-z]+)\)")


def path_counts(stderr: str) -> PathCounts | None:
    """Counts of MoE calls by path, split decode (tokens=1) and prefill; None without lines."""
    counts = {"decode_fused": 0, "decode_gather": 0, "prefill_fused": 0, "prefill_gather": 0}
    seen = False
    for line in plain(stderr).splitlines():
        match = _PATH.match(line.strip())
        if match:
            seen = True
            phase = "decode" if match.group(2) == "1" else "prefill"
            path = "fused" if match.group(1) == "fused" else "gather"
            counts[f"{phase}_{path}"] += 1
    return PathCounts(**counts) if seen else None


def first_call_path(stderr: str) -> str | None:
    """The quantized matmul path of the *first* call, usually prefill: never the decode kernel."""
    return _first(_FIRST_CALL, stderr)


def arch(stderr: str) -> str | None:
    return _first(_ARCH, stderr)


def _first(pattern: re.Pattern[str], stderr: str) -> str | None:
    for line in plain(stderr).splitlines():
        match = pattern.match(line.strip())
        if match:
            return match.group(1)
    return None
