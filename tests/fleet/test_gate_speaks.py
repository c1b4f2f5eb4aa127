"""The issue's case: a busy host, two workers on it. The gated worker's cell says why it waits
(load1 over the threshold, for how long, the cap) in `status --json` and `hosts`, updated as it
polls, while the other worker keeps measuring: the gate waits without the host lease. Once the
cell runs, the reason is gone; the worker's log said when the wait began and how it ended."""

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.faults.harness import Lab, lab
from tests.support.fleet import cli
from tests.support.load import BURNERS, MARGIN, burners
from tests.support.waits import eventually

pytestmark = pytest.mark.integration
# The gated worker's cap: long enough to watch it wait, short enough for the test.
GATED_WAIT_S = 30.0  # under load, each status or hosts read can take seconds


def _status(lab_: Lab, sweep_id: str) -> dict[str, Any]:
    done = cli(lab_.settings, "status", sweep_id, "--json")
    assert done.returncode in (0, 3), done.stdout + done.stderr
    return json.loads(done.stdout)


def test_a_gated_cell_says_why_while_a_neighbour_measures(tmp_path: Path) -> None:
    threshold = round(os.getloadavg()[0] + MARGIN, 2)
    with lab(tmp_path, idle_load1=threshold) as lab_:
        lab_.fleet.start("cpu", "steady")
        lab_.fleet.start("metal", "gated", settings=lab_.settings.model_copy(update={
            "idle_max_wait_s": GATED_WAIT_S}))
        # The neighbour's group passes its gate while the host is idle, then runs for longer
        # than the rest of the test (it is cancelled at the end).
        steady = lab_.sweep("steady", recipe="slow-bench", params={"seconds": 0.5}, n=40)
        lab_.wait(steady, until=lambda states: "done" in states.values())
        with burners(BURNERS):
            eventually(lambda: os.getloadavg()[0] > threshold, 30.0, f"load1 over {threshold}")
            gated = lab_.sweep("gated", recipe="slow-bench", params={"seconds": 4.0}, n=1,
                               backend="metal")
            (cell,) = lab_.store.states(gated)
            waits = re.compile(rf"waiting for an idle host: load1 (\d+\.\d\d) > {threshold:g} "
                               rf"for (\d+) s \(max {GATED_WAIT_S:.0f} s\)")

            def waiting() -> tuple[int, int] | None:
                """(the gate's seconds so far, the neighbour's cells done) while it waits."""
                state = _status(lab_, gated)["not_done"].get(cell, {})
                said = waits.fullmatch(str(state.get("reason", "")))
                if not said or state["phase"] != "gating":
                    return None
                return int(said.group(2)), _status(lab_, steady)["states"].get("done", 0)

            def said_everywhere() -> tuple[int, int] | None:
                """Waiting, as both `status` and `hosts` say: read together, since each read
                takes seconds on a loaded host and the wait is capped."""
                now = waiting()
                if now is None:
                    return None
                hosts = {w["name"]: w
                         for w in json.loads(cli(lab_.settings, "hosts", "--json").stdout)}
                shown = hosts["gated"]
                return now if shown["running"] == cell and shown["phase"] == "gating" \
                    and waits.fullmatch(shown["reason"]) else None

            first = eventually(said_everywhere, 30.0, "the gated cell's reason in status and hosts")

            def moved_on() -> tuple[int, int] | None:
                """Still waiting, for longer, and the neighbour has done more cells since."""
                now = waiting()
                return now if now and now[0] > first[0] and now[1] > first[1] else None

            eventually(moved_on, GATED_WAIT_S, "the neighbour measuring meanwhile")

            def measuring() -> dict[str, Any] | None:
                state = _status(lab_, gated)["not_done"].get(cell, {})
                return state if state.get("phase") == "measuring" else None

            # The cap, then the host lease between two of the neighbour's cells; 4 s measuring.
            running = eventually(measuring, GATED_WAIT_S + 30, "the gated cell measuring")
            assert running["status"] == "running" and "reason" not in running, running
            lab_.wait(gated)
        assert lab_.store.state(gated, cell).status == "done"  # type: ignore[union-attr]
        assert cli(lab_.settings, "cancel", steady).returncode == 0
        lab_.wait(steady)
    said = (tmp_path / "logs" / "worker-gated-metal.log").read_text()
    assert len(re.findall(rf"cell {cell}: waiting for an idle host", said)) == 1, said
    assert f"cell {cell}: measuring on a busy host (the record marks it)" in said
