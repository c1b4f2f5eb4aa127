"""The lease, for a message and for each of its cells: this hook holds the whole behaviour.

- a message's cells are held in the worker's lease record when it arrives, so a reaper can
  queue them again if the worker dies; released when the message is done;
- a cell is taken atomically (workers/shared/state.py): a duplicate, a replay or a cell
  another live worker holds is dropped here; what other hooks ask of the take (the cancel
  mark, the task event) rides the same script;
- before each command the worker's lease is made to last that command's own timeout plus a
  slack (the idle gate's longest wait and the lease margin), renewed only when what it has
  left falls short or would outlast the command by more than the take's lease (so a worker
  lost after its build is not waited for as long as a build), and extended while the
  command waits for the host lease; nothing renews it while a command runs;
- after the cell its outcome is accepted only if this worker still holds this attempt; the
  end event rides that script, and after the message's last cell so does the release;
- between cells (Celery's timer, workers/service.py) the lease is renewed for the idle time
  and the cells of dead workers are queued again.
"""

import logging
import time
from collections.abc import Callable

import redis

from jobs.record.attempts import FINAL, AttemptResult, CellStatus
from workers.execute import Command
from workers.hooks import Dropped, Hook, Proceed, Riders, Runs
from workers.in_flight import Arrival, Attempt, Group
from workers.shared.clock import now
from workers.shared.leases import IDLE_TTL_S, Lease, LeaseLost, NameTaken
from workers.shared.recovery import LOST_AFTER_S, MAX_ATTEMPTS, recover, take_over
from workers.shared.redis_client import redis_retrying
from workers.shared.state import Store
from workers.shared.stores import ArtifactStore, accept, accepted

log = logging.getLogger(__name__)


