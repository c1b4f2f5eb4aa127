"""The record: every cell's artifacts combined once into one typed model.

Markdown, JSON and the plot are views of this model; none of them recomputes a figure.
"""

from collections.abc import Mapping

from jobs.answer import Answer, answer
from jobs.attempts import AttemptResult, CellState, HostFacts
from jobs.attribution import attribute, with_idle
from jobs.cells import Cell
from jobs.model import Strict
from jobs.record_parts import (
    ArmRow,
    BuildTime,
    Group,
    GroupProfile,
    Measurement,
    Meta,
    Missing,
)
from jobs.stats import Ratio, Span
from jobs.sweep import Question, Sweep


class Check(Strict):
    ok: bool
    problems: list[str]


class Record(Strict):
    sweep_id: str
    sweep_name: str
    created: str
    repo: str
    commits: dict[str, list[str]]
    n: int
    warmup: int
    baseline: str
    build_recipes: dict[str, str]
    cells_expected: int
    cells_measured: int
    hosts: dict[str, HostFacts]
    meta: Meta
    groups: list[Group]
    missing: list[Missing]
    question: Question | None = None
    answer: Answer | None = None
    check: Check | None = None


def build_record(sweep_id: str, sweep: Sweep, cells: list[Cell], states: Mapping[str, CellState],
                 results: Mapping[str, AttemptResult], unreadable: Mapping[str, str],
                 created: str) -> Record:
    """Combine a sweep's cells, their states and their latest attempt results.

    `unreadable` maps a cell id to why its artifacts could not be read.
    """
    measured: dict[str, Measurement] = {}
    profiles: dict[str, GroupProfile] = {}
    missing: list[Missing] = []
    for cell in cells:
        result = results.get(cell.id)
        done = states.get(cell.id, CellState(status="queued")).status == "done"
        measurement = _measurement(cell, result) if result and done else None
        profile = _profile(sweep, cell, result) if result and done else None
        if measurement:
            measured[cell.id] = measurement
        elif profile:
            profiles[cell.id] = profile
        else:
            missing.append(_missing(cell, states.get(cell.id), result, unreadable.get(cell.id)))
    groups = [_group(sweep, key, members, measured, profiles)
              for key, members in _grouped(cells).items()]
    hosts = {r.host.hostname: r.host for r in results.values()}
    commits: dict[str, set[str]] = {c: set() for c in sweep.target.commits}
    for cell in cells:
        if cell.id in measured:
            commits[cell.commit].add(measured[cell.id].commit)
    return Record(
        sweep_id=sweep_id, sweep_name=sweep.name,
        created=created, repo=sweep.target.repo,
        commits={k: sorted(v) for k, v in commits.items()}, n=sweep.n, warmup=sweep.warmup,
        baseline=sweep.baseline.name,
        build_recipes={name: b.build for name, b in sweep.backends.items()},
        cells_expected=len(cells), cells_measured=len(measured) + len(profiles),
        hosts=dict(sorted(hosts.items())), meta=_meta(created, cells, results, measured),
        groups=groups, missing=missing, question=sweep.question,
        answer=answer(sweep.question, sweep.baseline.name, groups) if sweep.question else None)


def _grouped(cells: list[Cell]) -> dict[tuple[str, str, str], list[Cell]]:
    groups: dict[tuple[str, str, str], list[Cell]] = {}
    for cell in cells:
        groups.setdefault((cell.commit, cell.backend, cell.model), []).append(cell)
    return groups


def _group(sweep: Sweep, key: tuple[str, str, str], cells: list[Cell],
           measured: Mapping[str, Measurement], profiles: Mapping[str, GroupProfile]) -> Group:
    commit, backend, model = key
    profile = next((profiles[c.id] for c in cells if c.id in profiles), None)
    cells = [c for c in cells if c.kind == "bench"]
    arms = [a.name for a in sweep.arms if any(c.arm == a.name for c in cells)]
    ours = [measured[c.id] for c in cells if c.id in measured]
    rows = [_row(arm, arm == sweep.baseline.name, [c for c in cells if c.arm == arm],
                 [m for m in ours if m.arm == arm]) for arm in arms]
    base = next((r for r in rows if r.baseline), None)
    rows = [_with_ratios(row, base) for row in rows]
    if profile and sweep.question:
        profile = _with_idle(profile, sweep.question.candidate, ours)
    return Group(commit=commit, backend=backend, model=model, rows=rows,
                 measurements=sorted(ours, key=lambda m: m.order), profile=profile)


