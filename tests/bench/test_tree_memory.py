"""tests/bench/tree_memory.py counts what a forked child holds beside its parent: a child that
fills 64 MiB of its own shows in the child's private pages and in the tree's summed PSS."""

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
