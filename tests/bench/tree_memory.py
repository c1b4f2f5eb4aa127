"""The memory of a command's whole process tree: every 100 ms, the PSS of each of its
processes summed (a page shared between a parent and its forked child counts once), its
footprint (below), and each child's private pages (those it copied from its parent and those
it made). GNU time's peak is one process's; this counts what the tree held together. Linux 5.9
or later (/proc/PID/smaps_rollup with Pss_Anon). A sampler can miss a peak shorter than its
period: its figures are lower bounds.

PSS also divides a page with processes outside the tree: a Python process's pages of the
interpreter and its libraries are shared with every other Python process running, this
sampler's included, so a minimal reader of 16.5 MiB RSS showed 8.5 to 10 MiB of PSS. The
footprint does not depend on what else runs: the anonymous pages of the whole tree, each
counted once (a command's tree begins with an exec, so its anonymous pages are shared only
within it, and their PSS summed over the tree counts each once), plus the first process's
other pages whole (its file pages and shared memory: RSS less its anonymous pages). For one
process that is its RSS. For a tree it leaves out the file pages and shared memory only its
children map (a drawing child's matplotlib libraries), swapped pages and pages the kernel
merged with other processes' (KSM): it is a lower bound. COMMAND must be the program itself,
not a wrapper (a shell, `time`), whose file pages would be counted instead.

Run: python -m tests.bench.tree_memory COMMAND [ARG...]   (prints JSON; sizes in KiB)
"""

import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from workers.shared.processes import descendants

PERIOD_S = 0.1
FIELDS = ("Rss", "Pss", "Private_Dirty", "Pss_Anon", "Anonymous")


def rollup(pid: int) -> dict[str, int] | None:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as status:
            found = {k: int(v.split()[0]) for k, v in (line.split(":", 1) for line in status
                                                        if ":" in line) if k in FIELDS}
    except OSError:
        return None  # exited meanwhile
    if "Pss_Anon" not in found:  # before Linux 5.9: the footprint would silently read low
        raise RuntimeError("this kernel's smaps_rollup has no Pss_Anon (Linux 5.9 or later "
                           "is needed to measure a tree's footprint)")
    return found


@dataclass
class _Most:
    """The largest of each figure over the samples so far."""

    peak: dict[str, Any] = field(default_factory=lambda: {"pss_sum_kib": 0})
    footprint: int = 0
    main: int = 0
    children_sum: int = 0
    each_child: dict[int, int] = field(default_factory=dict)

    def add(self, root: int, seen: dict[int, dict[str, int]], at_s: float) -> None:
        main = seen.get(root, {})
        children = {pid: r["Private_Dirty"] for pid, r in seen.items() if pid != root}
        pss = sum(r["Pss"] for r in seen.values())
        if pss > self.peak["pss_sum_kib"]:
            self.peak = {"pss_sum_kib": pss, "at_s": round(at_s, 2), "processes": len(seen),
                         "main_rss_kib": main.get("Rss", 0),
                         "children_private_kib": sum(children.values())}
        self.footprint = max(self.footprint, sum(r["Pss_Anon"] for r in seen.values())
                             + main.get("Rss", 0) - main.get("Anonymous", 0))
        self.main = max(self.main, main.get("Rss", 0))
        self.children_sum = max(self.children_sum, sum(children.values()))
        for pid, dirty in children.items():
            self.each_child[pid] = max(self.each_child.get(pid, 0), dirty)


def sample(argv: list[str], cwd: str | None = None, timeout_s: float | None = None
           ) -> dict[str, Any]:
    """Run `argv` to its end (killed after `timeout_s`), its tree sampled all along."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, cwd=cwd)
    start = time.monotonic()
    most = _Most()
    try:
        while proc.poll() is None:
            if timeout_s is not None and time.monotonic() - start > timeout_s:
                proc.kill()
                proc.wait()
                break
            tree = [proc.pid, *descendants(proc.pid)]
            most.add(proc.pid, {pid: r for pid in tree if (r := rollup(pid))},
                     time.monotonic() - start)
            time.sleep(PERIOD_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return {"argv": argv, "exit": proc.returncode, "wall_s": round(time.monotonic() - start, 1),
            "period_s": PERIOD_S, "peak": most.peak, "footprint_most_kib": most.footprint,
            "main_rss_most_kib": most.main, "children_private_most_kib": most.children_sum,
            "each_child_private_most_kib": sorted(most.each_child.values(), reverse=True)}


if __name__ == "__main__":
    print(json.dumps(sample(sys.argv[1:]), indent=1))
