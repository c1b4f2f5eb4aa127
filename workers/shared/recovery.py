"""Nothing lost: cells of dead workers and of lost messages go back to the queue.

Run by every worker between cells and by the coordinator's `status`; each piece of work is
claimed atomically, so several of them running at once queue a cell only once. A re-queued
cell travels in the exact envelope the coordinator signed; its next attempt gets a new number.
"""

import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from workers.shared.clock import server_time
from workers.shared.leases import Held, claim_expired
from workers.shared.messages import GroupMessage, publish, task_ids
from workers.shared.queues import cell_queue
from workers.shared.redis_keys import PENDING
from workers.shared.state import Store

if TYPE_CHECKING:  # the cells' model: not imported by `status`, which runs a recovery
    from jobs.spec.cells import Cell

# Defaults of the settings max_attempts and lost_after_s: a message is "lost" only if it is
# still missing from its queue after this long (a worker that has just popped it may not yet
# have said so).
MAX_ATTEMPTS = 3
LOST_AFTER_S = 30.0


@dataclass(frozen=True)
class Recovered:
    requeued: int
    failed: int
    lost_messages: int


def recover(store: Store, max_attempts: int = MAX_ATTEMPTS,
            lost_after_s: float = LOST_AFTER_S) -> Recovered:
    requeued = failed = 0
    for held in claim_expired(store.r):
        again, gone = _requeue_held(store, held, "lost its lease", max_attempts)
        requeued, failed = requeued + again, failed + gone
    lost = _lost_messages(store, lost_after_s)
    return Recovered(requeued, failed, lost)


def take_over(store: Store, held: Held, max_attempts: int = MAX_ATTEMPTS) -> int:
    """A restarted worker's predecessor held these cells: queue them again now."""
    return _requeue_held(store, held, "was restarted", max_attempts)[0]


def _requeue_held(store: Store, held: Held, why: str, max_attempts: int) -> tuple[int, int]:
    reason = f"worker {held.worker} {why} while it held the cell"
    again, failed = [], 0
    for cell_id in held.cells:
        outcome = store.requeue(held.sweep_id, cell_id, held.worker, held.instance,
                                max_attempts, reason)
        if outcome == 1:
            again.append(cell_id)
        failed += outcome == 2
    _republish(store, held.sweep_id, again)
    return len(again), failed


def _lost_messages(store: Store, lost_after_s: float) -> int:
    """Messages published but neither in their queue nor received by a worker."""
    pending = {tid: json.loads(v) for tid, v in store.r.hgetall(PENDING).items()}
    since = server_time(store.r) - lost_after_s
    old = {tid: m for tid, m in pending.items() if m["at"] < since}
    if not old:
        return 0
    per_queue = Counter(m["queue"] for m in pending.values())
    queued: set[str] = set()
    for queue in {m["queue"] for m in old.values()}:
        # Every message in a queue is pending until a worker takes it: as many in the queue
        # as pending for it means none is lost, without reading the queue's messages.
        if store.r.llen(queue) >= per_queue[queue]:
            queued |= {tid for tid, m in old.items() if m["queue"] == queue}
            continue
        queued |= {t for raw in store.r.lrange(queue, 0, -1) if (t := task_ids(raw))}
    lost = 0
    for tid, message in old.items():
        if tid in queued or not store.r.hdel(PENDING, tid):
            continue  # still queued, or another reaper claimed it first
        states = store.states_of(message["sweep_id"], message["cells"])
        cells = [c for c in message["cells"] if c in states and states[c].status == "queued"]
        _republish(store, message["sweep_id"], cells, message["queue"])
        lost += 1
    return lost


def _republish(store: Store, sweep_id: str, cell_ids: list[str], queue: str | None = None
               ) -> None:
    if not cell_ids:
        return
    _, cells, _ = store.sweep(sweep_id)
    by_id = {c.id: c for c in cells}
    groups: dict[str, list[Cell]] = defaultdict(list)
    for cell_id in cell_ids:
        groups[by_id[cell_id].group].append(by_id[cell_id])
    messages = []
    for members in groups.values():
        members.sort(key=lambda c: c.order)
        ids = [c.id for c in members]
        messages.append(GroupMessage(sweep_id, queue or cell_queue(members[0]), ids,
                                     store.envelopes(sweep_id, ids)))
    publish(store.r, messages)
