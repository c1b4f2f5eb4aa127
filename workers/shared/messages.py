"""Task messages in Celery's own wire format, written to Redis in one pipeline.

One message carries one group's signed envelopes, in the order they must run: cells of a
group run contiguously on one host, and the idle gate runs once before the group. Building
the message here (instead of one `send_task` per message) lets submit, rerun and the reaper
queue thousands of cells in one round trip; a stock Celery worker consumes them unchanged.
"""

import base64
import json
import os
import socket
import uuid
from dataclasses import dataclass

import redis

from workers.shared.queues import TASK, is_need
from workers.shared.redis_keys import NEEDS

# Where published-but-not-yet-received messages are remembered, so a purged or lost message
# is noticed and its cells re-queued (workers/shared/recovery.py).
PENDING = "benchfleet:pending"
_ORIGIN = f"benchfleet@{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class Signed:
    """One cell's envelope bytes and the coordinator's signature over them."""

    envelope: str
    signature: str

    def claimed_cell(self) -> str:
        """The cell id the envelope claims, before verification: for reports and for saying
        what a worker holds, never for deciding what runs."""
        try:
            return str(json.loads(self.envelope)["cell"]["id"])[:200]
        except (ValueError, KeyError, TypeError):
            return "?"


@dataclass(frozen=True)
class GroupMessage:
    sweep_id: str
    queue: str
    cells: list[str]
    items: list[Signed]
    task_id: str = ""

    def with_id(self) -> "GroupMessage":
        return GroupMessage(self.sweep_id, self.queue, self.cells, self.items,
                            self.task_id or str(uuid.uuid4()))


def publish(client: redis.Redis, messages: list[GroupMessage], now: float) -> list[str]:
    """Queue every message in one pipeline; returns their task ids."""
    pipe = client.pipeline(transaction=False)
    ids = []
    for message in (m.with_id() for m in messages):
        pipe.lpush(message.queue, wire(message))
        if is_need(message.queue):
            pipe.sadd(NEEDS, message.queue)  # workers offering its tags start consuming it
        pipe.hset(PENDING, message.task_id, json.dumps(
            {"queue": message.queue, "sweep_id": message.sweep_id, "cells": message.cells,
             "at": now}))
        ids.append(message.task_id)
    pipe.execute()
    return ids


def wire(message: GroupMessage) -> str:
    """The JSON kombu's Redis transport stores for a Celery protocol-2 task message."""
    args = [message.sweep_id, [[i.envelope, i.signature] for i in message.items]]
    body = json.dumps([args, {}, {"callbacks": None, "errbacks": None, "chain": None,
                                  "chord": None}])
    return json.dumps({
        "body": base64.b64encode(body.encode()).decode(),
        "content-encoding": "utf-8", "content-type": "application/json",
        "headers": {"lang": "py", "task": TASK, "id": message.task_id, "shadow": None,
                    "eta": None, "expires": None, "group": None, "group_index": None,
                    "retries": 0, "timelimit": [None, None], "root_id": message.task_id,
                    "parent_id": None, "argsrepr": f"[{message.sweep_id!r}, <{len(message.items)}"
                    " cells>]", "kwargsrepr": "{}", "origin": _ORIGIN, "ignore_result": True,
                    "stamped_headers": None, "stamps": {}},
        "properties": {"correlation_id": message.task_id, "delivery_mode": 2,
                       "delivery_info": {"exchange": "", "routing_key": message.queue},
                       "priority": 0, "body_encoding": "base64",
                       "delivery_tag": str(uuid.uuid4())}})


def received(client: redis.Redis, task_id: str) -> None:
    client.hdel(PENDING, task_id)


def task_ids(raw: bytes | str) -> str | None:
    """The task id of a queued message as kombu stores it, or None if it is not one."""
    try:
        data = json.loads(raw)
        return str(data["headers"]["id"])
    except (ValueError, KeyError, TypeError):
        return None
