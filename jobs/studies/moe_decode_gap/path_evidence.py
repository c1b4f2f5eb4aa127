"""Which decode path a profile proves: the M = 1 gather, the fused kernel, or not determined.

A path is proven by `[QWEN3_MOE_SPARSE]` lines or by a decode kernel (op) whose identity only
that path launches; docs/verdict.md gives each one with the source that shows it. Generic
kernels prove nothing: `copy_g_nd` and `arange` serve every copy and index, and MLX's
`qmm_sm80_kernel` takes the gather's index pointers in every launch, dense or gathered
(mlx/backend/cuda/quantized/qmm/qmm_sm80.cu passes null ones for QuantizedMatmul), so its
signature cannot say which primitive launched it.
"""

import re
from collections.abc import Sequence
from typing import Literal, Protocol

from jobs.parsers.readings import PathCounts
from jobs.strict import Strict

Path = Literal["gather", "fused"]

# Per backend: patterns (case-insensitive search) of names only that path launches.
PROOF: dict[str, dict[Path, tuple[str, ...]]] = {
    "cuda": {
        # MLX: gather_qmv_kernel is launched only by gather_qmv(), called only from
        # GatherQMM::eval_gpu (quantized/quantized.cpp); fp_gather_qmv is its fp-quantized twin
        # on MLX 0.32 (MLXCEL-FACTS, measured on an H200); gemv_gather only from
        # GatherMM::eval_gpu (matmul.cpp, gemms/gemv.cu).
        "gather": (r"\bgather_qmv_kernel\b", r"\bfp_gather_qmv\b", r"\bgemv_gather\b"),
        # mlxcel's own fused decode-MoE kernel (mlxcel::cuda::fused_moe...).
        "fused": (r"fused_?moe",),
    },
    # The fused kernel is a CustomKernel on Metal, which any metal_kernel op also is: never
    # proof there.
    "metal": {"gather": (), "fused": ()},
}
# On every backend: a name that is an MLX primitive itself (Metal's DOT labels, and what the
# CPU stand-ins log for "cuda") proves the gather when it is GatherQMM or GatherMM.
PRIMITIVES: dict[Path, tuple[str, ...]] = {"gather": (r"^gatherqmm$", r"^gathermm$"),
                                           "fused": ()}


class DecodeKernel(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def launches_per_token(self) -> float: ...


class PathFinding(Strict):
    path: Path | None  # None: not determined
    why: str
    kernels: list[str] = []  # the decode kernels that prove it


def decode_path(backend: str, kernels: Sequence[DecodeKernel], paths: PathCounts | None
                ) -> PathFinding:
    """The path from the lines where the family prints them, else from identity kernels."""
    if paths is not None and (paths.decode_fused or paths.decode_gather):
        if paths.decode_fused or not paths.decode_gather:
            return PathFinding(path="fused", why=(
                f"[QWEN3_MOE_SPARSE] lines: {paths.decode_gather} gather_qmm and "
                f"{paths.decode_fused} fused decode calls"))
        return PathFinding(path="gather", why=(f"[QWEN3_MOE_SPARSE] lines: {paths.decode_gather}"
                                               " gather_qmm decode calls, none fused"))
    proof = PROOF.get(backend, {})
    found = {p: [k.name for k in kernels if k.launches_per_token > 0
                 and any(re.search(rx, k.name, re.IGNORECASE)
                         for rx in (*proof.get(p, ()), *PRIMITIVES[p]))]
             for p in ("gather", "fused")}
    if found["fused"]:
        return PathFinding(path="fused", why=(f"decode launches the fused kernel "
                                              f"({_short(found['fused'][0])})"),
                           kernels=found["fused"])
    if found["gather"]:
        return PathFinding(path="gather", why=(f"decode launches {_short(found['gather'][0])}, "
                                               "which only the gather launches"),
                           kernels=found["gather"])
    return PathFinding(path=None, why=(
        "path not determined: no [QWEN3_MOE_SPARSE] decode lines (Qwen3-MoE only) and no "
        f"decode kernel whose identity proves a path on {backend} (copies, index kernels and "
        "qmm_sm80 serve both paths)"))


def _short(name: str) -> str:
    """`void mlx::core::cu::gather_qmv_kernel<...>(...)` -> `gather_qmv_kernel`."""
    head = name.split("(")[0].split("<")[0]
    return head.rsplit("::", 1)[-1].split()[-1] if head.strip() else name
