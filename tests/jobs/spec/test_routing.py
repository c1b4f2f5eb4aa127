"""Routing: queues by backend, host pins and capability tags; why a cell waits."""

import pytest

from jobs.spec.cells import expand
from jobs.spec.routing import Offer, Route, auto_tags, requirements, why_waiting
from jobs.spec.specfile import load
from jobs.spec.sweep import Sweep
from tests.support.samples import SWEEP
from workers.shared.queues import cell_queue, need_queue, need_route

GB10 = Offer(name="gb10-a", host="gb10-a", backend="cuda",
             tags=["gpu=gb10", "model:deepseek-v4-flash-4bit"])
STUDIO = Offer(name="studio", host="studio", backend="metal", tags=["model:tinymoe-a3"])


def _sweep(cuda: str) -> Sweep:
    text = SWEEP.replace("cuda: {build: tinymoe-build}", f"cuda: {cuda}")
    return load(Sweep, text, "unit.yaml")[0]


def test_unrouted_cells_keep_their_ids_and_the_backend_queue() -> None:
    plain = expand(_sweep("{build: tinymoe-build}"))
    assert all(c.host is None and c.requires == [] for c in plain)
    assert cell_queue(plain[0]) == "benchfleet.backend.cuda"
    pinned = expand(_sweep("{build: tinymoe-build, host: gb10-a}"))
    assert cell_queue(pinned[0]) == "benchfleet.host.gb10-a.cuda"
    assert pinned[0].id != plain[0].id, "where a cell runs is part of its identity"
    metal = [c for c in plain if c.backend == "metal"]
    assert [c.id for c in metal] == [c.id for c in pinned if c.backend == "metal"]


def test_model_placeholder_asks_for_each_groups_checkpoint() -> None:
    cells = expand(_sweep('{build: tinymoe-build, requires: [gpu=gb10, "model:{model}"]}'))
    cuda = {c.model: c for c in cells if c.backend == "cuda"}
    assert cuda["tinymoe-b5"].requires == ["gpu=gb10", "model:tinymoe-b5"]
    queue = cell_queue(cuda["tinymoe-a3"])
    assert queue == need_queue("cuda", ["model:tinymoe-a3", "gpu=gb10"])
    assert need_route(queue) == Route(backend="cuda", requires=["gpu=gb10", "model:tinymoe-a3"])
    assert need_route("benchfleet.backend.cuda") is None


@pytest.mark.parametrize("tag", ["gpu gb10", "a,b", "x@y", "-x", ""])
def test_bad_tags_are_refused_in_the_sweep(tag: str) -> None:
    with pytest.raises(Exception, match="tag"):
        _sweep(f'{{build: tinymoe-build, requires: ["{tag}"]}}')


def test_why_a_cell_waits() -> None:
    offers = [GB10, STUDIO]
    assert why_waiting(Route(backend="rocm"), offers) == "no live worker serves backend rocm"
    assert why_waiting(Route(backend="cuda", host="gb10-b"), offers) == \
        "no live worker on host gb10-b serves backend cuda"
    assert why_waiting(Route(backend="cuda", requires=["gpu=h200"]), offers) == \
        "no live worker of backend cuda has tag gpu=h200"
    assert why_waiting(Route(backend="metal", requires=["model:deepseek-v4-flash-4bit"]),
                       offers) == ("no live worker of backend metal has tag "
                                   "model:deepseek-v4-flash-4bit")
    other = Offer(name="gb10-b", host="gb10-b", backend="cuda", tags=["gpu=gb10", "model:x"])
    split = Route(backend="cuda", requires=["model:deepseek-v4-flash-4bit", "model:x"])
    assert why_waiting(split, [GB10, other]) == (
        "no live worker of backend cuda has all of model:deepseek-v4-flash-4bit, model:x "
        "(each has some)")
    assert why_waiting(Route(backend="cuda", host="gb10-a",
                             requires=requirements(["gpu=gb10"], "m")), offers) is None


def test_a_pin_names_a_host_identity_or_a_worker_name() -> None:
    two = Offer(name="gb10-a-cuda2", host="gb10-a", backend="cuda")
    assert Route(backend="cuda", host="gb10-a").fits(two)
    assert Route(backend="cuda", host="gb10-a-cuda2").fits(two)
    assert not Route(backend="metal", host="gb10-a").fits(two)


def test_checkpoints_architecture_and_system_become_tags() -> None:
    assert auto_tags(["deepseek-v4-flash-4bit", "bad name"], "arm64", "Darwin") == [
        "model:deepseek-v4-flash-4bit", "arch=arm64", "os=macos"]
