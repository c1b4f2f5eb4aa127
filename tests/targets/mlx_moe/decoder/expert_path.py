"""Which expert path a decode token takes: the environment, the family and the expert width
decide, as they do in mlxcel."""

from __future__ import annotations

from collections.abc import Mapping

from .config import ModelConfig
from .fused_families import FUSED_FAMILIES

FUSED_ENV = "MLXCEL_FUSED_MOE"
MAX_DFF_ENV = "MLXCEL_FUSED_MOE_MAX_DFF"
# The widest expert the fused path takes (mlxcel's sources say 4096, or 8192 on CUDA).
DEFAULT_MAX_DFF = 4096
OFF = ("0", "false", "off", "no")


class PathError(Exception):
    """An expert-path variable holds a value that cannot be read."""


def decode_expert_path(c: ModelConfig, env: Mapping[str, str]) -> str:
    """`fused` or `gather_qmm`."""
    if env.get(FUSED_ENV, "1").strip().lower() in OFF:
        return "gather_qmm"
    raw = env.get(MAX_DFF_ENV, str(DEFAULT_MAX_DFF))
    try:
        max_dff = int(raw)
    except ValueError:
        raise PathError(f"{MAX_DFF_ENV}={raw!r} is not an integer") from None
    if c.family not in FUSED_FAMILIES or c.expert_width > max_dff:
        return "gather_qmm"
    return "fused"
