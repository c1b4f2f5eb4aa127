"""Bisect: the first commit between a good and a bad one at which a metric got worse.

Pure: `plan` reads the commits in order (good first, bad last), what each commit has measured
so far and the rule, and says what to measure next or what is decided, and why. The
coordinator (runner/bisect/rounds.py) measures what it asks for and calls it again, so every
decision follows from the evidence alone.

A commit is **bad** when it got worse than good beyond the factor under the headline rule
(ranges apart, rank test different), the rule `benchfleet compare` gates on. It is **good**
when its range overlaps good's, or it differs from good within the factor, unless its range
overlaps bad's as well: then it is **ambiguous**, which no repeat can settle (ranges only
widen). Anything else is "not yet known" and gets the fewest repeats that let the rank test
decide. A commit that cannot be measured (it fails to build, its bench fails) is skipped, as
asv's `find` and `git bisect skip` do; when skipped commits sit right before the first bad
one, the answer names them all.
"""

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import Field

from jobs.statistics.headline import ALPHA, Comparison, compare, separated_p
from jobs.statistics.spans import Span, ratio_text
from jobs.strict import Strict

Metric = Literal["decode tok/s", "prefill tok/s"]  # both: higher is better
Verdict = Literal["good", "bad", "not yet known", "ambiguous", "untestable", "unmeasured"]
Outcome = Literal["measure", "found", "narrowed", "no regression", "undecided", "ambiguous",
                  "stopped"]


class Rule(Strict):
    metric: Metric = "decode tok/s"
    factor: float = Field(default=1.1, gt=1, description="worse means new < good / factor")
    repeats: int = Field(default=3, ge=1, le=100, description="per commit between")
    endpoint_repeats: int = Field(ge=1, le=100, description="for good and for bad")
    max_n: int = Field(default=10, ge=2, le=100, description="most repeats per commit")
    parallel: int = Field(default=1, ge=1, le=32, description="commits measured per round")


def make_rule(metric: Metric, factor: float, repeats: int, max_n: int, parallel: int) -> Rule:
    """The rule, with the endpoints measured often enough that `repeats` values at a commit
    between can be decided: their ranges apart must reach p <= ALPHA."""
    return Rule(metric=metric, factor=factor, repeats=repeats, max_n=max(max_n, repeats),
                parallel=parallel, endpoint_repeats=partner_n(repeats, max_n))


def partner_n(n: int, cap: int) -> int:
    """The fewest values (at least n) beside n values whose separated p reaches ALPHA."""
    return next((m for m in range(n, max(cap, n) + 1) if separated_p(n, m) <= ALPHA),
                max(cap, n))


class Evidence(Strict):
    """What one commit measured: the metric's values, and why other cells measured nothing."""

    values: list[float] = []
    failures: list[str] = []


class Request(Strict):
    commit: str
    repeats: int


class Judgement(Strict):
    index: int
    commit: str
    verdict: Verdict
    n: int
    span: Span | None
    vs_good: Comparison | None = None
    vs_bad: Comparison | None = None
    reason: str


class Plan(Strict):
    outcome: Outcome
    requests: list[Request] = []
    culprit: str | None = None
    last_good: str | None = None
    candidates: list[str] = []
    judgements: list[Judgement]
    reason: str


