"""Sweeps and cell states in Redis, and the events `status --watch` listens to.

Every change of a cell's state is one Redis script, so a check and its write are atomic: a
worker takes a cell only if it is queued (or its worker is dead) at the envelope's generation,
and its result is accepted only while it still holds that attempt. One (cell, attempt) yields
at most one accepted measurement, whatever Redis redelivers.
"""

import json
from base64 import b64encode
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson
import redis
from pydantic import TypeAdapter
from redis.client import PubSub
from redis.commands.core import Script

from jobs.errors import UserError
from jobs.record.states import FINAL, CellState, CellStatus
from jobs.strict import dumped_json, parsed
from workers.shared import redis_keys
from workers.shared.clock import epoch, now, server_time
from workers.shared.eviction import refuse_evicting
from workers.shared.messages import GroupMessage, Signed, pending_entry, wire
from workers.shared.queues import is_need
from workers.shared.redis_client import connect, redis_retrying, replicated
from workers.shared.redis_keys import NEEDS, PENDING, REFUSED, SPECS, SWEEPS, cell_script_keys
from workers.shared.sweep_json import json_bytes

if TYPE_CHECKING:  # the sweep's and cells' models: imported where a sweep is read or written,
    # not by `status`, which reads neither (some 25 ms of its start on a slow machine)
    from jobs.spec.cells import Cell
    from jobs.spec.sweep import Sweep

REFUSED_KEEP = 1000  # refused messages kept for `status`, newest first


@cache
def _cells() -> "TypeAdapter[list[Cell]]":
    from jobs.spec.cells import Cell

    return TypeAdapter(list[Cell])

_LUA = Path(__file__).parent / "lua"
_FINAL_LUA = "local final = {" + ", ".join(f"{s}=1" for s in sorted(FINAL)) + "}\n"


def lua(name: str, head: bool = True) -> str:
    """A Redis script from workers/shared/lua/: every one with the lease functions (Redis's
    clock), the cell scripts also with their shared head and the task event."""
    parts = ["lease_head", *(["head", "event"] if head else []), name]
    return (_FINAL_LUA if head else "") + "".join((_LUA / f"{p}.lua").read_text() for p in parts)


@dataclass(frozen=True)
class Taken:
    attempt: int | None
    why_not: str | None
    lease_lost: bool = False  # the worker's lease was gone: nothing was taken
    marked: bool = False  # the cell's cancel mark was set (read when one was asked for)


class CellRow(NamedTuple):
    """What `status` counts and shows of a cell: its id, and where it may run. Kept with the
    sweep as a compact list, so a status reads no cell in full. A tuple: made by the hundred
    thousand, in a third of a frozen dataclass's time."""

    id: str
    backend: str
    model: str
    host: str | None
    requires: tuple[str, ...]

    @classmethod
    def of(cls, cell: "Cell") -> "CellRow":
        return cls(cell.id, cell.backend, cell.model, cell.host, tuple(cell.requires))


@dataclass(frozen=True)
class TaskEvent:
    """A Celery task event a cell script sends in its own step (lua/event.lua): `body` with
    "@attempt@" and "@retries@" filled in, base64-encoded into `message` at "@body@"; with
    no body, `message` is sent as it is."""

    topic: str
    message: str
    body: str

    @classmethod
    def of(cls, topic: str, message: str, body: str) -> "TaskEvent":
        """A body that names no attempt is encoded here, once: Lua's base64 cost the script
        0.2 ms of Redis's time for 700 bytes, on the way to every finish's reply."""
        if "@attempt@" in body or "@retries@" in body:
            return cls(topic, message, body)
        return cls(topic, message.replace("@body@", b64encode(body.encode()).decode()), "")


def _event_args(event: TaskEvent | None) -> list[str]:
    return [event.topic, event.message, event.body] if event else ["", "", ""]


