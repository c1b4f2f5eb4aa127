"""The record: every cell's artifacts combined once into one typed model.

Markdown, JSON and the plots are views of this model; none of them recomputes a figure.
"""

from collections.abc import Mapping, Sequence

from jobs.profiles.attribution import with_idle
from jobs.record.attempt_log import AttemptEntry, attempt_history, order_notes
from jobs.record.attempts import AttemptResult, CellState, HostFacts
from jobs.record.builds import build_times
from jobs.record.digest import Digest, Digests, judged
from jobs.record.digest import conditions as conditions  # re-exported: check.py reads it here
from jobs.record.fidelity import HostRun, RunIndex
from jobs.record.parts import (
    ArmRow,
    Evidence,
    Group,
    GroupProfile,
    Measurement,
    Meta,
    Missing,
    Skipped,
)
from jobs.record.run_flags import host_sentence
from jobs.spec.cells import Cell
from jobs.spec.sweep import Sweep
from jobs.statistics.adaptive import Repeats, walk
from jobs.statistics.headline import Comparison, compare, noise_floor, separated_p
from jobs.statistics.spans import Ratio, Span
from jobs.strict import Strict
from jobs.studies.moe_decode_gap.answer import Answer, answer
from jobs.studies.moe_decode_gap.question import Question

# The record's JSON layout; `benchfleet check` refuses another. 2: comparisons, fidelity
# flags, adaptive repeats, evidence (sha256 of every attempt read). 3: each run judged on its
# own readings (GPU state), the host sentence, verdict and control words by the headline rule.
# 4: each comparison stores the word it prints (faster, slower, same, not significant, not yet
# known); the rule's states are differs, overlap and undecided, never "no effect"; a ratio
# says `ranges_overlap`.
SCHEMA = 4
_WAITING = frozenset({"queued", "running"})


class Check(Strict):
    ok: bool
    problems: list[str]


class Record(Strict):
    schema_version: int = SCHEMA
    sweep_id: str
    sweep_name: str
    issue: str | int | None = None
    created: str
    repo: str
    commits: dict[str, list[str]]
    n: int
    warmup: int
    baseline: str
    aa_arm: str | None = None
    adaptive_max_n: int | None = None
    # The smallest two-sided rank-test p two samples of n can reach (when one lies wholly above
    # the other): above α, no arm of a sweep without adaptive repeats can be called different.
    smallest_p: float | None = None
    build_recipes: dict[str, str]
    cells_expected: int
    cells_measured: int
    hosts: dict[str, HostFacts]
    meta: Meta
    groups: list[Group]
    missing: list[Missing]
    skipped: list[Skipped] = []
    host_runs: list[HostRun] = []
    evidence: list[Evidence] = []
    history: list[AttemptEntry] = []
    question: Question | None = None
    answer: Answer | None = None
    check: Check | None = None
    # Derived from the measurements' flags (jobs/record/run_flags.py); `check` recomputes it.
    host_sentence: str = ""


def build_record(sweep_id: str, sweep: Sweep, cells: list[Cell], states: Mapping[str, CellState],
                 results: Mapping[str, AttemptResult], unreadable: Mapping[str, str],
                 created: str, earlier: Sequence[AttemptResult] = (),
                 resolved: Mapping[str, str] | None = None,
                 flagged: dict[tuple[str, int], list[str]] | None = None) -> Record:
    """Combine a sweep's cells, their states and their latest attempt results.

    `unreadable` maps a cell id to why its artifacts could not be read; `earlier` holds the
    other attempts read, whose commands count when looking for overlapping runs. `flagged`,
    when given, receives each measurement's flags by (cell, attempt), so the checker run in
    the same process need not compute them again (`check_record`).
    """
    digests = Digests(sweep, cells, states)
    for cell_id, r in results.items():
        digests.take(cell_id, r, True)
    for r in earlier:
        digests.take(r.cell_id, r, False)
    return record_from(sweep_id, sweep, cells, states, digests.items, unreadable, created,
                       resolved, flagged)


