"""A name a worker makes afresh every cell is held once interned, so pathlib's parses of it
find it rather than interning it anew (workers/shared/kept_names.py): the step it saves is
measured by the benchmark's memory block (docs/benchmarks/overhead.md)."""

import sys
import uuid

from workers.shared.kept_names import kept


def fresh(*parts: str) -> str:
    return "".join(parts)  # a new string object each call, as an f-string makes


def test_a_kept_name_stays_interned_once_its_caller_drops_it() -> None:
    tag = uuid.uuid4().hex  # a name interned nowhere else
    kept(fresh("held-", tag, ".stdout.txt"))  # the caller keeps nothing of it
    again = fresh("held-", tag, ".stdout.txt")
    assert sys.intern(again) is not again  # the table had it still: no new entry
