"""Cell events: one `task-received` when a cell is taken, `task-succeeded` or `task-failed` when
it ends, each with the attempt's own id; read here as Celery publishes them on Redis."""

import base64
import json

from jobs.parsers.readings import Failure
from jobs.record.attempts import AttemptResult
from tests.support.cells import Submitted
from tests.support.waits import eventually
from workers.app import create_app
from workers.hooks.events import CELL_TASK, CellEvents
from workers.host_facts import facts
from workers.shared.clock import now
from workers.shared.settings import Settings


def _events(submitted: Submitted, send: object) -> list[dict[str, object]]:
    """The events Celery published while `send()` ran (its fanout is Redis pub/sub)."""
    pubsub = submitted.store.r.pubsub(ignore_subscribe_messages=True)
    pubsub.psubscribe("*celeryev*")
    eventually(lambda: pubsub.get_message(timeout=0.1) is None and pubsub.subscribed, 5,
               "the event subscription")
    send()  # type: ignore[operator]
    found = []
    while (message := pubsub.get_message(timeout=1.0)) is not None:
        body = json.loads(message["data"])["body"]
        found.append(json.loads(base64.b64decode(body)))
    pubsub.close()
    return found


def test_a_cell_is_received_then_fails_with_its_reason(submitted: Submitted) -> None:
    app = create_app(Settings(redis_url=submitted.url))
    hook = CellEvents(app, "w1.cpu@test")
    attempt = submitted.attempt(number=2)
    cell = attempt.cell
    result = AttemptResult(sweep_id=submitted.sweep_id, cell_id=cell.id, attempt=2,
                           worker="w1", host=facts(), requested_commit=cell.commit,
                           commit=cell.commit, started=now(), ended=now(),
                           failure=Failure(kind="build", reason="build failed: exit 2"))
    sent = _events(submitted, lambda: (hook.after_take(attempt), hook.after_cell(attempt,
                                                                                 result)))
    uuid = f"{submitted.sweep_id}:{cell.id}:2"
    assert [(e["type"], e["uuid"]) for e in sent] == [("task-received", uuid),
                                                      ("task-failed", uuid)]
    received, failed = sent
    assert received["name"] == CELL_TASK and received["retries"] == 1
    assert received["parent_id"] == attempt.group.task_id
    assert failed["exception"] == "build failed: exit 2"
