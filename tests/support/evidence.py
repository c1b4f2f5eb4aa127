"""One real sweep through the session's fleet, with an A/A arm and adaptive repeats, made into a
record: the evidence tests tamper with copies of its store."""

import shutil
from pathlib import Path

import pytest

from runner.demo.local_fleet import LocalFleet
from tests.support.fleet import Target, arms, cli, submit, sweep_file, wait
from workers.shared.settings import Settings
from workers.shared.state import Store


@pytest.fixture(scope="module")
def made(fleet: LocalFleet, settings: Settings, target: Target,
         tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """One real sweep with an A/A arm and adaptive repeats, and its record."""
    tmp = tmp_path_factory.mktemp("evidence")
    spec = {"name": "evidence", "issue": 1859,
            "target": {"repo": str(target.repo), "commits": "main"}, "models": ["tinymoe-a3"],
            "backends": {"cpu": {"build": "tinymoe-build"}}, "arms": arms("gather", "fused"),
            "n": 3, "warmup": 0, "aa": True, "adaptive": {"max_n": 4}}
    sweep_id = submit(settings, sweep_file(tmp, spec))
    wait(Store.connect(settings.redis_url), sweep_id)
    done = cli(settings, "record", sweep_id, "-o", str(tmp / "record"))
    assert done.returncode == 0, done.stdout + done.stderr
    return sweep_id, tmp / "record"


def store_copy(settings: Settings, sweep_id: str, tmp: Path) -> Path:
    root = tmp / "store"
    shutil.copytree(settings.artifacts / sweep_id, root / sweep_id)
    return root
