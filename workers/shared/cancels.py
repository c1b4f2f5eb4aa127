"""The cancel message: what `benchfleet cancel` tells a worker running a cell, and how the
worker reads it. The cells are also put in the sweep's cancel set, so a worker that could not
hear the message (its control line was down) finds them between commands.

A cancel belongs to the generation that was running: a rerun of the cell (the next
generation) is not cancelled by it.
"""

import json

import redis

from workers.shared import redis_keys

Cancelled = tuple[str, str, int]  # sweep, cell, generation


def tell(client: redis.Redis, sweep_id: str, running: dict[str, dict[str, int]]) -> None:
    """Mark the cells cancelled at their generation and tell each worker running one
    (name -> {cell id: generation})."""
    pipe = client.pipeline()
    pipe.sadd(redis_keys.cancel_set(sweep_id),
              *[mark(c, g) for cells in running.values() for c, g in cells.items()])
    for worker, cells in running.items():
        pipe.publish(redis_keys.control_channel(worker),
                     json.dumps({"sweep_id": sweep_id, "cancel": cells}))
    pipe.execute()


def heard(data: str) -> set[Cancelled]:
    """The (sweep, cell, generation) a control message cancels; raises ValueError, KeyError
    or TypeError on a message that is not one."""
    message = json.loads(data)
    return {(str(message["sweep_id"]), str(c), int(g))
            for c, g in dict(message.get("cancel", {})).items()}


def marked(client: redis.Redis, sweep_id: str, cell_id: str, generation: int) -> bool:
    """Whether the cell's generation is in its sweep's cancel set (one round trip)."""
    return bool(client.sismember(redis_keys.cancel_set(sweep_id), mark(cell_id, generation)))


def mark(cell_id: str, generation: int) -> str:
    """A cell's generation as its member of the sweep's cancel set."""
    return f"{cell_id}@{generation}"  # a cell id is a plain name: it holds no '@'
