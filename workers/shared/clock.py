"""The wall clock, in the two forms the fleet stores: ISO-8601 for people and records, epoch
seconds for lease expiries and scores."""

from datetime import UTC, datetime


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def epoch() -> float:
    return datetime.now(UTC).timestamp()
