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
from workers.shared import redis_keys
from workers.shared.clock import now
from workers.shared.redis_client import replicated
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


class Lease:
    def __init__(self, client: redis.Redis, name: str, instance: str) -> None:
        self.r, self.name, self.instance = client, name, instance
        self._register = client.register_script(lua("register", head=False))
        self._renew = client.register_script(lua("renew", head=False))
        self._hold = client.register_script(lua("hold", head=False))
        self.fields: dict[str, str] = {}  # what it published, for a lease taken again

    def check_free(self, takeover: bool) -> None:
        """Raise NameTaken now if `take` would: a worker refuses before it starts, and takes
        its lease only once it is ready to serve (a slow start must not expire it)."""
        if not takeover:
            self._call_register("check")

    def take(self, fields: dict[str, str], takeover: bool) -> Held | None:
        """Register this worker; raises NameTaken when a live other instance has the name.
        Empty `fields` (a lease taken again) publishes what was published before. Returns
        the cells the name held (this instance's own, or a dead predecessor's)."""
        self.fields = {**self.fields, **fields}
        old, detail = self._call_register("takeover" if takeover else "take")
        return _held(self.name, old, detail) if old and detail else None

    def _call_register(self, mode: str) -> tuple[str, str]:
        flat = [v for kv in self.fields.items() for v in kv] + ["instance", self.instance,
                                                                "started", now(), "seen", now()]
        ok, old, detail = self._register(keys=[], args=[self.name, self.instance, IDLE_TTL_S,
                                                        mode, *flat])
        replicated(self.r)
        if not ok:
            raise NameTaken(f"a live worker named {self.name!r} already runs on host "
                            f"{detail or '?'}; give this one another --name, or stop that one")
        return old, detail

    def renew(self, ttl_s: float) -> None:
        renewed = self._renew(keys=[], args=[self.name, self.instance, ttl_s, now()])
        replicated(self.r)  # a lease a failover set back could expire under a live worker
        self.check(renewed)

    def check(self, renewed: object) -> None:
        if not renewed:
            raise LeaseLost(f"worker {self.name} lost its lease (it was declared dead, or "
                            "another worker took its name); its cells were queued again")

    def hold(self, sweep_id: str, cells: list[str], task_id: str, ttl_s: float) -> None:
        """Say which cells this worker holds, and that their message has arrived, renewing
        the lease in the same step (raises LeaseLost, holding nothing, when it is gone)."""
        from workers.shared.redis_keys import PENDING

        holding = json.dumps({"sweep_id": sweep_id, "cells": cells})
        held = self._hold(keys=[PENDING], args=[self.name, self.instance, ttl_s, now(),
                                                holding, task_id])
        replicated(self.r)
        self.check(held)

    def release(self) -> None:
        self.r.hdel(redis_keys.worker(self.name), "holding")

    def publish(self, fields: dict[str, str]) -> None:
        """Publish what changed, only while this instance holds the name."""
        self.fields.update(fields)
        flat = [v for kv in fields.items() for v in kv]
        self.r.register_script(lua("publish", head=False))(keys=[], args=[self.name,
                                                                            self.instance, *flat])

    def end(self) -> None:
        """End the lease, only while this instance holds it (never a successor's)."""
        self.r.register_script(lua("end", head=False))(keys=[], args=[self.name, self.instance,
                                                                        now()])


def claim_expired(client: redis.Redis) -> list[Held]:
    """Claim every lease expired by Redis's clock; each claimed worker's held cells come back
    once, to this caller."""
    flat = client.register_script(lua("claim", head=False))(keys=[], args=[now()])
    held = []
    for i in range(0, len(flat), 3):
        found = _held(*flat[i:i + 3])
        held += [found] if found else []
    return held


def live_expiries(client: redis.Redis) -> dict[str, float]:
    """Each live worker's lease expiry (epoch s), live by Redis's clock."""
    flat = client.register_script(lua("live", head=False))(keys=[], args=[])
    return {flat[i]: float(flat[i + 1]) for i in range(0, len(flat), 2)}


def live_workers(client: redis.Redis) -> dict[str, dict[str, str]]:
    """Each live worker's published fields (backend, host, facts, tags, holding...)."""
    names = list(live_expiries(client))
    pipe = client.pipeline(transaction=False)
    for name in names:
        pipe.hgetall(redis_keys.worker(name))
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