class Store:
    def __init__(self, client: redis.Redis) -> None:
        self.r = client
        self._take = client.register_script(lua("take"))
        self._finish = client.register_script(lua("finish"))
        self._requeue = client.register_script(lua("requeue"))
        self._cancel = client.register_script(lua("cancel"))
        self._rerun = client.register_script(lua("rerun"))
        self._skip = client.register_script(lua("skip"))
        self._queue_once = client.register_script(lua("queue_once", head=False))

    @classmethod
    def connect(cls, url: str, writing: bool = False) -> "Store":
        """A store on `url`; one `writing` sweeps or queues refuses a Redis that evicts."""
        store = cls(connect(url, decode_responses=True, health_check_interval=0))
        if writing:
            refuse_evicting(store.r)
        return store

    def _write(self, script: Script, keys: list[str], args: list[object]) -> Any:
        """Run a script that changes a cell; through Sentinel, return once a replica holds
        the change too (a failover then keeps it)."""
        result = script(keys=keys, args=args)
        replicated(self.r)
        return result

    # ---- sweeps -------------------------------------------------------------------------
    def save_sweep(self, sweep_id: str, sweep: "Sweep", cells: "list[Cell]", source: str,
                   spec: str, signed: dict[str, Signed], resolved: dict[str, str],
                   states: dict[str, CellState] | None = None,
                   attempts: dict[str, int] | None = None, unpublished: Iterable[str] = (),
                   unique: bool = False, dumped: list[dict[str, object]] | None = None
                   ) -> str | None:
        """Store a new sweep (every cell queued), or put back one Redis lost (`states` and
        the `attempts` already used, from the artifact store), with the groups whose message
        is still to be queued (`queue_once`); `dumped`: the cells already as JSON data. With
        `unique`, a sweep of the same spec already in Redis is named instead and nothing is
        saved: checked and written in one transaction, so of two identical submits at once
        exactly one is saved."""
        with self.r.pipeline() as pipe:
            while True:
                try:
                    if unique:
                        pipe.watch(SPECS)
                        same = self._same_spec(pipe, spec)
                        if same is not None:
                            return same
                        pipe.multi()
                    self._write_sweep(pipe, sweep_id, sweep, cells, source, spec, signed,
                                      resolved, states, attempts, set(unpublished), dumped)
                    pipe.execute()
                    return None
                except redis.WatchError:
                    continue  # another sweep was saved meanwhile: look again

    def _write_sweep(self, pipe: "redis.client.Pipeline", sweep_id: str, sweep: "Sweep",
                     cells: "list[Cell]", source: str, spec: str, signed: dict[str, Signed],
                     resolved: dict[str, str], states: dict[str, CellState] | None,
                     attempts: dict[str, int] | None, unpublished: set[str],
                     dumped: list[dict[str, object]] | None) -> None:
        queued = _dump(CellState(status="queued", updated=now()))
        pipe.hset(redis_keys.sweep(sweep_id), mapping={
            "sweep": sweep.model_dump_json(), "source": source, "created": now(),
            "spec_hash": spec, "resolved": json.dumps(resolved),
            # orjson: at 10,000 cells 3 against 40 ms for the cells (json.dumps's text, less
            # its spaces), which every reader parses as JSON.
            "cells": json_bytes(dumped or _dumped(cells)),
            "rows": json_bytes([[c.id, c.backend, c.model, c.host, c.requires] for c in cells])})
        pipe.hset(redis_keys.sweep(sweep_id, "states"), mapping={
            c.id: _dump(states[c.id]) if states and c.id in states else queued for c in cells})
        if attempts:
            pipe.hset(redis_keys.sweep(sweep_id, "attempts"), mapping=attempts)
        pipe.hset(redis_keys.sweep(sweep_id, "envelopes"), mapping={  # 8 against 25 ms
            cell: json_bytes([s.envelope, s.signature]) for cell, s in signed.items()})
        if unpublished:
            pipe.sadd(redis_keys.sweep(sweep_id, "unpublished"), *sorted(unpublished))
        pipe.zadd(SWEEPS, {sweep_id: epoch()})
        pipe.hset(SPECS, spec, sweep_id)

    def same_spec(self, spec: str) -> str | None:
        """The newest sweep in Redis with this spec hash; an index entry whose sweep is gone
        (deleted, or lost and not restored) names none."""
        return self._same_spec(self.r, spec)

    @staticmethod
    def _same_spec(client: "redis.Redis | redis.client.Pipeline", spec: str) -> str | None:
        sweep_id = client.hget(SPECS, spec)
        return sweep_id if sweep_id and client.exists(redis_keys.sweep(sweep_id)) else None

    def unpublished(self, sweep_id: str) -> set[str]:
        """The groups of a sweep whose message its submit has not queued yet (cut short)."""
        return set(self.r.smembers(redis_keys.sweep(sweep_id, "unpublished")))

    def queue_once(self, sweep_id: str, messages: list[GroupMessage]) -> list[GroupMessage]:
        """Queue each group's message only while its group is unpublished, one script per
        message in one pipeline; a message with no cells (its group's cells all ended
        meanwhile) only marks the group done. Returns the messages queued."""
        key = redis_keys.sweep(sweep_id, "unpublished")
        at = server_time(self.r) if messages else 0.0
        pipe = self.r.pipeline(transaction=False)
        for message in (m.with_id() for m in messages):
            if not message.cells:
                pipe.srem(key, message.group)
                continue
            self._queue_once(keys=[key, message.queue, PENDING, NEEDS], client=pipe, args=[
                message.group, wire(message), message.task_id, pending_entry(message, at),
                int(is_need(message.queue))])
        queued = [m for m, done in zip(messages, pipe.execute(), strict=True)
                  if m.cells and done]
        replicated(self.r)  # through Sentinel: queued on a replica too (and the sweep before it)
        return queued

    def sweep(self, sweep_id: str) -> "tuple[Sweep, list[Cell], dict[str, str]]":
        data = self.r.hgetall(redis_keys.sweep(sweep_id))
        if not data:
            raise UserError(f"no sweep {sweep_id!r} in Redis; `benchfleet sweeps` lists them")
        # Validated from the JSON text itself, with no tree of dicts made first, and the
        # text then dropped with the rows beside it: at 100,000 cells these were 400 MiB
        # of a record's memory before it read one attempt.
        from jobs.spec.sweep import Sweep

        cells = _cells().validate_json(data.pop("cells"))
        data.pop("rows", None)
        return Sweep.model_validate_json(data["sweep"]), cells, data

    def rows(self, sweep_id: str) -> list[CellRow]:
        """The sweep's cells as rows, without reading the cells themselves; a sweep saved
        before rows were kept gives them from its cells."""
        raw = self.r.hget(redis_keys.sweep(sweep_id), "rows")
        if raw is None:
            return [CellRow.of(c) for c in self.sweep(sweep_id)[1]]
        return [CellRow(i, b, m, h, tuple(r)) for i, b, m, h, r in json.loads(raw)]

    def sweep_ids(self) -> list[str]:
        return list(self.r.zrevrange(SWEEPS, 0, -1))

    def resolve(self, name: str | None) -> str:
        """A sweep id from an id, a unique prefix, or None for the newest sweep."""
        ids = self.sweep_ids()
        if not ids:
            raise UserError("no sweeps in Redis yet; submit one with `benchfleet submit`")
        if name is None:
            return ids[0]
        matches = [i for i in ids if i == name] or [i for i in ids if i.startswith(name)]
        if len(matches) != 1:
            raise UserError(f"{name!r} matches {len(matches)} sweeps; give more of its id "
                            "(`benchfleet sweeps` lists them)")
        return matches[0]

    # ---- cell states --------------------------------------------------------------------
    def states(self, sweep_id: str) -> dict[str, CellState]:
        raw = self.r.hgetall(redis_keys.sweep(sweep_id, "states"))
        return {k: parsed(CellState, v) for k, v in raw.items()}

    def statuses(self, sweep_id: str) -> dict[str, str]:
        """Each cell's status alone: what counting needs, without parsing whole states."""
        raw = self.r.hgetall(redis_keys.sweep(sweep_id, "states"))
        # orjson: 0.8 against json's 2.4 us a state, 0.17 s of a 100,000-cell status
        return {k: orjson.loads(v)["status"] for k, v in raw.items()}

    def states_of(self, sweep_id: str, cell_ids: list[str]) -> dict[str, CellState]:
        raw = self.r.hmget(redis_keys.sweep(sweep_id, "states"), cell_ids) if cell_ids else []
        return {c: parsed(CellState, r) for c, r in zip(cell_ids, raw, strict=True)
                if r}

    def state(self, sweep_id: str, cell_id: str) -> CellState | None:
        raw = self.r.hget(redis_keys.sweep(sweep_id, "states"), cell_id)
        return parsed(CellState, raw) if raw else None

    def take(self, sweep_id: str, cell_id: str, generation: int, worker: str,
             instance: str, lease_s: float, cancel_mark: str | None = None,
             event: TaskEvent | None = None) -> Taken:
        """Take a cell for this attempt and renew the worker's lease for `lease_s`, in one
        script: a worker whose lease is gone takes nothing. In the same step it reads the
        cell's `cancel_mark` in the sweep's cancel set and sends `event` once taken."""
        ok, detail, *marked = self._write(
            self._take, keys=cell_script_keys(sweep_id, "attempts", "cancel"),
            args=[cell_id, generation, worker, instance, lease_s, now(), cancel_mark or "",
                  *_event_args(event)])
        if int(ok) < 0:
            return Taken(None, str(detail), lease_lost=True)
        return Taken(int(detail), None, marked=bool(marked[0])) if ok else Taken(None,
                                                                                  str(detail))

    def finish(self, sweep_id: str, cell_id: str, worker: str, instance: str, attempt: int,
               status: CellStatus, reason: str | None, lease_s: float, release: bool = False,
               event: TaskEvent | None = None) -> tuple[bool, bool]:
        """Accept the attempt's outcome and renew the worker's lease for `lease_s`, in one
        script: (accepted, renewed); not accepted when the cell is no longer this attempt's.
        In the same step it lets go of the message's hold (`release`: its last cell) and
        sends `event`, whatever the outcome."""
        accepted, renewed = self._write(
            self._finish, keys=cell_script_keys(sweep_id),
            args=[cell_id, worker, instance, attempt, status, reason or "", now(), lease_s,
                  "1" if release else "", *_event_args(event)])
        return bool(accepted), bool(renewed)

    def requeue(self, sweep_id: str, cell_id: str, worker: str, instance: str,
                max_attempts: int, reason: str) -> int:
        return int(self._write(self._requeue, keys=cell_script_keys(sweep_id),
                               args=[cell_id, worker, instance, max_attempts, reason, now()]))

    def skip(self, sweep_id: str, cell_id: str, reason: str) -> bool:
        """A queued adaptive repeat that is no longer needed ends `skipped`."""
        return bool(self._write(self._skip, keys=cell_script_keys(sweep_id),
                                args=[cell_id, reason, now()]))

    def cancel(self, sweep_id: str, cell_id: str) -> tuple[int, str, int]:
        """(1, "", 0) cancelled; (2, worker, generation) running there; (0, status, 0) final."""
        keys = cell_script_keys(sweep_id)
        code, detail, generation = self._write(self._cancel, keys=keys, args=[cell_id, now()])
        return int(code), str(detail), int(generation)

    def rerun(self, sweep_id: str, cell_id: str, generation: int, signed: Signed) -> str | None:
        """Start a new generation of a final cell, its envelope stored with it in one script;
        None when done, else why not (and nothing changed)."""
        code, *detail = self._write(
            self._rerun, keys=cell_script_keys(sweep_id, "envelopes"),
            args=[cell_id, generation, now(), json.dumps([signed.envelope, signed.signature])])
        return None if code else f"it is {detail[0]}, not final"

    def envelopes(self, sweep_id: str, cell_ids: Iterable[str]) -> list[Signed]:
        ids = list(cell_ids)
        raw = self.r.hmget(redis_keys.sweep(sweep_id, "envelopes"), ids) if ids else []
        return [Signed(*json.loads(r)) for r in raw if r]

    def log(self, sweep_id: str) -> list[dict[str, object]]:
        """Every state change of the sweep's cells, oldest first (the attempt history)."""
        return [json.loads(e) for e in self.r.lrange(redis_keys.sweep(sweep_id, "log"), 0, -1)]

    def refuse(self, entry: dict[str, str]) -> None:
        pipe = self.r.pipeline(transaction=False)
        pipe.lpush(REFUSED, json.dumps(entry))
        pipe.ltrim(REFUSED, 0, REFUSED_KEEP - 1)
        pipe.execute()

    def refused(self) -> list[dict[str, str]]:
        return [json.loads(e) for e in self.r.lrange(REFUSED, 0, -1)]

    def events(self, sweep_id: str, timeout_s: float
               ) -> Generator[dict[str, str] | None, None, None]:
        """State changes as they happen; None after `timeout_s` without one, and once more
        when a subscription lost with Redis (a restart, a failover) is made again: the caller
        then reads the states again, as after a quiet spell."""
        channel, lost = redis_keys.sweep(sweep_id, "events"), False
        while True:
            pubsub = self._subscribe(channel)
            try:
                if lost:
                    yield None
                while True:
                    message = pubsub.get_message(timeout=timeout_s)
                    yield json.loads(message["data"]) if message else None
            except (redis.ConnectionError, redis.TimeoutError):
                lost = True  # what was published meanwhile is gone: None makes up for it
            finally:
                pubsub.close()

    def _subscribe(self, channel: str) -> PubSub:
        for attempt in redis_retrying():
            with attempt:
                pubsub = self.r.pubsub(ignore_subscribe_messages=True)
                pubsub.subscribe(channel)
        return pubsub


def _dumped(cells: "list[Cell]") -> list[dict[str, object]]:
    from jobs.spec.cells import dumped_cell

    return [dumped_cell(c) for c in cells]


def _dump(state: CellState) -> str:
    # No nulls: the Redis scripts treat a missing field as absent, and cjson's null is truthy.
    return dumped_json(state, exclude_none=True).decode()