class CellLease(Hook):
    def __init__(self, store: Store, lease: Lease, artifacts: ArtifactStore,
                 slack_s: float, setup_s: float, max_attempts: int = MAX_ATTEMPTS,
                 lost_after_s: float = LOST_AFTER_S) -> None:
        # slack: beyond a command's own timeout, the idle gate's longest wait and a margin;
        # setup: checkout, provenance and the build-cache lookup before the first command
        self.store, self.lease, self.slack_s, self.setup_s = store, lease, slack_s, setup_s
        self.artifacts = artifacts
        self.max_attempts, self.lost_after_s = max_attempts, lost_after_s
        self.takeover = False  # the name's previous process is known dead (workers/service.py)
        # Until when (monotonic) the lease surely lasts: its last renewal's ttl counted from
        # before the call went out, so never later than Redis's own expiry.
        self.lasts_until = 0.0
        self.released = False  # the message's hold went with its last cell's finish

    def before_group(self, group: Group) -> Group:
        self.released = False
        for attempt in redis_retrying():
            with attempt:
                sent = time.monotonic()
                self.lease.hold(group.sweep_id, [c.cell.id for c in group.cells],
                                group.task_id, self.setup_s + self.slack_s)
        self._renewed(sent, self.setup_s + self.slack_s)
        return group

    def take(self, arrival: Arrival, riders: Riders) -> Attempt:
        cell = arrival.cell
        self._not_accepted_yet(arrival)
        for attempt in redis_retrying():
            with attempt:
                sent = time.monotonic()
                taken = self.store.take(arrival.sweep_id, cell.id, arrival.item.envelope.generation,
                                        self.lease.name, self.lease.instance,
                                        self.setup_s + self.slack_s, riders.cancel_mark,
                                        riders.event)
        if taken.lease_lost:
            raise LeaseLost(f"worker {self.lease.name} lost its lease before cell {cell.id}: "
                            "it took nothing")
        if taken.attempt is None:
            why = taken.why_not or "not taken"
            if "replay" in why:  # an old generation, a final cell: `status` says so
                self.store.refuse({"at": now(), "worker": self.lease.name, "kind": "dropped",
                                   "sweep_id": arrival.sweep_id, "cell": cell.id, "why": why,
                                   "task_id": arrival.group.task_id})
            raise Dropped(why)
        self._renewed(sent, self.setup_s + self.slack_s)
        return arrival.taken(taken.attempt, taken.marked if riders.cancel_mark else None)

    def _not_accepted_yet(self, arrival: Arrival) -> None:
        """The store is the truth for dedup: a (cell, generation) it holds an accepted final
        attempt of is never measured again, whatever Redis says (a state set back by hand, a
        replayed envelope)."""
        generation = arrival.item.envelope.generation
        try:
            marker = accepted(self.artifacts, arrival.sweep_id, arrival.cell.id)
        except OSError:
            return  # a store away: Redis's take still refuses what it knows is final
        if marker and marker["status"] in FINAL and int(marker["generation"]) >= generation:
            newer = int(marker["generation"]) > generation
            why = (f"generation {generation} is older than the cell's {marker['generation']} "
                   "(a replay)" if newer else
                   f"the artifact store already holds attempt {marker['attempt']} of "
                   f"generation {generation}, {marker['status']} (a replay)")
            self.store.refuse({"at": now(), "worker": self.lease.name, "kind": "dropped",
                               "sweep_id": arrival.sweep_id, "cell": arrival.cell.id,
                               "why": why, "task_id": arrival.group.task_id})
            raise Dropped(why)

    def around_command(self, attempt: Attempt, command: Command, proceed: Proceed) -> Runs:
        left = self.lasts_until - time.monotonic()
        need = command.call.timeout_s + self.slack_s
        # A round trip only when what is left falls short, or when it would outlast this
        # command by more than the take's own lease (after a longer command, such as the
        # build): a worker lost mid-command is found within max(timeout, setup) + slack.
        if left < need or left > max(command.call.timeout_s, self.setup_s) + self.slack_s:
            self.cover(command.call.timeout_s)
        return proceed()

    def cover(self, seconds: float) -> None:
        """Keep this worker's lease for `seconds` and the slack: before a command, and while
        it waits for the host lease (workers/hooks/host_lease.py)."""
        for attempt in redis_retrying():
            with attempt:
                sent = time.monotonic()
                self.lease.renew(seconds + self.slack_s)
        self._renewed(sent, seconds + self.slack_s)

    def _renewed(self, sent: float, ttl_s: float) -> None:
        """Every renewal sets the lease's expiry, later or sooner: each one is noted."""
        self.lasts_until = sent + ttl_s

    def settle(self, attempt: Attempt, result: AttemptResult, riders: Riders) -> None:
        tried = attempt.number
        status: CellStatus = outcome(result)
        reason = result.failure.reason if result.failure else None
        # Redis settles first, in one script that checks this worker still holds this attempt
        # and its lease (fencing); only an accepted attempt then writes the store's marker, so
        # a stale worker (paused past its lease, woken) never replaces the one that counts.
        # The message's last cell lets go of its hold in the same step.
        last = attempt.item == attempt.group.cells[-1]
        ttl = IDLE_TTL_S if last else self.setup_s + self.slack_s
        for retry in redis_retrying():
            with retry:
                sent = time.monotonic()
                accepted, renewed = self.store.finish(
                    attempt.sweep_id, attempt.cell.id, self.lease.name, self.lease.instance,
                    tried, status, reason, ttl, last, riders.event)
        self.lasts_until = sent + ttl if renewed else 0.0
        self.released = last and renewed
        if not accepted:
            log.warning("cell %s attempt %s was not accepted: the cell moved on without it; "
                        "its files stay, unmarked", attempt.cell.id, tried)
        elif result.failure is None or result.failure.kind != "store":
            self._mark(attempt, lambda: accept(self.artifacts, attempt.sweep_id,
                                               attempt.cell.id, tried, status,
                                               attempt.envelope.generation))
        self.lease.check(renewed)

    def after_group(self, group: Group) -> None:
        if not self.released:  # its last cell was not run here (dropped, passed on)
            self.lease.release()
            self._idle()

    def _idle(self) -> None:
        sent = time.monotonic()
        self.lease.renew(IDLE_TTL_S)
        self._renewed(sent, IDLE_TTL_S)

    def between_cells(self) -> None:
        """The idle worker's tick: renew the lease, and queue again what dead workers held."""
        try:
            self._idle()
            found = recover(self.store, self.max_attempts, self.lost_after_s)
            if found.requeued or found.failed or found.lost_messages:
                log.warning("re-queued %d cells of lost workers (%d failed for good), %d lost "
                            "messages", found.requeued, found.failed, found.lost_messages)
        except LeaseLost as lost:
            log.error("%s, while it was idle", lost)
            self.regain()
        except (redis.ConnectionError, redis.TimeoutError) as error:
            log.warning("Redis unreachable between cells: %s", error)

    def register(self) -> None:
        """Take the name's lease once the worker is ready to serve (workers/service.py)."""
        self._take_name(self.takeover, "took over from its dead predecessor")

    def regain(self) -> None:
        """Take the name back after losing its lease. Never from a live other worker: one
        that took the name meanwhile keeps it, and this one stops (a paused worker that comes
        back must not flip the name back)."""
        self._take_name(False, "took its name back")
        self.lasts_until = 0.0  # renewed sooner or not at all: the next command renews

    def _take_name(self, takeover: bool, done: str) -> None:
        """Every cell the name still held is settled first (queued again, or failed at its
        last attempt): none stays `running` under a worker that is not running it."""
        try:
            held = self.lease.take({}, takeover=takeover)
        except NameTaken as taken:
            log.error("%s; this worker stops", taken)
            stop_worker()
            return
        if held:
            log.warning("worker %s %s: %d cells it held were queued again", self.lease.name,
                        done, take_over(self.store, held, self.max_attempts))

    @staticmethod
    def _mark(attempt: Attempt, write: Callable[[], None]) -> bool:
        """The marker mirrors Redis for `record --from-store`; a store that cannot take it
        (full, away) must not keep Redis from settling the cell, so it is logged, not raised."""
        try:
            write()
        except OSError as error:
            log.warning("cell %s: the store's accepted marker was not written (%s); "
                        "`record --from-store` will not see this outcome", attempt.cell.id, error)
            return False
        return True


def stop_worker() -> None:
    """Ask Celery to stop after what it is doing (its warm shutdown, from inside a task or a
    timer): the same flag its own signal handlers set."""
    from celery.worker import state

    state.should_stop = 1  # not 0: a name lost to another worker is worth a look


def outcome(result: AttemptResult) -> CellStatus:
    if result.failure is None:
        return "done"
    return {"timeout": "timed_out", "cancelled": "cancelled"}.get(result.failure.kind, "failed")  # type: ignore[return-value]
