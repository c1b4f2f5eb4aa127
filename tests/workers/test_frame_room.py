"""`roomy`: calls made over and over at the edge of a chunk of the interpreter's frame stack
map and unmap a chunk each (CPython gh-142183, on 3.11 and 3.12); under `roomy` none do.

A chunk the interpreter maps is new memory, so touching it is a page fault: a call that maps
one counts at least one minor fault. Which depth sits at a chunk's edge depends on everything
above it, so the test looks for one over a range of depths and frame sizes."""

import resource
from collections.abc import Callable

import pytest

from workers.shared.frame_room import roomy

CALLS = 1000
DEPTHS = range(0, 400)


def _faults(depth: int, leaf: Callable[[], int]) -> int:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    _calls_at(depth, leaf)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def _leaf() -> int:
    return 1


def _wide_leaf() -> int:
    a = b = c = d = e = f = 1
    return a + b + c + d + e + f


def _calls_at(depth: int, leaf: Callable[[], int]) -> int:
    """`leaf` called CALLS times from `depth` frames below here."""
    if depth:
        return _calls_at(depth - 1, leaf)
    total = 0
    for _ in range(CALLS):
        total += leaf()
    return total


def _churning(depths: range) -> list[tuple[int, str]]:
    """The depths (and leaf) whose calls fault at least once a call in two: a chunk each."""
    return [(depth, leaf.__name__) for depth in depths for leaf in (_leaf, _wide_leaf)
            if _faults(depth, leaf) >= CALLS // 2]


def test_calls_at_a_chunk_edge_map_a_chunk_each_without_room() -> None:
    """The cost `roomy` removes is there: some depth maps a chunk every call."""
    found = _churning(DEPTHS)
    if not found:
        pytest.skip("this interpreter keeps a chunk back (a later 3.13, 3.14): no churn")
    assert found


def test_under_roomy_no_depth_maps_a_chunk_each_call() -> None:
    assert roomy(_churning, DEPTHS) == []


def test_roomy_passes_arguments_and_result() -> None:
    assert roomy(divmod, 7, 2) == (3, 1)
    assert roomy(dict, a=1) == {"a": 1}
