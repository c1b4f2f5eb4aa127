"""The pieces a record is made of: measurements, arm rows, profiles, groups, missing cells."""

from dataclasses import field

from jobs.parsers.readings import PathCounts
from jobs.profiles.attribution import Attribution
from jobs.record.attempts import Gate
from jobs.record.gpu_state import GpuReading
from jobs.statistics.adaptive import Repeats
from jobs.statistics.headline import Comparison
from jobs.statistics.spans import Ratio, Span
from jobs.strict import Lean, Strict, slotted


@slotted
class Measurement:
    cell_id: str
    arm: str
    repeat: int
    order: int
    worker: str
    hostname: str
    commit: str
    attempt: int
    started: str
    ended: str
    decode_tps: float
    prefill_tps: float
    decode_ms: float | None
    prefill_ms: float | None
    prompt_tokens: int
    generated_tokens: int
    peak_gb: float | None
    load1_before: float
    load1_after: float
    exit_code: int
    argv: list[str]
    env: dict[str, str]
    adaptive: bool
    build_cached: bool | None
    jit_cache: str | None
    # The conditions it ran under, and what was wrong with them (jobs/record/fidelity.py).
    gate: Gate | None
    host_lease: bool
    flags: list[str]
    # What the cell asked for (jobs/record/validity.py), and what the parser noted beside the
    # figures.
    asked_prompt_tokens: int | None = None
    asked_tokens: int | None = None
    notes: list[str] = field(default_factory=list)
    # Each run judged on its own (jobs/record/run_flags.py): its length and GPU state around it.
    wall_s: float = 0.0
    gpu_before: GpuReading | None = None
    gpu_after: GpuReading | None = None
    gpu_start: list[GpuReading] = field(default_factory=list)
    gpu_clocks: str | None = None
    # Another sweep that measured on this host during its group, before it (its run's record).
    other_sweep: str | None = None


class ArmRow(Lean):
    arm: str
    baseline: bool
    n: int
    expected: int
    prompt_tokens: list[int]
    decode_tps: Span | None
    prefill_tps: Span | None
    prefill_ms: Span | None
    peak_gb: Span | None
    decode_vs_baseline: Ratio | None
    prefill_vs_baseline: Ratio | None
    load1: Span | None
    hosts: list[str]
    commits: list[str]
    aa: bool = False
    # Against the baseline: ranges, rank test, noise floor and the headline answer.
    decode_comparison: Comparison | None = None
    prefill_comparison: Comparison | None = None
    flagged: int = 0


class GroupProfile(Strict):
    """The group's profile cell, attributed to phases by the sweep's rules."""

    cell_id: str
    attempt: int
    worker: str
    hostname: str
    tool: str
    tokens: list[int]
    attribution: Attribution
    paths: PathCounts | None
    first_call_path: str | None
    arch: str | None
    notes: list[str]


class Group(Lean):
    """The cells compared with each other: one commit, backend and model (thousands of them
    in a large sweep: `Lean`)."""

    commit: str
    backend: str
    model: str
    rows: list[ArmRow]
    measurements: list[Measurement]
    profile: GroupProfile | None = None
    repeats: Repeats | None = None
    # Same-host pairing or round-robin order broken (jobs/record/attempt_log.py).
    order: list[str] = []

    def row(self, arm: str) -> ArmRow | None:
        return next((r for r in self.rows if r.arm == arm), None)


class Missing(Lean):
    cell_id: str
    kind: str
    commit: str
    backend: str
    model: str
    arm: str
    repeat: int
    status: str
    reason: str


class Skipped(Lean):
    """An adaptive repeat the rule did not need: every comparison was decided before it."""

    cell_id: str
    commit: str
    backend: str
    model: str
    arm: str
    repeat: int
    reason: str


@slotted
class Evidence:
    """An attempt the record read, by the sha256 of its result and its manifest."""

    cell_id: str
    attempt: int
    used: bool
    result_sha256: str
    manifest_sha256: str


class BuildTime(Lean):  # one per commit, backend and worker
    commit: str
    backend: str
    worker: str
    recipe: str
    wall_s: float | None
    built_at: str | None
    command: list[list[str]]
    # A build a cell reused: its command, time and logs are the cache entry's, where it was
    # built; `logs` are its steps' output files (under the attempt's build/ when built cold).
    cached: bool = False
    logs: list[str] = []


class Meta(Strict):
    """Provenance a reader needs before any figure: where, what, when, how it was built."""

    date: str
    mlx_pins: dict[str, str]
    builds: list[BuildTime]
    env: dict[str, dict[str, str]]
    toolchains: dict[str, str] = {}
    protocols: list[int] = []
