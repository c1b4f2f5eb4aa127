"""Where a decode token's time goes: kernels (or ops) by phase, and the time the GPU was idle.

Names go to phases by the sweep's rules (jobs/profiles/phases.py): a family's own rules first, then
the default ones, first match wins (case-insensitive search). A kernel whose role depends on
the shape goes by the run's evidence instead (`_by_evidence`). What no rule takes is
unclassified, shown and never hidden. GPU-idle time is the unprofiled wall time of a decode
token minus the profiled kernel time of one; a negative difference is shown as it is.
"""

import re

from jobs.parsers.readings import KernelStat, PathCounts, ProfileReading
from jobs.parsers.timeline import DecodeTimeline, timeline_flags
from jobs.profiles.kernel_shape import DECODE_TILE_M, tile_m
from jobs.profiles.phases import EvidenceRule, PhaseRules
from jobs.strict import Strict

UNCLASSIFIED = "unclassified"
# How close launches per token must come to a whole multiple of the MoE calls per token.
_MULTIPLE_TOLERANCE = 0.01


class KernelRow(Strict):
    name: str
    phase: str
    launches_per_token: float
    us_per_token: float | None
    share: float | None
    evidence: str | None = None  # why a shape-dependent kernel went where it went


class PhaseRow(Strict):
    phase: str
    kernels: int
    launches_per_token: float
    us_per_token: float | None
    share: float | None  # of the kernel time per token
    # Of the profiled wall of the decode window: busy time over that wall, the share a
    # timeline can state; a kernel sum over an unprofiled wall is never shown (it tops 100 %).
    wall_share: float | None = None
    busy_us_per_token: float | None = None  # its kernels' share of the busy time (timeline)
    busy_share: float | None = None  # of the busy time per token


class Idle(Strict):
    """The token's unprofiled wall time against its profiled kernel time."""

    wall_us_per_token: float
    kernel_us_per_token: float
    idle_us_per_token: float  # wall minus kernels; negative when kernels exceed the wall
    source: str  # which unprofiled measurements the wall time comes from


class Attribution(Strict):
    family: str | None = None
    timed: bool
    total_us_per_token: float | None
    kernels: list[KernelRow]
    phases: list[PhaseRow]
    idle: Idle | None = None
    notes: list[str] = []
    timeline: DecodeTimeline | None = None  # busy and idle from the kernel trace

    def phase(self, name: str) -> PhaseRow | None:
        return next((p for p in self.phases if p.phase == name), None)


def phase_of(name: str, rules: PhaseRules, family: str | None = None) -> str:
    """The phase a name takes by name rules alone (shape-dependent kernels never come here)."""
    for phase, patterns in rules.ordered(family):
        if any(re.search(p, name, re.IGNORECASE) for p in patterns):
            return phase
    return UNCLASSIFIED


def attribute(reading: ProfileReading, rules: PhaseRules,
              family: str | None = None) -> Attribution:
    timed = all(k.us_per_token is not None for k in reading.kernels)
    total = sum(k.us_per_token or 0.0 for k in reading.kernels) if timed else None
    if not total:
        # A decode window that kept no kernel time (a loaded host ran the short profile slower
        # than the long one) has nothing to split: shares of nothing are not a reading.
        timed, total = False, None
    rows = [_row(k, rules, family, reading.paths, total) for k in reading.kernels]
    rows.sort(key=lambda r: (-(r.us_per_token or 0.0), -r.launches_per_token, r.name))
    phases = [_phase(p, [r for r in rows if r.phase == p], total)
              for p in [*rules.names(family), UNCLASSIFIED]]
    a = Attribution(family=family, timed=timed, total_us_per_token=total, kernels=rows,
                    phases=phases, notes=[f"{r.name}: {r.evidence}" for r in rows
                                          if r.evidence])
    return with_timeline(a, reading.timeline) if reading.timeline else a


def with_timeline(a: Attribution, timeline: DecodeTimeline) -> Attribution:
    """Each phase's share of the busy time (its kernels' even shares of every busy instant)
    and of the profiled wall of the same window; both stay within 100 % by construction."""
    # The record judges the window, not the parser: a stored reading parses the same again.
    timeline = timeline.model_copy(update={"flags": timeline_flags(
        timeline.split, timeline.profiled_wall_us, timeline.unprofiled_wall_us)})
    busy = {k.name: k.busy_us for k in timeline.split.kernels}
    wall = timeline.profiled_wall_us if timeline.wall_usable else None
    phases = []
    for p in a.phases:
        us = sum(busy.get(r.name, 0.0) for r in a.kernels if r.phase == p.phase)
        phases.append(p.model_copy(update={
            "busy_us_per_token": us,
            "busy_share": us / timeline.split.busy_us if timeline.split.busy_us > 0 else None,
            "wall_share": us / wall if wall and wall > 0 else None}))
    return a.model_copy(update={"phases": phases, "timeline": timeline})