def record_from(sweep_id: str, sweep: Sweep, cells: list[Cell], states: Mapping[str, CellState],
                digests: Sequence[Digest], unreadable: Mapping[str, str], created: str,
                resolved: Mapping[str, str] | None = None,
                flagged: dict[tuple[str, int], list[str]] | None = None) -> Record:
    """The record from what was kept of each attempt read (jobs/record/digest.py): the
    attempts the cells' states name (`used`) first, each cell's in the order of `cells`."""
    used = {d.cell_id: d for d in digests if d.used}
    runs = [run for d in digests for run in d.runs]
    index = RunIndex(runs)
    measures = {(r.cell_id, r.attempt): r for r in runs if r.role == "measure"}
    measured: dict[str, Measurement] = {}
    profiles: dict[str, GroupProfile] = {}
    for cell in cells:
        d = used.get(cell.id)
        m = d.measurement if d else None
        # Its own run, as its result.json names it: none where that names another cell.
        mine = measures.get((cell.id, m.attempt)) if m else None
        if m and mine:
            measured[cell.id] = judged(m, mine, index)
            if flagged is not None:
                flagged[(cell.id, m.attempt)] = measured[cell.id].flags
        elif d and d.profile:
            profiles[cell.id] = d.profile
    waiting = {c.id for c in cells if c.id not in measured
               and states.get(c.id, CellState(status="queued")).status in _WAITING}
    groups, skipped = [], []
    for key, members in _grouped(cells).items():
        repeats = _repeats(sweep, members, measured, waiting)
        skips = _skipped(members, measured, repeats)
        skipped += skips
        members = [c for c in members if c.id not in {s.cell_id for s in skips}]
        groups.append(_group(sweep, key, members, measured, profiles, repeats))
    not_needed = {s.cell_id for s in skipped}
    missing = [_missing(c, states.get(c.id), used.get(c.id), unreadable.get(c.id))
               for c in cells if c.id not in measured and c.id not in profiles
               and c.id not in not_needed]
    hosts = {d.host.hostname: d.host for d in used.values()}
    # The names the sweep asked for (a branch, a tag) and the shas submit resolved them to.
    names = {sha: name for name, sha in (resolved or {}).items()}
    commits: dict[str, set[str]] = {names.get(c, c): set() for c in sweep.target.commits}
    for cell in cells:
        if cell.id in measured:
            commits[names.get(cell.commit, cell.commit)].add(measured[cell.id].commit)
    return Record(
        sweep_id=sweep_id, sweep_name=sweep.name, issue=sweep.issue,
        created=created, repo=sweep.target.repo,
        commits={k: sorted(v) for k, v in commits.items()}, n=sweep.n, warmup=sweep.warmup,
        baseline=sweep.baseline.name, aa_arm=sweep.aa_arm.name if sweep.aa_arm else None,
        adaptive_max_n=sweep.adaptive.max_n if sweep.adaptive else None,
        smallest_p=None if sweep.adaptive else separated_p(sweep.n, sweep.n),
        build_recipes={name: b.build for name, b in sweep.backends.items()},
        cells_expected=len(cells), cells_measured=len(measured) + len(profiles),
        hosts=dict(sorted(hosts.items())),
        meta=_meta(created, digests, measured),
        groups=groups, missing=missing, skipped=skipped, host_runs=runs,
        history=attempt_history(cells, [(d.tried.cell_id, d.tried, False) for d in digests
                                         if not d.used]
                                + [(cell_id, d.tried, True) for cell_id, d in used.items()]),
        question=sweep.question,
        answer=answer(sweep.question, sweep.baseline.name, groups) if sweep.question else None,
        host_sentence=record_host_sentence(groups))


def record_host_sentence(groups: Sequence[Group]) -> str:
    return host_sentence((m for g in groups for m in g.measurements),
                         sum(len(g.measurements) for g in groups))


def _grouped(cells: list[Cell]) -> dict[tuple[str, str, str], list[Cell]]:
    groups: dict[tuple[str, str, str], list[Cell]] = {}
    for cell in cells:
        groups.setdefault((cell.commit, cell.backend, cell.model), []).append(cell)
    return groups


def _repeats(sweep: Sweep, cells: list[Cell], measured: Mapping[str, Measurement],
             waiting: set[str]) -> Repeats | None:
    if sweep.adaptive is None:
        return None
    bench = [c for c in cells if c.kind == "bench"]
    return walk(bench, measured, waiting, sweep.n, sweep.adaptive.max_n)


def _skipped(cells: list[Cell], measured: Mapping[str, Measurement],
             repeats: Repeats | None) -> list[Skipped]:
    if repeats is None or repeats.stopped != "decided":
        return []
    return [Skipped(cell_id=c.id, commit=c.commit, backend=c.backend, model=c.model, arm=c.arm,
                    repeat=c.repeat, reason=f"not needed: {repeats.reason}")
            for c in cells if c.adaptive and c.repeat not in repeats.needed
            and c.id not in measured]


def _group(sweep: Sweep, key: tuple[str, str, str], cells: list[Cell],
           measured: Mapping[str, Measurement], profiles: Mapping[str, GroupProfile],
           repeats: Repeats | None) -> Group:
    commit, backend, model = key
    profile = next((profiles[c.id] for c in cells if c.id in profiles), None)
    cells = [c for c in cells if c.kind == "bench"]
    arms = [a.name for a in sweep.measured_arms if any(c.arm == a.name for c in cells)]
    ours = [measured[c.id] for c in cells if c.id in measured]
    rows = [_row(arm, arm == sweep.baseline.name, [c for c in cells if c.arm == arm],
                 [m for m in ours if m.arm == arm]) for arm in arms]
    if profile and sweep.question:
        profile = _with_idle(profile, sweep.question.candidate, ours)
    return Group(commit=commit, backend=backend, model=model,
                 rows=compared_rows(rows, ours, repeats),
                 measurements=sorted(ours, key=lambda m: m.order), profile=profile,
                 repeats=repeats, order=order_notes(cells, ours))


