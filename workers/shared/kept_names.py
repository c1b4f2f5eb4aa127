"""File names a worker makes afresh every cell, held once interned.

Python 3.11's pathlib interns every part of a path it parses. A name made anew each cell (a
step's log, the build's lock, a commit's facts) is interned, dropped with its path, and
interned again the next cell: each time a new entry in the interpreter's table of interned
strings, whose dropped entries are cleared only when the table is resized, to the power of
two at or above three times its live entries. A worker holds more than 43,690 of them (a
third of 131,072), so that resize doubled its table from 131,072 slots (1.9 MB) to 262,144
(3.8 MB) a few thousand cells in: a step in its memory that bare Celery, making no paths,
never takes (docs/benchmarks/overhead-profiles.md). A name held here is interned once: every
later parse of it finds it. The names are few (steps, backends, commits); beyond `_HELD` of
them the least recently used are dropped, and churn again.
Paths naming a sweep or a cell, new with every sweep, are built as strings instead
(workers/shared/stores/local.py).
"""

import sys
from functools import lru_cache

_HELD = 1024


@lru_cache(maxsize=_HELD)
def kept(name: str) -> str:
    """`name`, interned and held: give it to pathlib in its place."""
    return sys.intern(name)
