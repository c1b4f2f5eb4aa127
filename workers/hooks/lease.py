"""The cell's lease: taken before the cell, renewed before each step, settled after it.

A cell is taken atomically (workers/shared/state.py): a duplicate, a replay or a cell another
live worker holds is dropped here. Before each command the worker's lease is set to that
command's own timeout plus a slack (the idle gate's longest wait and the lease margin); after
the cell the outcome is accepted only if this worker still holds this attempt.
"""

import logging
from collections.abc import Callable

import redis
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_exponential_jitter

from jobs.record.attempts import FINAL, AttemptResult, CellStatus, Run
from workers.execute import Command
from workers.hooks import Dropped, Hook, Proceed
from workers.in_flight import Job
from workers.shared.clock import now
from workers.shared.leases import Lease
from workers.shared.state import Queued, Store
from workers.shared.stores import ArtifactStore, accept, put_json

log = logging.getLogger(__name__)
# Redis may be away for a while (a restart, a network cut): keep trying this long.
REDIS_PATIENCE_S = 120.0


def redis_retrying() -> Retrying:
    return Retrying(retry=retry_if_exception_type((redis.ConnectionError, redis.TimeoutError)),
                    stop=stop_after_delay(REDIS_PATIENCE_S),
                    wait=wait_exponential_jitter(initial=0.5, max=10), reraise=True)


class CellLease(Hook):
    def __init__(self, store: Store, lease: Lease, artifacts: ArtifactStore,
                 slack_s: float, setup_s: float) -> None:
        # slack: beyond a command's own timeout, the idle gate's longest wait and a margin;
        # setup: checkout, provenance and the build-cache lookup before the first command
        self.store, self.lease, self.slack_s, self.setup_s = store, lease, slack_s, setup_s
        self.artifacts = artifacts

    def before_cell(self, job: Job) -> None:
        cell = job.cell
        for attempt in redis_retrying():
            with attempt:
                taken = self.store.take(job.sweep_id, cell.id, job.envelope.generation,
                                        self.lease.name, self.lease.instance,
                                        before=self._renewal(self.setup_s))
        if taken.attempt is None:
            why = taken.why_not or "not taken"
            if "replay" in why:  # an old generation, a final cell: `status` says so
                self.store.refuse({"at": now(), "worker": self.lease.name, "kind": "dropped",
                                   "sweep_id": job.sweep_id, "cell": cell.id, "why": why,
                                   "task_id": job.group.task_id})
            raise Dropped(why)
        job.attempt = taken.attempt

    def around_command(self, job: Job, command: Command, proceed: Proceed) -> Run:
        for attempt in redis_retrying():
            with attempt:
                self.lease.renew(command.call.timeout_s + self.slack_s)
        return proceed()

    def after_cell(self, job: Job, result: AttemptResult) -> None:
        assert job.attempt is not None
        tried = job.attempt
        status: CellStatus = outcome(result)
        reason = result.failure.reason if result.failure else None
        # The store's marker goes first, so that a cell Redis calls final always has one
        # (`record --from-store` reads it); a marker the cell moved past is put right below.
        marked = (result.failure is None or result.failure.kind != "store") and self._mark(
            job, lambda: accept(self.artifacts, job.sweep_id, job.cell.id, tried, status))
        for attempt in redis_retrying():
            with attempt:
                accepted = self.store.finish(job.sweep_id, job.cell.id, self.lease.name,
                                             self.lease.instance, job.attempt, status, reason,
                                             after=self._renewal(self.setup_s))
        if not accepted:
            log.warning("cell %s attempt %s was not accepted: the cell moved on without it",
                        job.cell.id, job.attempt)
            if marked:
                self._mark_as_redis_has_it(job)

    def _mark_as_redis_has_it(self, job: Job) -> None:
        """Another attempt counts (or none yet): the store's marker says what Redis says."""
        for attempt in redis_retrying():
            with attempt:
                state = self.store.state(job.sweep_id, job.cell.id)
        if state is not None and state.status in FINAL and state.attempt is not None:
            final = state
            self._mark(job, lambda: accept(self.artifacts, job.sweep_id, job.cell.id,
                                           final.attempt, final.status))
        else:  # not final yet: the attempt that ends it writes the marker then
            self._mark(job, lambda: put_json(
                self.artifacts, f"{job.sweep_id}/{job.cell.id}/accepted.json",
                {"attempt": None, "status": state.status if state else "queued"}))

    @staticmethod
    def _mark(job: Job, write: Callable[[], None]) -> bool:
        """The marker mirrors Redis for `record --from-store`; a store that cannot take it
        (full, away) must not keep Redis from settling the cell, so it is logged, not raised."""
        try:
            write()
        except OSError as error:
            log.warning("cell %s: the store's accepted marker was not written (%s); "
                        "`record --from-store` will not see this outcome", job.cell.id, error)
            return False
        return True

    def _renewal(self, seconds: float) -> Pipelined:
        """The lease renewal that rides along with a state change (one round trip)."""
        return Pipelined(lambda pipe: self.lease.renew_on(pipe, seconds + self.slack_s),
                      self.lease.check)


def outcome(result: AttemptResult) -> CellStatus:
    if result.failure is None:
        return "done"
    return {"timeout": "timed_out", "cancelled": "cancelled"}.get(result.failure.kind, "failed")  # type: ignore[return-value]
