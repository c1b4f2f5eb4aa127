"""`benchfleet check`: is a record complete and consistent with itself?

Every figure is recomputed from the record's own measurements and compared; a record with a
question must also carry its metadata, a verdict per family, backend and model that follows
from its own tables, and control comparisons that match the control's rows.
"""

import math

from jobs.answer import bench_ref, control, evidence
from jobs.attribution import UNCLASSIFIED
from jobs.record import Record
from jobs.record_parts import ArmRow, Group
from jobs.stats import Ratio, Span
from jobs.sweep import Question
from jobs.verdict import decide

MIN_N = 3


def check_record(r: Record) -> list[str]:
    """Problems with the record, one sentence each; empty when it passes."""
    problems = _accounting(r) + _metadata(r)
    for g in r.groups:
        problems += _group(g)
    if r.answer:
        problems += _answer(r, r.question)
    return problems


def _accounting(r: Record) -> list[str]:
    measured = [m.cell_id for g in r.groups for m in g.measurements]
    measured += [g.profile.cell_id for g in r.groups if g.profile]
    missing = [m.cell_id for m in r.missing]
    problems = []
    if len(set(measured)) != len(measured):
        problems.append("a cell appears twice among the measurements")
    if set(measured) & set(missing):
        problems.append("a cell is both measured and listed as missing")
    if len(measured) != r.cells_measured:
        problems.append(f"cells_measured is {r.cells_measured} but {len(measured)} cells have "
                        "measurements")
    if len(measured) + len(missing) != r.cells_expected:
        problems.append(f"{r.cells_expected} cells expected but {len(measured)} measured and "
                        f"{len(missing)} listed as failed or missing: some are unaccounted for")
    problems += [f"missing cell {m.cell_id} gives no reason" for m in r.missing if not m.reason]
    return problems


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
    if g.profile and g.profile.attribution.timed:
        shares = sum(p.share or 0.0 for p in g.profile.attribution.phases)
        if not math.isclose(shares, 1.0, abs_tol=1e-6):
            problems.append(f"{where}: phase shares add up to {shares:.4f}, not 1")
        if g.profile.attribution.phase(UNCLASSIFIED) is None:
            problems.append(f"{where}: the unclassified phase is not shown")
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


def _same(a: object, b: object) -> bool:
    if a is None or b is None:
        return a is b
    da, db = a.model_dump(), b.model_dump()  # type: ignore[attr-defined]
    return da.keys() == db.keys() and all(
        math.isclose(da[k], db[k], rel_tol=1e-9) if isinstance(da[k], float) else da[k] == db[k]
        for k in da)
