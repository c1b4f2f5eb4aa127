"""Nothing lost: the cells of a worker whose lease ran out, and of a message lost from its
queue, are queued again in the envelopes the coordinator signed; each only once."""

import base64
import json

from tests.support.cells import Submitted
from workers.shared.leases import Lease
from workers.shared.messages import GroupMessage, publish
from workers.shared.queues import backend_queue
from workers.shared.recovery import recover, take_over
from workers.shared.redis_keys import PENDING


def _queued_items(submitted: Submitted) -> list[list[list[str]]]:
    raws = submitted.store.r.lrange(backend_queue("cpu"), 0, -1)
    return [json.loads(base64.b64decode(json.loads(r)["body"]))[0][1] for r in raws]


def test_a_dead_workers_cells_are_queued_again_once(submitted: Submitted) -> None:
    store, cell = submitted.store, submitted.cells[0]
    lease = Lease(store.r, "dead", "i1")
    lease.take({"backend": "cpu"}, takeover=False)
    lease.hold(submitted.sweep_id, [cell.id], "task-1", 60)
    assert store.take(submitted.sweep_id, cell.id, 0, "dead", "i1", 60).attempt == 1
    lease.renew(-1.0)
    found = recover(store, max_attempts=3, lost_after_s=30.0)
    assert (found.requeued, found.failed) == (1, 0)
    assert store.state(submitted.sweep_id, cell.id).status == "queued"  # type: ignore[union-attr]
    assert _queued_items(submitted) == [[[submitted.signed[cell.id].envelope,
                                          submitted.signed[cell.id].signature]]]
    assert recover(store).requeued == 0


def test_a_cell_out_of_attempts_fails_for_good(submitted: Submitted) -> None:
    store, cell = submitted.store, submitted.cells[0]
    lease = Lease(store.r, "w1", "i1")
    lease.take({"backend": "cpu"}, takeover=False)
    lease.hold(submitted.sweep_id, [cell.id], "task-1", 60)
    store.take(submitted.sweep_id, cell.id, 0, "w1", "i1", 60)
    held = Lease(store.r, "w1", "i2").take({"backend": "cpu"}, takeover=True)
    assert held is not None and take_over(store, held, max_attempts=1) == 0
    state = store.state(submitted.sweep_id, cell.id)
    assert state is not None and state.status == "failed"
    assert "was restarted" in (state.reason or "")


def test_a_message_lost_from_its_queue_is_queued_again(submitted: Submitted) -> None:
    store, queue = submitted.store, backend_queue("cpu")
    ids = [c.id for c in submitted.cells]
    (task_id,) = publish(store.r, [GroupMessage(submitted.sweep_id, queue, ids,
                                                [submitted.signed[i] for i in ids])])
    assert recover(store, lost_after_s=1e12).lost_messages == 0  # not old enough yet
    store.r.delete(queue)  # purged
    assert recover(store, lost_after_s=-1.0).lost_messages == 1  # old: pending since before now
    assert not store.r.hexists(PENDING, task_id)
    assert len(_queued_items(submitted)) == 1 and len(_queued_items(submitted)[0]) == len(ids)