def with_idle(a: Attribution, wall_us_per_token: float, source: str) -> Attribution:
    """The attribution with its GPU-idle row: never clamped, so a negative one shows."""
    if a.total_us_per_token is None:
        return a
    idle = Idle(wall_us_per_token=wall_us_per_token, kernel_us_per_token=a.total_us_per_token,
                idle_us_per_token=wall_us_per_token - a.total_us_per_token, source=source)
    return a.model_copy(update={"idle": idle})


def _row(k: KernelStat, rules: PhaseRules, family: str | None, paths: PathCounts | None,
         total: float | None) -> KernelRow:
    rule = rules.evidence_rule(k.name)
    phase, evidence = (_by_evidence(k, rule, paths) if rule
                       else (phase_of(k.name, rules, family), None))
    return KernelRow(name=k.name, phase=phase, launches_per_token=k.launches_per_token,
                     us_per_token=k.us_per_token, evidence=evidence,
                     share=(k.us_per_token or 0.0) / total if total else None)


def _by_evidence(k: KernelStat, rule: EvidenceRule, paths: PathCounts | None
                 ) -> tuple[str, str]:
    """The evidence rule (docs/verdict.md): a kernel in the decode table (it grew with the
    token count, so it is decode work, not the prefill or load) is `rule.phase` only when
    the [QWEN3_MOE_SPARSE] lines say decode took gather_qmm and its launches per token are a
    whole multiple (1 to max) of the decode MoE calls per token."""
    if paths is None or paths.decode_calls_per_token is None:
        return _by_shape(k, rule)
    calls = paths.decode_calls_per_token
    if paths.decode_fused or not paths.decode_gather or calls <= 0:
        return UNCLASSIFIED, (f"role depends on the shape; decode MoE calls took "
                              f"{paths.decode_gather} gather_qmm and {paths.decode_fused} "
                              f"fused, so its decode launches are not the gathered experts")
    times = k.launches_per_token / calls
    whole = round(times)
    if 1 <= whole <= rule.max_calls_per_moe_call and abs(times - whole) <= _MULTIPLE_TOLERANCE:
        return rule.phase, (f"{rule.phase} by evidence: {k.launches_per_token:g} decode "
                            f"launches/token = {whole} x {calls:g} gather_qmm MoE calls/token")
    return UNCLASSIFIED, (f"role depends on the shape; its {k.launches_per_token:g} decode "
                          f"launches/token are not a whole multiple (1 to "
                          f"{rule.max_calls_per_moe_call}) of the {calls:g} MoE calls/token")


def _by_shape(k: KernelStat, rule: EvidenceRule) -> tuple[str, str]:
    """Without MoE lines: a decode-table kernel whose tile says one token's rows (M <= 16) is
    a one-token product that MLX sent to qmm_sm80 rather than qmv, i.e. with M x B >= 8
    products (QuantizedMatmul / GatherQMM::eval_gpu): at one token per step, the routed experts
    (B = top_k). It is placed there; it is never path evidence
    (jobs/studies/moe_decode_gap/path_evidence.py)."""
    tile = tile_m(k.name)
    if tile is not None and tile <= DECODE_TILE_M:
        return rule.phase, (f"{rule.phase} by shape: {k.launches_per_token:g} decode "
                            f"launches/token with tile M = {tile} (one token's rows); the "
                            "shape places it, it proves no decode path")
    seen = ("does not carry its tile" if tile is None
            else f"has tile M = {tile}, more than one token's rows")
    return UNCLASSIFIED, (f"role depends on the shape; no [QWEN3_MOE_SPARSE] lines to tie its "
                          f"{k.launches_per_token:g} decode launches/token to, and its name "
                          f"{seen}")


def _phase(phase: str, rows: list[KernelRow], total: float | None) -> PhaseRow:
    us = sum(r.us_per_token or 0.0 for r in rows) if total is not None else None
    return PhaseRow(phase=phase, kernels=len(rows),
                    launches_per_token=sum(r.launches_per_token for r in rows),
                    us_per_token=us, share=us / total if us is not None and total else None)
