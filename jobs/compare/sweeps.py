"""Two measurements of the same arms side by side: two records, or two commits of one record.

Each (backend, model, arm) is compared on decode and prefill tok/s, where higher is better,
new against old, with the headline rule (jobs/statistics/headline.py). As with asv's
`--factor`, a change
counts as **worse** only when the headline says the two differ AND new is slower than old by
more than the factor; a change within the factor is **within the factor**; otherwise the
change is the comparison's word (`Comparison.word`): **same** where the rank test reached its
same-threshold, **not yet known** where the ranges are apart but too few values were measured
for the rank test to decide, **not significant** elsewhere; none of them fails the gate.
"""

from collections.abc import Iterator
from typing import Literal, get_args

from pydantic import Field

from jobs.errors import UserError
from jobs.record.model import Record
from jobs.record.parts import Group
from jobs.statistics.adaptive import METRICS
from jobs.statistics.headline import Comparison, compare, noise_floor
from jobs.statistics.spans import Span, ratio_text, span_text
from jobs.strict import Strict

SCHEMA = 2  # 2: the words of jobs/statistics/headline.py, "not yet known" among them
DEFAULT_FACTOR = 1.1  # asv's default: a tenth faster or slower is worth a line

# What happened to one arm on one metric, from old to new. "worse" and "failed" fail the gate.
Change = Literal["worse", "better", "within the factor", "same", "not significant",
                 "not yet known", "failed", "not measured"]
GATING: frozenset[str] = frozenset({"worse", "failed"})


class Side(Strict):
    """One side of the comparison: a record and the commit of it compared."""

    sweep_id: str
    commit: str
    commit_name: str | None
    hosts: list[str]


class Row(Strict):
    backend: str
    model: str
    arm: str
    metric: str
    old: Span | None
    new: Span | None
    # new against old: the ratio of means and its range, the rank test and the headline.
    comparison: Comparison | None
    change: Change
    reason: str
    hosts_old: list[str]
    hosts_new: list[str]


class SideBySide(Strict):
    schema_version: int = SCHEMA
    old: Side
    new: Side
    factor: float = Field(gt=1)
    higher_is_better: list[str]
    rows: list[Row]
    counts: dict[str, int]
    gate: Literal["pass", "fail"]
    summary: str


def commit_of(record: Record, name: str | None) -> str:
    """The sha of `name` in the record (a name the sweep asked for, or a sha prefix); None
    when the record measured one commit only."""
    measured = list(dict.fromkeys(g.commit for g in record.groups))
    if name is None:
        if len(measured) != 1:
            raise UserError(f"sweep {record.sweep_id} measured {len(measured)} commits "
                            f"({', '.join(c[:12] for c in measured) or 'none'}); pick one "
                            "of each side with --commits OLD NEW")
        return measured[0]
    found = [c for c in measured if c in record.commits.get(name, [])]
    found = found or [c for c in measured if c.startswith(name)]
    if len(found) != 1:
        raise UserError(f"commit {name!r} matches {len(found)} of the commits sweep "
                        f"{record.sweep_id} measured ({', '.join(c[:12] for c in measured)}); "
                        "give a name the sweep asked for or a longer sha")
    return found[0]


def side_by_side(old: Record, old_commit: str, new: Record, new_commit: str,
                 factor: float = DEFAULT_FACTOR) -> SideBySide:
    """Every arm measured at `old_commit` in `old` against the same arm at `new_commit`."""
    if factor <= 1:
        raise UserError(f"--factor must be above 1 (it is {factor}); 1.1 means a tenth slower")
    rows = [row for key in _keys(old, old_commit, new, new_commit)
            for row in _rows(key, old, old_commit, new, new_commit, factor)]
    counts = {change: sum(1 for r in rows if r.change == change) for change in get_args(Change)}
    gate: Literal["pass", "fail"] = "fail" if any(r.change in GATING for r in rows) else "pass"
    return SideBySide(old=_side(old, old_commit), new=_side(new, new_commit), factor=factor,
                      higher_is_better=[label for label, _ in METRICS], rows=rows,
                      counts=counts, gate=gate, summary=_summary(counts, factor))


