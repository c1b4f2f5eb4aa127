"""The only statistics a record shows: n, mean, min to max, and ratios with their range.

Ranges are never presented as more than they are; the word for a comparison is the headline
rule's (jobs/statistics/headline.py), never a ratio's alone.
"""

from collections.abc import Sequence

from jobs.strict import Lean


class Span(Lean):
    n: int
    mean: float
    min: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> "Span | None":
        if not values:
            return None
        return cls(n=len(values), mean=sum(values) / len(values), min=min(values),
                   max=max(values))

    def overlaps(self, other: "Span") -> bool:
        return self.min <= other.max and other.min <= self.max


class Ratio(Lean):
    """arm / baseline: the ratio of means, and the widest ratio the two ranges allow."""

    mean: float
    low: float
    high: float
    ranges_overlap: bool

    @classmethod
    def of(cls, arm: Span, baseline: Span) -> "Ratio | None":
        if baseline.min <= 0 or baseline.mean <= 0:
            return None
        return cls(mean=arm.mean / baseline.mean, low=arm.min / baseline.max,
                   high=arm.max / baseline.min, ranges_overlap=arm.overlaps(baseline))


def span_text(span: Span | None, digits: int = 2) -> str:
    if span is None:
        return "–"
    if span.n == 1:
        return f"{span.mean:.{digits}f} (n = 1)"
    return f"{span.mean:.{digits}f} ({span.min:.{digits}f} to {span.max:.{digits}f})"


def ratio_text(ratio: Ratio | None) -> str:
    if ratio is None:
        return "–"
    return f"{_pct(ratio.mean)} ({_pct(ratio.low)} to {_pct(ratio.high)})"


def _pct(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f}%"
