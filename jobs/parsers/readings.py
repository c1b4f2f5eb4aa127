"""What a parser reads out of one run: a reading, or the reason there is none."""

from typing import Literal

from jobs.parsers.timeline import DecodeTimeline
from jobs.strict import Strict

FailureKind = Literal["error", "oom", "timeout", "unparseable", "build", "setup", "cancelled",
                      "store", "refused"]


class RunOutput(Strict):
    """One finished command, as a parser sees it.

    `files` holds the text files the command created or changed under `{out}`, by path
    relative to `{out}`: a driver whose result is a file (bench_mlxlm.py's CSV) is read there.
    """

    stdout: str
    stderr: str
    exit_code: int
    timed_out: bool = False
    timeout_s: float | None = None
    files: dict[str, str] = {}


class BenchReading(Strict):
    kind: Literal["bench"] = "bench"
    prompt_tokens: int
    generated_tokens: int
    prefill_tps: float
    decode_tps: float
    prefill_ms: float | None = None
    decode_ms: float | None = None
    peak_gb: float | None = None
    load_s: float | None = None
    finish_reason: str | None = None
    decode_path: str | None = None  # `Decode path:` (newer mlxcel commits only)
    baseline_version: str | None = None  # the baseline's `mlx-lm-<ver>` / `mlx-vlm-<ver>`
    notes: list[str] = []


class KernelStat(Strict):
    """One kernel (or op) per decode token; `us_per_token` is None where only counts exist."""

    name: str
    launches_per_token: float
    us_per_token: float | None


class PathCounts(Strict):
    """`[QWEN3_MOE_SPARSE] path=... tokens=N gate=...ms expert=...ms combine=...ms` lines, one
    per MoE call (Qwen3-MoE only); decode calls have tokens=1.

    The ms sums are over decode calls; the hook synchronises after each phase, so they are
    attribution, never throughput. `decode_calls_per_token` comes from a two-run delta.
    """

    decode_fused: int = 0
    decode_gather: int = 0
    prefill_fused: int = 0
    prefill_gather: int = 0
    decode_gate_ms: float = 0.0
    decode_expert_ms: float = 0.0
    decode_combine_ms: float = 0.0
    decode_calls_per_token: float | None = None


class ProfileReading(Strict):
    kind: Literal["profile"] = "profile"
    tool: Literal["nsys-delta", "cupti-delta", "metal-dot"]
    tokens: list[int]
    kernels: list[KernelStat]
    paths: PathCounts | None = None
    first_call_path: str | None = None
    arch: str | None = None
    notes: list[str] = []
    timeline: DecodeTimeline | None = None  # busy and idle per token, where a trace was kept


class ProfileInput(Strict):
    """What a profile parser reads: each step's output, and the text files it wrote."""

    steps: dict[str, RunOutput]
    files: dict[str, str] = {}


class Failure(Strict):
    kind: FailureKind
    reason: str


Parsed = BenchReading | Failure
ProfileParsed = ProfileReading | Failure
