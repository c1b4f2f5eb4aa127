"""mlxcel's diagnostic lines: `[mlxcel arch]` (MLXCEL_TRACE_ARCH) and `[QWEN3_MOE_SPARSE]`
(MLXCEL_PROFILE_QWEN3_MOE_DETAIL=1, Qwen3-MoE's SparseMoeBlock only: other families print none).
"""

import re

from jobs.parsers.exits import plain
from jobs.parsers.readings import PathCounts

_MS = r"([0-9]+(?:\.[0-9]+)?)ms"
_SPARSE = re.compile(rf"^\[QWEN3_MOE_SPARSE\] path=(fused|gather_qmm) tokens=([0-9]+) "
                     rf"gate={_MS} expert={_MS} combine={_MS}\s*$")
_FIRST_CALL = re.compile(r"^\[mlxcel arch\] quantized matmul path on first call: (\S+)")
_ARCH = re.compile(r"^\[mlxcel arch\] compute capability \S+ \((sm_[0-9a-z]+)\)")


def path_counts(text: str) -> PathCounts | None:
    """MoE calls by path, split decode (tokens=1) and prefill; None without any line."""
    counts = {"decode_fused": 0, "decode_gather": 0, "prefill_fused": 0, "prefill_gather": 0}
    ms = {"decode_gate_ms": 0.0, "decode_expert_ms": 0.0, "decode_combine_ms": 0.0}
    seen = False
    for line in plain(text).splitlines():
        match = _SPARSE.match(line.strip())
        if not match:
            continue
        seen = True
        path, tokens, gate, expert, combine = match.groups()
        phase = "decode" if tokens == "1" else "prefill"
        counts[f"{phase}_{'fused' if path == 'fused' else 'gather'}"] += 1
        if phase == "decode":
            ms["decode_gate_ms"] += float(gate)
            ms["decode_expert_ms"] += float(expert)
            ms["decode_combine_ms"] += float(combine)
    if not seen:
        return None
    return PathCounts.model_validate({**counts, **ms})


def path_delta(long: str, short: str, tokens: int) -> PathCounts | None:
    """The long run's counts, with decode MoE calls per token from the two runs' difference."""
    counts, fewer = path_counts(long), path_counts(short)
    if counts is None:
        return None
    base = fewer or PathCounts()
    calls = (counts.decode_fused + counts.decode_gather
             - base.decode_fused - base.decode_gather) / tokens
    return counts.model_copy(update={"decode_calls_per_token": calls})


def first_call_path(text: str) -> str | None:
    """The quantized matmul path of the *first* call, usually prefill: never the decode kernel."""
    return _first(_FIRST_CALL, text)


def arch(text: str) -> str | None:
    return _first(_ARCH, text)


def _first(pattern: re.Pattern[str], text: str) -> str | None:
    for line in plain(text).splitlines():
        match = pattern.match(line.strip())
        if match:
            return match.group(1)
    return None
