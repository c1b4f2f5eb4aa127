"""Output parsers, by the name a recipe gives in its `parser` field."""

from collections.abc import Callable

from jobs.parsers import bench_decode, bench_mlxlm
from jobs.readings import Parsed, RunOutput

Parser = Callable[[RunOutput], Parsed]

PARSERS: dict[str, Parser] = {
    "mlxcel-bench-decode": bench_decode.parse,
    "bench-mlxlm": bench_mlxlm.parse,
}
