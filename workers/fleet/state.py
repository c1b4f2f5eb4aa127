"""Sweeps and cell states in Redis, and the events `status --watch` listens to."""

import json
from collections.abc import Generator
from datetime import UTC, datetime

import redis

from jobs.attempts import CellState
from jobs.cells import Cell
from jobs.errors import UserError
from jobs.sweep import Sweep

_PREFIX = "benchfleet"


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Store:
    def __init__(self, client: redis.Redis) -> None:
        self.r = client

    @classmethod
    def connect(cls, url: str) -> "Store":
        return cls(redis.Redis.from_url(url, decode_responses=True))

    def save_sweep(self, sweep_id: str, sweep: Sweep, cells: list[Cell], source: str) -> None:
        queued = CellState(status="queued", updated=now()).model_dump_json()
        pipe = self.r.pipeline()
        pipe.hset(_key(sweep_id), mapping={
            "sweep": sweep.model_dump_json(), "source": source, "created": now(),
            "cells": json.dumps([c.model_dump(mode="json") for c in cells])})
        pipe.hset(_key(sweep_id, "states"), mapping={c.id: queued for c in cells})
        pipe.zadd(f"{_PREFIX}:sweeps", {sweep_id: datetime.now(UTC).timestamp()})
        pipe.execute()

    def sweep(self, sweep_id: str) -> tuple[Sweep, list[Cell], dict[str, str]]:
        data = self.r.hgetall(_key(sweep_id))
        if not data:
            raise UserError(f"no sweep {sweep_id!r} in Redis; `benchfleet status` lists them")
        cells = [Cell.model_validate(c) for c in json.loads(data["cells"])]
        return Sweep.model_validate_json(data["sweep"]), cells, data

    def resolve(self, name: str | None) -> str:
        """A sweep id from an id, a unique prefix, or None for the newest sweep."""
        ids = list(self.r.zrevrange(f"{_PREFIX}:sweeps", 0, -1))
        if not ids:
            raise UserError("no sweeps in Redis yet; submit one with `benchfleet submit`")
        if name is None:
            return ids[0]
        matches = [i for i in ids if i == name] or [i for i in ids if i.startswith(name)]
        if len(matches) != 1:
            raise UserError(f"{name!r} matches {len(matches)} sweeps; give more of its id")
        return matches[0]

    def states(self, sweep_id: str) -> dict[str, CellState]:
        raw = self.r.hgetall(_key(sweep_id, "states"))
        return {k: CellState.model_validate_json(v) for k, v in raw.items()}

    def set_state(self, sweep_id: str, cell_id: str, state: CellState) -> None:
        self.r.hset(_key(sweep_id, "states"), cell_id, state.model_dump_json())
        self.r.publish(_key(sweep_id, "events"), json.dumps({"cell": cell_id,
                                                            "status": state.status}))

    def next_attempt(self, sweep_id: str, cell_id: str) -> int:
        return int(self.r.hincrby(_key(sweep_id, "attempts"), cell_id, 1))

    def pin(self, sweep_id: str, group: str, worker: str) -> str:
        """The worker that runs a group's cells: the first to ask becomes it."""
        key = _key(sweep_id, "pins")
        self.r.hsetnx(key, group, worker)
        return str(self.r.hget(key, group))

    def events(self, sweep_id: str, timeout_s: float
               ) -> Generator[dict[str, str] | None, None, None]:
        """State changes as they happen; None after `timeout_s` without one."""
        pubsub = self.r.pubsub(ignore_subscribe_messages=True)
        pubsub.subscribe(_key(sweep_id, "events"))
        try:
            while True:
                message = pubsub.get_message(timeout=timeout_s)
                yield json.loads(message["data"]) if message else None
        finally:
            pubsub.close()


def _key(sweep_id: str, *parts: str) -> str:
    return ":".join((_PREFIX, "sweep", sweep_id) + parts)