def plan(commits: Sequence[str], evidence: Mapping[str, Evidence], rule: Rule) -> Plan:
    """What to measure next, or the answer: `commits` run from good to bad, in history order."""
    good, bad = commits[0], commits[-1]
    ev = {c: evidence.get(c, Evidence()) for c in commits}
    for role, c in (("good", good), ("bad", bad)):
        if ev[c].failures and (not ev[c].values or len(ev[c].failures) >= rule.max_n):
            return _stop(commits, ev, "stopped", f"the {role} commit {c[:12]} cannot be "
                         f"measured ({ev[c].failures[0]}); bisect from a commit that builds "
                         "and runs")
    asks = [Request(commit=c, repeats=rule.endpoint_repeats - len(ev[c].values))
            for c in (good, bad) if len(ev[c].values) < rule.endpoint_repeats]
    if asks:
        p = separated_p(rule.repeats, rule.endpoint_repeats)
        decidable = (f"can be decided (ranges apart give p = {p:.3f} ≤ {ALPHA})" if p <= ALPHA
                     else f"cannot all be (ranges apart give p = {p:.3f} > {ALPHA}, so such "
                     "a commit gets more repeats)")
        return _measure(commits, ev, asks, f"measure good {good[:12]} and bad {bad[:12]} "
                        f"at {rule.endpoint_repeats} repeats each, once: every commit between "
                        f"is compared with them, and {rule.repeats} values there against "
                        f"{rule.endpoint_repeats} {decidable}")
    regression = compare(rule.metric, ev[bad].values, ev[good].values, None)
    if regression is None:
        return _stop(commits, ev, "stopped", f"good {good[:12]} measured no positive "
                     f"{rule.metric}: nothing can be compared with it")
    opened = _endpoints_open(commits, ev, rule, regression)
    if opened:
        return opened
    return _search(commits, ev, rule, regression)


def judge(index: int, commit: str, ev: Evidence, good: Sequence[float], bad: Sequence[float],
          rule: Rule) -> Judgement:
    """A commit between, against the two endpoints' values."""
    span = Span.of(ev.values)
    if not ev.values or len(ev.failures) >= rule.max_n:  # failing more often than measuring
        verdict: Verdict = "untestable" if ev.failures else "unmeasured"
        return Judgement(index=index, commit=commit, verdict=verdict, n=len(ev.values),
                         span=span,
                         reason=ev.failures[0] if ev.failures else "not measured")
    vs_good, vs_bad = (compare(rule.metric, ev.values, good, None),
                       compare(rule.metric, ev.values, bad, None))
    if vs_good is None or vs_bad is None:
        return Judgement(index=index, commit=commit, verdict="untestable", n=len(ev.values),
                         span=span, reason=f"its {rule.metric} cannot be compared (not > 0)")
    verdict, reason = _verdict(vs_good, vs_bad, rule.factor)
    return Judgement(index=index, commit=commit, verdict=verdict, n=len(ev.values), span=span,
                     vs_good=vs_good, vs_bad=vs_bad, reason=reason)


def worse_beyond(c: Comparison, factor: float) -> bool:
    """Worse than the reference beyond the factor, and decided so by the headline rule."""
    return c.answer == "differs" and c.ratio.mean < 1 / factor


def linear_scan(commits: Sequence[str], evidence: Mapping[str, Evidence], rule: Rule) -> int:
    """Measurements a scan of every commit at the same repeats would take (the commits this
    bisect found untestable counted as free)."""
    between = [c for c in commits[1:-1] if not (evidence.get(c) and not evidence[c].values
                                                 and evidence[c].failures)]
    return 2 * rule.endpoint_repeats + len(between) * rule.repeats


def _verdict(vs_good: Comparison, vs_bad: Comparison, factor: float) -> tuple[Verdict, str]:
    change = ratio_text(vs_good.ratio)
    if worse_beyond(vs_good, factor):
        return "bad", f"{change} against good, worse beyond the factor {factor:g}: {vs_good.reason}"
    if vs_good.answer == "undecided":
        return "not yet known", f"{change} against good: {vs_good.reason}"
    if vs_bad.answer == "overlap":
        return "ambiguous", (f"{change} against good, yet its range overlaps bad's as well "
                             "as good's: more repeats only widen ranges")
    like = ("its range overlaps good's" if vs_good.answer == "overlap"
            else f"it differs from good, but not worse beyond the factor {factor:g}")
    return "good", f"{change} against good: {like}"


