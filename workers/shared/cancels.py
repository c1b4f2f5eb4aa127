"""The cancel message: what `benchfleet cancel` tells a worker running a cell, and how the
worker reads it. The cells are also put in the sweep's cancel set, so a worker that could not
hear the message (its control line was down) finds them between commands."""

import json

import redis

from workers.shared import redis_keys


def tell(client: redis.Redis, sweep_id: str, running: dict[str, list[str]]) -> None:
    """Mark the cells cancelled and tell each worker (name -> cell ids) running one."""
    pipe = client.pipeline()
    pipe.sadd(redis_keys.cancel_set(sweep_id), *[c for ids in running.values() for c in ids])
    for worker, ids in running.items():
        pipe.publish(redis_keys.control_channel(worker),
                     json.dumps({"sweep_id": sweep_id, "cancel": ids}))
    pipe.execute()


def heard(data: str) -> set[tuple[str, str]]:
    """The (sweep, cell) pairs a control message cancels; raises ValueError or KeyError on a
    message that is not one."""
    message = json.loads(data)
    return {(str(message["sweep_id"]), str(c)) for c in message.get("cancel", [])}


def marked(client: redis.Redis, sweep_id: str, cell_id: str) -> bool:
    """Whether the cell is in its sweep's cancel set (one round trip)."""
    return bool(client.sismember(redis_keys.cancel_set(sweep_id), cell_id))
