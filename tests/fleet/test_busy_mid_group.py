"""The issue's case: the idle gate passes, then the host turns busy after the group's first
cell. Every later run whose load1 crossed the gate's threshold is flagged, and the record's
host sentence names those runs instead of calling the host idle."""

import json
import os
from pathlib import Path

import pytest

from tests.faults.harness import lab
from tests.support.fleet import cli
from tests.support.load import BURNERS, MARGIN, burners

pytestmark = pytest.mark.integration


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
