"""A clean host or a loud record: flags on every measurement that ran on a busy host, without
the host lease, or beside another command on the same host.

Runs carry ISO-8601 start and end times. A time without a fraction of a second could be
anywhere in that second, so two runs whose rounded times only touch "may overlap"; with
sub-second times the check is exact.
"""

import calendar
import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from jobs.record.attempts import AttemptResult, Gate
from jobs.record.run_flags import RunConditions, run_flags
from jobs.strict import slotted

# Commands that load a host: what a measurement must not share it with.
HEAVY = frozenset({"build", "warmup", "measure", "profile"})
NOT_IDLE = "host not idle"
NO_GATE = "idle gate not recorded"
NO_LEASE = "no host lease"

_ISO = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(\.\d+)?(Z|[+-]\d\d:?\d\d)?$")


@slotted
class HostRun:
    """One command that loaded a host, as the record keeps it to find overlaps."""

    hostname: str
    worker: str
    cell_id: str
    attempt: int
    role: str
    started: str
    ended: str
    host_lease: bool


def host_runs(result: AttemptResult, cell_id: str | None = None) -> list[HostRun]:
    """The attempt's runs that loaded its host; `cell_id`: the attempt's, where the caller
    holds an equal string already."""
    return [HostRun(hostname=result.host.hostname, worker=result.worker,
                    cell_id=cell_id or result.cell_id,
                    attempt=result.attempt, role=r.role, started=r.started, ended=r.ended,
                    host_lease=r.host_lease) for r in result.runs if r.role in HEAVY]


# A run's times as numbers: earliest start, latest start, earliest end, latest end.
Interval = tuple[float, float, float, float]


class RunIndex:
    """A record's host runs by host, sorted by start, so the runs that may overlap one are
    found among its neighbours (a run lasts at most the host's longest) and not by comparing
    every pair: a 10,000-cell record has 10,000 measurements and more runs. Each run of the
    index has its times parsed once, here, into numbers, kept four to a run in one array
    (a run from outside the index is parsed each time it is asked about): held as a tuple of
    floats a run, in a dict keyed by the run's times, the index took 330 bytes a run (66 MB
    for the 200,000 runs of a 100,000-cell record, built at its peak), against 174 now."""

    def __init__(self, runs: Sequence[HostRun]) -> None:
        self.unreadable: dict[str, list[HostRun]] = {}
        self.longest: dict[str, float] = {}
        self._runs: list[HostRun] = []  # the readable ones
        self._times = array("d")  # four a run (`Interval`), in the order of `_runs`
        # A run's place in `_runs`, by its id: `_runs` keeps every run it names alive, so no
        # other object can have that id; an equal copy is not found, and is parsed instead.
        self._place: dict[int, int] = {}
        places: dict[str, list[int]] = {}
        for run in runs:
            span = _interval(run)
            if span is None:
                self.unreadable.setdefault(run.hostname, []).append(run)
                continue
            self._place[id(run)] = len(self._runs)
            places.setdefault(run.hostname, []).append(len(self._runs))
            self._runs.append(run)
            self._times.extend(span)
            self.longest[run.hostname] = max(self.longest.get(run.hostname, 0.0),
                                             span[3] - span[0])
        times, indexed = self._times, self._runs
        for host_places in places.values():  # by start, then cell id: two stable sorts
            host_places.sort(key=lambda p: indexed[p].cell_id)
            host_places.sort(key=lambda p: times[4 * p])
        self._by_host = places
        self._starts = {h: array("d", (times[4 * p] for p in ps)) for h, ps in places.items()}

    def span(self, run: HostRun) -> Interval | None:
        """The run's interval, or None when its times are unreadable."""
        place = self._place.get(id(run))
        if place is None:  # unreadable, or a run from outside the index (the checker's)
            return _interval(run)
        at = 4 * place
        return self._times[at], self._times[at + 1], self._times[at + 2], self._times[at + 3]

    def near(self, run: HostRun, span: Interval | None = None) -> list[HostRun]:
        """Runs on the same host that may share time with `run` (and every unreadable one);
        `span`: the run's, where the caller has it."""
        if span is None:
            span = self.span(run)
        assert span is not None
        host, starts = run.hostname, self._starts.get(run.hostname)
        found = []
        if starts is not None:
            low = bisect_left(starts, span[0] - self.longest.get(host, 0.0) - 1.0)
            high = bisect_right(starts, span[3] + 1.0)
            found = [self._runs[p] for p in self._by_host[host][low:high]]
        return found + self.unreadable.get(host, [])


