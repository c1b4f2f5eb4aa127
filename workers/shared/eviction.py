"""Refuse a Redis that may evict keys: under an evicting `maxmemory-policy` the sweeps, cell
states, envelopes and queues benchfleet keeps there vanish without an error. One check, used by
the coordinator's commands that write and by a worker at start-up (docs/reliability.md)."""

import redis

from jobs.errors import UserError
from workers.shared.redis_client import where

SAFE = "noeviction"  # the only policy that refuses a write instead of dropping a key


def policy(client: redis.Redis) -> str | None:
    """The server's maxmemory-policy: from CONFIG GET, or INFO memory where CONFIG is renamed,
    disabled or not granted; None when neither answers."""
    try:
        found = client.config_get("maxmemory-policy").get("maxmemory-policy")
    except redis.ResponseError:  # unknown command (renamed), NOPERM (an ACL)
        found = None
    if found is None:
        try:
            found = client.info("memory").get("maxmemory_policy")
        except redis.ResponseError:
            return None
    if isinstance(found, bytes):
        found = found.decode()
    return None if found is None else str(found)


def refuse_evicting(client: redis.Redis) -> None:
    """A sentence naming the setting when this Redis may evict benchfleet's keys."""
    found = policy(client)
    if found is None or found == SAFE:
        return
    raise UserError(f"Redis at {where(client)} evicts keys (maxmemory-policy {found}): "
                    "benchfleet's sweeps and queues would be lost silently; set "
                    "maxmemory-policy noeviction (redis-cli CONFIG SET maxmemory-policy "
                    "noeviction, and in redis.conf)")

