"""The verdict of the MoE decode-gap question, by a rule stated here and in docs/verdict.md.

For one backend and one model of a family asked about, the M = 1 expert gather is the
**dominant term** of the decode gap when all of these hold:
  1. gap: the headline answer (jobs/studies/moe_decode_gap/gap.py) on unflagged runs says the
     candidate's decode tok/s differs from the baseline's (ranges apart, rank test different,
     beyond the A/A floor), and it is slower; undecided (ranges apart, the words "not yet
     known" and, within the floor, "not significant") is "not settled: more repeats",
     and flagged runs whose absence leaves it undecided are "not settled: host";
  2. path: decode takes the gather: `[QWEN3_MOE_SPARSE] path=gather_qmm tokens=1` lines and no
     fused decode call where the family prints them, else a decode kernel only the gather
     launches and none only the fused path launches (jobs/studies/moe_decode_gap/path_evidence.py);
  3. share: the gather phase holds at least `dominant_share` of the candidate's per-token
     kernel time, unclassified time counted in the total and never in the gather;
  4. size: the gather's per-token time is at least `gap_fraction` of the per-token gap
     (1e6/decode tok/s of the candidate minus the baseline's, from the unprofiled means).
**Not dominant** when 1 and 2 hold but 3 or 4 fails even with every unclassified microsecond
given to the gather, or when decode takes the fused path; **no gap** when 1 fails; **not
settled** when a measurement the rule needs is missing (which the verdict lists), when the
unclassified time decides it, or on Metal, whose per-op time is not read ("trace not read").
GPU-idle time (wall per token minus kernel time per token) is never kernel time: it is in no
phase and never the gather's. It enters only through the gap in (4), so a gap made of idle
time leaves the gather too small to dominate it; the reason then says so.
"""

from typing import Literal

from jobs.parsers.readings import PathCounts
from jobs.profiles.attribution import UNCLASSIFIED, Attribution
from jobs.statistics.spans import Ratio, Span
from jobs.strict import Strict
from jobs.studies.moe_decode_gap.gap import Gap, host_reason
from jobs.studies.moe_decode_gap.path_evidence import decode_path
from jobs.studies.moe_decode_gap.question import Question

Outcome = Literal["dominant", "not dominant", "no gap", "not settled"]

