"""Each way a cell can fail ends that cell with its reason, and the worker keeps serving."""

import json
from pathlib import Path

import pytest

from runner.demo.local_fleet import LocalFleet
from tests.support.fleet import Target, arms, cli, submit, sweep_file, wait
from workers.shared.settings import Settings
from workers.shared.state import Store

pytestmark = pytest.mark.integration
MISSING = "0123456789abcdef" * 2 + "01234567"


def test_failures_end_their_cells_with_reasons(fleet: LocalFleet, settings: Settings,
                                               store: Store, target: Target,
                                               tmp_path: Path) -> None:
    base = {"models": ["tinymoe-a3"], "backends": {"cuda": {"build": "tinymoe-build"}},
            "arms": arms("only"), "n": 1, "warmup": 0}
    bad = {"name": "bad", "target": {"repo": str(target.repo),
                                     "commits": [target.broken, MISSING, target.reformatted]},
           **base}
    # Submitted second, so its good cell runs after every failure above on the same worker.
    ghost = {"name": "ghost", "target": {"repo": str(target.repo), "commits": "main"},
             **base, "models": ["ghost", "tinymoe-a3"]}
    bad_id = submit(settings, sweep_file(tmp_path, bad))
    ghost_id = submit(settings, sweep_file(tmp_path, ghost))
    wait(store, bad_id)
    wait(store, ghost_id)

    reasons = {c.commit: store.states(bad_id)[c.id] for c in store.sweep(bad_id)[1]}
    assert {s.status for s in reasons.values()} == {"failed"}
    assert reasons[target.broken].reason == ("build failed: exited with code 1: "
                                             "SyntaxError: invalid syntax")
    assert reasons[MISSING].reason == f"commit {MISSING!r} not found in {target.repo} " \
                                      "(after fetching it)"
    assert reasons[target.reformatted].reason == (
        "measured run: '[Profile Results]' block lacks decode (output truncated or malformed)")

    ghost_states = {c.model: store.states(ghost_id)[c.id] for c in store.sweep(ghost_id)[1]}
    assert ghost_states["ghost"].status == "failed"
    assert ghost_states["ghost"].reason.startswith("measured run: Error: failed to load model: ")
    assert ghost_states["ghost"].reason.endswith("ghost: no config.json (exit 1)")
    assert ghost_states["tinymoe-a3"].status == "done"
    assert all(proc.poll() is None for proc in fleet.procs.values())

    status = cli(settings, "status", bad_id)
    assert status.returncode == 1 and "3 failed" in status.stdout
    assert "not found in" in status.stdout and "build failed" in status.stdout
    recorded = cli(settings, "record", bad_id, "-o", str(tmp_path / "r"))
    assert recorded.returncode == 1 and "benchfleet check: fails" in recorded.stdout
    record = json.loads((tmp_path / "r" / f"{bad_id}.json").read_text())
    assert record["cells_measured"] == 0
    assert sorted(m["reason"] for m in record["missing"]) == sorted(s.reason for s in
                                                                     reasons.values())
    text = (tmp_path / "r" / f"{bad_id}.md").read_text()
    assert text.startswith("> **This record fails `benchfleet check`**")
    assert "lacks decode" in text and "not found in" in text
