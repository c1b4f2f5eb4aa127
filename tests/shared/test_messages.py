"""Task messages: written in Celery's own wire format in one pipeline, each remembered as
pending until a worker takes it."""

import base64
import json

from tests.support.cells import Submitted
from workers.shared.clock import server_time
from workers.shared.messages import (
    GroupMessage,
    Signed,
    publish,
    received,
    task_ids,
    why_not_a_task,
    wire,
)
from workers.shared.queues import TASK, backend_queue
from workers.shared.redis_keys import NEEDS, PENDING


def test_a_message_is_queued_in_celerys_format_and_pending(submitted: Submitted) -> None:
    client, queue = submitted.store.r, backend_queue("cpu")
    items = [submitted.signed[c.id] for c in submitted.cells]
    (task_id,) = publish(client, [GroupMessage(submitted.sweep_id, queue,
                                               [c.id for c in submitted.cells], items)])
    raw = client.lindex(queue, 0)
    message = json.loads(raw)
    assert message["headers"]["task"] == TASK and message["headers"]["id"] == task_id
    args, kwargs, _ = json.loads(base64.b64decode(message["body"]))
    assert args == [submitted.sweep_id, [[i.envelope, i.signature] for i in items]]
    assert kwargs == {} and task_ids(raw) == task_id
    pending = json.loads(client.hget(PENDING, task_id))
    at = pending.pop("at")
    assert pending == {"queue": queue, "sweep_id": submitted.sweep_id,
                       "cells": [c.id for c in submitted.cells]}
    assert abs(at - server_time(client)) < 5  # pending since Redis's clock, not the caller's
    received(client, task_id)
    assert not client.hexists(PENDING, task_id)


def test_a_need_queue_is_announced(submitted: Submitted) -> None:
    queue = "benchfleet.need.cpu@gpu=gb10"
    publish(submitted.store.r, [GroupMessage(submitted.sweep_id, queue, [], [])])
    assert submitted.store.r.smembers(NEEDS) == {queue}


def test_the_claimed_cell_is_for_reports_only() -> None:
    assert Signed('{"cell": {"id": "c1"}}', "sig").claimed_cell() == "c1"
    assert Signed("not json", "sig").claimed_cell() == "?"
    assert task_ids("not a message") is None
    assert json.loads(wire(GroupMessage("s", "q", [], [], "t1")))["headers"]["id"] == "t1"


def test_what_wire_writes_is_a_task_and_junk_is_not() -> None:
    good = json.loads(wire(GroupMessage("s", "q", ["c"], [Signed("e", "sig")], "t1")))
    assert why_not_a_task(json.dumps(good)) is None

    def body(value: object) -> str:
        return json.dumps({**good, "body": base64.b64encode(json.dumps(value).encode()).decode()})

    deep = "[" * 100_000 + "]" * 100_000
    assert why_not_a_task(b"\xff") is not None and task_ids(deep) is None
    for junk, why in [("x", "not JSON: Expecting value"), (deep, "JSON nested too deep"),
                      ("[1,2,3]", "not a Celery message"),
                      (json.dumps({**good, "headers": {"task": "other"}}), "its task is 'other'"),
                      (json.dumps({**good, "body": "!!"}), "its body is not base64"),
                      (body([["s", [["e"]]], {}, {}]), "its arguments are not a sweep id"),
                      (body([["s", []], [], {}]), "its arguments are not a sweep id")]:
        assert (why_not_a_task(junk) or "").startswith(why), junk[:40]
