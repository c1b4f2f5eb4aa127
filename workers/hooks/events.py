"""Celery task events per cell, so Flower and `celery events` show a fleet's cells: one
`task-received` when a cell starts, `task-succeeded` or `task-failed` when it ends, nothing in
between (each event is a round trip to Redis). A cell is not a Celery task of its own (a
message carries a group), so each attempt gets its own event id, `<sweep>:<cell>:<attempt>`,
and the group's message is its parent."""

import logging
import time

from celery import Celery

from jobs.record.attempts import AttemptResult
from workers.hooks import Hook
from workers.in_flight import Job

CELL_TASK = "benchfleet.cell"
log = logging.getLogger(__name__)


class CellEvents(Hook):
    def __init__(self, app: Celery, hostname: str) -> None:
        self.hostname = hostname
        self.connection = app.connection_for_write()
        self.dispatcher = app.events.Dispatcher(self.connection, hostname=hostname,
                                                enabled=True)
        self.started: dict[str, float] = {}

    def before_cell(self, job: Job) -> None:
        uuid = _uuid(job)
        self.started[uuid] = time.monotonic()
        self._send("task-received", uuid=uuid, name=CELL_TASK,
                             args=repr([job.sweep_id, job.cell.id]), kwargs="{}",
                             retries=(job.attempt or 1) - 1, eta=None, expires=None,
                             root_id=job.group.task_id, parent_id=job.group.task_id)

    def after_cell(self, job: Job, result: AttemptResult) -> None:
        uuid = _uuid(job)
        runtime = time.monotonic() - self.started.pop(uuid, time.monotonic())
        if result.failure:
            self._send("task-failed", uuid=uuid, exception=result.failure.reason,
                                 traceback="")
        else:
            reading = result.reading
            summary = (f"decode {reading.decode_tps:.2f} tok/s" if reading else "profiled")
            self._send("task-succeeded", uuid=uuid, result=summary, runtime=runtime)

    def _send(self, kind: str, **fields: object) -> None:
        try:
            self.dispatcher.send(kind, **fields)
        except Exception as error:  # a monitoring event never fails a measurement
            log.warning("could not send %s: %s", kind, error)


def _uuid(job: Job) -> str:
    return f"{job.sweep_id}:{job.cell.id}:{job.attempt}"
