"""Queue names: where a cell's message goes, and a `need` queue's name reads back as its
route."""

from jobs.spec.routing import Route
from jobs.strict import replaced
from tests.support.cells import Submitted
from workers.shared import queues
from workers.shared.queues import backend_queue, cell_queue, host_queue, need_queue


def test_a_cell_goes_to_its_pin_its_needs_or_its_backend(submitted: Submitted) -> None:
    cell = submitted.cells[0]
    assert cell_queue(cell) == backend_queue("cpu") == "benchfleet.backend.cpu"
    pinned = replaced(cell, host="gb10-a")
    assert cell_queue(pinned) == host_queue("gb10-a", "cpu") == "benchfleet.host.gb10-a.cpu"
    needy = replaced(cell, requires=["gpu=gb10", "model:x"])
    assert cell_queue(needy) == "benchfleet.need.cpu@gpu=gb10,model:x"


def test_a_need_queue_reads_back_as_its_route() -> None:
    queue = need_queue("cuda", ["b", "a", "b"])
    assert queue == "benchfleet.need.cuda@a,b" and queues.is_need(queue)
    assert queues.need_route(queue) == Route(backend="cuda", requires=["a", "b"])
    plain = backend_queue("cuda")
    assert queues.need_route(plain) is None and not queues.is_need(plain)
