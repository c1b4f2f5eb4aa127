"""The verdict of the MoE decode-gap question, by a rule stated here and in docs/verdict.md.

For one backend and one model of a family asked about, the M = 1 expert gather is the
**dominant term** of the decode gap when all of these hold:
  1. gap: the candidate's decode tok/s range lies entirely below the baseline's;
  2. path: the decode takes the gather (`path=gather_qmm tokens=1` lines, no fused decode);
  3. share: the gather phase holds at least `dominant_share` of the candidate's per-token
     kernel time (two-run nsys delta), counting unclassified time against it;
  4. size: the gather's per-token time is at least `gap_fraction` of the per-token gap
     (1e6/decode_tps of the candidate minus the baseline's, from the unprofiled means).
It is **not dominant** when 1 and 2 hold but 3 or 4 fails even with every unclassified
microsecond given to the gather; **no gap** when 1 fails; **not settled** when a measurement
the rule needs is missing, which the verdict lists.
"""

from typing import Literal

from jobs.attribution import UNCLASSIFIED, Attribution
from jobs.model import Strict
from jobs.readings import PathCounts
from jobs.stats import Ratio, Span
from jobs.sweep import Question

Outcome = Literal["dominant", "not dominant", "no gap", "not settled"]

RULE = (
    "The M = 1 expert gather is the dominant term of a decode gap when (1) the candidate's "
    "decode tok/s range lies entirely below the baseline's; (2) decode MoE calls take the "
    "gather path (`path=gather_qmm tokens=1`, no fused decode); (3) the gather phase holds at "
    "least {share:.0%} of the candidate's per-token kernel time from the two-run nsys delta, "
    "with unclassified time counted against it; and (4) the gather's per-token time is at "
    "least {gap:.0%} of the per-token gap (1e6/decode tok/s, candidate minus baseline, "
    "unprofiled means). It is not dominant when (1) and (2) hold and (3) or (4) fails even "
    "with all unclassified time given to the gather; no gap when (1) fails; not settled when a "
    "measurement the rule needs is missing."
)


class Verdict(Strict):
    commit: str
    backend: str
    model: str
    family: str
    outcome: Outcome
    reason: str
    settled_by: list[str]
    missing: list[str]


class Evidence(Strict):
    """What the rule reads for one backend and model; None where it was not measured."""

    commit: str
    backend: str
    model: str
    family: str
    candidate: Span | None
    baseline: Span | None
    ratio: Ratio | None
    attribution: Attribution | None
    paths: PathCounts | None
    profile_ref: str | None
    bench_ref: str


def rule_text(q: Question) -> str:
    return RULE.format(share=q.dominant_share, gap=q.gap_fraction)


def decide(e: Evidence, q: Question) -> Verdict:
    if e.candidate is None or e.baseline is None or e.ratio is None:
        return _verdict(e, "not settled", "decode throughput of the candidate or the baseline "
                        "is missing", missing=[f"decode rows of {e.bench_ref}"])
    if e.candidate.max >= e.baseline.min:
        return _verdict(e, "no gap", f"decode ranges overlap or the candidate is faster "
                        f"({e.candidate.min:.2f} to {e.candidate.max:.2f} vs "
                        f"{e.baseline.min:.2f} to {e.baseline.max:.2f} tok/s)", [e.bench_ref])
    missing = _missing(e)
    if missing:
        return _verdict(e, "not settled", "the gap is measured, its attribution is not",
                        [e.bench_ref], missing)
    assert e.attribution and e.paths and e.profile_ref
    if e.paths.decode_fused or not e.paths.decode_gather:
        return _verdict(e, "not dominant", f"decode does not take the M = 1 gather: "
                        f"{e.paths.decode_gather} gather_qmm and {e.paths.decode_fused} fused "
                        f"decode calls", [e.profile_ref])
    return _by_time(e, q, e.attribution, e.candidate, e.baseline, e.profile_ref)


def _verdict(e: Evidence, outcome: Outcome, reason: str, settled_by: list[str] | None = None,
             missing: list[str] | None = None) -> Verdict:
    return Verdict(commit=e.commit, backend=e.backend, model=e.model, family=e.family,
                   outcome=outcome, reason=reason, settled_by=settled_by or [],
                   missing=missing or [])


def _missing(e: Evidence) -> list[str]:
    missing = []
    if e.attribution is None:
        missing.append(f"kernel profile for {e.backend} / {e.model}")
    elif not e.attribution.timed:
        missing.append(f"per-kernel time on {e.backend} (only op counts were measured; "
                       "the Metal System Trace is kept but not read)")
    if e.paths is None:
        missing.append(f"path= lines for {e.backend} / {e.model} "
                       "(MLXCEL_PROFILE_QWEN3_MOE_DETAIL=1 in the profile)")
    return missing


def _by_time(e: Evidence, q: Question, a: Attribution, candidate: Span, baseline: Span,
             profile_ref: str) -> Verdict:
    gather, unclassified = a.phase(q.gather_phase), a.phase(UNCLASSIFIED)
    total = a.total_us_per_token or 0.0
    g_us = (gather.us_per_token or 0.0) if gather else 0.0
    u_us = (unclassified.us_per_token or 0.0) if unclassified else 0.0
    gap_us = 1e6 / candidate.mean - 1e6 / baseline.mean
    share = g_us / total if total else 0.0
    share_high = (g_us + u_us) / total if total else 0.0
    settled = [profile_ref, e.bench_ref]
    facts = (f"gather {g_us:.1f} µs/token = {share:.1%} of {total:.1f} µs/token "
             f"({u_us:.1f} unclassified); gap {gap_us:.1f} µs/token")
    if share >= q.dominant_share and g_us >= q.gap_fraction * gap_us:
        return _verdict(e, "dominant", facts, settled)
    if share_high < q.dominant_share or g_us + u_us < q.gap_fraction * gap_us:
        return _verdict(e, "not dominant", facts, settled)
    return _verdict(e, "not settled", facts + "; unclassified time decides it", settled,
                    [f"phase rules covering the unclassified kernels of {profile_ref}"])