def _endpoints_open(commits: Sequence[str], ev: Mapping[str, Evidence], rule: Rule,
                    regression: Comparison) -> Plan | None:
    """More repeats of good and bad while their comparison is open; the end when it says
    there is no regression to look for."""
    good, bad = commits[0], commits[-1]
    change = ratio_text(regression.ratio)
    if regression.answer == "undecided":
        n_good, n_bad = len(ev[good].values), len(ev[bad].values)
        more = next((k for k in range(1, rule.max_n + 1 - max(n_good, n_bad))
                     if separated_p(n_bad + k, n_good + k) <= ALPHA), None)
        if more is None:
            return _stop(commits, ev, "undecided", f"bad against good is {change}, not "
                         f"yet known at the cap (max_n = {rule.max_n}): {regression.reason}")
        return _measure(commits, ev, [Request(commit=good, repeats=more),
                                      Request(commit=bad, repeats=more)],
                        f"bad against good is {change}: {regression.reason}; "
                        f"{_repeats(more)} more each let the rank test decide")
    if not worse_beyond(regression, rule.factor):
        return _stop(commits, ev, "no regression", f"bad {bad[:12]} against good "
                     f"{good[:12]} is {change}, {regression.word}: not worse beyond the "
                     f"factor {rule.factor:g}, so there is no first bad commit to find")
    return None


def _search(commits: Sequence[str], ev: Mapping[str, Evidence], rule: Rule,
            regression: Comparison) -> Plan:
    judged = _judgements(commits, ev, rule, regression)
    hi = next(j.index for j in judged[1:] if j.verdict == "bad")
    lo = max(j.index for j in judged[:hi] if j.verdict == "good")
    inside = judged[lo + 1:hi]
    pending = [j for j in inside if j.verdict == "not yet known"]
    if pending:
        return _settle(commits, ev, rule, judged, pending)
    ambiguous = [j for j in inside if j.verdict == "ambiguous"]
    if ambiguous:
        return _stop(commits, ev, "ambiguous", f"{ambiguous[0].commit[:12]}: "
                     f"{ambiguous[0].reason}; measured again on a quieter host it may not be",
                     judged)
    untested = [j.commit for j in inside if j.verdict == "unmeasured"]
    if untested:
        picks = _spread(untested, rule.parallel)
        skipped = sum(1 for j in inside if j.verdict == "untestable")
        return _measure(commits, ev, [Request(commit=c, repeats=rule.repeats) for c in picks],
                        f"{_commits(len(inside))} between the last good {commits[lo][:12]} "
                        f"and the first bad {commits[hi][:12]}"
                        + (f", {skipped} of them untestable" if skipped else "")
                        + f": measure {', '.join(c[:12] for c in picks)}, "
                        + ("the middle one" if len(picks) == 1 else "spread evenly"), judged)
    return _answer(commits, ev, rule, judged, lo, hi)


def _judgements(commits: Sequence[str], ev: Mapping[str, Evidence], rule: Rule,
                regression: Comparison) -> list[Judgement]:
    good, bad = ev[commits[0]].values, ev[commits[-1]].values
    ends = [Judgement(index=0, commit=commits[0], verdict="good", n=len(good),
                      span=Span.of(good), reason="the good commit, as given"),
            Judgement(index=len(commits) - 1, commit=commits[-1], verdict="bad", n=len(bad),
                      span=Span.of(bad), vs_good=regression,
                      reason=f"the bad commit, as given: {ratio_text(regression.ratio)} "
                      f"against good, worse beyond the factor {rule.factor:g}")]
    return [ends[0], *(judge(i, c, ev[c], good, bad, rule)
                       for i, c in enumerate(commits[1:-1], 1)), ends[1]]


