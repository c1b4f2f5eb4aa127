"""The stand-in target as a git repository, the model directories it reads, and the demo
sweep over it: what `benchfleet demo` runs, and what `benchfleet fleet up --demo-target` lays
out for a fleet of the user's own."""

import json
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import yaml

SOURCE = Path(__file__).parent / "stand_in"
DEMO_SWEEP = Path(__file__).parent / "sweep.yaml"
# Commit 1 has no fused decode path and no --ignore-eos (as older mlxcel commits lack it);
# commit 2 adds both.
_FUSED_LINE = 'FUSED_FAMILIES = {"qwen3_moe"}'
_UNFUSED_LINE = "FUSED_FAMILIES: set[str] = set()  # fused decode not wired yet"
_EOS_LINE = '    p.add_argument("--ignore-eos", action="store_true")\n'

DEMO_MODELS = {
    "tinymoe-a3": {"family": "qwen3_moe", "layers": 4, "hidden": 128, "experts": 16,
                   "top_k": 4, "expert_width": 256, "vocab": 512, "seed": 1},
}
# Scaled-down stand-ins for the checkpoints of mlxcel issue #1859 (same families and routing).
MOE_GAP_MODELS = {
    "deepseek-v4-flash-4bit": {"family": "deepseek_v4", "layers": 4, "hidden": 128,
                               "experts": 32, "top_k": 6, "expert_width": 256, "seed": 11},
    "inkling-small-mlx-4bit": {"family": "inkling", "layers": 4, "hidden": 128, "experts": 32,
                               "top_k": 6, "expert_width": 192, "seed": 12},
    "inkling-small-nvfp4": {"family": "inkling", "layers": 4, "hidden": 128, "experts": 32,
                            "top_k": 6, "expert_width": 192, "seed": 13},
    "qwen3-30b-a3b-4bit": {"family": "qwen3_moe", "layers": 4, "hidden": 128, "experts": 32,
                           "top_k": 8, "expert_width": 96, "seed": 14},
}


@dataclass(frozen=True)
class DemoFiles:
    target: Path  # the stand-in's git repository
    shas: list[str]  # its two commits, oldest first
    sweep: Path  # the demo sweep, over that repository


def lay_out_demo(target: Path, models_dir: Path, sweep: Path,
                 backends: Iterable[str]) -> DemoFiles:
    """The stand-in repository (kept when it is already there, so its commits stay the same),
    the demo's checkpoints in `models_dir`, and the demo sweep for `backends`."""
    shas = (git(target, "rev-list", "--reverse", "main").split() if (target / ".git").exists()
            else make_target_repo(target))
    make_models(models_dir, {name: config for name, config in DEMO_MODELS.items()
                             if not (models_dir / name).exists()})
    spec = yaml.safe_load(DEMO_SWEEP.read_text())
    spec["target"]["repo"] = str(target)
    build = next(iter(spec["backends"].values()))  # the stand-in builds the same everywhere
    spec["backends"] = {backend: dict(build) for backend in backends}
    sweep.parent.mkdir(parents=True, exist_ok=True)
    sweep.write_text(yaml.safe_dump(spec, sort_keys=False))
    return DemoFiles(target, shas, sweep)


def make_target_repo(dest: Path) -> list[str]:
    """A git repository of the stand-in with two commits on `main`; returns their shas."""
    shutil.copytree(SOURCE, dest, ignore=shutil.ignore_patterns("__pycache__"))
    git(dest, "init", "--quiet", "--initial-branch=main")
    moe, bench = dest / "src" / "tinymoe.py", dest / "src" / "bench_decode.py"
    final_moe, final_bench = moe.read_text(), bench.read_text()
    moe.write_text(final_moe.replace(_FUSED_LINE, _UNFUSED_LINE))
    bench.write_text(final_bench.replace(_EOS_LINE, ""))
    first = commit_all(dest, "tinymoe: decoder with the expert-gather path")
    moe.write_text(final_moe)
    bench.write_text(final_bench)
    second = commit_all(dest, "tinymoe: fused decode path for qwen3_moe (MLXCEL_FUSED_MOE), "
                        "--ignore-eos")
    return [first, second]


def make_models(models_dir: Path, models: dict[str, dict[str, object]]) -> None:
    for name, config in models.items():
        (models_dir / name).mkdir(parents=True, exist_ok=True)
        (models_dir / name / "config.json").write_text(json.dumps(config, indent=1))


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=benchfleet", "-c", "user.email=benchfleet@localhost",
        "commit", "--quiet", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()
