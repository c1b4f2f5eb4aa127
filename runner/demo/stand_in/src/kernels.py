"""The stand-in's "kernels": named steps of the computation, each timed when a profiler asks.

Names are the ones MLX's CUDA backend gives its kernels (full C++ signatures, as nsys shows
them) and, on the Metal backend, MLX's primitive names (as `export_to_dot` labels them). Under
a profiler stand-in, every launch of the whole process (load, warm-up, prefill, decode) is
appended to the file `STANDIN_KERNEL_LOG` names, one JSON line each: benchfleet's
docs/kernel-log.md contract. The capture records one decode token's ops in order for the DOT.
"""

import atexit
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

_CU = "void mlx::core::cu::"
_F = "const float *, float *"


def _binary(op: str, kind: str = "vv") -> tuple[str, str]:
    return (f"{_CU}binary_{kind}<mlx::core::cu::{op}, float, float, unsigned int, 4>"
            f"(const float *, const float *, float *, unsigned int)", op)


def _unary(op: str) -> tuple[str, str]:
    return (f"{_CU}unary_v<mlx::core::cu::{op}, float, float, unsigned int, 4>({_F}, "
            "unsigned int)", op)


# (CUDA kernel name, MLX primitive name as a Metal DOT label)
EMBED = (f"{_CU}gather<float, unsigned int, 1, 2, 1>(const float *, float *, const unsigned int "
         "*, long, mlx::core::cu::Shape<2>, mlx::core::cu::Strides<2>, int)", "Gather")
RMS_NORM = (f"{_CU}rms_norm<float, 256, 4>(const float *, const float *, float *, float, int, "
            "long, long)", "RMSNorm")
QMV = (f"{_CU}qmv_kernel<8, 4, 64, false, 4, float, unsigned char, float>(const float *, "
       "const unsigned char *, const float *, const float *, float *, int, int)",
       "QuantizedMatmul")
# One CUDA kernel, two roles: the prefill GEMM (dense and routed) and, at decode, the routed
# experts when tokens x top_k >= 8. Metal names the two primitives apart.
QMM_SM80 = (f"{_CU}qmm_sm80_kernel<float, 64, 4, true, 128, 128, 32>(const unsigned int *, "
            "const float *, const float *, const float *, float *, const unsigned int *, int, "
            "int)", "QuantizedMatmul")
QMM_SM80_GATHER = (QMM_SM80[0], "GatherQMM")
GATHER_QMV = (f"{_CU}gather_qmv_kernel<8, 4, 64, false, 4, float, unsigned char, float>(const "
              "float *, const unsigned char *, const float *, const float *, float *, const "
              "unsigned int *, const unsigned int *, int, int, int)", "GatherQMM")
ROPE = (f"{_CU}rope_single<float, false, false>({_F}, const int *, float, float, long, "
        "mlx::core::cu::Shape<2>)", "RoPE")
KV_UPDATE = (f"{_CU}slice_update_op<float, long, 3>(const float *, float *, long, "
             "mlx::core::cu::Shape<3>, mlx::core::cu::Strides<3>)", "SliceUpdate")
SDPA = (f"{_CU}kernel_sdpav_1pass<float, false, 128>(const float *, const float *, const float "
        "*, float *, const float *, mlx::core::cu::AttnParams)", "ScaledDotProductAttention")
ADD = _binary("Add")
MULTIPLY = _binary("Multiply")
SUBTRACT = _binary("Subtract")
DIVIDE = _binary("Divide", "vs")
LOGADDEXP = _binary("LogAddExp", "vs")
EXP = _unary("Exp")
SQRT = _unary("Sqrt")
SIGMOID = _unary("Sigmoid")
SOFTMAX = (f"{_CU}softmax<float, float, 256, 4>({_F}, int)", "Softmax")
LOGSUMEXP = (f"{_CU}logsumexp<float, float, 256, 4>({_F}, int)", "LogSumExp")
TOPK_SORT = (f"{_CU}block_sort_kernel<float, unsigned int, true, 32, 4>(const float *, "
             "unsigned int *, int, long, long, long, long)", "ArgPartition")
TAKE_ALONG = (f"{_CU}gather_axis<float, unsigned int, true, true, int>(const float *, const "
              "unsigned int *, float *, int, int, int, int, int)", "GatherAxis")
HASH_TAKE = (f"{_CU}gather<unsigned int, unsigned int, 1, 2, 1>(const unsigned int *, unsigned "
             "int *, const unsigned int *, long, mlx::core::cu::Shape<2>, "
             "mlx::core::cu::Strides<2>, int)", "Gather")
ROW_SUM = (f"{_CU}row_reduce_simple<float, float, mlx::core::cu::Sum, 4>({_F}, unsigned long, "
           "int)", "Sum")
COL_SUM = (f"{_CU}col_reduce_small<float, float, mlx::core::cu::Sum, 1, 2>({_F}, "
           "mlx::core::cu::ColReduceArgs)", "Sum")
ARANGE = (f"{_CU}arange<unsigned int, unsigned int, 4>(unsigned int *, unsigned int, unsigned "
          "int, unsigned int)", "Arange")
COPY_G_ND = (f"{_CU}copy_g_nd<float, float, int, 3>({_F}, int, mlx::core::cu::Shape<3>, "
             "mlx::core::cu::Strides<3>)", "Broadcast")
SILU = ("void mlx::core::cu::SigmoidAMultiplyAB_V_f4_5126743198_contiguous<unsigned int, 4>"
        f"({_F}, unsigned int)", "CompiledSigmoidMultiply")
FUSED_MOE = ("void mlxcel::cuda::fused_moe_decode_kernel<float, 8, 4>(const float *, const "
             "unsigned char *, const float *, const unsigned int *, const float *, float *, int, "
             "int)", "CustomKernel")
ARG_REDUCE = (f"{_CU}arg_reduce_general<float, mlx::core::cu::ArgMax<float>, 1024, 4>(const "
              "float *, unsigned int *, long, mlx::core::cu::Shape<1>, "
              "mlx::core::cu::Strides<1>, int, long)", "ArgReduce")

_METAL = False
_LOG: list[tuple[str, int]] | None = None
_CAPTURE: list[str] | None = None


def setup(backend: str) -> None:
    """Name kernels for the backend; log them when a profiler stand-in asks (kernel-log.md)."""
    global _METAL, _LOG
    _METAL = backend == "metal"
    path = os.environ.get("STANDIN_KERNEL_LOG")
    if path:
        _LOG = []
        atexit.register(_append_log, path, os.getpid())


@contextmanager
def launch(kernel: tuple[str, str]) -> Iterator[None]:
    if _CAPTURE is not None:
        _CAPTURE.append(kernel[1])
    if _LOG is None:
        yield
        return
    # The op's own CPU time, the stand-in's device time: a GPU kernel's time does not grow
    # while the host is busy, and wall time did. On a loaded CI host the short profile's ops
    # then took longer than the long one's, and the delta left the expert gather out.
    start = time.thread_time_ns()
    yield
    _LOG.append((kernel[1] if _METAL else kernel[0], time.thread_time_ns() - start))


@contextmanager
def capture() -> Iterator[list[str]]:
    """Record the ops of what runs inside (one decode token)."""
    global _CAPTURE
    _CAPTURE = []
    try:
        yield _CAPTURE
    finally:
        _CAPTURE = None


def _append_log(path: str, pid: int) -> None:
    lines = "".join(json.dumps({"name": name, "ns": ns, "pid": pid}) + "\n"
                    for name, ns in _LOG or [])
    with open(path, "a", encoding="utf-8") as log:
        log.write(lines)
