"""`benchfleet check`: is a record complete and consistent with itself?

Every figure is recomputed from the record's own measurements and compared: spans, ratios,
comparisons and their answers, adaptive repeats, and the flags on measurements that ran on a
busy host, without the host lease or beside another command. A record with a question must
also carry its metadata, a verdict per family, backend and model that follows from its own
tables, and control comparisons that match the control's rows. `differences` compares a
record with one rebuilt from its artifacts (`benchfleet check --artifacts`).
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass
from operator import attrgetter

from jobs.profiles.attribution import UNCLASSIFIED
from jobs.record.check_split import split_problems
from jobs.record.fidelity import HostRun, RunIndex, flags
from jobs.record.model import SCHEMA, Record, compared_rows, conditions, record_host_sentence
from jobs.record.parts import ArmRow, Group, Measurement
from jobs.record.validity import record_problems
from jobs.statistics.adaptive import walk
from jobs.statistics.headline import separated_p
from jobs.statistics.spans import Ratio, Span
from jobs.strict import field_names
from jobs.studies.moe_decode_gap.answer import bench_ref, control, evidence
from jobs.studies.moe_decode_gap.question import Question
from jobs.studies.moe_decode_gap.verdict import decide

MIN_N = 3
_WAITING = ("queued", "running")


def check_record(r: Record, flagged: Mapping[tuple[str, int], list[str]] | None = None
                 ) -> list[str]:
    """Problems with the record, one sentence each; empty when it passes.

    `flagged`: each measurement's flags as `build_record` computed them from the same runs in
    this process (its `flagged`), so they are not computed twice; a record read from a file is
    checked without it, every flag recomputed from the record's own data.
    """
    if r.schema_version != SCHEMA:
        return [f"the record has schema version {r.schema_version}; this checker reads "
                f"{SCHEMA}: make the record again with `benchfleet record`"]
    problems = (_accounting(r) + _metadata(r) + _evidence(r) + _fidelity(r, flagged)
                + record_problems(r))
    for g in r.groups:
        problems += _group(g) + _repeats(r, g)
    if r.answer:
        problems += _answer(r, r.question)
    return problems


def _accounting(r: Record) -> list[str]:
    measured = [m.cell_id for g in r.groups for m in g.measurements]
    measured += [g.profile.cell_id for g in r.groups if g.profile]
    missing = [m.cell_id for m in r.missing]
    skipped = [s.cell_id for s in r.skipped]
    problems = []
    if len(set(measured)) != len(measured):
        problems.append("a cell appears twice among the measurements")
    if set(measured) & set(missing):
        problems.append("a cell is both measured and listed as missing")
    if set(skipped) & (set(measured) | set(missing)):
        problems.append("a cell listed as skipped is also measured or missing")
    if len(measured) != r.cells_measured:
        problems.append(f"cells_measured is {r.cells_measured} but {len(measured)} cells have "
                        "measurements")
    if len(measured) + len(missing) + len(skipped) != r.cells_expected:
        problems.append(f"{r.cells_expected} cells expected but {len(measured)} measured, "
                        f"{len(missing)} listed as failed or missing and {len(skipped)} "
                        "skipped: some are unaccounted for")
    problems += [f"missing cell {m.cell_id} gives no reason" for m in r.missing if not m.reason]
    return problems


def _evidence(r: Record) -> list[str]:
    """Every measurement and profile names the attempt it came from, by its sha256."""
    used = {(e.cell_id, e.attempt) for e in r.evidence if e.used}
    read = [(g.backend, m.cell_id, m.attempt) for g in r.groups for m in g.measurements]
    read += [(g.backend, g.profile.cell_id, g.profile.attempt) for g in r.groups if g.profile]
    return [f"{cell} attempt {attempt}: the record carries no sha256 of the attempt it read"
            for _, cell, attempt in read if (cell, attempt) not in used]


def _fidelity(r: Record, flagged: Mapping[tuple[str, int], list[str]] | None) -> list[str]:
    """Each measurement's flags, recomputed from its gate, lease and the host's runs (or as
    the builder computed them from those, in this process)."""
    problems = []
    index: RunIndex | None = None  # made when a flag must be recomputed
    # Each run by its every field: a measurement's own run is looked up as the index holds
    # it, whose times it parsed once.
    known = {_key(run): run for run in r.host_runs}
    for g in r.groups:
        for m in g.measurements:
            mine = _host_run(m)
            indexed = known.get(_key(mine))
            if indexed is None:
                problems.append(f"{m.cell_id}: its measured run is not among the host's runs, "
                                "so overlaps cannot be checked")
            expected = flagged.get((m.cell_id, m.attempt)) if flagged is not None else None
            if expected is None:
                index = index or RunIndex(r.host_runs)
                expected = flags(mine if indexed is None else indexed, m.gate, index,
                                 conditions(m))
            if m.flags != expected:
                problems.append(f"{m.cell_id}: flags {m.flags} but its gate, host lease and "
                                f"the host's runs give {expected}")
        for row in g.rows:
            found = sum(1 for m in g.measurements if m.arm == row.arm and m.flags)
            if row.flagged != found:
                problems.append(f"{g.backend} · {g.model} / {row.arm}: {row.flagged} flagged "
                                f"measurements stated, {found} found")
    if r.host_sentence != record_host_sentence(r.groups):
        problems.append("the host sentence does not follow from the measurements' flags: "
                        f"they give {record_host_sentence(r.groups)!r}")
    return problems


def _host_run(m: Measurement) -> HostRun:
    return HostRun(hostname=m.hostname, worker=m.worker, cell_id=m.cell_id, attempt=m.attempt,
                   role="measure", started=m.started, ended=m.ended, host_lease=m.host_lease)


@dataclass(frozen=True)
class _Slot:
    """A bench cell of a group as the record shows it: measured, missing or skipped."""

    id: str
    arm: str
    repeat: int
    baseline: bool
    aa: bool


def _repeats(r: Record, g: Group) -> list[str]:
    """The adaptive repeats replayed from the group's measurements."""
    where = f"{g.backend} · {g.model} · {g.commit}"
    if r.adaptive_max_n is None:
        return [f"{where}: adaptive repeats stated but the sweep has none"] if g.repeats else []
    ours = (g.commit, g.backend, g.model)
    missing = [m for m in r.missing if (m.commit, m.backend, m.model) == ours
               and m.kind == "bench"]
    skipped = {s.cell_id for s in r.skipped if (s.commit, s.backend, s.model) == ours}
    cells = ([(m.cell_id, m.arm, m.repeat) for m in g.measurements]
             + [(m.cell_id, m.arm, m.repeat) for m in missing]
             + [(s.cell_id, s.arm, s.repeat) for s in r.skipped if s.cell_id in skipped])
    slots = [_Slot(cell, arm, repeat, arm == r.baseline, arm == r.aa_arm)
             for cell, arm, repeat in cells]
    present = {(s.arm, s.repeat) for s in slots}
    absent = [f"{row.arm} r{k}" for row in g.rows for k in range(1, r.adaptive_max_n + 1)
              if (row.arm, k) not in present]
    if absent:
        return [f"{where}: cells neither measured, missing nor skipped: {', '.join(absent)}"]
    waiting = {m.cell_id for m in missing if m.status in _WAITING}
    measured = {m.cell_id: m for m in g.measurements}
    replayed = walk(slots, measured, waiting, r.n, r.adaptive_max_n)
    if g.repeats != replayed:
        return [f"{where}: the adaptive repeats stated do not follow from its measurements "
                f"({replayed.reason})"]
    expected = ({s.id for s in slots if s.repeat > r.n and s.repeat not in replayed.needed
                 and s.id not in measured} if replayed.stopped == "decided" else set())
    if skipped != expected:
        return [f"{where}: the cells listed as skipped are not the ones the rule did not need"]
    return []