def flags(measured: HostRun, gate: Gate | None, runs: "RunIndex | Sequence[HostRun]",
          conditions: RunConditions | None = None) -> list[str]:
    """What is wrong with the conditions of one measured run, one short phrase each."""
    found = [NO_GATE] if gate is None else [] if gate.idle else [NOT_IDLE]
    found += run_flags(conditions, gate) if conditions else []
    if not measured.host_lease:
        found.append(NO_LEASE)
    index = runs if isinstance(runs, RunIndex) else RunIndex(runs)
    mine = index.span(measured)
    if mine is None:
        return [*found, "run times unreadable: overlaps cannot be ruled out"]
    others = [r for r in index.near(measured, mine)
              if (r.cell_id, r.attempt) != (measured.cell_id, measured.attempt)]
    return found + [text for other in others
                    if (text := _overlap(measured, mine, other, index.span(other)))]


def _overlap(a: HostRun, ta: Interval, b: HostRun, tb: Interval | None) -> str | None:
    what = f"{b.role} of {b.cell_id} (attempt {b.attempt}, {b.worker})"
    if tb is None:
        return f"may overlap {what}: its times are unreadable"
    if max(ta[1], tb[1]) <= min(ta[2], tb[2]):
        return f"overlaps {what}"
    # Rounded times that only touch: a real overlap only between two workers, since one
    # worker runs one command at a time.
    if max(ta[0], tb[0]) < min(ta[3], tb[3]) and a.worker != b.worker:
        return f"may overlap {what}: times in whole seconds"
    return None


def _interval(run: HostRun) -> Interval | None:
    start, end = _instant(run.started), _instant(run.ended)
    if start is None or end is None:
        return None
    return start[0], start[0] + start[1], end[0], end[0] + end[1]


def _instant(text: str) -> tuple[float, float] | None:
    """Seconds since the epoch and the time's resolution, or None when unreadable."""
    if (len(text) in _RESOLUTION and text.endswith("+00:00") and text[19] == "."
            and text[10] == "T"):
        return _utc(text)
    return _parsed(text)


# What a worker writes (workers/shared/clock.py: UTC to the millisecond; the microsecond is
# `isoformat()`'s own), its day one of a few. Read here without the pattern, by the same
# integer arithmetic, so the figures are the same to the last bit; a record of 100,000 cells
# reads 400,000 of them. By length: the resolution as the pattern's reading computes it.
_DAYS: dict[str, int] = {}
_RESOLUTION = {29: 10.0 ** -3, 32: 10.0 ** -6}


def _utc(text: str) -> tuple[float, float] | None:
    clock = text[11:13] + text[14:16] + text[17:19] + text[20:-6]
    if text[13] != ":" or text[16] != ":" or not clock.isdecimal():
        return _parsed(text)  # the pattern's \d is any decimal digit: so is isdecimal's
    day = _DAYS.get(text[:10])
    if day is None:
        midnight = _parsed(text[:10] + "T00:00:00")
        if midnight is None:
            return _parsed(text)
        day = _DAYS.setdefault(text[:10], int(midnight[0]))
    seconds = day + int(text[11:13]) * 3600 + int(text[14:16]) * 60 + int(text[17:19])
    return seconds + float(text[19:-6]), _RESOLUTION[len(text)]


def _parsed(text: str) -> tuple[float, float] | None:
    match = _ISO.match(text)
    if not match:
        return None
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, zone = match.group(7), match.group(8)
    seconds = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        seconds -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    if fraction:
        return seconds + float(fraction), 10.0 ** -(len(fraction) - 1)
    return float(seconds), 1.0
