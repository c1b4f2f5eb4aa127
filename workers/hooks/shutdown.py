"""Shutdown, as Celery's own but by the cell: one Ctrl-C (or SIGTERM) is a warm shutdown, the
worker ends after the cell it is running; a second Ctrl-C (or SIGQUIT) is a cold one, the
running command's process group is killed now and its cell ends `cancelled`. Either way the
message's cells not yet run go back to their queue, as the signed envelopes they came in, for
another worker; a third Ctrl-C ends the worker at once (its lease expires, the reaper
re-queues what it held).

Celery's handlers would wait for the whole message (one task) or, cold, ask the solo pool to
kill a job it cannot kill; the worker puts these in their place once Celery has installed its
own (workers/service.py).
"""

import logging
from types import FrameType

from celery import platforms
from celery.exceptions import WorkerShutdown, WorkerTerminate
from celery.worker import state

from jobs.parsers.readings import Failure
from workers import execute
from workers.execute import Command
from workers.hooks import Dropped, Hook, Proceed, Runs
from workers.in_flight import Arrival, Attempt, Group
from workers.shared.messages import GroupMessage, publish
from workers.shared.queues import cell_queue
from workers.shared.state import Store
from workers.workspace import CellFailure

log = logging.getLogger(__name__)
COLD_REASON = "worker stopped (cold shutdown)"
# Both end 0: the worker stopped as asked, nothing of its message lost (Celery's cold ends 1).
EXIT_OK, EXIT_FORCED = 0, 1


class Shutdown(Hook):
    def __init__(self, store: Store, worker: str) -> None:
        self.store, self.worker = store, worker
        self.warm = self.cold = False
        self.group: Group | None = None  # the message running now
        self.passed_on = False

    def install(self) -> None:
        """Take SIGINT, SIGTERM and SIGQUIT over from Celery's handlers."""
        platforms.signals["SIGINT"] = self._interrupted
        platforms.signals["SIGTERM"] = self._warm
        platforms.signals["SIGQUIT"] = self._cold

    def before_group(self, group: Group) -> Group:
        self.group, self.passed_on = group, False
        return group

    def before_cell(self, arrival: Arrival) -> None:
        if not (self.warm or self.cold):
            return
        if not self.passed_on:
            self.passed_on = True
            self._pass_on(arrival)
        raise Dropped(f"worker {self.worker} is stopping; passed on to another worker")

    def around_command(self, attempt: Attempt, command: Command, proceed: Proceed) -> Runs:
        if self.cold:
            raise _cold()
        runs = proceed()
        if self.cold:  # its process group was killed while it ran (execute.halt)
            raise _cold()
        return runs

    def after_group(self, group: Group) -> None:
        self.group = None
        if self.warm or self.cold:
            state.should_stop = EXIT_OK

    def _pass_on(self, arrival: Arrival) -> None:
        """The cells from this one on, re-published as they came (anyone may: they are signed)."""
        cells = arrival.group.cells
        rest = cells[cells.index(arrival.item):]
        messages = [GroupMessage(arrival.sweep_id, cell_queue(rest[0].cell),
                                 [c.cell.id for c in rest], [c.signed for c in rest])]
        publish(self.store.r, messages)
        log.warning("worker %s is stopping: %d cells of sweep %s queued again for another "
                    "worker", self.worker, len(rest), arrival.sweep_id)

    def _interrupted(self, signum: int, frame: FrameType | None) -> None:
        if self.cold:
            raise WorkerTerminate(EXIT_FORCED)  # a third Ctrl-C: nothing more is waited for
        if self.warm:
            self._cold(signum, frame)
        else:
            self._warm(signum, frame)

    def _warm(self, signum: int, frame: FrameType | None) -> None:
        if self.warm or self.cold:
            return
        self.warm = True
        self._stop("worker: warm shutdown: ends after the running cell; the rest of its group "
                   "is queued again (Ctrl-C again stops the cell now)")

    def _cold(self, signum: int, frame: FrameType | None) -> None:
        if self.cold:
            return
        self.cold = True
        self._stop("worker: cold shutdown: the running command is killed and its cell "
                   "cancelled")
        execute.halt()  # reached only while a message runs: idle, _stop has raised

    def _stop(self, busy: str) -> None:
        """Idle: stop Celery now (raises). Running a message: say what happens to it."""
        if self.group is None:
            _stop_celery(EXIT_OK)
        log.warning(busy)


def _cold() -> CellFailure:
    return CellFailure(Failure(kind="cancelled", reason=COLD_REASON))


def _stop_celery(code: int) -> None:
    """Idle: stop as Celery does, which the event loop reads at its next turn."""
    state.should_stop = code
    raise WorkerShutdown(code)

