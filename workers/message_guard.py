"""Refuse junk before Celery reads it. kombu's Redis transport decodes what BRPOP pops in the
worker's event loop, where an item that is not JSON, not a message or not base64 raises and
ends the worker. Anyone who can write to Redis can queue such an item, so each popped item is
checked first, in the BRPOP reply of the task consumer's channel: junk goes to the refused
log with why, is dropped (it is already popped), and kombu sees an empty poll.
"""

import logging
from typing import Any

import redis
from celery import bootsteps

from workers.shared.clock import now
from workers.shared.messages import task_ids, why_not_a_task
from workers.shared.state import Store

log = logging.getLogger(__name__)


def guard_step(worker: str, store: Store) -> type[bootsteps.StartStopStep]:
    class MessageGuard(bootsteps.StartStopStep):
        """On every (re)connection: vet what the task consumer's BRPOP returns."""

        requires = {"celery.worker.consumer.tasks:Tasks"}

        def start(self, c: Any) -> None:
            channel = c.task_consumer.channel
            channel.client.set_response_callback("BRPOP", Vet(worker, store, channel.sep))

    return MessageGuard


class Vet:
    def __init__(self, worker: str, store: Store, sep: str) -> None:
        self.worker, self.store, self.sep = worker, store, sep

    def __call__(self, reply: list[bytes] | None, **_: object) -> tuple[bytes, ...] | None:
        if not reply:
            return None  # BRPOP timed out
        key, raw = reply
        why = why_not_a_task(raw)
        if why is None:
            return tuple(reply)
        self._refuse(key.decode(errors="replace").rsplit(self.sep, 1)[0], raw, why)
        return None

    def _refuse(self, queue: str, raw: bytes, why: str) -> None:
        why = (f"a message on {queue[:120]} is not a benchfleet task message ({why}); "
               f"dropped it ({len(raw)} bytes)")
        log.warning("%s", why)
        try:
            self.store.refuse({"at": now(), "worker": self.worker, "sweep_id": "", "cell": "",
                               "why": why, "task_id": task_ids(raw) or ""})
        except redis.RedisError as error:
            log.warning("could not record the refusal in Redis: %s", error)
