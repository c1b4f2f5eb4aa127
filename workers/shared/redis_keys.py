"""Every Redis key, channel and list benchfleet writes, in one place: a reader sees the whole
layout here, and a rename cannot miss a reader of the old name.

The Lua scripts (lua/) get their keys as KEYS, except head.lua's lookup of a worker's lease,
which spells WORKERS and `worker()` out (tests/shared/test_redis_keys.py holds them equal).
Celery's own queue names (`benchfleet.backend.<b>`, ...) follow its dotted style and live in
queues.py, beside the routing rule they encode.
"""

PREFIX = "benchfleet"
# Sweep ids, newest last (a sorted set scored by submit time).
SWEEPS = f"{PREFIX}:sweeps"
# A sweep's spec hash -> the id of the newest sweep submitted with it, so `submit` can say a
# sweep is already in Redis (written in the same transaction as the sweep).
SPECS = f"{PREFIX}:specs"
# Live workers: a sorted set scored by lease expiry.
WORKERS = f"{PREFIX}:workers"
# Messages a worker refused (bad signature, replay, policy), newest first, for `status`.
REFUSED = f"{PREFIX}:refused"
# Messages published but not yet taken by a worker (lost messages are found from here).
PENDING = f"{PREFIX}:pending"
# Capability tags some queued cell needs, so `status` can say no worker offers them.
NEEDS = f"{PREFIX}:needs"


def sweep(sweep_id: str, *parts: str) -> str:
    """A sweep's keys: `states`, `log`, `events` (pub/sub), `attempts`, `cancel`,
    `unpublished` (the groups whose message its submit has not queued yet), ..."""
    return ":".join((PREFIX, "sweep", sweep_id) + parts)


def cell_script_keys(sweep_id: str, *extra: str) -> list[str]:
    """The keys every cell script (workers/shared/lua/) is called with, in its KEYS order."""
    return [sweep(sweep_id, "states"), sweep(sweep_id, "log"), sweep(sweep_id, "events"),
            *(sweep(sweep_id, e) for e in extra)]


def cancel_set(sweep_id: str) -> str:
    """The cells of a sweep marked cancelled."""
    return sweep(sweep_id, "cancel")


def worker(name: str) -> str:
    """A worker's lease record (a hash: instance, host, expiry, capabilities)."""
    return f"{PREFIX}:worker:{name}"


def control_channel(name: str) -> str:
    """The pub/sub channel a worker hears cancels on while a command runs."""
    return f"{worker(name)}:control"
