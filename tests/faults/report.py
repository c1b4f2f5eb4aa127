"""Run the fault matrix and write its table to docs/faults.md (outcomes and recovery times).

Run: .venv/bin/python -m tests.faults.report
"""

import json
import os
import platform
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).parents[2]
DOC = ROOT / "docs" / "faults.md"


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        rows_file = Path(tmp) / "rows.jsonl"
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               "tests/faults"], cwd=ROOT,
                              env={**os.environ, "BENCHFLEET_FAULT_REPORT": str(rows_file)})
        rows = [json.loads(line) for line in rows_file.read_text().splitlines()] \
            if rows_file.exists() else []
    DOC.write_text(render(rows, done.returncode))
    print(f"wrote {DOC} ({len(rows)} faults; pytest exit {done.returncode})")
    return done.returncode


def render(rows: list[dict[str, object]], code: int) -> str:
    lines = ["# The fault matrix", "",
             "Each fault is a test in `tests/faults/` (`test_fault_matrix.py` and its "
             "neighbours), run in CI, on real "
             "worker processes, a real redis-server (AOF on), real git and a real network "
             "namespace. Every one ends with every cell in a final state, at most one accepted "
             "measurement per cell and generation (the sweep's log has one `done` per cell "
             "and generation, and `accepted.json` names that attempt), and every stored "
             "artifact verifying against its sha256. How it works: "
             "[reliability.md](reliability.md).", "",
             f"Made by `.venv/bin/python -m tests.faults.report` on "
             f"{datetime.now(UTC):%Y-%m-%d} ({platform.node()}, {os.cpu_count()} cores, "
             f"load1 {os.getloadavg()[0]:.1f} at the end); pytest exit {code}. Lease margin "
             "3 s, step timeouts 10 s and an idle gate capped at 1 s in these tests, so a lost "
             "lease expires in about 14 s (the shipped margin is 15 s, and a step's lease is "
             "its own timeout).", "",
             "| fault | outcome | recovery (s) |", "|---|---|---|"]
    for row in rows:
        took = row.get("recovery_s")
        lines.append(f"| {row['fault']} | {row['outcome']} | "
                     f"{'–' if took is None else took} |")
    lines += ["", "Recovery: SIGKILL, from the kill to the cell running on another worker; "
              "Redis restart, from the restart to the next cell done; network cut, from the "
              "link going down to the cell running on another worker; purge, from the purge "
              "to a cell running; hang, the whole sweep (its timeout is 3 s); junk, from the push "
              "to the next cell done (the worker does not exit); daemon, the whole two-cell "
              "sweep (the second cell needs the lease the first one's daemon held); SIGKILL "
              "with a child and a daemon, from the kill to both gone (the worker started "
              "again at once).", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
