"""A worker started for a backend no probe knows still serves, and says so when it starts
(issue: the day after the demo: warnings before work)."""

from pathlib import Path

import pytest

from runner.demo.local_fleet import LocalFleet
from tests.support.fleet import until_live
from workers.shared.settings import Settings

pytestmark = pytest.mark.integration


def test_a_worker_for_an_unknown_backend_warns_when_it_starts(settings: Settings,
                                                             tmp_path: Path) -> None:
    workers = LocalFleet(settings, tmp_path / "logs")
    workers.start("tpu", "tpu-typo")
    try:
        until_live(settings, "tpu-typo")  # a warning, not a refusal
    finally:
        workers.stop()
    log = (tmp_path / "logs" / "worker-tpu-typo-tpu.log").read_text()
    assert ("worker tpu-typo: backend tpu is none the host probe knows (cpu, cuda, metal); "
            "only recipes that build for any backend (tinymoe-build) serve it; check --backend "
            "for a typo\n") in log
