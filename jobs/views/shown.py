"""What each of the record's figures shows, found without matplotlib: the record's process
asks before it forks a child to draw one (runner/records.py), so a figure with nothing to
show costs no child and no import."""

from jobs.record.model import Record
from jobs.record.parts import Group


def measured(record: Record, metric: str) -> list[Group]:
    """The groups with any figure of `metric` (decode or prefill tok/s)."""
    return [g for g in record.groups if any(getattr(r, f"{metric}_tps") for r in g.rows)]


def timed(record: Record) -> list[Group]:
    """The groups whose profile has per-token timings by phase."""
    return [g for g in record.groups if g.profile and g.profile.attribution.timed]


def anything(record: Record, figure: str) -> bool:
    """Whether `figure` (a metric, or "phases") has anything to draw."""
    return bool(timed(record) if figure == "phases" else measured(record, figure))
