"""Output parsers, by the name a recipe gives in its `parser` field."""

from collections.abc import Callable

from jobs.parsers import bench_decode, bench_mlxlm, metal_dot, nsys_delta
from jobs.parsers.readings import Parsed, ProfileInput, ProfileParsed, RunOutput

Parser = Callable[[RunOutput], Parsed]
ProfileParser = Callable[[ProfileInput], ProfileParsed]

PARSERS: dict[str, Parser] = {
    "mlxcel-bench-decode": bench_decode.parse,
    "bench-mlxlm": bench_mlxlm.parse,
}
PROFILE_PARSERS: dict[str, ProfileParser] = {
    "nsys-kernel-delta": nsys_delta.parse,
    "cupti-kernel-delta": nsys_delta.parse_cupti,
    "metal-dot-ops": metal_dot.parse,
}
