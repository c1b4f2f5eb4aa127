"""Room on the interpreter's frame stack for a long-lived call, so that deep calls made over
and over inside it do not each map and unmap a chunk of that stack.

CPython 3.11 and 3.12 keep a thread's frames in chunks of 16 KiB: a call that does not fit in
the current chunk maps a new one, and its return unmaps it. A loop whose calls sit at a chunk's
edge maps and unmaps one on every call (CPython issue gh-142183; the fix upstream, in 2026,
keeps one chunk back and reached later 3.13 and 3.14 releases, not 3.11 or 3.12). A worker's
cells run deep under Celery's loop, across such an edge: `strace` counted 130 `mmap` and 115
`munmap` calls a no-op cell, 12 and 1.1 with `roomy` (docs/benchmarks/overhead-profiles.md,
eleventh round). `roomy` runs a call in a frame of its own so large (some 128 KiB) that the
interpreter gives it a chunk of 256 KiB, held until the call returns: the frames below it,
up to some 127 KiB of them (about 950 small frames) on the same thread, share that chunk.
Other threads keep stacks of their own.

The frame's spare variables are never set; a debugger reading that one frame's `f_locals`
waits some 2.5 ms while 3.11 clears them from the dict it builds.
"""

import contextlib
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

# Spare local variables of the frame `roomy` runs its call in, 8 bytes each: a frame of some
# 128 KiB, for which 3.11's interpreter maps a chunk of 256 KiB (it doubles 16 KiB until the
# frame fits with room to spare).
SPARE_SLOTS = 16_400


def roomy(call: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """`call(*args, **kwargs)`, from a frame of some 128 KiB (its code given spare local
    variables below, once): the frames of all it calls share that frame's chunk."""
    return call(*args, **kwargs)


def _widened() -> None:
    code = roomy.__code__
    names = code.co_varnames + tuple(f"_spare{k}" for k in range(SPARE_SLOTS))
    # An interpreter whose code objects take no such change runs the call as it is
    # (tests/workers/test_frame_room.py fails on one that churns).
    with contextlib.suppress(TypeError, ValueError):
        roomy.__code__ = code.replace(co_varnames=names, co_nlocals=len(names))


_widened()
