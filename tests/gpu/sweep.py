"""The H200 record's sweep: mlxcel's MoE decode-gap preset narrowed to what one GPU session
can measure — the MLX payload (tests/targets/mlx_moe) at two commits (at the first only
qwen3_moe reaches the fused expert path; at the second deepseek_v4 does too), a Qwen3-30B-A3B-
and a DeepSeek-V4-like model at real widths, n = 5 per arm, and the CUPTI kernel-sum profile
in place of nsys.

    python -m tests.gpu.sweep --repo DIR --commits SHA SHA --out FILE [--profile RECIPE]
"""

import argparse
import sys
from pathlib import Path

import yaml

from runner.presets import render

MODELS = ["qwen3-30b-a3b-4bit", "deepseek-v4-flash-4bit"]
SHAPE = {"prompt_tokens": 512, "max_tokens": 128, "warmup_tokens": 20}


def sweep(repo: str, commits: list[str], profile: str, n: int, build: str
          ) -> dict[str, object]:
    spec = yaml.safe_load(render("moe-decode-gap", commits[0], repo))
    spec["name"] = "h200-moe-decode"
    spec["issue"] = 1859
    spec["target"]["commits"] = commits
    spec["models"] = MODELS
    params = {"cuda_arch": "90a"} if build == "mlxcel-build-cuda" else {}
    spec["backends"] = {"cuda": {"build": build, "params": params}}
    for arm in spec["arms"]:
        if arm["recipe"] == "bench-mlxlm":
            arm["name"] = "mlx-lm"  # the payload's baseline driver runs a plain MLX decode
            arm["params"] = {"max_tokens": SHAPE["max_tokens"],
                             "warmup_tokens": SHAPE["warmup_tokens"]}
        else:
            arm["params"] = {**SHAPE, "ignore_eos": True, "no_chat_template": True}
    spec["n"] = n
    spec["warmup"] = 0  # the bench's own 20 warm-up tokens run in every measured process
    spec["profiles"] = {"cuda": {"recipe": profile, "params": {
        "long_tokens": 96, "short_tokens": 32, "prompt_tokens": SHAPE["prompt_tokens"],
        "warmup_tokens": SHAPE["warmup_tokens"]}}}
    question = spec["question"]
    question["families"] = {"deepseek-v4-flash-4bit": "deepseek_v4"}
    question["not_comparable"] = []
    return spec


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="tests.gpu.sweep")
    p.add_argument("--repo", required=True)
    p.add_argument("--commits", nargs=2, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--profile", default="mlxcel-cupti-kernels")
    p.add_argument("-n", type=int, default=5)
    p.add_argument("--build", default="mlxcel-build-cuda",
                   help="mlxcel's `make release-cuda`, or tinymoe-build where make is missing")
    args = p.parse_args(argv)
    spec = sweep(args.repo, args.commits, args.profile, args.n, args.build)
    args.out.write_text(yaml.safe_dump(spec, sort_keys=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