def change_of(c: Comparison, factor: float) -> tuple[Change, str]:
    """asv's factor over the headline rule: beyond the factor and decided, or not a change."""
    slower, faster = c.ratio.mean < 1 / factor, c.ratio.mean > factor
    beyond = f"beyond the factor {factor:g}"
    if c.answer == "differs" and slower:
        return "worse", f"new is slower than old {beyond}: {c.reason}"
    if c.answer == "differs" and faster:
        return "better", f"new is faster than old {beyond}: {c.reason}"
    if c.answer == "differs":
        return "within the factor", f"new is {c.word} than old, but within the factor " \
            f"{factor:g}: {c.reason}"
    if c.word == "same":
        return "same", f"{c.reason}, and the rank test's p {c.rank.p:.3g} is above its " \
            f"same-threshold {c.rank.same_above:.3g}"
    if c.word == "not yet known":
        pending = (f"; new is slower {beyond}, so it would count as worse once decided (a "
                   "larger `n` on both sides settles it)" if slower else "")
        return "not yet known", c.reason + pending
    return "not significant", c.reason


_Key = tuple[str, str, str]  # backend, model, arm


def _keys(old: Record, old_commit: str, new: Record, new_commit: str) -> list[_Key]:
    """Every (backend, model, arm) either side measured or tried, old's order first."""
    keys: dict[_Key, None] = {}
    for record, commit in ((old, old_commit), (new, new_commit)):
        for g in _groups(record, commit):
            keys.update({(g.backend, g.model, r.arm): None for r in g.rows})
        keys.update({(m.backend, m.model, m.arm): None for m in record.missing
                     if m.commit == commit and m.kind == "bench"})
    return list(keys)


def _rows(key: _Key, old: Record, old_commit: str, new: Record, new_commit: str,
          factor: float) -> Iterator[Row]:
    backend, model, arm = key
    old_group, new_group = _group(old, old_commit, backend, model), _group(new, new_commit,
                                                                             backend, model)
    for label, attr in METRICS:
        before, after = _values(old_group, arm, attr), _values(new_group, arm, attr)
        floors = [f for f in (_floor(old, old_group, attr), _floor(new, new_group, attr))
                  if f is not None]
        found = compare(label, after, before, max(floors) if floors else None)
        if found:
            change, reason = change_of(found, factor)
        else:
            change, reason = _unmeasured(key, old, old_commit, new, new_commit, before)
        yield Row(backend=backend, model=model, arm=arm, metric=label, old=Span.of(before),
                  new=Span.of(after), comparison=found, change=change, reason=reason,
                  hosts_old=_hosts(old_group, arm), hosts_new=_hosts(new_group, arm))


def _unmeasured(key: _Key, old: Record, old_commit: str, new: Record, new_commit: str,
                before: list[float]) -> tuple[Change, str]:
    """Why a row has no comparison; a failure the new side introduced fails the gate."""
    failed_new = _failures(new, new_commit, key)
    if before and failed_new:
        return "failed", f"new did not measure it: {failed_new[0]}"
    failed_old = _failures(old, old_commit, key)
    side = "old" if not before else "new"
    why = (failed_old if side == "old" else failed_new) or [f"{side} has no such cell"]
    return "not measured", f"{side} did not measure it: {why[0]}"


def _groups(record: Record, commit: str) -> list[Group]:
    return [g for g in record.groups if g.commit == commit]


def _group(record: Record, commit: str, backend: str, model: str) -> Group | None:
    return next((g for g in _groups(record, commit) if (g.backend, g.model) == (backend, model)),
                None)


def _values(group: Group | None, arm: str, attr: str) -> list[float]:
    return [getattr(m, attr) for m in group.measurements if m.arm == arm] if group else []


def _hosts(group: Group | None, arm: str) -> list[str]:
    return sorted({m.hostname for m in group.measurements if m.arm == arm}) if group else []


