"""Cancel: `benchfleet cancel` marks cells and tells the worker running one; the worker kills
the command's process group at once and the cell ends `cancelled`.

The worker hears it on its control channel (Redis pub/sub), whose socket sits beside the
child's pidfd in the one poll() the worker blocks in: no wake-up unless a message arrives.
Cancels sent while the worker could not hear them are read between commands.
"""

import json
import logging

import redis

from jobs.record.attempts import Run
from workers.execute import Cancelled, Command
from workers.hooks import Hook, Proceed
from workers.in_flight import Job
from workers.shared import redis_keys

log = logging.getLogger(__name__)


def control_channel(worker: str) -> str:
    return f"{redis_keys.worker(worker)}:control"


def cancel_set(sweep_id: str) -> str:
    return redis_keys.sweep(sweep_id, "cancel")


class Cancel(Hook):
    def __init__(self, client: redis.Redis, worker: str) -> None:
        self.client = client
        self.pubsub = client.pubsub(ignore_subscribe_messages=True)
        self.pubsub.subscribe(control_channel(worker))
        self.heard: set[tuple[str, str]] = set()
        # Redis is asked (a round trip) at a cell's first command and after the control
        # channel dropped, when a cancel may have gone unheard; the channel covers the rest.
        self.asked: tuple[str, str] | None = None
        self.deaf = False

    def around_command(self, job: Job, command: Command, proceed: Proceed) -> Run:
        self._drain()
        ask = self.deaf or self.asked != (job.sweep_id, job.cell.id)
        if self._cancelled(job, ask_redis=ask):
            raise Cancelled(f"cancelled before {command.label}")
        connection = self.pubsub.connection
        if connection is not None and connection._sock is not None:
            command.wake_fd = connection._sock.fileno()
            command.should_stop = lambda: self._drain() or self._cancelled(job)
        return proceed()

    def _cancelled(self, job: Job, ask_redis: bool = False) -> bool:
        if (job.sweep_id, job.cell.id) in self.heard:
            return True
        if not ask_redis:
            return False
        try:
            found = bool(self.client.sismember(cancel_set(job.sweep_id), job.cell.id))
            self.asked, self.deaf = (job.sweep_id, job.cell.id), False
            return found
        except (redis.ConnectionError, redis.TimeoutError) as error:
            # Unreachable Redis cannot say; the lease decides next whether this cell is ours.
            log.warning("cannot read cancels from Redis: %s", error)
            return False

    def _drain(self) -> bool:
        """Read every control message already here; never blocks."""
        try:
            while (message := self.pubsub.get_message(timeout=0)) is not None:
                data = json.loads(message["data"])
                self.heard |= {(data["sweep_id"], c) for c in data.get("cancel", [])}
        except (redis.ConnectionError, redis.TimeoutError) as error:
            self.deaf = True
            log.warning("control channel: %s", error)
        except (ValueError, KeyError) as error:
            log.warning("control channel: %s", error)
        return False
