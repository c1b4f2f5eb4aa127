"""MLXCEL_TRACE_ARCH: the device's compute capability, the architectures the build was given,
and which quantized-matmul kernel MLX's CUDA backend picks for the first quantized product.

The stand-in cannot watch MLX's dispatch, so the kernel is predicted from the shape by the rules
of MLX's `QuantizedMatmul::eval_gpu` (mlx/backend/cuda/quantized/quantized.cpp, 0.32)."""

from __future__ import annotations

import subprocess
import sys

import mlx.core as mx

from .build_info import build_info
from .config import Quant

TRACE_ENV = "MLXCEL_TRACE_ARCH"


def compute_capability() -> tuple[int, int] | None:
    """(major, minor) of the GPU MLX runs on, from MLX itself, else nvidia-smi; None off CUDA."""
    if not (hasattr(mx, "cuda") and mx.cuda.is_available()):
        return None
    info = mx.device_info()
    if "compute_capability_major" in info:
        return int(info["compute_capability_major"]), int(info["compute_capability_minor"])
    arch = str(info.get("architecture", ""))
    if arch.startswith("sm_") and arch[3:].isdigit():
        return int(arch[3:-1]), int(arch[-1])
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.split()
        major, minor = out[0].split(".")
        return int(major), int(minor)
    except (OSError, IndexError, ValueError, subprocess.TimeoutExpired):
        return None


def print_device_line(cc: tuple[int, int] | None) -> None:
    archs = build_info().get("cuda_architectures") or "unknown"
    if cc is None:
        name = mx.device_info().get("device_name", "unknown")
        where = "cpu" if mx.default_device() == mx.cpu else "metal"
        _say(f"compute capability none ({where}: {name}); compiled for [{archs}]; "
             f"coverage: no CUDA device")
        return
    sm = f"sm_{cc[0]}{cc[1]}"
    listed = [a.strip() for a in str(archs).replace(";", ",").split(",")]
    covered = any(a.rstrip("af") == f"{cc[0]}{cc[1]}" for a in listed)
    coverage = f"{sm} in the build list" if covered else f"{sm} not in the build list (PTX JIT)"
    _say(f"compute capability {cc[0]}.{cc[1]} ({sm}); compiled for [{archs}]; "
         f"coverage: {coverage}")


def print_first_qmm_line(cc: tuple[int, int] | None, m: int, n: int, k: int, quant: Quant,
                         dtype: mx.Dtype) -> None:
    if cc is None:
        device = "cpu" if mx.default_device() == mx.cpu else "metal"
        _say(f"quantized matmul path on first call: {device} (device {device})")
        return
    path = qmm_kernel(cc[0], m, 1, n, k, quant, dtype)
    _say(f"quantized matmul path on first call: {path} (device sm_{cc[0]}{cc[1]})")


def qmm_kernel(major: int, m: int, batch: int, n: int, k: int, q: Quant, dtype: mx.Dtype) -> str:
    """The kernel MLX's CUDA QuantizedMatmul picks for x (batch, m, k) times w (n, k)^T."""
    half = dtype in (mx.float16, mx.bfloat16)
    affine = q.mode == "affine"
    sm90 = (major == 9 and n % 4 == 0 and k % 64 == 0 and affine and q.bits in (4, 8)
            and q.group_size >= k)
    sm80 = (major >= 8 and n % 128 == 0 and k % max(64, q.group_size) == 0 and half
            and q.bits in (4, 8))
    naive = k % max(64, q.group_size) == 0
    fp_qmv = major >= 10 and batch <= 8 and not affine
    qmv = k % 8 == 0 or fp_qmv
    vector = "fp_qmv" if fp_qmv else "qmv"
    if sm90:
        small = m == 1 and batch == 1 and n <= 16384 and k <= 16384
        return vector if qmv and small else "qmm_sm90"
    for fits, name in ((sm80, "qmm_sm80"), (naive, "qmm_naive")):
        if fits:
            return vector if qmv and m * batch < 8 else name
    return vector


def _say(text: str) -> None:
    print(f"[mlxcel arch] {text}", file=sys.stderr, flush=True)