def _floor(record: Record, group: Group | None, attr: str) -> float | None:
    """The group's A/A noise floor on this metric, where the sweep measured one."""
    if group is None or record.aa_arm is None:
        return None
    return noise_floor(Span.of(_values(group, record.aa_arm, attr)),
                       Span.of(_values(group, record.baseline, attr)))


def _failures(record: Record, commit: str, key: _Key) -> list[str]:
    return [m.reason for m in record.missing if m.commit == commit and m.kind == "bench"
            and (m.backend, m.model, m.arm) == key]


def _side(record: Record, commit: str) -> Side:
    names = [name for name, shas in record.commits.items() if commit in shas and name != commit]
    return Side(sweep_id=record.sweep_id, commit=commit, commit_name=names[0] if names else None,
                hosts=sorted({m.hostname for g in _groups(record, commit)
                              for m in g.measurements}))


def _summary(counts: dict[str, int], factor: float) -> str:
    gating = counts["worse"] + counts["failed"]
    head = (f"{_n(counts['worse'])} got worse beyond the factor {factor:g}"
            + (f" and {_n(counts['failed'])} failed on the new side" if counts["failed"] else "")
            + ": the gate fails" if gating
            else f"nothing got worse beyond the factor {factor:g}: the gate passes")
    quiet = [f"{_n(counts[w])} {'is' if counts[w] == 1 else 'are'} {w}"
             for w in ("not significant", "not yet known") if counts[w]]
    tail = (f"; {' and '.join(quiet)}, which fails nothing" if quiet else "")
    missing = counts["not measured"]
    tail += (f"; {_n(missing)} measured on one side only, not compared" if missing else "")
    return head + tail


def _n(count: int) -> str:
    return f"{count} comparison{'s' * (count != 1)}"


def render(result: SideBySide) -> str:
    """The comparison as Markdown: the sides, the direction, one row per arm and metric."""
    lines = ["# benchfleet compare\n", f"- old (the reference): {_side_text(result.old)}",
             f"- new: {_side_text(result.new)}\n",
             f"Higher is better for {' and '.join(result.higher_is_better)}; `new vs old` is "
             "new / old − 1, with the widest range the two min-to-max ranges allow. A change "
             f"counts as **worse** only when the headline rule says the two differ and new is "
             f"slower than old by more than the factor {result.factor:g} (new / old < "
             f"{1 / result.factor:.3f}); a cell that failed on the new side only also fails "
             "the gate. A comparison that is not significant or not yet known fails nothing; "
             "**same** needs the rank test's same-threshold.\n",
             "| change | backend | model | arm | metric | old | new | new vs old | rank test "
             "| why |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in result.rows:
        c = r.comparison
        rank = f"{c.rank.answer} (p = {c.rank.p:.3g}, n {c.n_baseline} vs {c.n})" if c else "–"
        change = f"**{r.change}**" if r.change in GATING else r.change
        lines.append(f"| {change} | {r.backend} | {r.model} | {r.arm} | {r.metric} "
                     f"| {span_text(r.old)} | {span_text(r.new)} "
                     f"| {ratio_text(c.ratio) if c else '–'} "
                     f"| {rank} | {_cell(r.reason)} |")
    hosts = [r for r in result.rows if r.hosts_old and r.hosts_new and r.hosts_old != r.hosts_new]
    if hosts:
        lines.append(f"\n{len(hosts)} rows compare measurements made on different hosts "
                     "(old on " + ", ".join(hosts[0].hosts_old) + ", new on "
                     + ", ".join(hosts[0].hosts_new) + "): a host difference is part of them.")
    lines.append(f"\n**{result.summary[0].upper()}{result.summary[1:]}** "
                 f"(exit {1 if result.gate == 'fail' else 0}).")
    return "\n".join(lines) + "\n"


def _side_text(s: Side) -> str:
    name = f"`{s.commit_name}` at " if s.commit_name else ""
    return (f"sweep `{s.sweep_id}`, commit {name}`{s.commit[:12]}`, "
            f"measured on {', '.join(s.hosts) or 'no host'}")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
