"""Points of history, read from one record: per (testbed, model, arm, metric) the row's
figures as the record holds them (never recomputed), its flags and where it came from."""

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from jobs.record.attempts import HostFacts
from jobs.statistics.headline import noise_floor
from jobs.statistics.spans import Span
from jobs.trends.fingerprint import Testbed, host_testbed

# The row figures a series follows; higher is better for all of them.
METRICS = ("decode_tps", "prefill_tps")


class _Read(BaseModel):
    """A part of the record read for history alone: the rest of the record is skipped, not
    validated (the full model costs 4x a `json.loads` of it: docs/benchmarks/history.md)."""

    model_config = ConfigDict(extra="ignore", frozen=True, from_attributes=True)


class RowRead(_Read):
    arm: str
    baseline: bool
    aa: bool = False
    hosts: list[str]
    decode_tps: Span | None
    prefill_tps: Span | None


class FlagsRead(_Read):
    arm: str
    flags: list[str]


class GroupRead(_Read):
    commit: str
    model: str
    rows: list[RowRead]
    measurements: list[FlagsRead]


class PinsRead(_Read):
    mlx_pins: dict[str, str]


class CheckRead(_Read):
    ok: bool


class MissingRead(_Read):
    cell_id: str
    status: str
    reason: str


class RecordRead(_Read):
    """What the index reads of a record: its points, floors, flags and testbeds."""

    sweep_id: str
    created: str
    repo: str
    hosts: dict[str, HostFacts]
    meta: PinsRead
    groups: list[GroupRead]
    missing: list[MissingRead]
    check: CheckRead | None = None


class Point:
    """One row of one record at one commit. A plain class: the index makes 100,000 of them."""

    __slots__ = ("testbed", "model", "arm", "metric", "commit", "sweep_id", "created",
                 "n", "mean", "min", "max", "flags", "check_ok", "mlx_pin", "source")

    def __init__(self, *, testbed: str, model: str, arm: str, metric: str, commit: str,
                 sweep_id: str, created: str, span: Span, flags: list[str],
                 check_ok: bool | None, mlx_pin: str | None, source: str) -> None:
        self.testbed, self.model, self.arm, self.metric = testbed, model, arm, metric
        self.commit, self.sweep_id, self.created = commit, sweep_id, created
        self.n, self.mean, self.min, self.max = span.n, span.mean, span.min, span.max
        self.flags, self.check_ok, self.mlx_pin, self.source = flags, check_ok, mlx_pin, source

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.testbed, self.model, self.arm, self.metric)

    @property
    def used(self) -> bool:
        """Flagged points are shown but kept out of the fit."""
        return not self.flags


def record_points(record: RecordRead, source: str) -> tuple[list[Point], dict[str, Testbed]]:
    """Every (row, metric) of the record as a point, and the testbed of each host in it."""
    beds = {name: host_testbed(host) for name, host in record.hosts.items()}
    ok = record.check.ok if record.check else None
    points = []
    for group in record.groups:
        flags = _flags(group)
        for row in group.rows:
            bed = _row_testbed(row, beds)
            if bed is None:
                continue
            for metric in METRICS:
                span = getattr(row, metric)
                if span is None:
                    continue
                points.append(Point(
                    testbed=bed, model=group.model, arm=row.arm, metric=metric,
                    commit=group.commit, sweep_id=record.sweep_id, created=record.created,
                    span=span, flags=flags.get(row.arm, []), check_ok=ok,
                    mlx_pin=record.meta.mlx_pins.get(group.commit), source=source))
    return points, beds


def _row_testbed(row: RowRead, beds: Mapping[str, Testbed]) -> str | None:
    """The row's testbed; a row whose runs spread over testbeds is one no series can hold
    (groups run on one host, so only a hand-edited catalogue makes one)."""
    ids = {beds[h].id for h in row.hosts if h in beds}
    return ids.pop() if len(ids) == 1 else None


def _flags(group: GroupRead) -> dict[str, list[str]]:
    """Per arm, every flag its measurements carry (one pass over the group)."""
    found: dict[str, set[str]] = {}
    for m in group.measurements:
        if m.flags:
            found.setdefault(m.arm, set()).update(m.flags)
    return {arm: sorted(flags) for arm, flags in found.items()}


def aa_floors(record: RecordRead, beds: Mapping[str, Testbed]) -> list[tuple[str, str, float]]:
    """(testbed, metric, floor) of every group that measured an A/A arm: the floor its own
    comparisons use (jobs/record/model.py), the largest change the A/A range allows."""
    floors = []
    for group in record.groups:
        base = next((r for r in group.rows if r.baseline), None)
        aa = next((r for r in group.rows if r.aa), None)
        bed = _row_testbed(base, beds) if base and aa else None
        if base is None or aa is None or bed is None:
            continue
        for metric in METRICS:
            floor = noise_floor(getattr(aa, metric), getattr(base, metric))
            if floor is not None:
                floors.append((bed, metric, floor))
    return floors
