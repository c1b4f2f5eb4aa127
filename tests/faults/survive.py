"""Issue 16's survival runs: a big sweep of a no-op recipe through real workers on a private
redis-server, once per fault, each checked cell by cell; a row per fault into docs/faults.md.

Run: .venv/bin/python -m tests.faults.survive [--cells 2000] [--workers N] [--crowd 50]
[--only NAME]. Not a pytest test: at full size it takes tens of minutes, beyond CI's budget.
"""

import argparse
import itertools
import json
import os
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from jobs.record.attempts import FINAL
from runner.demo.target_repo import git
from tests.faults.harness import Lab, lab, lab_on
from tests.faults.survive_doc import Row, write_rows
from tests.faults.test_junk_messages import JUNK
from tests.faults.test_lease_faults import skewed
from tests.support.cut_submit import STEPS, cut
from tests.support.fleet import cli, sweep_file
from tests.support.sentinel import SentinelGroup
from tests.support.waits import eventually
from workers.shared import redis_keys
from workers.shared.leases import live_workers
from workers.shared.queues import backend_queue
from workers.shared.redis_keys import REFUSED
from workers.shared.stores.local import LocalStore

# The idle gate never waits: the host is busy with the fleet itself, and the gate has its own
# tests (a capped wait per group would only stretch the runs).
NO_GATE = {"idle_load1": 1e6}
# A scenario not over by then has failed; its workers and servers are stopped.
SCENARIO_S = 600.0
# Arms per group; each commit of the target is one group (one worker measures it).
ARMS = 5
# Groups in a sweep of 250 cells or more: one for each worker of a crowd of 50.
GROUPS = 50
# How often the coordinator side looks at the sweep's counts (a 2,000-cell HGETALL).
LOOK_EVERY_S = 1.0
# How a worker's refusal of junk on the cpu queue begins (test_junk_messages checks it too).
JUNK_REFUSED = f"a message on {backend_queue('cpu')} is not a benchfleet task"
# The primary is killed once this share of the sweep is done.
FAILOVER_AT = 0.25
# The longest the sentinels may take to promote the replica (down after 1 s, then a vote).
FAILOVER_S = 30.0


