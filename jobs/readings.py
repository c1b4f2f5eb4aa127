"""What a parser reads out of one run: a reading, or the reason there is none."""

from typing import Literal

from jobs.model import Strict

FailureKind = Literal["error", "oom", "timeout", "unparseable", "build", "setup"]


class RunOutput(Strict):
    """One finished command, as a parser sees it."""

    stdout: str
    stderr: str
    exit_code: int
    timed_out: bool = False
    timeout_s: float | None = None


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
    notes: list[str] = []


class Failure(Strict):
    kind: FailureKind
    reason: str


Parsed = BenchReading | Failure
