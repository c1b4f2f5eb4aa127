"""Queue and task names: where a cell's message goes (docs/routing.md).

- `benchfleet.backend.<backend>`: any worker of the backend;
- `benchfleet.host.<host>.<backend>`: a worker whose host identity or name is <host> (a host
  pin, and reruns sent back to the worker that ran the group);
- `benchfleet.need.<backend>@<tag>,<tag>`: a worker offering every tag. Workers do not know
  these names in advance: publishing one adds it to the set `benchfleet:needs`, and each
  worker, between cells, consumes every one whose tags it offers.
"""

from typing import TYPE_CHECKING

from jobs.spec.routing import Route

if TYPE_CHECKING:  # the cells' model: not imported by `status`, which reads no cell
    from jobs.spec.cells import Cell

TASK = "benchfleet.run_group"
_NEED = "benchfleet.need."


def backend_queue(backend: str) -> str:
    return f"benchfleet.backend.{backend}"


def host_queue(worker: str, backend: str) -> str:
    return f"benchfleet.host.{worker}.{backend}"


def need_queue(backend: str, requires: list[str]) -> str:
    # '@' and ',' appear in neither a backend name nor a tag, so the name reads back.
    return f"{_NEED}{backend}@{','.join(sorted(set(requires)))}"


def cell_queue(cell: "Cell") -> str:
    """The queue a cell's group goes to when nothing else (a rerun's host) says otherwise."""
    if cell.host:
        return host_queue(cell.host, cell.backend)
    if cell.requires:
        return need_queue(cell.backend, cell.requires)
    return backend_queue(cell.backend)


def is_need(queue: str) -> bool:
    return queue.startswith(_NEED)


def need_route(queue: str) -> Route | None:
    """The route a `need` queue's name stands for; None for any other name."""
    if not is_need(queue) or "@" not in queue:
        return None
    backend, tags = queue.removeprefix(_NEED).split("@", 1)
    return Route(backend=backend, requires=[t for t in tags.split(",") if t])
