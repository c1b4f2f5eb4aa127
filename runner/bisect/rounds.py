"""The bisect coordinator: measure what the plan asks for, round by round, through the fleet.

Each round is an ordinary sweep made in memory from the user's one (one backend, model and
arm; the asked commits; the asked repeats), submitted, signed and queued like any other, and
waited on through its events. Its record feeds the plan (jobs/compare/bisect_plan.py) again.
A commit's
measurements are kept for the whole bisect, so no cell is measured twice: good and bad once,
each commit between once plus the repeats a comparison still needs; the workers' build cache
builds each commit once.
"""

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from jobs.compare.bisect_plan import Evidence, Plan, Request, Rule, linear_scan, plan
from jobs.compare.bisect_record import BisectRecord, Measured, Round
from jobs.errors import UserError
from jobs.record.attempts import FINAL
from jobs.record.model import Record
from jobs.spec.cells import Cell, expand
from jobs.spec.sweep import Arm, Sweep, Target
from jobs.statistics.adaptive import METRICS
from runner.control import cancel
from runner.records import gather
from runner.submit import resolve_commits, submit_sweep
from workers.shared import redis_keys
from workers.shared.leases import live_workers
from workers.shared.recovery import recover
from workers.shared.settings import Settings
from workers.shared.state import Store
from workers.shared.stores import ArtifactStore, open_store

# With no event for this long, the coordinator does its share of recovery (re-queuing the
# cells of workers whose lease expired) and says when no live worker serves the backend.
IDLE_S = 15.0


@dataclass(frozen=True)
class Subject:
    """What is bisected: one arm on one backend and model of the user's sweep."""

    backend: str
    model: str
    arm: Arm


def subject(sweep: Sweep, backend: str | None, model: str | None, arm: str | None) -> Subject:
    """The backend, model and arm named, or the sweep's only one of each."""
    b = _one("backend", backend, list(sweep.backends))
    m = _one("model", model, sweep.models)
    a = next(x for x in sweep.arms if x.name == _one("arm", arm, [x.name for x in sweep.arms]))
    if a.models is not None and m not in a.models:
        raise UserError(f"arm {a.name} runs only on {', '.join(a.models)}, not on {m}; pick "
                        "one of those with --model")
    return Subject(b, m, a)


def _one(what: str, given: str | None, names: list[str]) -> str:
    if given is None and len(names) == 1:
        return names[0]
    if given in names:
        return given
    options = ", ".join(names)
    raise UserError(f"the sweep has no {what} {given!r} (it has {options}); name one with "
                    f"--{what}" if given else f"the sweep has {len(names)} {what}s ({options}); "
                    f"name the one to bisect with --{what}")


def round_sweep(base: Sweep, s: Subject, commits: list[str], repeats: int) -> Sweep:
    """One round: the subject's arm alone (as its own baseline) at these commits."""
    arm = s.arm.model_copy(update={"baseline": True, "models": None})
    return Sweep(name=f"{base.name}-bisect", issue=base.issue,
                 target=Target(repo=base.target.repo, commits=commits), models=[s.model],
                 backends={s.backend: base.backends[s.backend]}, arms=[arm], n=repeats,
                 warmup=base.warmup)


