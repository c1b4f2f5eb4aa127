"""The issue's case: the idle gate passes, then the host turns busy after the group's first
cell. Every later run whose load1 crossed the gate's threshold is flagged, and the record's
host sentence names those runs instead of calling the host idle."""

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.faults.harness import lab
from tests.support.fleet import cli

pytestmark = pytest.mark.integration
# Shell loops, each a runnable task: load1 counts them however little CPU they get. At nice
# 19 and pinned to one CPU they barely slow anything else, yet each 5 s load1 update adds
# about BURNERS x 0.08 to it (a one-minute average).
BURNERS = 64
# The gate's threshold this far above the host's load when the test starts: it passes at
# first, and one update after the burners start, load1 is over it.
MARGIN = 3.0


@contextmanager
def burners(count: int) -> Iterator[None]:
    cpu = {max(os.sched_getaffinity(0))}
    procs = [subprocess.Popen(["nice", "-n", "19", "sh", "-c", "while :; do :; done"],
                              preexec_fn=lambda: os.sched_setaffinity(0, cpu))
             for _ in range(count)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_a_host_busy_after_the_gate_is_flagged_run_by_run(tmp_path: Path) -> None:
    threshold = round(os.getloadavg()[0] + MARGIN, 2)
    with lab(tmp_path, idle_load1=threshold) as lab_:
        lab_.fleet.start("cpu", "mid")
        # Cells of about 2 s (a computing loop, then the bench): the group outlasts several
        # 5 s load1 updates after the burners start, however fast the bench itself is.
        sweep_id = lab_.sweep("mid-group", recipe="slow-bench", params={"seconds": 1.5}, n=6,
                              arms=2)
        lab_.wait(sweep_id, until=lambda states: "done" in states.values())
        with burners(BURNERS):
            lab_.wait(sweep_id)
        made = cli(lab_.settings, "record", sweep_id, "-o", str(tmp_path / "record"))
        assert "benchfleet check: passes" in made.stdout, made.stdout + made.stderr
    record = json.loads((tmp_path / "record" / f"{sweep_id}.json").read_text())
    (group,) = record["groups"]
    ms = sorted(group["measurements"], key=lambda m: m["order"])
    assert all(m["gate"]["idle"] and m["gate"]["threshold"] == threshold for m in ms)
    assert ms[0]["flags"] == [], ms[0]  # measured before the load began
    loaded = [m for m in ms if any("over the gate's threshold" in f for f in m["flags"])]
    assert loaded, [(m["load1_before"], m["load1_after"]) for m in ms]
    assert all(m["load1_after"] > threshold for m in loaded)
    sentence = record["host_sentence"]
    assert "idle host" not in sentence
    assert sentence.startswith(f"{len([m for m in ms if m['flags']])} of {len(ms)} measurements")
    assert all(m["cell_id"] in sentence for m in loaded[:20])
    markdown = (tmp_path / "record" / f"{sweep_id}.md").read_text()
    assert sentence in markdown
