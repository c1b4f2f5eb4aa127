"""Worker leases: a worker is live while its lease in Redis has not expired.

A lease is taken when the worker starts and renewed only between steps, never during a
command: before each step its expiry is set to that step's own timeout plus a margin, so
nothing has to beat while a benchmark runs. An idle worker renews it from Celery's event
loop, which does not run while a cell does. Every other notion of "live" (hosts, routing,
unique names, who holds a cell) reads this lease.
"""

import json
from dataclasses import dataclass

import redis

from jobs.spec.routing import Offer
from workers.shared.clock import epoch, now
from workers.shared.redis_keys import PREFIX, WORKERS
from workers.shared.state import lua

# How long an idle worker's lease lasts, and how often the idle worker renews it.
IDLE_TTL_S = 30.0
IDLE_RENEW_S = 10.0



class NameTaken(Exception):
    pass


class LeaseLost(Exception):
    """This worker was declared dead (its lease expired) and must not report results."""


@dataclass(frozen=True)
class Held:
    """The cells a worker held when it stopped answering, for the reaper to queue again."""

    worker: str
    instance: str
    sweep_id: str
    cells: list[str]


def worker_key(name: str) -> str:
    return f"{PREFIX}:worker:{name}"


class Lease:
    def __init__(self, client: redis.Redis, name: str, instance: str) -> None:
        self.r, self.name, self.instance = client, name, instance
        self._register = client.register_script(lua("register", head=False))
        self._renew = client.register_script(lua("renew", head=False))
        self.fields: dict[str, str] = {}  # what it published, for a lease taken again

    def take(self, fields: dict[str, str], takeover: bool) -> Held | None:
        """Register this worker; raises NameTaken when a live other instance has the name.
        Empty `fields` (a lease taken again) publishes what was published before."""
        self.fields = {**self.fields, **fields}
        flat = [v for kv in self.fields.items() for v in kv] + ["instance", self.instance,
                                                                "started", now(), "seen", now()]
        ok, old, detail = self._register(
            keys=[WORKERS, worker_key(self.name)],
            args=[self.name, self.instance, epoch(), epoch() + IDLE_TTL_S,
                  "1" if takeover else "0", *flat])
        if not ok:
            raise NameTaken(f"a live worker named {self.name!r} already runs on host "
                            f"{detail or '?'}; give this one another --name")
        return _held(self.name, old, detail) if old and detail else None

    def renew(self, ttl_s: float) -> None:
        self.check(self._renew(keys=[WORKERS, worker_key(self.name)],
                               args=[self.name, self.instance, epoch() + ttl_s, now()]))

    def renew_on(self, pipe: redis.client.Pipeline, ttl_s: float) -> None:
        """Queue a renewal in a pipeline (its answer goes to `check`): one round trip with the
        state change it travels with."""
        self._renew(keys=[WORKERS, worker_key(self.name)],
                    args=[self.name, self.instance, epoch() + ttl_s, now()], client=pipe)

    def check(self, renewed: object) -> None:
        if not renewed:
            raise LeaseLost(f"worker {self.name} lost its lease (it was declared dead); "
                            "its cells were queued again elsewhere")

    def hold(self, sweep_id: str, cells: list[str], task_id: str) -> None:
        """Say which cells this worker holds, and that their message has arrived."""
        from workers.shared.messages import PENDING

        pipe = self.r.pipeline()
        pipe.hset(worker_key(self.name), "holding",
                  json.dumps({"sweep_id": sweep_id, "cells": cells}))
        pipe.hdel(PENDING, task_id)
        pipe.execute()

    def release(self) -> None:
        self.r.hdel(worker_key(self.name), "holding")

    def publish(self, fields: dict[str, str]) -> None:
        self.fields.update(fields)
        self.r.hset(worker_key(self.name), mapping=fields)

    def end(self) -> None:
        pipe = self.r.pipeline()
        pipe.zrem(WORKERS, self.name)
        pipe.hset(worker_key(self.name), mapping={"instance": f"stopped:{self.instance}",
                                                  "stopped": now()})
        pipe.execute()


def claim_expired(client: redis.Redis) -> list[Held]:
    """Claim every expired lease; each claimed worker's held cells come back once."""
    script = client.register_script(lua("claim", head=False))
    held = []
    for name in client.zrangebyscore(WORKERS, "-inf", epoch()):
        ok, *rest = script(keys=[WORKERS, worker_key(name)], args=[name, epoch(), now()])
        if ok:
            found = _held(name, rest[0], rest[1])
            held += [found] if found else []
    return held


def live_workers(client: redis.Redis) -> dict[str, dict[str, str]]:
    """Each live worker's published fields (backend, host, facts, tags, holding...)."""
    names = client.zrangebyscore(WORKERS, epoch(), "+inf")
    pipe = client.pipeline(transaction=False)
    for name in names:
        pipe.hgetall(worker_key(name))
    return dict(zip(names, pipe.execute(), strict=True))


def live_offers(client: redis.Redis) -> list[Offer]:
    """What each live worker offers (routing reads it: jobs/spec/routing.py)."""
    return [offer(name, fields) for name, fields in live_workers(client).items()]


def offer(name: str, fields: dict[str, str]) -> Offer:
    try:
        tags = [str(t) for t in json.loads(fields.get("tags") or "[]")]
    except (ValueError, TypeError):
        tags = []
    return Offer(name=name, host=fields.get("host", ""), backend=fields.get("backend", ""),
                 tags=tags)


def _held(worker: str, instance: str, holding: str) -> Held | None:
    if not holding:
        return None
    data = json.loads(holding)
    return Held(worker, instance, data["sweep_id"], list(data["cells"]))