@dataclass
class Bisect:
    settings: Settings
    base: Sweep
    source: str
    subject: Subject
    rule: Rule
    commits: list[str]
    subjects: dict[str, str]
    names: dict[str, str]
    say: Callable[[str], None]
    evidence: dict[str, Evidence] = field(default_factory=dict)
    measurements: list[Measured] = field(default_factory=list)
    rounds: list[Round] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.store = Store.connect(self.settings.redis_url)
        self.artifacts: ArtifactStore = open_store(self.settings.artifacts, self.settings)
        self.attr = dict(METRICS)[self.rule.metric]

    def run(self) -> BisectRecord:
        while True:
            step = plan(self.commits, self.evidence, self.rule)
            if step.outcome != "measure":
                return self._record(step)
            self.say(f"round {len(self.rounds) + 1}: {step.reason}")
            sweeps = self._measure(step.requests)
            self.rounds.append(Round(index=len(self.rounds) + 1, reason=step.reason,
                                     requests=step.requests, sweeps=sweeps))

    def reuse(self, sweep_ids: list[str]) -> None:
        """Take the measurements earlier sweeps made of exactly these cells (same repo,
        commit, backend, model, build, run and warm-up)."""
        probe = expand(round_sweep(self.base, self.subject, self.commits[:1], 1))[0]
        for name in sweep_ids:
            sweep_id = self.store.resolve(name)
            _, cells, _ = self.store.sweep(sweep_id)
            same = {c.id for c in cells if c.kind == "bench" and c.commit in self.commits
                    and _same_measurement(c, probe)}
            if not same:
                raise UserError(f"sweep {sweep_id} has no cell that measures what this bisect "
                                f"does ({self.subject.arm.recipe} on {self.subject.backend} · "
                                f"{self.subject.model}, same params, env, build and warm-up, "
                                "at a commit of the range); drop it from --reuse")
            self._ingest(gather(self.store, self.artifacts, sweep_id), same, reused=True)

    def _measure(self, requests: list[Request]) -> list[str]:
        by_n: dict[int, list[str]] = {}
        for q in requests:
            by_n.setdefault(q.repeats, []).append(q.commit)
        # again: a round measures what it asks for, whatever an earlier bisect measured
        submitted = [submit_sweep(round_sweep(self.base, self.subject, commits, n),
                                  self.source, self.settings, again=True)
                     for n, commits in by_n.items()]
        for sweep_id, cells in submitted:
            self.say(f"  {sweep_id}: {len(cells)} cell{'s' * (len(cells) != 1)} queued")
        try:
            for sweep_id, _ in submitted:
                self._wait(sweep_id)
        except KeyboardInterrupt:  # stop what this round started, then let the CLI say so
            for sweep_id, cells in submitted:
                cancel(self.store, sweep_id, cells)
            raise
        for sweep_id, cells in submitted:
            commits = {c.commit for c in cells}
            before = {c: _counts(self.evidence.get(c)) for c in commits}
            self._ingest(gather(self.store, self.artifacts, sweep_id), {c.id for c in cells})
            for commit in commits:
                if before[commit] == _counts(self.evidence.get(commit)):
                    self._failed(commit, f"sweep {sweep_id} ended without a measurement or a "
                                 "reason for this commit")
            self.say(self._summary(sweep_id, commits))
        return [sweep_id for sweep_id, _ in submitted]

    def _wait(self, sweep_id: str) -> None:
        """Until every cell has ended: woken by the sweep's events, never by a timer loop
        (a quiet spell only runs recovery). Subscribed, and confirmed, before the first look
        at the states, so no change falls between the two."""
        pubsub = self.store.r.pubsub()
        pubsub.subscribe(redis_keys.sweep(sweep_id, "events"))
        try:
            pubsub.get_message(timeout=IDLE_S)  # the subscription's confirmation
            while not self._ended(sweep_id):
                if pubsub.get_message(timeout=IDLE_S) is None:
                    self._quiet(sweep_id)
        finally:
            pubsub.close()

    def _ended(self, sweep_id: str) -> bool:
        return all(s.status in FINAL for s in self.store.states(sweep_id).values())

    def _quiet(self, sweep_id: str) -> None:
        recover(self.store, self.settings.max_attempts, self.settings.lost_after_s)
        served = {w.get("backend") for w in live_workers(self.store.r).values()}
        if self.subject.backend not in served:
            self.say(f"{sweep_id}: waiting; no live worker serves backend "
                     f"{self.subject.backend}")

    def _ingest(self, record: Record, cell_ids: set[str], reused: bool = False) -> None:
        for g in record.groups:
            for m in g.measurements:
                if m.cell_id not in cell_ids:
                    continue
                value = getattr(m, self.attr)
                self._evidence(g.commit).values.append(value)
                self.measurements.append(Measured(
                    commit=g.commit, sweep_id=record.sweep_id, cell_id=m.cell_id,
                    attempt=m.attempt, repeat=m.repeat, worker=m.worker, hostname=m.hostname,
                    started=m.started, value=value, build_cached=m.build_cached,
                    load1_before=m.load1_before, load1_after=m.load1_after, flags=m.flags,
                    reused=reused))
        for missing in record.missing:
            if missing.cell_id not in cell_ids or missing.kind != "bench":
                continue
            if missing.status == "cancelled":
                raise UserError(f"cell {missing.cell_id} of sweep {record.sweep_id} was "
                                "cancelled; the bisect stops (start it again with --reuse "
                                f"{record.sweep_id} to keep what was measured)")
            self._failed(missing.commit, f"{missing.status}: {missing.reason}")

    def _evidence(self, commit: str) -> Evidence:
        return self.evidence.setdefault(commit, Evidence())

    def _failed(self, commit: str, why: str) -> None:
        self._evidence(commit).failures.append(why)

    def _summary(self, sweep_id: str, commits: set[str]) -> str:
        parts = []
        for c in sorted(commits, key=self.commits.index):
            e = self._evidence(c)
            values = f"{len(e.values)} values" if e.values else "nothing measured"
            why = f" ({e.failures[-1]})" if e.failures and not e.values else ""
            parts.append(f"{c[:12]}: {values}{why}")
        return f"  {sweep_id}: " + "; ".join(parts)

    def _record(self, step: Plan) -> BisectRecord:
        now = datetime.now(UTC)
        return BisectRecord(
            bisect_id=f"{self.base.name}-bisect-{now:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}",
            created=now.isoformat(timespec="seconds"), repo=self.base.target.repo,
            backend=self.subject.backend, model=self.subject.model, arm=self.subject.arm.name,
            rule=self.rule, good=self.commits[0], bad=self.commits[-1], names=self.names,
            subjects=self.subjects, outcome=step.outcome, culprit=step.culprit,
            last_good=step.last_good, candidates=step.candidates, reason=step.reason,
            judgements=step.judgements, rounds=self.rounds, measurements=self.measurements,
            failures={c: e.failures for c, e in self.evidence.items() if e.failures},
            measured=sum(1 for m in self.measurements if not m.reused),
            linear_scan=linear_scan(self.commits, self.evidence, self.rule),
            commits_tried=len({q.commit for r in self.rounds for q in r.requests}))


def _same_measurement(cell: Cell, probe: Cell) -> bool:
    return (cell.repo, cell.backend, cell.model, cell.build, cell.run, cell.warmup) == (
        probe.repo, probe.backend, probe.model, probe.build, probe.run, probe.warmup)


def _counts(e: Evidence | None) -> tuple[int, int]:
    return (len(e.values), len(e.failures)) if e else (0, 0)


def endpoints(repo: str, good: str | None, bad: str | None, sweep: Sweep) -> dict[str, str]:
    """Good and bad as given (or the sweep's two commits, good first), resolved to shas."""
    if good is None or bad is None:
        if good or bad or len(sweep.target.commits) != 2:
            raise UserError("name both ends with --good and --bad, or give the sweep exactly "
                            "two commits, good first")
        good, bad = sweep.target.commits
    return resolve_commits(repo, [good, bad])