def _row(arm: str, baseline: bool, cells: list[Cell], ms: list[Measurement]) -> ArmRow:
    peaks = [m.peak_gb for m in ms if m.peak_gb is not None]
    prefill_ms = [m.prefill_ms for m in ms if m.prefill_ms is not None]
    return ArmRow(
        arm=arm, baseline=baseline, n=len(ms), expected=len(cells),
        prompt_tokens=sorted({m.prompt_tokens for m in ms}),
        decode_tps=Span.of([m.decode_tps for m in ms]),
        prefill_tps=Span.of([m.prefill_tps for m in ms]),
        prefill_ms=Span.of(prefill_ms) if len(prefill_ms) == len(ms) else None,
        peak_gb=Span.of(peaks) if len(peaks) == len(ms) else None,
        decode_vs_baseline=None, prefill_vs_baseline=None,
        load1=Span.of([v for m in ms for v in (m.load1_before, m.load1_after)]),
        hosts=sorted({m.hostname for m in ms}), commits=sorted({m.commit for m in ms}),
        aa=any(c.aa for c in cells), flagged=sum(1 for m in ms if m.flags))


def compared_rows(rows: list[ArmRow], ms: list[Measurement], repeats: Repeats | None
                  ) -> list[ArmRow]:
    """The rows with their ratios and comparisons against the baseline row."""
    base = next((r for r in rows if r.baseline), None)
    aa = next((r for r in rows if r.aa), None)
    return [_with_comparisons(row, base, aa, ms, repeats) for row in rows]


def _with_comparisons(row: ArmRow, base: ArmRow | None, aa: ArmRow | None,
                      ms: list[Measurement], repeats: Repeats | None) -> ArmRow:
    if base is None or row.baseline:
        return row
    floor = aa if aa and not row.aa else None  # the A/A arm is the floor, not above it
    return row.copy_with(
        decode_vs_baseline=_ratio(row.decode_tps, base.decode_tps),
        prefill_vs_baseline=_ratio(row.prefill_tps, base.prefill_tps),
        **{f"{name}_comparison": _compared(f"{name} tok/s", f"{name}_tps", row.arm, base,
                                           floor, ms, repeats)
           for name in ("decode", "prefill")})


def _compared(metric: str, attr: str, arm: str, base: ArmRow, aa: ArmRow | None,
              ms: list[Measurement], repeats: Repeats | None) -> Comparison | None:
    floor = noise_floor(getattr(aa, attr), getattr(base, attr)) if aa else None
    found = compare(metric, [getattr(m, attr) for m in ms if m.arm == arm],
                    [getattr(m, attr) for m in ms if m.arm == base.arm], floor)
    return _settled_how(found, repeats) if found else None


def _settled_how(c: Comparison, repeats: Repeats | None) -> Comparison:
    """Say, for an answer still undecided, what stopped the repeats."""
    if c.answer != "undecided":
        return c
    if repeats is None:
        return c.copy_with(reason=c.reason + "; the sweep has no adaptive repeats "
                           "(`adaptive: {max_n: N}`) to settle it")
    if repeats.stopped == "cap":
        return c.copy_with(capped=True, reason=c.reason + f"; the cap (max_n "
                           f"= {repeats.max_n}) stopped the repeats")
    if repeats.stopped == "waiting":
        return c.copy_with(reason=c.reason + "; its repeats had not all run")
    return c


def _ratio(arm: Span | None, base: Span | None) -> Ratio | None:
    return Ratio.of(arm, base) if arm and base else None


def _missing(cell: Cell, state: CellState | None, used: Digest | None,
             unreadable: str | None) -> Missing:
    status = state.status if state else "unknown"
    if unreadable:
        reason = f"artifacts unreadable: {unreadable}"
    elif used and used.failure is not None:
        reason = used.failure
    elif state and state.reason:
        reason = state.reason
    elif status in ("queued", "running"):
        reason = f"still {status} when the record was made"
    else:
        reason = "no artifacts were pushed for this cell"
    return Missing(cell_id=cell.id, kind=cell.kind, commit=cell.commit, backend=cell.backend,
                   model=cell.model, arm=cell.arm, repeat=cell.repeat, status=status,
                   reason=reason)


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


def _meta(created: str, digests: Sequence[Digest], measured: Mapping[str, Measurement]) -> Meta:
    pins = {d.commit: d.mlx_pin for d in digests if d.commit and d.mlx_pin is not None}
    toolchains: dict[str, set[str]] = {}
    for d in digests:
        if d.toolchain is not None:
            toolchains.setdefault(d.host.hostname, set()).add(d.toolchain)
    builds = build_times(d.build for d in digests)
    env = {m.arm: m.env for m in sorted(measured.values(), key=lambda m: m.order)}
    return Meta(date=created, mlx_pins=dict(sorted(pins.items())),
                builds=sorted(builds.values(), key=lambda b: (b.commit, b.backend, b.worker)),
                env=dict(sorted(env.items())),
                toolchains={h: " / ".join(sorted(v)) for h, v in sorted(toolchains.items())},
                protocols=sorted({d.protocol for d in digests}))
