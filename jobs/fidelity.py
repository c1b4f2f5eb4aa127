"""A clean host or a loud record: flags on every measurement that ran on a busy host, without
the host lease, or beside another command on the same host.

Runs carry ISO-8601 start and end times. A time without a fraction of a second could be
anywhere in that second, so two runs whose rounded times only touch "may overlap"; with
sub-second times the check is exact.
"""

import calendar
import re
from collections.abc import Sequence

from jobs.attempts import AttemptResult, Gate
from jobs.model import Strict

# Commands that load a host: what a measurement must not share it with.
HEAVY = frozenset({"build", "warmup", "measure", "profile"})
NOT_IDLE = "host not idle"
NO_GATE = "idle gate not recorded"
NO_LEASE = "no host lease"

_ISO = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(\.\d+)?(Z|[+-]\d\d:?\d\d)?$")


class HostRun(Strict):
    """One command that loaded a host, as the record keeps it to find overlaps."""

    hostname: str
    worker: str
    cell_id: str
    attempt: int
    role: str
    started: str
    ended: str
    host_lease: bool


def host_runs(result: AttemptResult) -> list[HostRun]:
    return [HostRun(hostname=result.host.hostname, worker=result.worker, cell_id=result.cell_id,
                    attempt=result.attempt, role=r.role, started=r.started, ended=r.ended,
                    host_lease=r.host_lease) for r in result.runs if r.role in HEAVY]


def flags(measured: HostRun, gate: Gate | None, runs: Sequence[HostRun]) -> list[str]:
    """What is wrong with the conditions of one measured run, one short phrase each."""
    found = [NO_GATE] if gate is None else [] if gate.idle else [NOT_IDLE]
    if not measured.host_lease:
        found.append(NO_LEASE)
    if _interval(measured) is None:
        return [*found, "run times unreadable: overlaps cannot be ruled out"]
    others = [r for r in runs if r.hostname == measured.hostname
              and (r.cell_id, r.attempt) != (measured.cell_id, measured.attempt)]
    return found + [text for other in others if (text := _overlap(measured, other))]


def _overlap(a: HostRun, b: HostRun) -> str | None:
    what = f"{b.role} of {b.cell_id} (attempt {b.attempt}, {b.worker})"
    ta, tb = _interval(a), _interval(b)
    if ta is None or tb is None:
        return f"may overlap {what}: its times are unreadable"
    # Each interval as (earliest start, latest start, earliest end, latest end).
    if max(ta[1], tb[1]) <= min(ta[2], tb[2]):
        return f"overlaps {what}"
    # Rounded times that only touch: a real overlap only between two workers, since one
    # worker runs one command at a time.
    if max(ta[0], tb[0]) < min(ta[3], tb[3]) and a.worker != b.worker:
        return f"may overlap {what}: times in whole seconds"
    return None


def _interval(run: HostRun) -> tuple[float, float, float, float] | None:
    start, end = _instant(run.started), _instant(run.ended)
    if start is None or end is None:
        return None
    return start[0], start[0] + start[1], end[0], end[0] + end[1]


def _instant(text: str) -> tuple[float, float] | None:
    """Seconds since the epoch and the time's resolution, or None when unreadable."""
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
