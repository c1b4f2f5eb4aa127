"""A command's memory work: Python's cycle collector paused while a command makes objects by
the hundred thousand (the record's models, status's and submit's cells), and the C heap's
freed pages given back."""

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager

# Whether this process ends once its command does (the console script, runner/cli.py:entry);
# not where a command runs inside a longer-lived process (tests, the benchmark's in-process
# timings), whose collector must still find the cycles a command left.
_ends_with_command = False


def process_ends_with_command() -> None:
    global _ends_with_command
    _ends_with_command = True


@contextmanager
def paused_collector() -> Iterator[None]:
    """The collector off inside, back on after (as it was); as a decorator, around each call.

    A record reads, builds and writes some 300 tracked objects a cell that all stay alive to
    the end, and each full collection walks every one of them again: at 100,000 cells the
    collector took 54 of the record's 127 s (docs/benchmarks/overhead-profiles.md). Those
    models hold no reference cycles, so nothing is left for the collector to free. A status
    of 100,000 cells spent 0.25 of its 1.1 s in it, and a submit of 10,000 cells 0.09 of 1.2.

    Turned back on, the collector would walk at once everything made while it was off: all of
    it is still in the youngest generation, whose count passed its threshold long ago (1.2 s
    of a 100,000-cell record, just before the process ends). In a process that ends with its
    command (`process_ends_with_command`) the whole heap is frozen first, which the collector
    never walks again: what it would have freed there (the garbage of cycles) stays until the
    process exits, moments later.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if _ends_with_command:
                gc.freeze()
            gc.enable()


@functools.cache
def _trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, or None where the C library has none (macOS, musl; Windows
    cannot open the process's own library by None). Looked up when first needed: only the
    record needs it, and ctypes is 3 ms of a status's start."""
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError, TypeError):
        return None
    return trim


def give_back_freed() -> None:
    """Return the C heap's free pages to the system.

    pydantic parses JSON text (a sweep's 60 MB of cells at 100,000 of them) into a tree on
    the C heap and frees it once the models are made; glibc keeps those pages, and the
    models made next do not fill them (Python's small objects live in pages of their own), so
    the record held 250 MiB of nothing to its end. Not needed for correctness: where the C
    library has no `malloc_trim`, this does nothing.
    """
    trim = _trim()
    if trim is not None:
        trim(0)
