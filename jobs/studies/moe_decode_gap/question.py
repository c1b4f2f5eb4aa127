"""The MoE decode-gap study's question, as a sweep asks it (`question:` in the sweep file): is
the M = 1 expert gather the decode gap's dominant term? The sweep spec lists the questions it
can ask; everything that answers one lives beside it in this folder."""

from typing import Literal

from pydantic import Field

from jobs.strict import Strict


class Question(Strict):
    """What the record must answer: is the M = 1 expert gather the decode gap's dominant term?"""

    kind: Literal["moe-decode-gap"]
    candidate: str = Field(description="the arm whose gap is explained (mlxcel)")
    control: str = Field(description="a model whose decode reaches the fused kernel")
    fused_off: str | None = Field(default=None, description="the control's fused-off arm")
    families: dict[str, str] = Field(description="model -> MoE family, for the models asked about")
    not_comparable: list[list[str]] = Field(default_factory=list)
    gather_phase: str = "expert gather"
    fused_phase: str = Field(default="fused moe", description=(
        "the phase of mlxcel's fused decode-MoE kernel: the path evidence of families that "
        "print no [QWEN3_MOE_SPARSE] lines"))
    dominant_share: float = Field(default=0.5, gt=0, le=1)
    gap_fraction: float = Field(default=0.5, gt=0, le=1)
