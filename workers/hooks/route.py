"""Route: a message that reached a worker its cells do not fit (another backend, a host pin
naming another host, tags this worker lacks) goes on to the queue its cells' route names,
and nothing of it runs here: from the first cell that does not fit, the rest of the message
goes on, whole. Anyone may re-publish signed envelopes; the worker that gets them checks them
again."""

import logging
from dataclasses import replace

from workers.hooks import Hook
from workers.in_flight import Group
from workers.offer import Offering
from workers.shared.messages import GroupMessage, publish
from workers.shared.queues import cell_queue
from workers.shared.state import Store

log = logging.getLogger(__name__)


class Route(Hook):
    def __init__(self, offering: Offering, store: Store) -> None:
        self.offering, self.store = offering, store

    def before_group(self, group: Group) -> Group:
        for i, item in enumerate(group.cells):
            queue = cell_queue(item.cell)
            # A cell from a queue this worker serves stays here even when it does not fit (a
            # pinned host that lacks a tag): the policy hook fails it, instead of a loop.
            if item.cell.route.fits(self.offering.offer()) or queue in self.offering.consuming:
                continue
            rest = group.cells[i:]
            publish(self.store.r, [GroupMessage(group.sweep_id, queue,
                                                [c.cell.id for c in rest],
                                                [c.signed for c in rest])])
            log.info("passed %d cells of sweep %s on to %s: worker %s does not fit them",
                     len(rest), group.sweep_id, queue, self.offering.name)
            return replace(group, cells=group.cells[:i])
        return group
