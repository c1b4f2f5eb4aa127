"""Waiting for something another process does: `eventually` asks until it holds or time is up.

Tests wait for real events (a worker takes a cell, a process exits); the interval only bounds
how often we ask, it never stands in for the work itself. A wait that times out says what it
waited for and what it saw last.
"""

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def eventually(probe: Callable[[], T | None], within_s: float, what: str,
               every_s: float = 0.05) -> T:
    """The first truthy value `probe` returns within `within_s` seconds."""
    deadline = time.monotonic() + within_s
    last: T | None = None
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {within_s:g} s: {what} (last seen: {last!r})")
        time.sleep(every_s)
