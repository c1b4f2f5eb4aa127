"""Cancel: `benchfleet cancel` marks cells and tells the worker running one
(workers/shared/cancels.py); this hook kills the command's process group at once and the cell
ends `cancelled`.

The worker hears it on its control line (workers/control_line.py), whose socket sits beside
the child's pidfd in the one poll() the worker blocks in: no wake-up unless a message
arrives. Cancels told before the worker could hear them are read from the sweep's cancel set
in the take's own script, and read again before a command after the line was down.
"""

import logging

import redis

from jobs.parsers.readings import Failure
from workers.control_line import ControlLine, LineDown
from workers.execute import Command, Stopped
from workers.hooks import Hook, Proceed, Riders, Runs
from workers.in_flight import Arrival, Attempt
from workers.shared import cancels, redis_keys
from workers.workspace import CellFailure

log = logging.getLogger(__name__)


class Cancel(Hook):
    def __init__(self, client: redis.Redis, url: str, worker: str) -> None:
        self.client = client
        self.line = ControlLine(url, redis_keys.control_channel(worker))
        self.heard: set[cancels.Cancelled] = set()
        # Redis is asked at a cell's take (riding its script) or else at its first command,
        # and after the control line dropped, when a cancel may have gone unheard; the line
        # covers the rest.
        self.asked: cancels.Cancelled | None = None
        self.deaf = not self._drain(reopen=True)

    def rides_take(self, arrival: Arrival) -> Riders:
        return Riders(cancel_mark=cancels.mark(arrival.cell.id, arrival.item.envelope.generation))

    def after_take(self, attempt: Attempt) -> None:
        if attempt.marked is None:
            return  # the take did not read it: the first command asks
        self.asked = _key(attempt)
        if attempt.marked:
            self.heard.add(self.asked)

    def around_command(self, attempt: Attempt, command: Command, proceed: Proceed) -> Runs:
        self.deaf = not self._drain(reopen=True) or self.deaf
        ask = self.deaf or self.asked != _key(attempt)
        if self._cancelled(attempt, ask_redis=ask):
            raise _ended(f"cancelled before {command.label}")
        command.wake_fd = self.line.fileno()
        if command.wake_fd is not None:
            command.should_stop = lambda: self._stop_now(attempt)
        try:
            return proceed()
        except Stopped:
            raise _ended(f"cancelled while {command.label} ran") from None

    def _stop_now(self, attempt: Attempt) -> bool:
        if not self._drain(reopen=False):
            self.deaf = True
        return self._cancelled(attempt)

    def _cancelled(self, attempt: Attempt, ask_redis: bool = False) -> bool:
        key = _key(attempt)
        if key in self.heard:
            return True
        if not ask_redis:
            return False
        try:
            found = cancels.marked(self.client, *key)
            self.asked, self.deaf = key, False
            return found
        except (redis.ConnectionError, redis.TimeoutError) as error:
            # Unreachable Redis cannot say; the lease decides next whether this cell is ours.
            log.warning("cannot read cancels from Redis: %s", error)
            return False

    def _drain(self, reopen: bool) -> bool:
        """Read every control message already here, never blocking; False when the line is
        down (a cancel may have gone unheard)."""
        try:
            messages = self.line.messages(reopen=reopen)
        except LineDown as error:
            log.warning("%s", error)
            return False
        for data in messages:
            try:
                self.heard |= cancels.heard(data)
            except (ValueError, KeyError, TypeError) as error:
                log.warning("control line: %s", error)
        return True


def _key(attempt: Attempt) -> cancels.Cancelled:
    return attempt.sweep_id, attempt.cell.id, attempt.envelope.generation


def _ended(why: str) -> CellFailure:
    return CellFailure(Failure(kind="cancelled", reason=why))
