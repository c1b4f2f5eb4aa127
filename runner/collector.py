"""Python's cycle collector paused while a record's models are made and written."""

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_collector() -> Iterator[None]:
    """The collector off inside, back on after (as it was).

    A record reads, builds and writes some 300 tracked objects a cell that all stay alive to
    the end, and each full collection walks every one of them again: at 100,000 cells the
    collector took 54 of the record's 127 s (docs/benchmarks/overhead-profiles.md). Those
    models hold no reference cycles, so nothing is left for the collector to free.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
