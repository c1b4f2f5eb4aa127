#!/usr/bin/env python3
"""Builds `mlxcel-bench-decode`: a zip application of decoder/ run by the interpreter that built
it (which must import mlx). Nothing is fetched: the build reads only this tree."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipapp
from pathlib import Path

TREE = Path(__file__).resolve().parent
PROGRAM = "mlxcel-bench-decode"
BACKENDS = ("cuda", "metal", "cpu")


def main() -> int:
    p = argparse.ArgumentParser(prog="build.py")
    p.add_argument("--backend", choices=BACKENDS, required=True)
    p.add_argument("--out", type=Path, required=True, help="directory to write the program into")
    args = p.parse_args()
    try:
        import mlx.core  # noqa: F401
    except ImportError:
        print(f"build.py: {sys.executable} cannot import mlx; install it (pip install "
              "'mlx[cpu]' or 'mlx[cuda13]') or run make with PYTHON=<an interpreter that has it>",
              file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mlx-moe-build-") as tmp:
        stage = Path(tmp) / "app"
        shutil.copytree(TREE / "decoder", stage / "decoder",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        (stage / "decoder" / "build_info.json").write_text(json.dumps(info(args.backend)))
        target = args.out / PROGRAM
        zipapp.create_archive(stage, target, interpreter=sys.executable,
                              main="decoder.bench_decode:run")
    print(f"build.py: wrote {target} ({args.backend}, run by {sys.executable})")
    return 0


def info(backend: str) -> dict[str, str]:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=TREE, capture_output=True,
                            text=True).stdout.strip()
    from importlib.metadata import version

    return {"backend": backend, "commit": commit or "unknown", "mlx": version("mlx"),
            "cuda_architectures": os.environ.get("MLX_CUDA_ARCHITECTURES", "")}


if __name__ == "__main__":
    sys.exit(main())
