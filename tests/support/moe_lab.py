"""A lab for the MoE preset: the stand-in target, its models, a private Redis and two workers
(`cuda`, `metal`) with the profiler stand-ins (tests/tools) first on their PATH."""

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from runner.demo.local_fleet import LocalFleet
from runner.demo.redis_server import RedisServer
from runner.demo.target_repo import MOE_GAP_MODELS, make_models, make_target_repo
from tests.support.fleet import fleet_settings, until_live
from tests.support.samples import TOOLS
from workers.shared.settings import Settings


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Settings, Path, Path]]:
    root = tmp_path_factory.mktemp("moe")
    repo = root / "mlxcel-standin"
    make_target_repo(repo)
    make_models(root / "models", MOE_GAP_MODELS)
    path = os.pathsep.join([str(TOOLS), str(Path(sys.executable).parent),
                            os.environ["PATH"]])
    with RedisServer(root / "redis") as server:
        settings = fleet_settings(root, server.url)
        fleet = LocalFleet(settings, root / "logs", env={"PATH": path})
        fleet.start("cuda", "gb10-standin")
        fleet.start("metal", "studio-standin")
        until_live(settings, "gb10-standin", "studio-standin")
        try:
            yield settings, repo, root
        finally:
            fleet.stop()


def at_ci_size(path: Path, warmup: bool = False) -> None:
    """The preset file at the size CI affords: without its adaptive repeats and (unless asked
    for) its warm-up runs, and with fewer decode tokens in its measured arms (the matched
    512-token prompt stays: the baseline driver's is fixed; the profiles keep theirs, which the
    kernel tables need). These fleet tests show the pipeline at the preset's n; adaptive
    repeats have their own tests (tests/jobs/studies/test_moe_decode_gap_preset.py and the
    evidence sweep), warm-ups the cached preset's (tests/fleet/test_moe_preset_cached.py), and
    the preset's own sizes run on real hardware (docs/gpu-run.md)."""
    spec = yaml.safe_load(path.read_text())
    spec.pop("adaptive", None)
    if not warmup:
        spec["warmup"] = 0
    for arm in spec["arms"]:
        arm["params"].update(max_tokens=16, warmup_tokens=4)
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