def _settle(commits: Sequence[str], ev: Mapping[str, Evidence], rule: Rule,
            judged: list[Judgement], pending: list[Judgement]) -> Plan:
    """The fewest repeats that let the rank test decide each open commit against good."""
    n_good = len(ev[commits[0]].values)
    asks, why = [], []
    for j in pending:
        more = next((k for k in range(1, rule.max_n + 1 - j.n)
                     if separated_p(j.n + k, n_good) <= ALPHA), None)
        if more is None:
            return _stop(commits, ev, "undecided", f"{j.commit[:12]}: {j.reason}; the "
                         f"cap (max_n = {rule.max_n}) leaves it not yet known", judged)
        asks.append(Request(commit=j.commit, repeats=more))
        why.append(f"{j.commit[:12]}: {j.reason}; {_repeats(more)} more let the rank test "
                   "decide")
    return _measure(commits, ev, asks, "; ".join(why), judged)


def _answer(commits: Sequence[str], ev: Mapping[str, Evidence], rule: Rule,
            judged: list[Judgement], lo: int, hi: int) -> Plan:
    skipped = [j for j in judged[lo + 1:hi] if j.verdict == "untestable"]
    later = [j.commit[:12] for j in judged[hi + 1:] if j.verdict == "good"]
    odd = (f"; {', '.join(later)} after it measured good: the metric is not monotonic over "
           "the range, and this is the first bad commit after the last good one before it"
           if later else "")
    first, last = judged[hi], judged[lo]
    if skipped:
        names = ", ".join(j.commit[:12] for j in skipped)
        reason = (f"the first bad commit is one of {names}, {first.commit[:12]}: {names} "
                  f"cannot be measured ({skipped[0].reason}), {first.commit[:12]} is bad "
                  f"({first.reason}) and {last.commit[:12]} before them is good{odd}")
        return Plan(outcome="narrowed", culprit=None, last_good=last.commit,
                    candidates=[*(j.commit for j in skipped), first.commit], judgements=judged,
                    reason=reason)
    reason = (f"{first.commit[:12]} is the first bad commit: {first.reason}. The commit before "
              f"it, {last.commit[:12]}, is good: {last.reason}{odd}")
    return Plan(outcome="found", culprit=first.commit, last_good=last.commit,
                candidates=[first.commit], judgements=judged, reason=reason)


def _repeats(count: int) -> str:
    return "1 repeat" if count == 1 else f"{count} repeats"


def _commits(count: int) -> str:
    return "1 commit lies" if count == 1 else f"{count} commits lie"


def _spread(untested: list[str], k: int) -> list[str]:
    """k commits splitting the untested ones evenly; with k = 1, the middle (the lower one
    of an even count, as `git bisect` does)."""
    count = len(untested)
    picks = {((i + 1) * (count + 1)) // (k + 1) - 1 for i in range(min(k, count))}
    return [untested[i] for i in sorted(picks)]


def _measure(commits: Sequence[str], ev: Mapping[str, Evidence], requests: list[Request],
             reason: str, judged: list[Judgement] | None = None) -> Plan:
    return Plan(outcome="measure", requests=requests, reason=reason,
                judgements=judged or _plain(commits, ev))


def _stop(commits: Sequence[str], ev: Mapping[str, Evidence], outcome: Outcome, reason: str,
          judged: list[Judgement] | None = None) -> Plan:
    return Plan(outcome=outcome, reason=reason, judgements=judged or _plain(commits, ev))


def _plain(commits: Sequence[str], ev: Mapping[str, Evidence]) -> list[Judgement]:
    """The commits as measured so far, before good and bad are compared: nothing judged."""
    judged = []
    for i, c in enumerate(commits):
        values, failures = ev[c].values, ev[c].failures
        verdict: Verdict = ("good" if i == 0 else "bad" if i == len(commits) - 1
                            else "untestable" if failures and not values else "unmeasured")
        reason = ("as given, not yet compared" if verdict in ("good", "bad")
                  else failures[0] if verdict == "untestable" else "not measured")
        judged.append(Judgement(index=i, commit=c, verdict=verdict, n=len(values),
                                span=Span.of(values), reason=reason))
    return judged
