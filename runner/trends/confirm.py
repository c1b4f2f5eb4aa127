"""Confirm a candidate step before anyone is alerted: the commit after the step and the one
before, on the same testbed, with an A/A arm, in rounds that alternate which commit runs first
(interleaved), until the record's headline rule decides or the repeat cap stops it; it
decides nothing before both orders have run. A step spanning several commits that is
confirmed is handed to bisect."""

from collections.abc import Callable

from jobs.errors import UserError
from jobs.record.attempts import FINAL
from jobs.record.model import Record
from jobs.spec.cells import Cell
from jobs.spec.sweep import AA_SUFFIX, Sweep, Target
from jobs.trends.regressions import Candidate, Verdict, judge, round_floor
from runner.records import gather, read_sweep_file
from runner.submit import submit_sweep
from workers.shared import redis_keys
from workers.shared.recovery import recover
from workers.shared.settings import Settings
from workers.shared.state import Store
from workers.shared.stores import open_store

ROUND_N = 4  # per commit and arm in a round: 4 against 4 is the fewest that can pass α = 0.05
MAX_ROUNDS = 3  # the cap: 12 against 12; a verdict from round 2, both orders run
IDLE_S = 15.0
_ATTRS = {"decode_tps": "decode_tps", "prefill_tps": "prefill_tps"}


def confirm(settings: Settings, c: Candidate, say: Callable[[str], None]) -> Verdict:
    artifacts = open_store(settings.artifacts, settings)
    stored = read_sweep_file(artifacts, c.sweep)
    base = confirmation_sweep(stored.sweep, stored.cells, c)
    store = Store.connect(settings.redis_url)
    values: dict[str, dict[str, list[float]]] = {}
    floors: list[float] = []
    sweeps = []
    arm, aa = c.arm, c.arm + AA_SUFFIX
    for number in range(MAX_ROUNDS):
        commits = [c.before, c.commit] if number % 2 == 0 else [c.commit, c.before]
        sweep = base.model_copy(update={"target": Target(repo=base.target.repo,
                                                         commits=commits)})
        # again: round 3 repeats round 1's order on purpose
        sweep_id, _ = submit_sweep(sweep, f"confirm {c.key}", settings, again=True)
        sweeps.append(sweep_id)
        say(f"  round {number + 1}: {sweep_id} ({' then '.join(x[:12] for x in commits)})")
        _wait(store, settings, sweep_id)
        this = _values(gather(store, artifacts, sweep_id), c)
        floor = round_floor(this.get(c.before, {}).get(arm, []),
                            this.get(c.before, {}).get(aa, []))
        floors += [floor] if floor is not None else []
        for commit, arms in this.items():
            for name, got in arms.items():
                values.setdefault(commit, {}).setdefault(name, []).extend(got)
        state, comparison, reason = judge(
            c.metric, values.get(c.before, {}).get(arm, []),
            values.get(c.commit, {}).get(arm, []), floors, capped=number == MAX_ROUNDS - 1,
            both_orders=number >= 1)
        if state is not None:
            return Verdict(key=c.key, state=state, reason=reason, comparison=comparison,
                           sweeps=sweeps)
    raise AssertionError("the last round is capped, so judge always decides")


def confirmation_sweep(sweep: Sweep, cells: list[Cell], c: Candidate) -> Sweep:
    """The candidate's arm, as its own baseline, with an A/A arm, on the backend and host its
    point ran on."""
    cell = next((x for x in cells if x.arm == c.arm and x.model == c.model
                 and x.commit == c.commit and x.kind == "bench"), None)
    arm = next((a for a in sweep.arms if a.name == c.arm), None)
    if cell is None or arm is None:
        raise UserError(f"sweep {c.sweep} has no {c.arm} cell of {c.model} at "
                        f"{c.commit[:12]}; it cannot be measured again from that sweep")
    return Sweep(name=f"{sweep.name}-confirm", issue=sweep.issue,
                 target=Target(repo=sweep.target.repo, commits=[c.before, c.commit]),
                 models=[c.model], backends={cell.backend: sweep.backends[cell.backend]},
                 arms=[arm.model_copy(update={"baseline": True, "models": None})], aa=True,
                 n=ROUND_N, warmup=sweep.warmup)


def _values(record: Record, c: Candidate) -> dict[str, dict[str, list[float]]]:
    """commit -> arm -> the metric of each unflagged measurement of this round."""
    values: dict[str, dict[str, list[float]]] = {}
    for g in record.groups:
        for m in g.measurements:
            if m.flags:  # a busy host's run decides nothing here either
                continue
            values.setdefault(g.commit, {}).setdefault(m.arm, []).append(
                float(getattr(m, _ATTRS[c.metric])))
    return values


def _wait(store: Store, settings: Settings, sweep_id: str) -> None:
    """Until every cell has ended, woken by the sweep's events (as bisect waits)."""
    pubsub = store.r.pubsub()
    pubsub.subscribe(redis_keys.sweep(sweep_id, "events"))
    try:
        pubsub.get_message(timeout=IDLE_S)
        while not all(s.status in FINAL for s in store.states(sweep_id).values()):
            if pubsub.get_message(timeout=IDLE_S) is None:
                recover(store, settings.max_attempts, settings.lost_after_s)
    finally:
        pubsub.close()
