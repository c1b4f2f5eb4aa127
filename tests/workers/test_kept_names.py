"""A name a worker makes afresh every cell is held once interned, so pathlib's parses of it
find it rather than interning it anew (workers/shared/kept_names.py): the step it saves is
measured by the benchmark's memory block (docs/benchmarks/overhead.md)."""

import gc
from pathlib import Path

from workers.shared.kept_names import kept


def fresh(*parts: str) -> str:
    return "".join(parts)  # a new string object each call, as an f-string makes


def test_a_kept_name_is_the_one_pathlib_parses_to() -> None:
    name = kept(fresh("measure", ".stdout.txt"))
    assert kept(fresh("measure", ".stdout.txt")) is name
    gc.collect()
    assert (Path("/staging") / fresh("measure", ".stdout.txt")).parts[-1] is name

