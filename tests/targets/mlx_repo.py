"""Builds the MLX MoE payload (tests/targets/mlx_moe) as a git repository, and model directories
for it, at tiny widths for CI or at the real checkpoints' widths for a GPU.

The repository has two commits whose decode differs in one place: at the first, only qwen3_moe
reaches the fused expert path and deepseek_v4 takes `gather_qmm` at decode whatever
MLXCEL_FUSED_MOE says (mlxcel's situation in its issue #1859); the second routes deepseek_v4
through the fused path too.

    python -m tests.targets.mlx_repo --repo DIR --models DIR [--width tiny|real] [--layers N]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

PAYLOAD = Path(__file__).resolve().parent / "mlx_moe"
FAMILIES_FILE = Path("decoder") / "fused_families.py"
# What the first commit leaves out of decoder/fused_families.py.
LATER_FAMILY = ', "deepseek_v4"'
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "target", "benchmarks")

AFFINE_4BIT = {"mode": "affine", "group_size": 64, "bits": 4}
MXFP4 = {"mode": "mxfp4", "group_size": 32, "bits": 4}
NVFP4 = {"mode": "nvfp4", "group_size": 16, "bits": 4}

# The checkpoints of mlxcel's question at their real widths (a few layers, not all of them).
# inkling's expert width is not in the facts we have; 2048 is assumed, like deepseek_v4's.
REAL = {
    "qwen3-30b-a3b-4bit": {
        "model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 4,
        "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
        "vocab_size": 151936, "num_experts": 128, "num_experts_per_tok": 8,
        "moe_intermediate_size": 768, "norm_topk_prob": True, "rope_theta": 1000000.0,
        "max_position_embeddings": 40960, "eos_token_id": 151645, "quantization": AFFINE_4BIT},
    "deepseek-v4-flash-4bit": {
        "model_type": "deepseek_v4", "hidden_size": 4096, "num_hidden_layers": 4,
        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
        "vocab_size": 129280, "n_routed_experts": 256, "num_experts_per_tok": 6,
        "moe_intermediate_size": 2048, "n_shared_experts": 1, "num_hash_layers": 1,
        "routed_scaling_factor": 1.5, "max_position_embeddings": 131072, "eos_token_id": 1,
        "quantization": AFFINE_4BIT, "expert_quantization": MXFP4},
    "inkling-small-mlx-4bit": {
        "model_type": "inkling", "hidden_size": 4096, "num_hidden_layers": 4,
        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
        "vocab_size": 131072, "n_routed_experts": 256, "num_experts_per_tok": 6,
        "moe_intermediate_size": 2048, "n_shared_experts": 2,
        "max_position_embeddings": 131072, "eos_token_id": 2, "quantization": AFFINE_4BIT},
}
REAL["inkling-small-nvfp4"] = {**REAL["inkling-small-mlx-4bit"], "quantization": NVFP4}

# The same families at widths a CI machine decodes in well under a second per pass.
TINY_WIDTHS = {"hidden_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
               "head_dim": 32, "vocab_size": 512, "moe_intermediate_size": 64,
               "max_position_embeddings": 4096, "eos_token_id": 2}
TINY_EXPERTS = {"qwen3_moe": 16, "deepseek_v4": 24, "inkling": 24}
TINY_LAYERS = {"qwen3_moe": 2, "deepseek_v4": 3, "inkling": 2}


@dataclass(frozen=True)
class PayloadRepo:
    path: Path
    first: str   # deepseek_v4 decodes through gather_qmm
    second: str  # deepseek_v4 decodes through the fused path when MLXCEL_FUSED_MOE is on


def make_payload_repo(dest: Path) -> PayloadRepo:
    """A fresh git repository of the payload at `dest` (which must not exist yet)."""
    shutil.copytree(PAYLOAD, dest, ignore=IGNORED)
    final_families = (dest / FAMILIES_FILE).read_text()
    assert LATER_FAMILY in final_families, f"{FAMILIES_FILE} no longer names deepseek_v4"
    _git(dest, "init", "--quiet", "--initial-branch=main")
    (dest / FAMILIES_FILE).write_text(final_families.replace(LATER_FAMILY, ""))
    first = _commit(dest, "MoE decoder on mlx.core; fused decode path for qwen3_moe only")
    (dest / FAMILIES_FILE).write_text(final_families)
    second = _commit(dest, "deepseek_v4 decode takes the fused expert path")
    return PayloadRepo(dest, first, second)


def model_configs(width: str = "tiny", layers: int | None = None) -> dict[str, dict[str, object]]:
    """config.json contents per model directory name."""
    configs: dict[str, dict[str, object]] = {}
    for seed, (name, real) in enumerate(REAL.items(), 1):
        config = {**real, "torch_dtype": "bfloat16", "seed": seed}
        if width == "tiny":
            family = str(real["model_type"])
            experts_key = "num_experts" if family == "qwen3_moe" else "n_routed_experts"
            config.update(TINY_WIDTHS, num_hidden_layers=TINY_LAYERS[family],
                          **{experts_key: TINY_EXPERTS[family]})
        if layers is not None:
            config["num_hidden_layers"] = layers
        configs[name] = config
    return configs


def write_models(models_dir: Path, width: str = "tiny", layers: int | None = None) -> list[Path]:
    written = []
    for name, config in model_configs(width, layers).items():
        directory = models_dir / name
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        written.append(directory)
    return written


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=benchfleet", "-c",
                           "user.email=benchfleet@localhost", *args], cwd=repo,
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _commit(repo: Path, message: str) -> str:
    _git(repo, "add", "--all")
    _git(repo, "commit", "--quiet", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.targets.mlx_repo")
    p.add_argument("--repo", type=Path, help="create the payload repository here")
    p.add_argument("--models", type=Path, help="write model directories here")
    p.add_argument("--width", choices=("tiny", "real"), default="tiny")
    p.add_argument("--layers", type=int, help="override every model's layer count")
    args = p.parse_args(argv)
    if args.repo:
        if args.repo.exists():
            print(f"mlx_repo: {args.repo} already exists; give a new path", file=sys.stderr)
            return 1
        repo = make_payload_repo(args.repo)
        print(f"repo {repo.path} first {repo.first} second {repo.second}")
    if args.models:
        for directory in write_models(args.models, args.width, args.layers):
            print(f"model {directory}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
