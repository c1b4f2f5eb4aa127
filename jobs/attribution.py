"""Kernels (or ops) mapped to phases by name rules; unclassified time is shown, never hidden.

Rules are an ordered mapping phase -> regular expressions, searched case-insensitively in the
kernel's name; the first phase with a matching pattern takes the kernel.
"""

import re
from collections.abc import Mapping

from jobs.model import Strict
from jobs.readings import ProfileReading

UNCLASSIFIED = "unclassified"


class KernelRow(Strict):
    name: str
    phase: str
    launches_per_token: float
    us_per_token: float | None
    share: float | None


class PhaseRow(Strict):
    phase: str
    kernels: int
    launches_per_token: float
    us_per_token: float | None
    share: float | None


class Attribution(Strict):
    timed: bool
    total_us_per_token: float | None
    kernels: list[KernelRow]
    phases: list[PhaseRow]

    def phase(self, name: str) -> PhaseRow | None:
        return next((p for p in self.phases if p.phase == name), None)


def phase_of(name: str, rules: Mapping[str, list[str]]) -> str:
    for phase, patterns in rules.items():
        if any(re.search(p, name, re.IGNORECASE) for p in patterns):
            return phase
    return UNCLASSIFIED


def attribute(reading: ProfileReading, rules: Mapping[str, list[str]]) -> Attribution:
    timed = all(k.us_per_token is not None for k in reading.kernels)
    total = sum(k.us_per_token or 0.0 for k in reading.kernels) if timed else None
    rows = [KernelRow(name=k.name, phase=phase_of(k.name, rules),
                      launches_per_token=k.launches_per_token, us_per_token=k.us_per_token,
                      share=(k.us_per_token or 0.0) / total if total else None)
            for k in reading.kernels]
    rows.sort(key=lambda r: (-(r.us_per_token or 0.0), -r.launches_per_token, r.name))
    phases = [_phase(p, [r for r in rows if r.phase == p], total)
              for p in [*rules, UNCLASSIFIED]]
    return Attribution(timed=timed, total_us_per_token=total, kernels=rows, phases=phases)


def _phase(phase: str, rows: list[KernelRow], total: float | None) -> PhaseRow:
    us = sum(r.us_per_token or 0.0 for r in rows) if total is not None else None
    return PhaseRow(phase=phase, kernels=len(rows),
                    launches_per_token=sum(r.launches_per_token for r in rows),
                    us_per_token=us, share=us / total if us is not None and total else None)
