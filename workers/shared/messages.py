"""Task messages in Celery's own wire format, written to Redis in one pipeline.

One message carries one group's signed envelopes, in the order they must run: cells of a
group run contiguously on one host, and the idle gate runs once before the group. Building
the message here (instead of one `send_task` per message) lets submit, rerun and the reaper
queue thousands of cells in one round trip; a stock Celery worker consumes them unchanged.
"""

import base64
import binascii
import json
import os
import socket
import uuid
from dataclasses import dataclass, replace

import orjson
import redis

from workers.shared.clock import server_time
from workers.shared.queues import TASK, is_need
from workers.shared.redis_client import replicated
from workers.shared.redis_keys import NEEDS, PENDING

# Where published-but-not-yet-received messages are remembered, so a purged or lost message
# is noticed and its cells re-queued (workers/shared/recovery.py).
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
        except (ValueError, KeyError, TypeError, RecursionError):
            return "?"


@dataclass(frozen=True)
class GroupMessage:
    sweep_id: str
    queue: str
    cells: list[str]
    items: list[Signed]
    task_id: str = ""
    group: str = ""  # the cells' group, where a submit counts which groups it has queued

    def with_id(self) -> "GroupMessage":
        return replace(self, task_id=self.task_id or str(uuid.uuid4()))


def publish(client: redis.Redis, messages: list[GroupMessage]) -> list[str]:
    """Queue every message in one pipeline, each pending since Redis's clock now (the reaper
    of lost messages reads that clock too); returns their task ids."""
    now = server_time(client) if messages else 0.0
    pipe = client.pipeline(transaction=False)
    ids = []
    for message in (m.with_id() for m in messages):
        pipe.lpush(message.queue, wire(message))
        if is_need(message.queue):
            pipe.sadd(NEEDS, message.queue)  # workers offering its tags start consuming it
        pipe.hset(PENDING, message.task_id, pending_entry(message, now))
        ids.append(message.task_id)
    pipe.execute()
    replicated(client)  # through Sentinel: queued on a replica too (and the sweep before it)
    return ids


def pending_entry(message: "GroupMessage", at: float) -> str:
    """What PENDING remembers of a published message until a worker receives it."""
    return json.dumps({"queue": message.queue, "sweep_id": message.sweep_id,
                       "cells": message.cells, "at": at})


def wire(message: GroupMessage) -> str:
    """The JSON kombu's Redis transport stores for a Celery protocol-2 task message.

    Written by orjson: a group's envelopes are JSON inside JSON, and json.dumps took 66 ms a
    thousand messages against orjson's 15 (a 10,000-cell submit writes a thousand). Only the
    separators' spaces differ, and text that is not ASCII is written as UTF-8: kombu reads
    either."""
    args = [message.sweep_id, [[i.envelope, i.signature] for i in message.items]]
    body = orjson.dumps([args, {}, {"callbacks": None, "errbacks": None, "chain": None,
                                    "chord": None}])
    return orjson.dumps({
        "body": base64.b64encode(body).decode(),
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
                       "delivery_tag": str(uuid.uuid4())}}).decode()


def why_not_a_task(raw: bytes | str) -> str | None:
    """Why a queued item is not a task message a worker can run, or None when it is one: the
    inverse of `wire`, asked before kombu and Celery decode the item (workers/message_guard.py)."""
    try:
        data = json.loads(raw)
    except RecursionError:
        return "JSON nested too deep"
    except ValueError as error:  # not JSON, or not UTF-8
        return f"not JSON: {error}"
    return _why_not_celery(data) or _why_not_a_group(data["body"])


def _why_not_celery(data: object) -> str | None:
    if not (isinstance(data, dict) and isinstance(data.get("headers"), dict)
            and isinstance(data.get("properties"), dict)
            and "delivery_tag" in data["properties"]):
        return "not a Celery message (an object with headers and properties)"
    if data["headers"].get("task") != TASK:
        return f"its task is {str(data['headers'].get('task'))[:60]!r}, not {TASK}"
    if data.get("content-type") != "application/json":
        return f"its content type is {str(data.get('content-type'))[:60]!r}, not JSON"
    if data["properties"].get("body_encoding") != "base64" or not isinstance(data.get("body"),
                                                                             str):
        return "its body is not base64"
    return None


def _why_not_a_group(body: str) -> str | None:
    try:
        decoded = json.loads(base64.b64decode(body, validate=True))
    except binascii.Error:
        return "its body is not base64"
    except (ValueError, RecursionError):
        return "its body is not JSON"
    if not (isinstance(decoded, list) and len(decoded) == 3 and _group_args(decoded[0])
            and isinstance(decoded[1], dict) and isinstance(decoded[2], dict)):
        return "its arguments are not a sweep id and a list of signed envelopes"
    return None


def _group_args(args: object) -> bool:
    return (isinstance(args, list) and len(args) == 2 and isinstance(args[0], str)
            and isinstance(args[1], list)
            and all(isinstance(i, list) and len(i) == 2 and all(isinstance(s, str) for s in i)
                    for i in args[1]))


def received(client: redis.Redis, task_id: str) -> None:
    client.hdel(PENDING, task_id)


def task_ids(raw: bytes | str) -> str | None:
    """The task id of a queued message as kombu stores it, or None if it is not one."""
    try:
        data = json.loads(raw)
        return str(data["headers"]["id"])
    except (ValueError, KeyError, TypeError, RecursionError):  # junk too
        return None
