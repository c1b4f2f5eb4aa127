"""`benchfleet hosts` in an 80-column terminal: one short block per worker, no column folded
into a letter per line; wide terminals keep the table (issue: the day after the demo)."""

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from runner.demo.local_fleet import LocalFleet, settings_env
from tests.support.fleet import until_live
from workers.shared.settings import Settings

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def live(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    workers = LocalFleet(settings, tmp_path_factory.mktemp("narrow-logs"))
    tagged = settings.model_copy(update={"tags": ["gpu=gb10", "nvlink"], "host": "lab-gb10-a"})
    workers.start("cuda", "narrow-gb10", settings=tagged)
    try:
        until_live(settings, "narrow-gb10")
        yield settings
    finally:
        workers.stop()


def hosts(settings: Settings, columns: int) -> str:
    done = subprocess.run([sys.executable, "-m", "runner.cli", "hosts"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **settings_env(settings),
                                                       "COLUMNS": str(columns)})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_at_80_columns_each_worker_is_a_short_block(live: Settings) -> None:
    text = hosts(live, 80)
    assert max(len(line) for line in text.splitlines()) <= 80
    block = text[text.index("narrow-gb10"):]
    assert "cuda on lab-gb10-a" in block and "gpu=gb10, nvlink" in block
    assert "checkpoints: tinymoe-a3" in block and "running:" in block and "idle" in block


def test_a_wide_terminal_keeps_the_table(live: Settings) -> None:
    text = hosts(live, 200)
    header = next(line for line in text.splitlines() if "worker" in line and "seen" in line)
    assert all(column in header for column in ("host", "backend", "machine", "toolchains",
                                                 "checkpoints", "tags", "running"))
