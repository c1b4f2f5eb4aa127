"""The memory of a command's whole process tree: every 100 ms, the PSS of each of its
processes summed (a page shared between a parent and its forked child counts once), and each
child's private pages (those it copied from its parent and those it made). GNU time's peak,
which the benchmark reads, is one process's; this counts what the tree held together.
Linux only (/proc/PID/smaps_rollup). A sampler can miss a peak shorter than its period: its
figures are lower bounds.

PSS also divides a page with processes outside the tree: a Python process's pages of the
interpreter and its libraries are shared with every other Python process running, this
sampler's included, so a minimal reader of 17 MiB RSS shows about 8.5 MiB of PSS. The
footprint does not depend on what else runs: the anonymous pages of the whole tree, each
counted once (a command's tree begins with an exec, so its anonymous pages are shared only
within it, and their PSS summed over the tree counts each once), plus the file pages its first
process maps, whole. For one process that is its RSS; for a tree it leaves out only the file
pages its children map that the first does not (a drawing child's matplotlib libraries).

Run: python -m tests.bench.tree_memory COMMAND [ARG...]   (prints JSON; sizes in KiB)
"""

import json
import subprocess
import sys
import time
from typing import Any

from workers.shared.processes import descendants

PERIOD_S = 0.1
FIELDS = ("Rss", "Pss", "Private_Dirty", "Pss_Anon", "Anonymous")


def rollup(pid: int) -> dict[str, int] | None:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as status:
            return {k: int(v.split()[0]) for k, v in (line.split(":", 1) for line in status
                                                       if ":" in line) if k in FIELDS}
    except OSError:
        return None  # exited meanwhile


def sample(argv: list[str], cwd: str | None = None) -> dict[str, Any]:
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, cwd=cwd)
    start = time.monotonic()
    peak: dict[str, Any] = {"pss_sum_kib": 0}
    footprint = 0
    children_most: dict[int, int] = {}
    main_most = children_sum_most = 0
    while proc.poll() is None:
        tree = [proc.pid, *descendants(proc.pid)]
        seen = {pid: r for pid in tree if (r := rollup(pid))}
        main = seen.get(proc.pid, {})
        children = {pid: r.get("Private_Dirty", 0) for pid, r in seen.items() if pid != proc.pid}
        pss = sum(r.get("Pss", 0) for r in seen.values())
        footprint = max(footprint, sum(r.get("Pss_Anon", 0) for r in seen.values())
                        + main.get("Rss", 0) - main.get("Anonymous", 0))
        if pss > peak["pss_sum_kib"]:
            peak = {"pss_sum_kib": pss, "at_s": round(time.monotonic() - start, 2),
                    "processes": len(seen), "main_rss_kib": main.get("Rss", 0),
                    "children_private_kib": sum(children.values())}
        main_most = max(main_most, main.get("Rss", 0))
        children_sum_most = max(children_sum_most, sum(children.values()))
        for pid, dirty in children.items():
            children_most[pid] = max(children_most.get(pid, 0), dirty)
        time.sleep(PERIOD_S)
    return {"argv": argv, "exit": proc.returncode, "wall_s": round(time.monotonic() - start, 1),
            "period_s": PERIOD_S, "peak": peak, "footprint_most_kib": footprint,
            "main_rss_most_kib": main_most,
            "children_private_most_kib": children_sum_most,
            "each_child_private_most_kib": sorted(children_most.values(), reverse=True)}


if __name__ == "__main__":
    print(json.dumps(sample(sys.argv[1:]), indent=1))
