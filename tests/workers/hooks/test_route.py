"""Route: from the first cell that does not fit this worker, the rest of the message goes on
to the queue its route names, whole; nothing of it runs here."""

import base64
import json
from pathlib import Path

from tests.support.cells import Submitted
from workers.hooks.route import Route
from workers.offer import Offering
from workers.shared.messages import Signed
from workers.shared.queues import backend_queue


def _queued(submitted: Submitted, queue: str) -> list[list[Signed]]:
    messages = [json.loads(raw) for raw in submitted.store.r.lrange(queue, 0, -1)]
    bodies = [json.loads(base64.b64decode(m["body"])) for m in messages]
    return [[Signed(*item) for item in body[0][1]] for body in bodies]


def test_a_message_for_this_backend_stays_whole(submitted: Submitted, tmp_path: Path) -> None:
    hook = Route(Offering("w1", "cpu", "h1", [], tmp_path), submitted.store)
    group = submitted.group()
    assert hook.before_group(group) == group
    assert submitted.store.r.llen(backend_queue("cpu")) == 0


def test_a_message_for_another_backend_goes_on_whole(submitted: Submitted,
                                                     tmp_path: Path) -> None:
    hook = Route(Offering("w1", "metal", "h1", [], tmp_path), submitted.store)
    hook.offering.consuming = set()  # not a queue this worker serves: it fits nowhere here
    group = hook.before_group(submitted.group())
    assert group.cells == ()
    (forwarded,) = _queued(submitted, backend_queue("cpu"))
    assert forwarded == [submitted.signed[c.id] for c in submitted.cells]


def test_a_cell_from_a_queue_it_serves_stays_even_when_it_does_not_fit(
        submitted: Submitted, tmp_path: Path) -> None:
    offering = Offering("w1", "metal", "h1", [], tmp_path)
    offering.consuming.add(backend_queue("cpu"))  # the policy hook fails it: no loop
    group = submitted.group()
    assert Route(offering, submitted.store).before_group(group) == group
    assert submitted.store.r.llen(backend_queue("cpu")) == 0