def _row(arm: str, baseline: bool, cells: list[Cell], ms: list[Measurement]) -> ArmRow:
    peaks = [m.peak_gb for m in ms if m.peak_gb is not None]
    return ArmRow(
        arm=arm, baseline=baseline, n=len(ms), expected=len(cells),
        prompt_tokens=sorted({m.prompt_tokens for m in ms}),
        decode_tps=Span.of([m.decode_tps for m in ms]),
        prefill_tps=Span.of([m.prefill_tps for m in ms]),
        peak_gb=Span.of(peaks) if len(peaks) == len(ms) else None,
        decode_vs_baseline=None, prefill_vs_baseline=None,
        load1=Span.of([v for m in ms for v in (m.load1_before, m.load1_after)]),
        hosts=sorted({m.hostname for m in ms}), commits=sorted({m.commit for m in ms}))


def _with_ratios(row: ArmRow, base: ArmRow | None) -> ArmRow:
    if base is None or row.baseline:
        return row
    return row.model_copy(update={
        "decode_vs_baseline": _ratio(row.decode_tps, base.decode_tps),
        "prefill_vs_baseline": _ratio(row.prefill_tps, base.prefill_tps)})


def _ratio(arm: Span | None, base: Span | None) -> Ratio | None:
    return Ratio.of(arm, base) if arm and base else None


def _measurement(cell: Cell, result: AttemptResult) -> Measurement | None:
    run = result.measured
    reading = result.reading
    if run is None or reading is None or result.commit is None:
        return None
    return Measurement(
        cell_id=cell.id, arm=cell.arm, repeat=cell.repeat, order=cell.order,
        worker=result.worker, hostname=result.host.hostname, commit=result.commit,
        attempt=result.attempt, started=run.started, decode_tps=reading.decode_tps,
        prefill_tps=reading.prefill_tps, prompt_tokens=reading.prompt_tokens,
        generated_tokens=reading.generated_tokens, peak_gb=reading.peak_gb,
        load1_before=run.load1_before, load1_after=run.load1_after, exit_code=run.exit_code,
        argv=run.argv, env=run.env)


def _missing(cell: Cell, state: CellState | None, result: AttemptResult | None,
             unreadable: str | None) -> Missing:
    status = state.status if state else "unknown"
    if unreadable:
        reason = f"artifacts unreadable: {unreadable}"
    elif result and result.failure:
        reason = result.failure.reason
    elif state and state.reason:
        reason = state.reason
    elif status in ("queued", "running"):
        reason = f"still {status} when the record was made"
    else:
        reason = "no artifacts were pushed for this cell"
    return Missing(cell_id=cell.id, kind=cell.kind, backend=cell.backend, model=cell.model,
                   arm=cell.arm, repeat=cell.repeat, status=status, reason=reason)


def _profile(sweep: Sweep, cell: Cell, result: AttemptResult) -> GroupProfile | None:
    p = result.profile
    if p is None:
        return None
    family = sweep.family(cell.model)
    return GroupProfile(cell_id=result.cell_id, attempt=result.attempt, worker=result.worker,
                        hostname=result.host.hostname, tool=p.tool, tokens=p.tokens,
                        attribution=attribute(p, sweep.phases, family), paths=p.paths,
                        first_call_path=p.first_call_path, arch=p.arch, notes=p.notes)


def _with_idle(profile: GroupProfile, arm: str, ms: list[Measurement]) -> GroupProfile:
    """GPU-idle time against the unprofiled runs of `arm` on the profile's own host."""
    a = profile.attribution
    if not a.timed:
        return profile
    runs = Span.of([m.decode_tps for m in ms if m.arm == arm and m.hostname == profile.hostname])
    if runs is None or runs.mean <= 0:
        note = (f"no GPU-idle row: no unprofiled {arm} run on {profile.hostname}, the profile's "
                "host")
        return profile.model_copy(update={"attribution": a.model_copy(
            update={"notes": [*a.notes, note]})})
    source = (f"{arm} decode {runs.mean:.2f} tok/s, mean of {runs.n} unprofiled run(s) on "
              f"{profile.hostname}")
    return profile.model_copy(update={"attribution": with_idle(a, 1e6 / runs.mean, source)})


def _meta(created: str, cells: list[Cell], results: Mapping[str, AttemptResult],
          measured: Mapping[str, Measurement]) -> Meta:
    pins = {r.commit: r.target["mlx_pin"] for r in results.values()
            if r.commit and "mlx_pin" in r.target}
    builds: dict[tuple[str, str, str], BuildTime] = {}
    by_id = {c.id: c for c in cells}
    for r in results.values():
        cell = by_id[r.cell_id]
        if r.build and r.commit and not r.build.cached:
            builds[(r.commit, cell.backend, r.worker)] = BuildTime(
                commit=r.commit, backend=cell.backend, worker=r.worker, recipe=r.build.recipe,
                wall_s=r.build.wall_s, built_at=r.build.built_at,
                command=[run.argv for run in r.runs if run.role == "build"])
    env = {m.arm: m.env for m in sorted(measured.values(), key=lambda m: m.order)}
    return Meta(date=created, mlx_pins=dict(sorted(pins.items())),
                builds=sorted(builds.values(), key=lambda b: (b.commit, b.backend, b.worker)),
                env=dict(sorted(env.items())))
