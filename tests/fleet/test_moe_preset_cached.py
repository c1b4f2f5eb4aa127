"""The MoE preset on builds that are all cached passes its own check: each cached attempt
carries the cache entry's build (its steps' commands in the recipe's order, when it was built,
how long it took, its logs), and `check --artifacts` parses every raw output again.

A first, small sweep on the preset's build recipes makes the builds; the preset then finds
every one of them cached, as a second run of the preset on that commit would. The preset runs
as `init` writes it, on the control alone and with fewer decode tokens (the matched
512-token prompt stays: the baseline driver's is fixed), so this test fits CI's budget.
"""

from pathlib import Path

import yaml

from jobs.record.model import Record
from tests.support.fleet import cli, submit, sweep_file, wait
from tests.support.moe_lab import at_ci_size
from workers.shared.settings import Settings
from workers.shared.state import Store
from workers.shared.stores.local import LocalStore

PRESET_BUILDS = {"cuda": {"build": "mlxcel-build-cuda", "params": {"cuda_arch": "121"}},
                 "metal": {"build": "mlxcel-build-metal"}}


def _run(settings: Settings, path: Path, out: Path) -> tuple[Record, str]:
    sweep_id = submit(settings, path)
    store = Store.connect(settings.redis_url)
    wait(store, sweep_id, deadline_s=900)
    assert {k: s.reason for k, s in store.states(sweep_id).items() if s.status != "done"} == {}
    made = cli(settings, "record", sweep_id, "-o", str(out))
    assert made.returncode == 0, made.stdout + made.stderr
    record = Record.model_validate_json((out / f"{sweep_id}.json").read_text())
    return record, (out / f"{sweep_id}.md").read_text()


def test_the_preset_on_cached_builds_passes_check(
        lab: tuple[Settings, Path, Path]) -> None:  # noqa: F811
    settings, repo, root = lab
    first = {"name": "builds", "target": {"repo": str(repo), "commits": "main"},
             "models": ["qwen3-30b-a3b-4bit"], "backends": PRESET_BUILDS,
             "arms": [{"name": "mlxcel", "recipe": "mlxcel-bench-decode", "baseline": True,
                       "params": {"prompt_tokens": 32, "max_tokens": 8, "warmup_tokens": 2}}],
             "n": 3, "warmup": 0}
    cold, _ = _run(settings, sweep_file(root, first), root / "cold")
    assert sorted((b.backend, b.cached) for b in cold.meta.builds) == [
        ("cuda", False), ("metal", False)]

    preset = root / "cached-preset.yaml"
    made = cli(settings, "init", "moe-decode-gap", "--commit", "main", "--repo", str(repo),
               "-o", str(preset))
    assert made.returncode == 0, made.stderr
    _smaller(preset)
    record, markdown = _run(settings, preset, root / "cached")
    assert record.check is not None and record.check.problems == []
    ms = [m for g in record.groups for m in g.measurements]
    assert ms and all(m.build_cached for m in ms)
    builds = {b.backend: b for b in record.meta.builds}
    assert sorted(builds) == ["cuda", "metal"] and all(b.cached for b in builds.values())
    for backend, b in builds.items():
        was = next(c for c in cold.meta.builds if c.backend == backend)
        assert (b.command, b.wall_s, b.built_at) == (was.command, was.wall_s, was.built_at)
        assert b.logs and all(Path(log).is_absolute() and Path(log).is_file() for log in b.logs)
    assert builds["cuda"].command[0] == ["make", "release-cuda"]
    assert builds["cuda"].command[1][0] == "cp"
    opening = markdown.split("\n\n")[1]
    assert opening.index("`make release-cuda`") < opening.index("`cp ")
    assert f"cuda `{builds['cuda'].commit[:12]}` reused on gb10-standin as built at" in opening

    _baseline_rows(settings, record)

    json_path = next((root / "cached").glob("*.json"))
    checked = cli(settings, "check", str(json_path), "--artifacts", str(settings.artifacts))
    assert checked.returncode == 0, checked.stdout


def _smaller(path: Path) -> None:
    """The preset on the control alone at CI's size (tests/support/moe_lab.py), with fewer
    profile tokens too."""
    at_ci_size(path, warmup=True)
    spec = yaml.safe_load(path.read_text())
    # The control alone: the builds, not the verdict, are what this test is about.
    spec["models"] = ["qwen3-30b-a3b-4bit"]
    spec["question"]["families"] = {}
    spec["question"]["not_comparable"] = []
    spec["profiles"]["cuda"]["params"] = {"long_tokens": 48, "short_tokens": 24}
    spec["profiles"]["metal"]["params"] = {"tokens": 16}
    path.write_text(yaml.safe_dump(spec, sort_keys=False))


def _baseline_rows(settings: Settings, record: Record) -> None:
    """Every baseline run, the preset's warm-up included, wrote its own CSV (its own cwd and
    --suffix), read back as its row."""
    base = next(g for g in record.groups if g.backend == "cuda")
    files = LocalStore(settings.artifacts).read(record.sweep_id, next(
        m.cell_id for m in base.measurements if m.arm == "mlx-vlm"), 1)
    csvs = sorted(k for k in files if k.startswith("out/") and k.endswith(".csv"))
    assert [c.split("/")[1] for c in csvs] == ["measure", "warmup-1"]
    assert all("_measure_single_" in c or "_warmup-1_single_" in c for c in csvs)
