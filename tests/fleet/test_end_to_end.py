"""A sweep end to end: YAML → Redis → two Celery workers → build at commit → artifacts → record."""

import json
import os
import re
from pathlib import Path
from statistics import mean

import pytest

from jobs.record.attempts import AttemptResult
from runner.demo.local_fleet import LocalFleet
from tests.support.fleet import Target, arms, cli, submit, sweep_file, wait
from workers.shared.settings import Settings
from workers.shared.state import Store
from workers.shared.stores.local import LocalStore
from workers.staging import SPARE_DIR, SPARE_FILES

pytestmark = pytest.mark.integration
DECODE = re.compile(r"^  Decode:\s+[0-9.]+ ms \(([0-9.]+) tok/s\)$", re.M)


def test_sweep_runs_end_to_end_into_a_record(fleet: LocalFleet, settings: Settings,
                                             store: Store, target: Target, tmp_path: Path) -> None:
    spec = {"name": "e2e", "target": {"repo": str(target.repo), "commits": "main"},
            "models": ["tinymoe-a3"],
            "backends": {"cuda": {"build": "tinymoe-build"}, "metal": {"build": "tinymoe-build"}},
            "arms": arms("gather", "fused"), "n": 3, "warmup": 1}
    sweep_id = submit(settings, sweep_file(tmp_path, spec))
    wait(store, sweep_id)

    status = cli(settings, "status", sweep_id)
    assert status.returncode == 0 and f"{sweep_id}: 12 done" in status.stdout
    made = cli(settings, "record", sweep_id, "-o", str(tmp_path / "record"))
    assert made.returncode == 0, made.stderr
    slug = sweep_id
    record = json.loads((tmp_path / "record" / f"{slug}.json").read_text())
    assert (tmp_path / "record" / f"{slug}.png").read_bytes().startswith(b"\x89PNG")
    assert "## cuda · tinymoe-a3 · `main` at `" in (tmp_path / "record" / f"{slug}.md").read_text()

    assert record["cells_measured"] == 12 and record["missing"] == []
    assert record["commits"] == {"main": [target.main]}
    artifacts = LocalStore(settings.artifacts)
    results = []
    assert sorted((g["backend"], g["model"]) for g in record["groups"]) == [
        ("cuda", "tinymoe-a3"), ("metal", "tinymoe-a3")]
    for group in record["groups"]:
        for row in group["rows"]:
            values = []
            for m in (m for m in group["measurements"] if m["arm"] == row["arm"]):
                files = artifacts.read(sweep_id, m["cell_id"], m["attempt"])  # sha256-checked
                stdout = files["measure.stdout.txt"].read_text()
                values += [float(v) for v in DECODE.findall(stdout)]
                results.append(AttemptResult.model_validate_json(files["result.json"].read_text()))
            assert row["n"] == len(values) == 3
            assert row["decode_tps"]["mean"] == pytest.approx(mean(values))
            assert (row["decode_tps"]["min"], row["decode_tps"]["max"]) == (min(values),
                                                                             max(values))
        # The arms of a group ran on one worker, which ran the build once for its backend.
        assert len({m["worker"] for m in group["measurements"]}) == 1
    assert sorted(r.host.hostname == record["hosts"][r.host.hostname]["hostname"]
                  for r in results) == [True] * 12
    fresh_builds = [r for r in results if r.build and not r.build.cached]
    assert sorted(r.worker for r in fresh_builds) == ["w-cuda", "w-metal"]
    for r in results:
        roles = [run.role for run in r.runs]
        assert roles.count("warmup") == 1 and roles[-1] == "measure"
        assert r.measured and r.measured.env["MLXCEL_FUSED_MOE" if "gather" in r.cell_id
                                             else "OMP_NUM_THREADS"] in ("0", "1")
    # Each worker made its next attempt's folder once its cell was settled (workers/staging.py),
    # and no stored attempt holds a spare.
    assert not list(Path(settings.artifacts, sweep_id).glob("*/attempt-*/.spare*"))
    spares = [sorted(os.listdir(p)) for p in Path(settings.artifacts, ".staging").iterdir()]
    assert spares.count(sorted([SPARE_DIR, *SPARE_FILES])) >= 2, spares


def test_arms_of_a_group_stay_on_one_host_when_two_workers_serve_a_backend(
        fleet: LocalFleet, settings: Settings, store: Store, target: Target,
        tmp_path: Path) -> None:
    spec = {"name": "pinned", "target": {"repo": str(target.repo), "commits": "main"},
            "models": ["tinymoe-a3", "tinymoe-b2"], "backends": {"cpu": {"build": "tinymoe-build"}},
            "arms": arms("gather", "fused"), "n": 2, "warmup": 0}
    sweep_id = submit(settings, sweep_file(tmp_path, spec))
    wait(store, sweep_id)
    states = store.states(sweep_id)
    _, cells, _ = store.sweep(sweep_id)
    assert all(s.status == "done" for s in states.values())
    for model in ("tinymoe-a3", "tinymoe-b2"):
        assert len({states[c.id].worker for c in cells if c.model == model}) == 1
