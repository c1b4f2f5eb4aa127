"""Every measured run judged on its own, and the record's host sentence derived from the flags.

The idle gate runs before a group's first run and after a gap, so a host that turns busy
inside a group passes it. Each run therefore carries its own load1 before and after, and on
NVIDIA hosts its GPU state before and after (jobs/record/gpu_state.py); a run whose readings say
busy is flagged with the reason, whatever the gate said.
"""

import math
from collections.abc import Iterable
from typing import Protocol

from jobs.record.attempts import Gate
from jobs.record.gpu_state import GpuReading, busy, out_of_range
from jobs.strict import Strict

NOT_IDLE = "host not idle"
# Cells of one group run back to back on their host (docs/reliability.md); another sweep's
# command between them breaks the arms' adjacency.
SHARED = "host shared with another sweep"
# load1 is a one-minute exponential average updated every 5 s: a run that kept one CPU busy
# for t seconds raises it by at most 1 - e^(-t/60) by itself, which the after-reading allows.
LOAD1_WINDOW_S = 60.0
# The host sentence names this many flagged runs; the rest are counted (all are listed under
# Measurements).
NAMED = 20
IDLE_SENTENCE = "Every measurement ran on an idle host under the host lease, alone."


class RunConditions(Strict):
    """What one measured run's host looked like just before and just after it."""

    load1_before: float
    load1_after: float
    wall_s: float = 0.0
    gpu_before: GpuReading | None = None
    gpu_after: GpuReading | None = None
    # The group's first measured run's readings (before, after): the range it started in.
    gpu_start: list[GpuReading] = []
    # Another sweep that measured on this host during the run's group, before the run.
    other_sweep: str | None = None


def run_flags(c: RunConditions, gate: Gate | None) -> list[str]:
    """Why this run's own readings say the host was busy, one phrase each."""
    found = []
    if gate is not None:
        own = 1 - math.exp(-max(c.wall_s, 0.0) / LOAD1_WINDOW_S)
        if c.load1_before > gate.threshold:
            found.append(f"{NOT_IDLE}: load1 {c.load1_before:.2f} before the run, over the "
                         f"gate's threshold {gate.threshold:g}")
        if c.load1_after > gate.threshold + own:
            found.append(f"{NOT_IDLE}: load1 {c.load1_after:.2f} after the run, over the "
                         f"gate's threshold {gate.threshold:g} (+{own:.2f} the run's own)")
    for when, reading in (("before the run", c.gpu_before), ("after the run", c.gpu_after)):
        if reading is not None:
            found += [f"{NOT_IDLE}: {why}" for why in busy(reading, when, when.startswith(
                "after")) + out_of_range(reading, c.gpu_start, when)]
    if c.other_sweep:
        found.append(f"{SHARED}: sweep {c.other_sweep} measured on this host during this "
                     "group, before this run")
    return found


class Flagged(Protocol):
    """A measurement as the host sentence reads it: a record's own measurements are given
    as they are, not copied (a copy of each was 56 MB at 100,000 cells, held at the record's
    peak)."""

    @property
    def cell_id(self) -> str: ...

    @property
    def flags(self) -> list[str]: ...


def host_sentence(flagged: Iterable[Flagged], measurements: int) -> str:
    """The record's sentence on host idleness: "idle" only when no measurement is flagged."""
    bad = [f for f in flagged if f.flags]
    if not bad:
        return IDLE_SENTENCE
    named = "; ".join(f"{f.cell_id} ({', '.join(f.flags)})" for f in bad[:NAMED])
    more = f"; and {len(bad) - NAMED} more" if len(bad) > NAMED else ""
    return (f"{len(bad)} of {measurements} measurements carry a flag (listed under "
            f"Measurements): their figures are shown, but were not taken on a quiet host held "
            f"by one command: {named}{more}.")