def _metadata(r: Record) -> list[str]:
    problems = []
    if not r.hosts:
        problems.append("no host facts: the record cannot say where it was measured")
    for name, h in r.hosts.items():
        if not (h.chip and h.os):
            problems.append(f"host {name} lacks its chip or OS")
    for requested, resolved in r.commits.items():
        if not resolved and any(g.measurements for g in r.groups if g.commit == requested):
            problems.append(f"commit {requested} has measurements but no resolved sha")
    if not r.meta.date:
        problems.append("the record has no date")
    smallest = None if r.adaptive_max_n else separated_p(r.n, r.n)
    if r.smallest_p != smallest:
        problems.append(f"the method's smallest rank-test p is {r.smallest_p}; n = {r.n} "
                        f"gives {smallest}")
    return problems


def _group(g: Group) -> list[str]:
    where = f"{g.backend} · {g.model} · {g.commit}"
    problems = []
    base = next((row for row in g.rows if row.baseline), None)
    for row in g.rows:
        values = [m.decode_tps for m in g.measurements if m.arm == row.arm]
        prefill = [m.prefill_tps for m in g.measurements if m.arm == row.arm]
        if row.n != len(values):
            problems.append(f"{where} / {row.arm}: n = {row.n} but {len(values)} measurements")
        if row.n < MIN_N:
            problems.append(f"{where} / {row.arm}: n = {row.n} of {row.expected}, fewer than "
                            f"{MIN_N} (the failed cells are listed with their reasons)")
        problems += _span(f"{where} / {row.arm} decode", row.decode_tps, values)
        problems += _span(f"{where} / {row.arm} prefill", row.prefill_tps, prefill)
        if base and not row.baseline:
            problems += _ratio(f"{where} / {row.arm}", row, base)
    problems += _comparisons(where, g)
    if g.profile and g.profile.attribution.timed:
        shares = sum(p.share or 0.0 for p in g.profile.attribution.phases)
        if not math.isclose(shares, 1.0, abs_tol=1e-6):
            problems.append(f"{where}: phase shares add up to {shares:.4f}, not 1")
        if g.profile.attribution.phase(UNCLASSIFIED) is None:
            problems.append(f"{where}: the unclassified phase is not shown")
    if g.profile:
        problems += split_problems(where, g.profile.attribution)
    return problems


