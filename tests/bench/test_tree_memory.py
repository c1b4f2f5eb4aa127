"""tests/bench/tree_memory.py counts what a forked child holds beside its parent: a child that
fills 64 MiB of its own shows in the child's private pages, the tree's summed PSS and its footprint;
and a footprint is not divided with processes outside the tree."""

import sys

from tests.bench.tree_memory import sample

CHILD_FILLS = """
import os, time
pid = os.fork()
if pid == 0:
    kept = b"x" * (64 << 20)
    time.sleep(1.0)
    os._exit(0)
os.waitpid(pid, 0)
"""


def test_a_child_s_own_pages_are_counted() -> None:
    seen = sample([sys.executable, "-c", CHILD_FILLS])
    assert seen["exit"] == 0
    assert seen["each_child_private_most_kib"][0] >= 60 << 10
    assert seen["peak"]["pss_sum_kib"] >= 60 << 10  # the parent alone holds about 9 MiB
    assert seen["footprint_most_kib"] >= 60 << 10


def test_one_process_s_footprint_is_its_rss_whoever_shares_its_pages() -> None:
    # This test's own interpreter shares the child's interpreter pages, so the child's PSS is
    # less than its RSS; the footprint does not divide them.
    seen = sample([sys.executable, "-c", "import time; kept = b'x' * (32 << 20); "
                   "time.sleep(0.6)"])
    rss = seen["main_rss_most_kib"]
    assert seen["footprint_most_kib"] >= 0.97 * rss >= 32 << 10
    assert seen["peak"]["pss_sum_kib"] < seen["footprint_most_kib"]
