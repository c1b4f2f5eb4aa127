"""A bisect's record: every commit it measured, its figures, each decision and why.

Made once by the coordinator (runner/bisect/rounds.py); the Markdown is a view of it and recomputes
nothing. The rounds' own sweeps stay in Redis and the artifact store, so `benchfleet record`
can still show any round with its provenance.
"""

from jobs.compare.bisect_plan import Judgement, Outcome, Request, Rule
from jobs.statistics.headline import Comparison
from jobs.statistics.spans import ratio_text, span_text
from jobs.strict import Strict

SCHEMA = 2  # 2: comparisons carry their word; the rule's states are differs, overlap, undecided


class Measured(Strict):
    """One measurement of the bisected metric, and where it came from."""

    commit: str
    sweep_id: str
    cell_id: str
    attempt: int
    repeat: int
    worker: str
    hostname: str
    started: str
    value: float
    build_cached: bool | None
    load1_before: float
    load1_after: float
    flags: list[str]
    # Measured by an earlier sweep (`--reuse`), not by this bisect.
    reused: bool = False


class Round(Strict):
    """One decision that asked for measurements, and the sweeps that made them."""

    index: int
    reason: str
    requests: list[Request]
    sweeps: list[str]


class BisectRecord(Strict):
    schema_version: int = SCHEMA
    bisect_id: str
    created: str
    repo: str
    backend: str
    model: str
    arm: str
    rule: Rule
    good: str
    bad: str
    names: dict[str, str]  # the names given for good and bad -> their shas
    subjects: dict[str, str]  # sha -> the first line of its message
    outcome: Outcome
    culprit: str | None
    last_good: str | None
    candidates: list[str]
    reason: str
    judgements: list[Judgement]
    rounds: list[Round]
    measurements: list[Measured]
    failures: dict[str, list[str]]  # sha -> why its cells measured nothing
    measured: int  # measurements this bisect made (reused ones not counted)
    linear_scan: int  # measurements a scan of every commit at the same repeats would make
    commits_tried: int  # commits this bisect asked the fleet to build (or find built) and run


_HEADLINE = {"found": "First bad commit", "narrowed": "First bad commit narrowed to",
             "no regression": "No regression", "undecided": "Undecided",
             "ambiguous": "Ambiguous", "stopped": "Stopped", "measure": "Not finished"}


def render(r: BisectRecord) -> str:
    parts = [_opening(r), _commits(r), _rounds(r), _measurements(r)]
    return "\n".join(parts)


def _opening(r: BisectRecord) -> str:
    found = ", ".join(f"`{c[:12]}` {_subject(r, c)}" for c in r.candidates)
    names = {sha: f" (`{name}`)" for name, sha in r.names.items() if name != sha}
    lines = [f"# Bisect {r.bisect_id}\n",
             f"**{_HEADLINE[r.outcome]}{': ' + found if found else ''}.** {r.reason}.\n",
             f"- metric: {r.rule.metric} of arm `{r.arm}` on {r.backend} · {r.model} (higher "
             "is better)",
             f"- good: `{r.good[:12]}`{names.get(r.good, '')}, bad: `{r.bad[:12]}`"
             f"{names.get(r.bad, '')} in {r.repo}; {len(r.judgements) - 2} commits between, "
             "first parents only",
             f"- rule: a commit is bad when its {r.rule.metric} is worse than good's beyond "
             f"the factor {r.rule.factor:g} (mean ratio < {1 / r.rule.factor:.3f}) and the "
             "headline rule says they differ (ranges apart, rank test different); good when "
             "its range overlaps good's or it is within the factor, and it does not overlap "
             f"bad's; {r.rule.repeats} repeats per commit between, {r.rule.endpoint_repeats} "
             f"for good and bad, more only while a comparison is not yet known, up to "
             f"{r.rule.max_n}; {r.rule.parallel} commit(s) per round",
             f"- measurements: **{r.measured}** by this bisect"
             + (f" (and {sum(m.reused for m in r.measurements)} reused)"
                if any(m.reused for m in r.measurements) else "")
             + f", over {r.commits_tried} commits tried in {len(r.rounds)} rounds; a linear "
             f"scan of the range at the same repeats would make {r.linear_scan}",
             f"- made {r.created}\n"]
    return "\n".join(lines)


def _commits(r: BisectRecord) -> str:
    rows = ["## Commits\n", f"| # | commit | subject | verdict | n | {r.rule.metric} "
            "| vs good | vs bad | why |", "|---|---|---|---|---|---|---|---|---|"]
    for j in r.judgements:
        verdict = f"**{j.verdict}**" if j.commit in r.candidates else j.verdict
        rows.append(f"| {j.index} | `{j.commit[:12]}` | {_cell(_subject(r, j.commit))} "
                    f"| {verdict} | {j.n or '–'} | {span_text(j.span)} "
                    f"| {_vs(j.vs_good)} | {_vs(j.vs_bad)} | {_cell(j.reason)} |")
    return "\n".join(rows) + "\n"


def _rounds(r: BisectRecord) -> str:
    rows = ["## Decisions\n"]
    for rnd in r.rounds:
        asked = ", ".join(f"`{q.commit[:12]}` × {q.repeats}" for q in rnd.requests)
        rows.append(f"{rnd.index}. {rnd.reason}. Measured: {asked} (sweeps "
                    f"{', '.join(f'`{s}`' for s in rnd.sweeps)}).")
    rows.append(f"{len(r.rounds) + 1}. {_HEADLINE[r.outcome]}: {r.reason}.")
    return "\n".join(rows) + "\n"


def _measurements(r: BisectRecord) -> str:
    rows = ["## Measurements\n", f"| commit | sweep | repeat | host | worker | started "
            f"| {r.rule.metric} | build cached | load1 before → after | flags |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for m in r.measurements:
        cached = "–" if m.build_cached is None else "yes" if m.build_cached else "no"
        rows.append(f"| `{m.commit[:12]}` | `{m.sweep_id}`{' (reused)' * m.reused} "
                    f"| {m.repeat} | {m.hostname} | {m.worker} | {m.started} | {m.value:.2f} "
                    f"| {cached} | {m.load1_before:.2f} → {m.load1_after:.2f} "
                    f"| {_cell('; '.join(m.flags)) or '–'} |")
    for sha, why in r.failures.items():
        rows.append(f"\n`{sha[:12]}` measured nothing in {len(why)} cell(s): {_cell(why[0])}")
    return "\n".join(rows) + "\n"


def _vs(c: Comparison | None) -> str:
    if c is None:
        return "–"
    return f"{ratio_text(c.ratio)}, {c.word}"


def _subject(r: BisectRecord, sha: str) -> str:
    return r.subjects.get(sha, "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