RULE = (
    "The M = 1 expert gather is the dominant term of a decode gap when (1) on the runs no "
    "host flag was raised on, the candidate's decode tok/s is slower and differs from the "
    "baseline's by the headline rule (ranges apart, rank test different, beyond the A/A noise "
    "floor; undecided (ranges apart, too few runs or within the floor) is not settled: more "
    "repeats; flagged runs "
    "that leave it undecided are not settled: host); (2) decode takes the gather: "
    "[QWEN3_MOE_SPARSE] path=gather_qmm tokens=1 lines and no fused decode call where the "
    "family prints them, else a decode kernel whose identity only the gather launches and none "
    "only the fused path launches (generic copies, index kernels and qmm_sm80 prove no path: "
    "otherwise the path is not determined and the verdict not settled); (3) the gather phase "
    "holds at least {share:.0%} of the candidate's per-token kernel time, with unclassified "
    "time counted in the total and never in the "
    "gather; and (4) the gather's per-token time is at least {gap:.0%} of the per-token gap "
    "(1e6/decode tok/s, candidate minus baseline, unprofiled means). It is not dominant when "
    "(1) and (2) hold and (3) or (4) fails even with all unclassified time given to the "
    "gather, or when decode takes the fused path; no gap when (1) fails; not settled when a "
    "measurement the rule needs is missing, when unclassified time decides it, or when only "
    "op counts exist (Metal: trace not read). GPU-idle time (unprofiled wall per token minus "
    "kernel time per token) is never kernel time and never the gather's: it changes the "
    "verdict only through the gap in (4), and the reason names it when it is large."
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
    idle_us_per_token: float | None = None


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
    # The candidate against the baseline by the headline rule, on unflagged runs.
    gap: Gap | None = None


def rule_text(q: Question) -> str:
    return RULE.format(share=q.dominant_share, gap=q.gap_fraction)


def decide(e: Evidence, q: Question) -> Verdict:
    if e.candidate is None or e.baseline is None or e.ratio is None:
        return _verdict(e, "not settled", "decode throughput of the candidate or the baseline "
                        "is missing", missing=[f"decode rows of {e.bench_ref}"])
    early = _gap(e)
    if early is not None:
        return early
    assert e.gap is not None and e.gap.candidate and e.gap.baseline
    if e.attribution is None or e.profile_ref is None:
        return _verdict(e, "not settled", "the gap is measured, its attribution is not",
                        [e.bench_ref], [f"kernel profile for {e.backend} / {e.model}"])
    a = e.attribution
    gather, why, missing = _path(e, q, a)
    if gather is False:
        return _verdict(e, "not dominant", why, [e.profile_ref])
    if not a.timed and not any(k.us_per_token is None for k in a.kernels):
        # Timed kernels, yet no time between the two runs: the short one took as long as the
        # long one (a loaded host), so the difference holds no decode token to split.
        return _verdict(e, "not settled", "the profile's decode window kept no kernel time "
                        "(the short run took as long as the long one)", [e.bench_ref],
                        [f"a kernel profile for {e.backend} / {e.model} on an idle host"]
                        + missing)
    if not a.timed:
        return _verdict(e, "not settled", f"trace not read: {_op_counts(a, q)}", [e.bench_ref],
                        [f"per-kernel time on {e.backend} (only op counts were measured; the "
                         "Metal System Trace is kept but not read)"] + missing)
    if gather is None:
        return _verdict(e, "not settled", f"the gap is measured, the decode path is not: {why}",
                        [e.bench_ref], missing)
    return _by_time(e, q, a, e.gap.candidate, e.gap.baseline, e.profile_ref, why)


def _gap(e: Evidence) -> Verdict | None:
    """Rule (1): a verdict only where the headline answer says the candidate is slower."""
    g = e.gap
    if g is not None and g.undecided_by_host:
        return _verdict(e, "not settled", host_reason(g), [], [
            f"runs of {e.bench_ref} on an idle host (rerun the flagged cells)"])
    c = g.comparison if g else None
    if c is None:
        return _verdict(e, "not settled", "decode throughput of the candidate or the baseline "
                        "is missing", missing=[f"decode rows of {e.bench_ref}"])
    if c.answer == "overlap":
        return _verdict(e, "no gap", f"{c.word}: {c.reason} (decode tok/s, {c.n} against "
                        f"{c.n_baseline} unflagged runs)", [e.bench_ref])
    if c.answer == "undecided":
        return _verdict(e, "not settled", f"more repeats: {c.reason}", [],
                        [f"more repeats of {e.bench_ref}"])
    if c.ratio.mean >= 1:
        return _verdict(e, "no gap", f"the candidate is faster: {c.reason}", [e.bench_ref])
    return None


def _verdict(e: Evidence, outcome: Outcome, reason: str, settled_by: list[str] | None = None,
             missing: list[str] | None = None) -> Verdict:
    idle = e.attribution.idle if e.attribution else None
    return Verdict(commit=e.commit, backend=e.backend, model=e.model, family=e.family,
                   outcome=outcome, reason=reason, settled_by=settled_by or [],
                   missing=missing or [],
                   idle_us_per_token=idle.idle_us_per_token if idle else None)


def _path(e: Evidence, q: Question, a: Attribution) -> tuple[bool | None, str, list[str]]:
    """Does decode take the gather? True, False, or None (not determined), why, and what is
    missing. Only lines or identity kernels say it (jobs/studies/moe_decode_gap/path_evidence.py);
    a phase's launches never do, since generic copies and index kernels land in the gather
    phase by name."""
    found = decode_path(e.backend, a.kernels, e.paths)
    if found.path == "fused":
        return False, f"decode does not take the M = 1 gather: {found.why}", []
    if found.path == "gather":
        return True, f"decode takes the gather: {found.why}", []
    return None, found.why, [f"evidence of the decode path for {e.backend} / {e.model}"]


def _op_counts(a: Attribution, q: Question) -> str:
    total = sum(k.launches_per_token for k in a.kernels)
    gather = a.phase(q.gather_phase)
    top = ", ".join(f"{k.name} {k.launches_per_token:g}" for k in
                    sorted(a.kernels, key=lambda k: -k.launches_per_token)[:5])
    return (f"one decode token has {total:g} ops, {gather.launches_per_token if gather else 0:g}"
            f" of them {q.gather_phase} ({top})")


def _by_time(e: Evidence, q: Question, a: Attribution, candidate: Span, baseline: Span,
             profile_ref: str, path: str) -> Verdict:
    gather, unclassified = a.phase(q.gather_phase), a.phase(UNCLASSIFIED)
    total = a.total_us_per_token or 0.0
    g_us = (gather.us_per_token or 0.0) if gather else 0.0
    u_us = (unclassified.us_per_token or 0.0) if unclassified else 0.0
    gap_us = 1e6 / candidate.mean - 1e6 / baseline.mean
    share = g_us / total if total else 0.0
    share_high = (g_us + u_us) / total if total else 0.0
    settled = [profile_ref, e.bench_ref]
    facts = (f"{path}; gather {g_us:.1f} µs/token = {share:.1%} of {total:.1f} µs/token of "
             f"kernels ({u_us:.1f} unclassified); gap {gap_us:.1f} µs/token"
             + _idle(a, g_us, gap_us))
    if share >= q.dominant_share and g_us >= q.gap_fraction * gap_us:
        return _verdict(e, "dominant", facts, settled)
    if share_high < q.dominant_share or g_us + u_us < q.gap_fraction * gap_us:
        return _verdict(e, "not dominant", facts, settled)
    return _verdict(e, "not settled", facts + "; unclassified time decides it", settled,
                    [f"phase rules covering the unclassified kernels of {profile_ref}"])


def _idle(a: Attribution, g_us: float, gap_us: float) -> str:
    """What the GPU-idle row says about the gap; it is never added to the gather."""
    if a.idle is None:
        return "; no GPU-idle row (no unprofiled candidate run on the profile's host)"
    idle = a.idle
    text = (f"; GPU idle {idle.idle_us_per_token:.1f} µs/token of a {idle.wall_us_per_token:.1f}"
            f" µs token ({idle.idle_us_per_token / idle.wall_us_per_token:.0%})")
    if idle.idle_us_per_token < 0:
        return text + (": the profiled kernels exceed the unprofiled token (profiling "
                       "overhead); kernel times are used as measured")
    if idle.idle_us_per_token >= g_us and idle.idle_us_per_token >= 0.5 * gap_us:
        return text + (": idle time, not the gather, could hold most of the gap, which may "
                       "then be launch or host overhead rather than kernel time")
    return text
