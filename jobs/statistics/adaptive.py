"""Adaptive repeats: does a group still need another repeat?

A sweep with `adaptive: {max_n: N}` has its extra repeats expanded (and signed) at submit. The
worker asks `cell_needed` before it runs one and skips the cell when the answer is no; the
record asks the same question of the measurements it carries (`walk`), so it can say which
cells were skipped and whether the cap stopped the repeats. Both read only the repeats before
the cell's, so every cell of one repeat gets the same answer.

Nothing here imports scipy: two samples whose ranges are apart have an exact rank-test p that
depends on their sizes alone (`separated_p`), and overlapping ranges need no test.
"""

from collections.abc import Mapping, Sequence
from typing import Literal, Protocol

from jobs.spec.cells import Cell
from jobs.statistics.headline import headline, noise_floor, separated_answer, separated_p
from jobs.statistics.spans import Ratio, Span
from jobs.strict import Strict

# The metrics whose comparisons decide, as (label in the record, attribute of a reading).
METRICS = (("decode tok/s", "decode_tps"), ("prefill tok/s", "prefill_tps"))

Samples = Mapping[str, Mapping[str, Sequence[float]]]  # metric -> arm -> values


class Reading(Protocol):
    """What the rule reads of one measured cell (a BenchReading or a record's Measurement)."""

    @property
    def decode_tps(self) -> float: ...
    @property
    def prefill_tps(self) -> float: ...


class Slot(Protocol):
    """What the rule reads of one bench cell of a group (a Cell, or a record's view of one)."""

    @property
    def id(self) -> str: ...
    @property
    def arm(self) -> str: ...
    @property
    def repeat(self) -> int: ...
    @property
    def baseline(self) -> bool: ...
    @property
    def aa(self) -> bool: ...


class Repeats(Strict):
    """How a group's adaptive repeats went: which ran, and why they stopped."""

    regular: int
    max_n: int
    needed: list[int]
    stopped: Literal["decided", "cap", "waiting"]
    pending: list[str]
    reason: str
    # Repeats the rule did not need that were measured anyway (a worker that does not skip).
    ran_anyway: list[int] = []


def pending(samples: Samples, baseline: str, aa: str | None = None) -> list[str]:
    """The comparisons against the baseline still undecided, as "arm (metric)".

    `samples` maps a metric to each arm's values; `aa` names the A/A arm, whose spread
    against the baseline is the noise floor of the others (and which is compared too).
    """
    left = []
    for metric, values in samples.items():
        base = Span.of(values.get(baseline, []))
        floor = noise_floor(Span.of(values.get(aa, [])), base) if aa else None
        for arm, arm_values in values.items():
            span = Span.of(arm_values)
            if arm == baseline or span is None or base is None or Ratio.of(span, base) is None:
                continue
            answer, _ = headline(span, base, separated_answer(span.n, base.n),
                                 separated_p(span.n, base.n), None if arm == aa else floor)
            if answer == "undecided":
                left.append(f"{arm} ({metric})")
    return left


def cell_needed(cell: Cell, cells: Sequence[Cell], readings: Mapping[str, Reading]) -> bool:
    """Whether a worker should run `cell` now: always for a regular cell; for an adaptive one,
    while a comparison of its group over the repeats before `cell.repeat` is undecided.

    `cells` are the sweep's cells (those of other groups are ignored); `readings` maps a cell
    id to the reading of its measured attempt, for every cell measured so far.
    """
    if not cell.adaptive:
        return True
    group = [c for c in cells if c.group == cell.group and c.kind == "bench"]
    return bool(_pending_before(group, readings, cell.repeat))


def walk(group: Sequence[Slot], readings: Mapping[str, Reading], waiting: set[str],
         regular: int, max_n: int) -> Repeats:
    """Replay the rule over a group's adaptive repeats, as the worker met them.

    `waiting` holds the ids of cells not yet run (queued or running): the rule cannot be
    replayed past a repeat that is still under way.
    """
    needed: list[int] = []
    for repeat in range(regular + 1, max_n + 1):
        if not _pending_before(group, readings, repeat):
            anyway = sorted({c.repeat for c in group if c.repeat >= repeat and c.id in readings})
            return Repeats(regular=regular, max_n=max_n, needed=needed, stopped="decided",
                           pending=[], reason=f"every comparison was decided after repeat "
                           f"{repeat - 1}; repeats {repeat} to {max_n} were not needed",
                           ran_anyway=anyway)
        needed.append(repeat)
        if any(c.id in waiting for c in group if c.repeat == repeat):
            return Repeats(regular=regular, max_n=max_n, needed=needed, stopped="waiting",
                           pending=_pending_before(group, readings, repeat),
                           reason=f"repeat {repeat} had not run when the record was made")
    left = _pending_before(group, readings, max_n + 1)
    if left:
        return Repeats(regular=regular, max_n=max_n, needed=needed, stopped="cap", pending=left,
                       reason=f"the cap (max_n = {max_n}) stopped the repeats with "
                       f"{', '.join(left)} still undecided")
    return Repeats(regular=regular, max_n=max_n, needed=needed, stopped="decided", pending=[],
                   reason=f"every comparison was decided after repeat {max_n}")


def _pending_before(group: Sequence[Slot], readings: Mapping[str, Reading],
                    repeat: int) -> list[str]:
    baseline = next((c.arm for c in group if c.baseline), None)
    if baseline is None:
        return []
    aa = next((c.arm for c in group if c.aa), None)
    earlier = [(c.arm, readings[c.id]) for c in group if c.repeat < repeat and c.id in readings]
    samples = {label: _by_arm([(arm, getattr(r, attr)) for arm, r in earlier])
               for label, attr in METRICS}
    return pending(samples, baseline, aa)


def _by_arm(values: list[tuple[str, float]]) -> dict[str, list[float]]:
    arms: dict[str, list[float]] = {}
    for arm, value in values:
        arms.setdefault(arm, []).append(value)
    return arms
