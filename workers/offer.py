"""What this worker offers the fleet: its host's capabilities, its tags (configured, and one per
checkpoint found) and the queues that follow from them (docs/routing.md).

Published in the worker's lease record when it starts and between cells: the timer that
refreshes it runs in Celery's event loop, which does not run while a cell does, so no probe
ever runs beside a measurement.
"""

import json
import logging
import platform
import time
from pathlib import Path

import redis
from celery import bootsteps

from jobs.spec.routing import Offer, auto_tags
from workers.probe import checkpoints, probe
from workers.shared.leases import IDLE_RENEW_S, Lease
from workers.shared.queues import backend_queue, host_queue, is_need, need_route
from workers.shared.redis_keys import NEEDS

log = logging.getLogger(__name__)
# Toolchains and GPUs change rarely: probe them again this often; checkpoints every tick.
PROBE_EVERY_S = 600.0


class Offering:
    def __init__(self, name: str, backend: str, host: str, tags: list[str],
                 models_dir: Path) -> None:
        self.name, self.backend, self.host = name, backend, host
        self.configured, self.models_dir = list(tags), models_dir
        self.capabilities = probe(models_dir)
        self._probed = time.monotonic()
        self.consuming: set[str] = set(self.fixed_queues())

    def tags(self) -> list[str]:
        caps = self.capabilities
        return sorted({*self.configured,
                       *auto_tags(caps.checkpoints, caps.host.arch, platform.system())})

    def offer(self) -> Offer:
        return Offer(name=self.name, host=self.host, backend=self.backend, tags=self.tags())

    def fields(self) -> dict[str, str]:
        """What the lease record says about this worker beyond its lease."""
        return {"probe": self.capabilities.model_dump_json(), "tags": json.dumps(self.tags())}

    def fixed_queues(self) -> list[str]:
        """Its backend's queue, and the host queues of its name and of its host identity."""
        return list(dict.fromkeys([backend_queue(self.backend),
                                   host_queue(self.name, self.backend),
                                   host_queue(self.host, self.backend)]))

    def wanted(self, client: redis.Redis) -> set[str]:
        """Every queue it should consume now: the fixed ones, and each `need` queue published
        so far whose backend is its own and whose tags it offers."""
        offer = self.offer()
        needs = {q for q in client.smembers(NEEDS)
                 if (route := need_route(str(q))) is not None and route.fits(offer)}
        return set(self.fixed_queues()) | needs

    def refresh(self) -> bool:
        """Read the checkpoints again (and everything else when it is due); True when the
        offer changed."""
        before = self.fields()
        if time.monotonic() - self._probed > PROBE_EVERY_S:
            self.capabilities, self._probed = probe(self.models_dir), time.monotonic()
        else:
            found = checkpoints(self.models_dir)
            if found != self.capabilities.checkpoints:
                self.capabilities = self.capabilities.model_copy(update={"checkpoints": found})
        return self.fields() != before


def offer_step(offering: Offering, lease: Lease, client: redis.Redis
               ) -> type[bootsteps.StartStopStep]:
    class OfferStep(bootsteps.StartStopStep):
        """Between cells: publish what changed, and consume the `need` queues it can serve."""

        requires = {"celery.worker.components:Timer"}

        def start(self, worker: object) -> None:
            consumer = worker.consumer  # type: ignore[attr-defined]
            self.tref = worker.timer.call_repeatedly(  # type: ignore[attr-defined]
                IDLE_RENEW_S, _tick, (offering, lease, client, consumer))

        def stop(self, worker: object) -> None:
            self.tref.cancel()

    return OfferStep


def _tick(offering: Offering, lease: Lease, client: redis.Redis, consumer: object) -> None:
    try:
        if offering.refresh():
            lease.publish(offering.fields())
        _consume(offering, offering.wanted(client), consumer)
    except (redis.ConnectionError, redis.TimeoutError) as error:
        log.warning("Redis unreachable between cells (offer not refreshed): %s", error)


def _consume(offering: Offering, wanted: set[str], consumer: object) -> None:
    if getattr(consumer, "task_consumer", None) is None:
        return  # not connected yet (or reconnecting): the next tick does it
    for queue in sorted(wanted - offering.consuming):
        consumer.add_task_queue(queue)  # type: ignore[attr-defined]
        offering.consuming.add(queue)
    for queue in sorted(q for q in offering.consuming - wanted if is_need(q)):
        consumer.cancel_task_queue(queue)  # type: ignore[attr-defined]
        offering.consuming.discard(queue)
        log.info("stopped consuming %s: this worker no longer offers its tags", queue)
