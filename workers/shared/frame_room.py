"""Room on the interpreter's frame stack for a long-lived call, so that deep calls made over
and over inside it do not each map and unmap a chunk of that stack.

CPython 3.11 and 3.12 keep a thread's frames in chunks of 16 KiB: a call that does not fit in
the current chunk maps a new one, and its return unmaps it. A loop whose calls sit at a chunk's
edge maps and unmaps one on every call (CPython issue gh-142183, fixed in 3.13 and 3.14 by
keeping one chunk back). A worker's cells run some 150 frames deep under Celery's loop, right
across such an edge: `strace` counted 130 mmap and 115 munmap calls a no-op cell
(docs/benchmarks/overhead-profiles.md). `roomy` runs a call in a frame of its own so large that
the interpreter gives it a chunk of 256 KiB, held until the call returns, with some 128 KiB
left over in which every call below it fits.
"""

import contextlib
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

# Spare local variables of the frame `roomy` runs its call in, 8 bytes each: a frame of some
# 128 KiB, for which the interpreter maps a chunk of 256 KiB.
SPARE_SLOTS = 16_400


def roomy(call: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """`call(*args, **kwargs)`, from a frame of some 128 KiB (its code given spare local
    variables below, once): the frames of all it calls share that frame's chunk."""
    return call(*args, **kwargs)


def _widened() -> None:
    code = roomy.__code__
    names = code.co_varnames + tuple(f"_spare{k}" for k in range(SPARE_SLOTS))
    # An interpreter whose code objects take no such change runs the call as it is.
    with contextlib.suppress(TypeError, ValueError):
        roomy.__code__ = code.replace(co_varnames=names, co_nlocals=len(names))


_widened()
