"""The MoE decode-gap preset on the second stand-in: an MLX decoder (tests/targets/mlx_moe)
written from the facts alone, sharing no code with our demo target, run by the shipped mlxcel
recipes on MLX's CPU wheels. Its profiles are real MLX: the DOT files are MLX's own exports,
and the kernel log names the MLX primitives it evaluated (docs/kernel-log.md)."""

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from jobs.record.model import Record
from runner.demo.local_fleet import LocalFleet
from runner.demo.redis_server import RedisServer
from tests.support.fleet import cli, fleet_settings, submit, until_live, wait
from tests.support.moe_lab import at_ci_size
from tests.support.samples import TOOLS
from tests.targets.mlx_repo import make_payload_repo, write_models
from workers.shared.settings import Settings
from workers.shared.state import Store

pytestmark = pytest.mark.integration
mx = pytest.importorskip("mlx.core") if sys.platform != "linux" else __import__("mlx.core")
# One family and the control, to keep CI inside its budget: every family, and the inkling
# pair's "not comparable", run on the demo stand-in (tests/fleet/test_moe_preset.py).
FAMILIES = ["deepseek-v4-flash-4bit"]
LEFT_OUT = ["inkling-small-mlx-4bit", "inkling-small-nvfp4"]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Settings, str, Path]]:
    root = tmp_path_factory.mktemp("moe-mlx")
    made = make_payload_repo(root / "payload")
    repo = made.path
    write_models(root / "models", "tiny")
    path = os.pathsep.join([str(TOOLS), str(Path(sys.executable).parent), os.environ["PATH"]])
    with RedisServer(root / "redis") as server:
        settings = fleet_settings(root, server.url, allowed_repos=[str(repo)])
        fleet = LocalFleet(settings, root / "logs", env={"PATH": path})
        fleet.start("cuda", "gb10-mlx")
        fleet.start("metal", "studio-mlx")
        until_live(settings, "gb10-mlx", "studio-mlx")
        try:
            # The first commit: deepseek_v4 and inkling decode through gather_qmm at M = 1,
            # the situation mlxcel's question is about; only qwen3_moe reaches the fused path.
            yield settings, f"{repo}@{made.first}", root
        finally:
            fleet.stop()


def test_preset_on_the_mlx_standin_gives_kernel_tables_and_verdicts(
        lab: tuple[Settings, str, Path]) -> None:
    settings, where, root = lab
    repo, commit = where.split("@")
    sweep_path = root / "moe-decode-gap.yaml"
    made = cli(settings, "init", "moe-decode-gap", "--commit", commit, "--repo", repo,
               "-o", str(sweep_path))
    assert made.returncode == 0, made.stderr
    at_ci_size(sweep_path)
    spec = yaml.safe_load(sweep_path.read_text())
    spec["models"] = [m for m in spec["models"] if m not in LEFT_OUT]
    for model in LEFT_OUT:
        del spec["question"]["families"][model]
    spec["question"]["not_comparable"] = []
    sweep_path.write_text(yaml.safe_dump(spec, sort_keys=False))
    sweep_id = submit(settings, sweep_path)
    store = Store.connect(settings.redis_url)
    wait(store, sweep_id, deadline_s=1200)
    failed = {k: s.reason for k, s in store.states(sweep_id).items()
              if s.status not in ("done", "skipped")}
    assert failed == {}

    out = root / "record"
    recorded = cli(settings, "record", sweep_id, "-o", str(out))
    assert "benchfleet check: passes" in recorded.stdout, recorded.stdout
    record = Record.model_validate_json((out / f"{sweep_id}.json").read_text())
    checked = cli(settings, "check", str(out / f"{sweep_id}.json"), "--artifacts",
                  str(settings.artifacts))
    assert checked.returncode == 0, checked.stdout

    cuda = {g.model: g for g in record.groups if g.backend == "cuda"}
    metal = {g.model: g for g in record.groups if g.backend == "metal"}
    assert len(cuda) == len(metal) == 2
    for model in FAMILIES:
        timed, counted = cuda[model].profile, metal[model].profile
        assert timed is not None and counted is not None
        assert timed.attribution.timed and not counted.attribution.timed
        # The M = 1 gather is MLX's own GatherQMM: timed from the kernel log on "cuda",
        # counted in MLX's own DOT export of one decode token on "metal".
        for p in (timed, counted):
            gather = p.attribution.phase("expert gather")
            assert gather is not None and gather.launches_per_token > 0
            assert any("GatherQMM" in k.name for k in p.attribution.kernels
                       if k.phase == "expert gather")
        assert timed.attribution.idle is not None  # the whole token: wall minus kernels
        # Every MLX primitive of these real graphs lands in a phase.
        assert not [k.name for p in (timed, counted) for k in p.attribution.kernels
                    if k.phase == "unclassified"]
    answer = record.answer
    assert answer is not None
    assert sorted((v.backend, v.model) for v in answer.verdicts) == sorted(
        (b, m) for b in ("cuda", "metal") for m in FAMILIES)
    assert all(v.outcome for v in answer.verdicts)