class Budget:
    """What is left of a scenario's time; every wait asks it."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self.end - time.monotonic())


@dataclass
class Run:
    cells: int
    workers: int
    crowd: int
    root: Path
    budget: Budget = field(default_factory=lambda: Budget(SCENARIO_S))


@dataclass
class Outcome:
    """What a scenario saw: its figures and the checks that did not hold."""

    sweeps: list[str] = field(default_factory=list)  # checked when the scenario ends
    started: float = 0.0  # time.monotonic() at the first submit
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    done_first: int = 0  # cells done at attempt 1 with that one attempt in the store
    cells: int = 0
    wall_s: float = 0.0
    recovery: str = "–"


def shape(cells: int) -> tuple[int, int]:
    """(groups, repeats) for `cells` cells of ARMS arms; SystemExit when they do not divide."""
    groups = GROUPS if cells >= GROUPS * ARMS else max(1, cells // ARMS)
    repeats = cells // (groups * ARMS)
    if groups * ARMS * repeats != cells:
        raise SystemExit(f"survive: --cells {cells} does not split into {groups} groups of "
                         f"{ARMS} arms; use a multiple of {GROUPS * ARMS} (or of {ARMS} "
                         f"below {GROUPS * ARMS})")
    return groups, repeats


def commits(lab_: Lab, count: int) -> list[str]:
    """`count` commits of the target (main and empty commits after it): one group each."""
    shas = [lab_.shas[1]]
    for i in range(count - 1):
        git(lab_.repo, "commit", "--quiet", "--allow-empty", "-m", f"group {i + 2}")
        shas.append(git(lab_.repo, "rev-parse", "HEAD"))
    return shas


def sweep_path(lab_: Lab, run: Run, name: str, shas: list[str]) -> Path:
    _, repeats = shape(run.cells)
    return sweep_file(lab_.root, {
        "name": name, "target": {"repo": str(lab_.repo), "commits": shas},
        "models": ["tinymoe-a3"], "backends": {"cpu": {"build": "noop-build"}},
        "arms": [{"name": f"arm{i}", "recipe": "noop-bench", "baseline": i == 0}
                 for i in range(ARMS)], "n": repeats, "warmup": 0})


def submit(lab_: Lab, path: Path, out: Outcome) -> str:
    out.started = time.monotonic()
    done = cli(lab_.settings, "submit", "--wait-for-worker", str(path))
    assert done.returncode == 0, done.stderr
    out.sweeps.append(sweep_id := done.stdout.strip().splitlines()[-1])
    return sweep_id


def start_workers(lab_: Lab, count: int, prefix: str = "w") -> list[str]:
    names = [f"{prefix}{i}" for i in range(count)]
    for name in names:
        lab_.fleet.start("cpu", name)
    return names


def until_live(lab_: Lab, names: list[str], run: Run) -> float:
    started = time.monotonic()
    eventually(lambda: set(names) <= set(live_workers(lab_.store.r)), run.budget.left(),
               f"workers {names[0]}..{names[-1]} live", every_s=0.2)
    return time.monotonic() - started


def done_count(lab_: Lab, sweep_id: str) -> int:
    return sum(s.status == "done" for s in lab_.store.states(sweep_id).values())


def log_length(lab_: Lab, sweep_id: str) -> int:
    return int(lab_.store.r.llen(redis_keys.sweep(sweep_id, "log")))


def done_after(lab_: Lab, sweep_id: str, offset: int) -> bool:
    """Whether a cell was done after the first `offset` entries of the sweep's log: a cheap
    look (the log's new tail), for the waits that time a recovery."""
    tail = lab_.store.r.lrange(redis_keys.sweep(sweep_id, "log"), offset, -1)
    return any(json.loads(entry)["status"] == "done" for entry in tail)


def until_final(lab_: Lab, sweep_ids: list[str], run: Run) -> None:
    """Until every cell of these sweeps is final, or the scenario's time is up."""
    def ended() -> bool:
        return all(s.status in FINAL for sweep_id in sweep_ids
                   for s in lab_.store.states(sweep_id).values())
    eventually(ended, run.budget.left(), "every cell final", every_s=LOOK_EVERY_S)


@contextmanager
def checked(lab_: Lab, out: Outcome) -> Iterator[None]:
    """Check the scenario's sweeps when it ends, however it ends (a timeout names the cells
    still not final), while its fleet is still up."""
    try:
        yield
    finally:
        out.wall_s = out.wall_s or (time.monotonic() - out.started if out.started else 0.0)
        for sweep_id in out.sweeps:
            try:
                check(lab_, sweep_id, out)
            except Exception as error:  # Redis gone, say: the row says so
                out.problems.append(f"cannot check {sweep_id}: {error}")


def check(lab_: Lab, sweep_id: str, out: Outcome) -> None:
    """Each cell done at attempt 1, with that one attempt in the artifact store and its
    accepted marker; what does not hold goes into `out.problems`, by cell."""
    artifacts = LocalStore(Path(lab_.settings.artifacts))
    states = lab_.store.states(sweep_id)
    out.cells += len(states)
    for cell_id, state in sorted(states.items()):
        stored = artifacts.attempts(sweep_id, cell_id)
        if state.status not in FINAL:
            out.problems.append(f"{cell_id} stuck {state.status} (worker {state.worker})")
        elif state.status != "done":
            out.problems.append(f"{cell_id} ended {state.status}: {state.reason}")
        elif state.attempt != 1 or stored != [1]:
            out.problems.append(f"{cell_id} done at attempt {state.attempt}, attempts "
                                f"{stored} in the store")
        else:
            out.done_first += 1
    try:
        lab_.verify(sweep_id)
    except AssertionError as error:
        out.problems.append(f"verify: {str(error)[:300]}")


def per_worker(lab_: Lab, sweep_id: str) -> Counter[str]:
    return Counter(s.worker or "?" for s in lab_.store.states(sweep_id).values())


# Where each of cut_submit's steps cuts `submit`, in the user's words.
CUT_AT = {"after-sweep-file": "once sweep.json is in the artifact store (nothing in Redis)",
          "after-save": "once the sweep is saved in Redis (no message queued)",
          "mid-publish": "mid-publish (half of the group messages queued)"}
assert set(CUT_AT) == set(STEPS), "a step of tests/support/cut_submit.py has no words here"


# The scenarios, each on its own lab; `Outcome.wall_s` is from the first submit to the end.

def cut_submit(step: str) -> Callable[[Run, Outcome], None]:
    """The coordinator SIGKILLed at `step` of submit, then one `submit --resume`, while the
    workers serve."""
    def scenario(run: Run, out: Outcome) -> None:
        with lab(run.root, **NO_GATE) as lab_, checked(lab_, out):
            names = start_workers(lab_, run.workers)
            path = sweep_path(lab_, run, step, commits(lab_, shape(run.cells)[0]))
            until_live(lab_, names, run)
            out.started = time.monotonic()
            out.sweeps.append(sweep_id := cut(lab_.settings, step, path))
            queued, asked = len(lab_.store.states(sweep_id)), time.monotonic()
            resumed = cli(lab_.settings, "submit", "--resume", sweep_id)
            assert resumed.returncode == 0, resumed.stderr
            out.recovery = f"{time.monotonic() - asked:.1f}"
            until_final(lab_, [sweep_id], run)
            said = resumed.stdout.strip().splitlines()[-1].split(": ", 1)[-1]
            out.notes.append(f"{queued:,} cell states in Redis when it was killed; resume: "
                             f"{said}; {run.workers} workers")
    return scenario


def sentinel(run: Run, out: Outcome) -> None:
    """The Redis primary SIGKILLed once a quarter of the sweep is done (Sentinel: a replica,
    three sentinels)."""
    with SentinelGroup(run.root / "redis", password="s3cret") as group, \
            lab_on(run.root, group.primary, group.url, **NO_GATE) as lab_, \
            checked(lab_, out):
        names = start_workers(lab_, run.workers)
        path = sweep_path(lab_, run, "failover", commits(lab_, shape(run.cells)[0]))
        until_live(lab_, names, run)
        sweep_id = submit(lab_, path, out)
        eventually(lambda: done_count(lab_, sweep_id) >= run.cells * FAILOVER_AT,
                   run.budget.left(), "a quarter of the cells done", every_s=LOOK_EVERY_S)
        before, old = done_count(lab_, sweep_id), group.primary_port()
        logged = log_length(lab_, sweep_id)
        assert group.primary.proc is not None
        killed = time.monotonic()
        os.kill(group.primary.proc.pid, signal.SIGKILL)
        group.primary.proc.wait()
        eventually(lambda: group.primary_port() not in (None, old), FAILOVER_S,
                   "the sentinels promote the replica", every_s=0.1)
        promoted = time.monotonic() - killed
        # The log as the new primary has it: what the replica held at the kill, and after.
        eventually(lambda: done_after(lab_, sweep_id, min(logged, log_length(lab_, sweep_id))),
                   run.budget.left(), "a cell done after the kill", every_s=0.1)
        out.recovery = f"{time.monotonic() - killed:.1f} (promoted in {promoted:.1f})"
        until_final(lab_, [sweep_id], run)
        ended = time.monotonic()
        out.notes.append(f"killed at {before:,} cells done; {run.workers} workers; "
                         f"{before / (killed - out.started):.1f} cells/s before the kill, "
                         f"{(run.cells - before) / (ended - killed):.1f} after")


def clocks(run: Run, out: Outcome) -> None:
    """Two workers under libfaketime, a minute behind and a minute ahead, beside true ones."""
    with lab(run.root, **NO_GATE) as lab_, checked(lab_, out):
        names = start_workers(lab_, max(1, run.workers - 2))
        for name, shift in (("behind", "-60s"), ("ahead", "+60s")):
            lab_.fleet.start("cpu", name, wrap=skewed(shift))
        path = sweep_path(lab_, run, "clocks", commits(lab_, shape(run.cells)[0]))
        until_live(lab_, [*names, "behind", "ahead"], run)
        sweep_id = submit(lab_, path, out)
        until_final(lab_, [sweep_id], run)
        took = per_worker(lab_, sweep_id)
        out.notes.append(f"{len(names)} true workers; the one 60 s behind measured "
                         f"{took['behind']} cells, the one 60 s ahead {took['ahead']}")


def crowd(run: Run, out: Outcome) -> None:
    """`--crowd` workers launched together and the sweep submitted at once, before any is
    live; then the Redis connections each worker holds."""
    with lab(run.root, **NO_GATE) as lab_, checked(lab_, out):
        path = sweep_path(lab_, run, "crowd", commits(lab_, shape(run.cells)[0]))
        started = time.monotonic()
        names = start_workers(lab_, run.crowd, prefix="c")
        sweep_id = submit(lab_, path, out)
        until_live(lab_, names, run)
        live_s = time.monotonic() - started
        eventually(lambda: done_after(lab_, sweep_id, 0), run.budget.left(),
                   "a first cell done", every_s=0.1)
        first_s = time.monotonic() - started
        until_final(lab_, [sweep_id], run)
        held = connections(lab_)  # each worker has measured cells by now (or has waited)
        took = per_worker(lab_, sweep_id)
        out.recovery = f"all live {live_s:.1f}; first cell done {first_s:.1f}"
        out.notes.append(f"{run.crowd} workers, {len(took)} of them measured cells (at most "
                         f"{max(took.values())} each); Redis connections per worker: {held}")


def connections(lab_: Lab) -> str:
    """The Redis connections each worker holds (CLIENT LIST matched to the workers' pids
    through their sockets): `min–max`, and one worker's by the last command each ran."""
    by_pid = socket_owners([p.pid for p in lab_.fleet.procs.values()])
    doing: dict[int, Counter[str]] = {}
    for client in lab_.store.r.client_list():
        pid = by_pid.get(client["addr"])
        if pid is not None:
            doing.setdefault(pid, Counter())[client["cmd"]] += 1
    if not doing:
        return "none matched"
    counts = [sum(c.values()) for c in doing.values()]
    one = doing[min(doing)]
    return (f"{min(counts)}–{max(counts)} (one worker's, by last command: "
            + ", ".join(f"{cmd} x{n}" if n > 1 else cmd for cmd, n in one.most_common()) + ")")


def socket_owners(pids: list[int]) -> dict[str, int]:
    """`127.0.0.1:PORT` of each loopback TCP socket these processes hold -> the pid."""
    inodes = {}
    for pid in pids:
        fds = Path(f"/proc/{pid}/fd")
        for fd in fds.iterdir() if fds.exists() else ():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes[target[8:-1]] = pid
    owners = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, inode = fields[1], fields[9]
        if inode in inodes:
            address, port = local.split(":")
            ip = ".".join(str(int(address[i:i + 2], 16)) for i in (6, 4, 2, 0))
            owners[f"{ip}:{int(port, 16)}"] = inodes[inode]
    return owners


def junk(run: Run, out: Outcome) -> None:
    """A malformed message pushed onto the workers' queue every second for the whole sweep."""
    with lab(run.root, **NO_GATE) as lab_, checked(lab_, out):
        names = start_workers(lab_, run.workers)
        path = sweep_path(lab_, run, "junk", commits(lab_, shape(run.cells)[0]))
        until_live(lab_, names, run)
        lab_.store.r.delete(REFUSED)
        sweep_id = submit(lab_, path, out)
        with pushing(lab_) as pushed:
            until_final(lab_, [sweep_id], run)
        eventually(lambda: lab_.store.r.llen(REFUSED) >= pushed[0], min(60.0, run.budget.left()),
                   f"{pushed[0]} junk messages refused")
        refused = lab_.store.refused()
        odd = [r["why"] for r in refused if not r["why"].startswith(JUNK_REFUSED)]
        if odd:
            out.problems.append(f"{len(odd)} refusals not of junk, e.g. {odd[0]}")
        gone = [n for n, p in lab_.fleet.procs.items() if p.poll() is not None]
        if gone:
            out.problems.append(f"workers exited: {', '.join(gone)}")
        left = lab_.store.r.llen(backend_queue("cpu"))
        out.notes.append(f"{pushed[0]} junk messages pushed, {len(refused)} refused, {left} left "
                         f"in the queue; {run.workers} workers, {len(gone)} exited")


@contextmanager
def pushing(lab_: Lab) -> Iterator[list[int]]:
    """A thread pushing one of test_junk_messages' junk messages a second, in turn, until the
    block ends; yields [how many it pushed]."""
    pushed, stop = [0], threading.Event()
    kinds = itertools.cycle(JUNK.values())

    def push() -> None:
        client = lab_.store.r
        while not stop.wait(1.0):
            client.lpush(backend_queue("cpu"), next(kinds))
            pushed[0] += 1

    thread = threading.Thread(target=push, daemon=True)
    thread.start()
    try:
        yield pushed
    finally:
        stop.set()
        thread.join()


SCENARIOS: dict[str, tuple[str, Callable[[Run, Outcome], None]]] = {
    **{f"cut-{step}": (f"the coordinator SIGKILLed {where}, then one `submit --resume`",
                       cut_submit(step)) for step, where in CUT_AT.items()},
    "sentinel": ("a Sentinel failover mid-sweep (the primary SIGKILLed)", sentinel),
    "clocks": ("two workers under libfaketime, at -60 s and +60 s, beside true ones", clocks),
    "crowd": ("the workers all launched at once, the sweep submitted at once", crowd),
    "junk": ("a malformed message pushed onto the queue every second", junk),
}


def survive(name: str, run: Run) -> Row:
    what, scenario = SCENARIOS[name]
    out = Outcome()
    print(f"survive: {name} ({run.cells} cells) ...", flush=True)
    try:
        scenario(run, out)
    except Exception as error:  # the scenario failed: say how, and go on to the next
        out.problems.insert(0, f"failed: {type(error).__name__}: {str(error)[:300]}")
    row = Row(name=name, what=what, cells=out.cells, done_first=out.done_first,
              problems=out.problems, wall_s=out.wall_s, recovery=out.recovery,
              notes="; ".join(n for n in out.notes if n), day=f"{datetime.now(UTC):%Y-%m-%d}",
              load1=os.getloadavg()[0])
    print(f"survive: {name}: {row.outcome()}", flush=True)
    return row


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.faults.survive",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=4, help="workers of each scenario")
    parser.add_argument("--crowd", type=int, default=50, help="workers of the crowd scenario")
    parser.add_argument("--only", choices=sorted(SCENARIOS), action="append",
                        help="this scenario only (may be given again)")
    args = parser.parse_args(argv)
    shape(args.cells)
    rows = []
    for name in args.only or SCENARIOS:
        with tempfile.TemporaryDirectory(prefix=f"survive-{name}-") as tmp:
            rows.append(survive(name, Run(args.cells, args.workers, args.crowd, Path(tmp))))
    sizes = f"--cells {args.cells} --workers {args.workers} --crowd {args.crowd}"
    write_rows(rows, f"python -m tests.faults.survive {sizes}", list(SCENARIOS))
    return 0 if all(not r.problems for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
