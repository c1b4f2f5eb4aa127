"""What the published site shows, as data: the index (testbeds, models, each series with an
overview small enough for 50 series on one page), each series whole (loaded on demand), and
the regressions. The site draws these; it recomputes no figure a record holds."""

import hashlib
from collections.abc import Sequence

from jobs.strict import Strict
from jobs.trends.regressions import Listed
from jobs.trends.timeline import Series, SeriesPoint

# The most points an overview draws: 1,000 sweeps become 100 buckets of their means.
OVERVIEW_POINTS = 100


class Overview(Strict):
    id: str
    testbed: str
    model: str
    arm: str
    metric: str
    points: int
    flagged: int
    # (first position, mean of the bucket's used means) for the sparkline.
    line: list[tuple[int, float]]
    steps: int
    latest: float | None


class SiteIndex(Strict):
    testbeds: dict[str, dict[str, str]]
    series: list[Overview]
    regressions: list[Listed]
    notes: list[str]


def series_id(s: Series) -> str:
    """A file name for the series: stable across builds, safe on any file system."""
    text = "\0".join((s.testbed, s.model, s.arm, s.metric))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def overview(s: Series) -> Overview:
    used = [p for p in s.points if p.used]
    return Overview(id=series_id(s), testbed=s.testbed, model=s.model, arm=s.arm,
                    metric=s.metric, points=len(s.points),
                    flagged=sum(1 for p in s.points if p.flags), line=downsampled(used),
                    steps=sum(1 for _, st in s.steps if st.kept),
                    latest=used[-1].mean if used else None)


def downsampled(points: Sequence[SeriesPoint], most: int = OVERVIEW_POINTS
                ) -> list[tuple[int, float]]:
    """Bucket means in order; a step stays a step (no point is invented between buckets)."""
    if not points:
        return []
    size = -(-len(points) // most)
    line = []
    for start in range(0, len(points), size):
        bucket = points[start:start + size]
        line.append((start, sum(p.mean for p in bucket) / len(bucket)))
    return line
