"""Celery task events per cell, so Flower and `celery events` show a fleet's cells: one
`task-received` when a cell starts, `task-succeeded` or `task-failed` when it ends, nothing in
between. Each rides the lease's take or finish script (lua/event.lua): it costs no round trip
of its own. A cell is not a Celery task of its own (a message carries a group), so each
attempt gets its own event id, `<sweep>:<cell>:<attempt>`, and the group's message is its
parent."""

import json
import logging
import time
from typing import Any

from celery import Celery
from celery.events import Event
from celery.utils.time import utcoffset
from kombu.common import maybe_declare
from kombu.serialization import dumps

from jobs.record.attempts import AttemptResult
from workers.hooks import Hook, Riders
from workers.in_flight import Arrival, Attempt, Group
from workers.shared.state import TaskEvent

CELL_TASK = "benchfleet.cell"
log = logging.getLogger(__name__)


class CellEvents(Hook):
    def __init__(self, app: Celery, hostname: str) -> None:
        self.hostname = hostname
        self.connection = app.connection_for_write()
        self.dispatcher = app.events.Dispatcher(self.connection, hostname=hostname,
                                                enabled=True)
        self.started: dict[tuple[str, str], float] = {}  # this message's cells, by (sweep, cell)

    def before_group(self, group: Group) -> Group:
        self.started = {}  # a cell dropped at its take never ends here: not kept past it
        return group

    def rides_take(self, arrival: Arrival) -> Riders:
        """task-received, sent by the take once it knows the attempt's number (the script
        fills in "@attempt@" and "@retries@")."""
        self.started[(arrival.sweep_id, arrival.cell.id)] = time.monotonic()
        group = arrival.group.task_id
        return Riders(event=self._event(
            "task-received", uuid=f"{arrival.sweep_id}:{arrival.cell.id}:@attempt@",
            name=CELL_TASK, args=repr([arrival.sweep_id, arrival.cell.id]), kwargs="{}",
            retries="@retries@", eta=None, expires=None, root_id=group, parent_id=group))

    def rides_finish(self, attempt: Attempt, result: AttemptResult) -> Riders:
        uuid = _uuid(attempt)
        began = self.started.pop((attempt.sweep_id, attempt.cell.id), time.monotonic())
        if result.failure:
            return Riders(event=self._event("task-failed", uuid=uuid, traceback="",
                                            exception=result.failure.reason))
        reading = result.reading
        summary = (f"decode {reading.decode_tps:.2f} tok/s" if reading else "profiled")
        return Riders(event=self._event("task-succeeded", uuid=uuid, result=summary,
                                        runtime=time.monotonic() - began))

    def _event(self, kind: str, **fields: Any) -> TaskEvent | None:
        """The event as Celery's dispatcher would publish it (its clock, headers, kombu's
        message and topic), made here and sent by the script; None, logged, when kombu
        cannot make it: a monitoring event never fails a measurement."""
        d = self.dispatcher
        try:
            event = Event(kind, hostname=self.hostname, utcoffset=utcoffset(), pid=d.pid,
                          clock=d.clock.forward(), **fields)
            content_type, encoding, body = dumps(event, serializer=d.serializer)
            channel = d.producer.channel
            maybe_declare(d.exchange, channel)
            message = channel.prepare_message(body, 0, content_type, encoding, d.headers,
                                              {"delivery_mode": d.delivery_mode})
            caught = _Caught()
            channel.basic_publish(message, exchange=d.exchange.name,
                                  routing_key=kind.replace("-", "."), _publish_batch=caught)
            ((command, (topic, payload)),) = caught.commands
            assert command == "publish", command
        except Exception as error:
            log.warning("could not make the %s event: %s", kind, error)
            return None
        return TaskEvent.of(topic, json.dumps({**json.loads(payload), "body": "@body@"}),
                            body if isinstance(body, str) else body.decode())


class _Caught:
    """Stands in for kombu's publish batch (kombu.transport.redis.PublishBatch): the Redis
    commands a publish would send, kept, not sent."""

    def __init__(self) -> None:
        self.commands: list[tuple[str, tuple[Any, ...]]] = []

    def add(self, name: str, *args: Any) -> None:
        self.commands.append((name, args))


def _uuid(attempt: Attempt) -> str:
    return f"{attempt.sweep_id}:{attempt.cell.id}:{attempt.number}"
