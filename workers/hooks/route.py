"""Route: a message that reached a worker its cells do not fit (another backend, a host pin
naming another host, tags this worker lacks) goes on to the queue its cells' route names,
whole, and nothing of it runs here. Anyone may re-publish signed envelopes; the worker that
gets them checks them again."""

import logging

from workers.hooks import Dropped, Hook
from workers.in_flight import Job
from workers.offer import Offering
from workers.shared.clock import epoch
from workers.shared.messages import GroupMessage, publish
from workers.shared.queues import cell_queue
from workers.shared.state import Store

log = logging.getLogger(__name__)


class Route(Hook):
    def __init__(self, offering: Offering, store: Store) -> None:
        self.offering, self.store = offering, store
        self.forwarded: str | None = None  # the task id of the message passed on last

    def before_cell(self, job: Job) -> None:
        cell, group = job.cell, job.group
        queue = cell_queue(cell)
        # A cell from a queue this worker serves stays here even when it does not fit (a
        # pinned host that lacks a tag): the policy hook fails it, instead of a loop.
        if cell.route.fits(self.offering.offer()) or queue in self.offering.consuming:
            return
        if self.forwarded == group.task_id:
            raise Dropped(f"passed on to {queue} with the rest of its message")
        rest = group.items[group.items.index(job.signed):]
        publish(self.store.r, [GroupMessage(job.sweep_id, queue, [i.claimed_cell() for i in rest],
                                            rest)], epoch())
        self.forwarded = group.task_id
        log.info("passed %d cells of sweep %s on to %s: worker %s does not fit them",
                 len(rest), job.sweep_id, queue, self.offering.name)
        raise Dropped(f"passed on to {queue}")
