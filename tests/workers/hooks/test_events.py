"""Cell events: one `task-received` when a cell is taken, `task-succeeded` or `task-failed` when
it ends, each with the attempt's own id, sent by the lease's take and finish scripts; read here
as Celery publishes them on Redis."""

import base64
import json
from pathlib import Path
from typing import Any

from jobs.parsers.readings import Failure
from jobs.record.attempts import AttemptResult
from tests.support.cells import Submitted
from tests.support.waits import eventually
from workers.app import create_app
from workers.hooks import Chain
from workers.hooks.events import CELL_TASK, CellEvents
from workers.hooks.lease import CellLease
from workers.host_facts import facts
from workers.shared import redis_keys
from workers.shared.clock import now
from workers.shared.leases import Lease
from workers.shared.settings import Settings
from workers.shared.stores.local import LocalStore


def _events(submitted: Submitted, send: Any) -> list[dict[str, Any]]:
    """The events published while `send()` ran, as Celery's fanout puts them on Redis
    (tests/fleet/test_flower.py reads them through Flower itself)."""
    pubsub = submitted.store.r.pubsub(ignore_subscribe_messages=True)
    pubsub.psubscribe("*celeryev*")
    eventually(lambda: pubsub.get_message(timeout=0.1) is None and pubsub.subscribed, 5,
               "the event subscription")
    send()
    found = []
    while (message := pubsub.get_message(timeout=1.0)) is not None:
        body = json.loads(message["data"])["body"]
        found.append(json.loads(base64.b64decode(body)))
    pubsub.close()
    return found


def test_a_cell_is_received_then_fails_with_its_reason(submitted: Submitted,
                                                       tmp_path: Path) -> None:
    app = create_app(Settings(redis_url=submitted.url))
    lease = Lease(submitted.store.r, "w1", "w1-i")
    lease.take({"backend": "cpu"}, takeover=False)
    taker = CellLease(submitted.store, lease, LocalStore(tmp_path / "artifacts"), 7.0, 20.0)
    chain = Chain([taker, CellEvents(app, "w1.cpu@test")])
    submitted.store.r.hset(redis_keys.sweep(submitted.sweep_id, "attempts"),
                           submitted.cells[0].id, 1)  # an earlier attempt: this is the second
    cell = submitted.cells[0]
    result = AttemptResult(sweep_id=submitted.sweep_id, cell_id=cell.id, attempt=2,
                           worker="w1", host=facts(), requested_commit=cell.commit,
                           commit=cell.commit, started=now(), ended=now(),
                           failure=Failure(kind="build", reason="build failed: exit 2"))

    def run() -> None:
        attempt, _ = chain.admit(submitted.arrival())
        chain.after_cell(attempt, result)

    sent = _events(submitted, run)
    uuid = f"{submitted.sweep_id}:{cell.id}:2"
    assert [(e["type"], e["uuid"]) for e in sent] == [("task-received", uuid),
                                                      ("task-failed", uuid)]
    received, failed = sent
    assert received["name"] == CELL_TASK and received["retries"] == 1
    assert received["parent_id"] == "task-1" and received["hostname"] == "w1.cpu@test"
    assert failed["exception"] == "build failed: exit 2"
    assert failed["clock"] > received["clock"]
