"""The wall clock, in the two forms the fleet stores: ISO-8601 for people and records, epoch
seconds for scores; and Redis's own clock, the one every lease and pending message is
timed by, so that a host whose clock is off neither expires at once nor outlives its death."""

from datetime import UTC, datetime

import redis


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def epoch() -> float:
    return datetime.now(UTC).timestamp()


def server_time(client: "redis.Redis") -> float:
    """Redis's clock, in epoch seconds."""
    seconds, micros = client.time()
    return seconds + micros / 1e6
