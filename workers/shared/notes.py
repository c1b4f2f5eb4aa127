"""Notes on a running cell: what its worker does now (its phase) and why it waits (a reason),
for `status`, `status --watch` and `hosts`. A note is one script (lua/note.lua) that writes
only while the cell still runs this very attempt, so a late note never brings back a cell
that ended or was cancelled; it wakes the sweep's watchers as a state change does.

A note is news, never a step: when Redis cannot take it, the cell goes on without it."""

import logging

import redis

from jobs.record.states import Phase
from workers.shared import redis_keys
from workers.shared.state import lua

log = logging.getLogger(__name__)


class Notes:
    """One worker's notes; the same note twice in a row is written once."""

    def __init__(self, client: redis.Redis, worker: str, instance: str) -> None:
        self.worker, self.instance = worker, instance
        self._note = client.register_script(lua("note", head=False))
        self._last: tuple[object, ...] | None = None

    def note(self, sweep_id: str, cell_id: str, attempt: int, phase: Phase | None,
             reason: str | None = None) -> bool:
        """True when the cell's state now says it; False when the cell is no longer this
        attempt's (nothing written) or Redis could not be reached."""
        said = (sweep_id, cell_id, attempt, phase, reason)
        if said == self._last:
            return True
        try:
            written = bool(self._note(
                keys=[redis_keys.sweep(sweep_id, "states"), redis_keys.sweep(sweep_id, "events")],
                args=[cell_id, self.worker, self.instance, attempt, phase or "", reason or ""]))
        except (redis.ConnectionError, redis.TimeoutError) as error:
            log.warning("cell %s: could not note %r in Redis: %s", cell_id, phase, error)
            return False
        self._last = said if written else None
        return written