def _span(what: str, span: Span | None, values: list[float]) -> list[str]:
    if span is None:
        return [f"{what}: measurements but no figures"] if values else []
    if not span.min <= span.mean <= span.max:
        return [f"{what}: the range {span.min} to {span.max} does not contain the mean "
                f"{span.mean}"]
    if not _same(span, Span.of(values)):
        return [f"{what}: mean (min to max) does not match its measurements"]
    return []


def _ratio(what: str, row: ArmRow, base: ArmRow) -> list[str]:
    problems = []
    for name, arm, ref, stated in (
            ("decode", row.decode_tps, base.decode_tps, row.decode_vs_baseline),
            ("prefill", row.prefill_tps, base.prefill_tps, row.prefill_vs_baseline)):
        expected = Ratio.of(arm, ref) if arm and ref else None
        if not _same(stated, expected):
            problems.append(f"{what}: {name} ratio against the baseline is not recomputable "
                            "from the rows")
    return problems


def _comparisons(where: str, g: Group) -> list[str]:
    """Each comparison recomputed: ranges, rank test, noise floor, answer, word."""
    problems = []
    bare = [row.model_copy(update={"decode_comparison": None, "prefill_comparison": None})
            for row in g.rows]
    for stated, expected in zip(g.rows, compared_rows(bare, g.measurements, g.repeats),
                                strict=True):
        for metric in ("decode", "prefill"):
            ours, theirs = (getattr(x, f"{metric}_comparison") for x in (stated, expected))
            if ours and theirs and ours.word != theirs.word:
                problems.append(f"{where} / {stated.arm}: the {metric} comparison prints "
                                f"\"{ours.word}\", but its measurements say \"{theirs.word}\" "
                                f"({theirs.reason}; docs/statistics.md)")
            elif not _same(ours, theirs):
                why = f" ({theirs.word}: {theirs.reason})" if theirs else ""
                problems.append(f"{where} / {stated.arm}: the {metric} comparison with the "
                                f"baseline does not follow from the measurements{why}")
    return problems


def _answer(r: Record, question: Question | None) -> list[str]:
    a = r.answer
    assert a is not None
    problems = []
    if not r.meta.mlx_pins or any(p == "unknown" for p in r.meta.mlx_pins.values()):
        problems.append("the MLX pin of a measured commit is missing or unknown")
    if not r.meta.builds:
        problems.append("no build command or build time is recorded")
    refs = {bench_ref(g) for g in r.groups} | {g.profile.cell_id for g in r.groups if g.profile}
    for v in a.verdicts:
        where = f"verdict for {v.backend} · {v.model}"
        unknown = [s for s in v.settled_by if s not in refs]
        if unknown:
            problems.append(f"{where} names measurements the record lacks: {', '.join(unknown)}")
        if v.outcome == "not settled" and not v.missing:
            problems.append(f"{where} is not settled but lists nothing missing")
        if v.outcome != "not settled" and not v.settled_by:
            problems.append(f"{where} names no measurement that settles it")
    if question:
        problems += _recomputed(r, question)
    return problems


def _recomputed(r: Record, q: Question) -> list[str]:
    """Verdicts and control comparisons recomputed from the record's own tables."""
    a = r.answer
    assert a is not None
    problems = []
    stated = {(v.commit, v.backend, v.model): v for v in a.verdicts}
    for g in r.groups:
        if g.model not in q.families:
            continue
        v = stated.get((g.commit, g.backend, g.model))
        if v is None:
            problems.append(f"no verdict for {g.backend} · {g.model}")
        elif v != decide(evidence(q, g), q):
            problems.append(f"the verdict for {g.backend} · {g.model} does not follow from the "
                            "record's own tables")
    controls = [control(q, g, r.groups) for g in r.groups if g.model == q.control]
    if controls != a.controls:
        problems.append("the control comparison does not match the control's own rows")
    return problems


_key = attrgetter(*field_names(HostRun))  # a run's every field, as a tuple


def _same(a: object, b: object) -> bool:
    if a is None or b is None:
        return a is b
    return _close(a.model_dump(), b.model_dump())  # type: ignore[attr-defined]


def _close(a: object, b: object) -> bool:
    """Equal, with floats equal to 1e-9 relative: recomputed sums may round differently."""
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def differences(stated: Record, rebuilt: Record, limit: int = 20) -> list[str]:
    """Where a record differs from the one rebuilt from its artifacts, one sentence each."""
    found: list[str] = []
    _diff(stated.model_dump(exclude={"check"}), rebuilt.model_dump(exclude={"check"}), "",
          found)
    more = [f"and {len(found) - limit} more differences"] if len(found) > limit else []
    return found[:limit] + more


def _diff(a: object, b: object, path: str, found: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        for key in a:
            _diff(a[key], b[key], f"{path}.{key}" if path else str(key), found)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, f"{path}[{i}]", found)
    elif not _close(a, b):
        found.append(f"{path}: the record says {_short(a)}, its artifacts give {_short(b)}")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
