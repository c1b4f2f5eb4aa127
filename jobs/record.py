"""The record: every cell's artifacts combined once into one typed model.

Markdown, JSON and the plot are views of this model; none of them recomputes a figure.
"""

from collections.abc import Mapping

from jobs.attempts import AttemptResult, CellState, HostFacts
from jobs.cells import Cell
from jobs.model import Strict
from jobs.stats import Ratio, Span
from jobs.sweep import Sweep


class Measurement(Strict):
    cell_id: str
    arm: str
    repeat: int
    order: int
    worker: str
    hostname: str
    commit: str
    attempt: int
    started: str
    decode_tps: float
    prefill_tps: float
    prompt_tokens: int
    generated_tokens: int
    peak_gb: float | None
    load1_before: float
    load1_after: float
    exit_code: int
    argv: list[str]
    env: dict[str, str]


class ArmRow(Strict):
    arm: str
    baseline: bool
    n: int
    expected: int
    prompt_tokens: list[int]
    decode_tps: Span | None
    prefill_tps: Span | None
    peak_gb: Span | None
    decode_vs_baseline: Ratio | None
    prefill_vs_baseline: Ratio | None
    load1: Span | None
    hosts: list[str]
    commits: list[str]


class Group(Strict):
    """The cells compared with each other: one commit, backend and model."""

    commit: str
    backend: str
    model: str
    rows: list[ArmRow]
    measurements: list[Measurement]


class Missing(Strict):
    cell_id: str
    backend: str
    model: str
    arm: str
    repeat: int
    status: str
    reason: str


class Record(Strict):
    slug: str
    sweep_id: str
    sweep_name: str
    created: str
    repo: str
    commits: dict[str, list[str]]
    n: int
    warmup: int
    baseline: str
    builds: dict[str, str]
    cells_expected: int
    cells_measured: int
    hosts: dict[str, HostFacts]
    groups: list[Group]
    missing: list[Missing]


def build_record(sweep_id: str, sweep: Sweep, cells: list[Cell], states: Mapping[str, CellState],
                 results: Mapping[str, AttemptResult], unreadable: Mapping[str, str],
                 created: str) -> Record:
    """Combine a sweep's cells, their states and their latest attempt results.

    `unreadable` maps a cell id to why its artifacts could not be read.
    """
    measured: dict[str, Measurement] = {}
    missing: list[Missing] = []
    for cell in cells:
        result = results.get(cell.id)
        measurement = _measurement(cell, result) if result else None
        if measurement and states.get(cell.id, CellState(status="queued")).status == "done":
            measured[cell.id] = measurement
        else:
            missing.append(_missing(cell, states.get(cell.id), result, unreadable.get(cell.id)))
    groups = [_group(sweep, key, members, measured) for key, members in _grouped(cells).items()]
    hosts = {r.host.hostname: r.host for r in results.values()}
    commits: dict[str, set[str]] = {c: set() for c in sweep.target.commits}
    for cell in cells:
        if cell.id in measured:
            commits[cell.commit].add(measured[cell.id].commit)
    return Record(
        slug=f"{sweep.name}-{sweep_id}", sweep_id=sweep_id, sweep_name=sweep.name,
        created=created, repo=sweep.target.repo,
        commits={k: sorted(v) for k, v in commits.items()}, n=sweep.n, warmup=sweep.warmup,
        baseline=sweep.baseline.name,
        builds={name: b.build for name, b in sweep.backends.items()},
        cells_expected=len(cells), cells_measured=len(measured), hosts=dict(sorted(hosts.items())),
        groups=groups, missing=missing)


def _grouped(cells: list[Cell]) -> dict[tuple[str, str, str], list[Cell]]:
    groups: dict[tuple[str, str, str], list[Cell]] = {}
    for cell in cells:
        groups.setdefault((cell.commit, cell.backend, cell.model), []).append(cell)
    return groups


def _group(sweep: Sweep, key: tuple[str, str, str], cells: list[Cell],
           measured: Mapping[str, Measurement]) -> Group:
    commit, backend, model = key
    arms = [a.name for a in sweep.arms if any(c.arm == a.name for c in cells)]
    ours = [measured[c.id] for c in cells if c.id in measured]
    rows = [_row(arm, arm == sweep.baseline.name, [c for c in cells if c.arm == arm],
                 [m for m in ours if m.arm == arm]) for arm in arms]
    base = next((r for r in rows if r.baseline), None)
    rows = [_with_ratios(row, base) for row in rows]
    return Group(commit=commit, backend=backend, model=model, rows=rows,
                 measurements=sorted(ours, key=lambda m: m.order))


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
    return Missing(cell_id=cell.id, backend=cell.backend, model=cell.model, arm=cell.arm,
                   repeat=cell.repeat, status=status, reason=reason)
