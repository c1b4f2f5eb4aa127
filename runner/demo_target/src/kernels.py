"""The stand-in's "kernels": named steps of the computation, timed when a profiler asks.

Like a GPU profiler, the log counts every launch of the whole process (load, warm-up, prefill
and decode); like MLX's DOT export, the capture records one decode token's ops in order.
"""

import atexit
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

# (CUDA kernel name, MLX primitive name as a Metal DOT label)
TAKE = ("take_kernel<float>", "Gather")
QMV = ("qmv_kernel<float, 64, 4>", "QuantizedMatmul")
SDPA = ("sdpa_vector_kernel<float, 128>", "ScaledDotProductAttention")
SOFTMAX = ("softmax_kernel<float, 1024>", "Softmax")
ARGPARTITION = ("arg_partition_kernel<float, 256>", "ArgPartition")
ARANGE = ("arange<unsigned int>", "Arange")
COPY_G_ND = ("copy_g_nd<float, float, 3>", "Copy")
GATHER_QMV = ("gather_qmv_kernel<float, 64, 4, true>", "GatherQMM")
QMM_SM80 = ("qmm_sm80_kernel<float, 64, 4, true>", "GatherQMM")
FUSED_MOE = ("fused_moe_decode_kernel<float, 8>", "FusedMoE")
COMBINE = ("row_reduce_small<float, Sum>", "Sum")
ARG_REDUCE = ("arg_reduce_kernel<float, ArgMax>", "ArgReduce")

_METAL = False
_LOG: dict[str, list[int]] | None = None
_CAPTURE: list[str] | None = None
_capturing = False


def setup(backend: str) -> None:
    global _METAL, _LOG
    _METAL = backend == "metal"
    path = os.environ.get("TINYMOE_KERNEL_LOG")
    if path:
        _LOG = {}
        atexit.register(lambda: _write_log(path))


@contextmanager
def launch(kernel: tuple[str, str]) -> Iterator[None]:
    name = kernel[1] if _METAL else kernel[0]
    if _capturing and _CAPTURE is not None:
        _CAPTURE.append(kernel[1])
    if _LOG is None:
        yield
        return
    start = time.perf_counter_ns()
    yield
    entry = _LOG.setdefault(name, [0, 0])
    entry[0] += 1
    entry[1] += time.perf_counter_ns() - start


@contextmanager
def capture() -> Iterator[list[str]]:
    """Record the ops of what runs inside (one decode token)."""
    global _CAPTURE, _capturing
    _CAPTURE, _capturing = [], True
    try:
        yield _CAPTURE
    finally:
        _capturing = False


def _write_log(path: str) -> None:
    with open(path, "w") as f:
        json.dump({name: {"instances": c, "total_ns": t} for name, (c, t) in _LOG.items()}, f)
