"""The whole-token split checked against its own numbers (part of `benchfleet check`).

A split contradicts itself when busy time exceeds the profiled wall or the kernel sum, when a
share tops 100 %, when idle is not wall minus busy, or when the phases' busy time is not what
their kernels' busy shares add up to."""

import math

from jobs.parsers.timeline import timeline_flags
from jobs.profiles.attribution import Attribution

_TOLERANCE = 1e-6
_US = 0.05  # µs: figures are compared as the record rounds nothing, so this is float noise


def split_problems(where: str, a: Attribution) -> list[str]:
    problems = [f"{where}: the {p.phase} phase holds {share:.1%} of {what}, over 100%"
                for p in a.phases
                for what, share in (("the kernel time", p.share), ("the busy time", p.busy_share),
                                    ("the profiled wall", p.wall_share))
                if share is not None and share > 1 + _TOLERANCE]
    t = a.timeline
    if t is None:
        if any(p.wall_share is not None or p.busy_share is not None for p in a.phases):
            problems.append(f"{where}: phases carry shares of busy time or wall without a "
                            "kernel trace to take them from")
        return problems
    s = t.split
    if s.busy_us > s.kernel_us + _US:
        problems.append(f"{where}: busy {s.busy_us:.1f} µs/token exceeds the kernel sum "
                        f"{s.kernel_us:.1f} (a union cannot be longer than its parts)")
    flags = timeline_flags(s, t.profiled_wall_us, t.unprofiled_wall_us)
    if t.flags != flags:
        problems.append(f"{where}: the timeline's flags say {t.flags or 'nothing'}; its own "
                        f"numbers give {flags or 'none'}")
    elif (t.profiled_wall_us is not None and s.busy_us > t.profiled_wall_us + _US
          and not t.flags):
        problems.append(f"{where}: busy {s.busy_us:.1f} µs/token exceeds the profiled wall "
                        f"{t.profiled_wall_us:.1f} of the same tokens")
    if t.flags and any(p.wall_share is not None for p in a.phases):
        problems.append(f"{where}: a flagged split gives phases a share of the wall")
    if not math.isclose(s.overlap_us, s.kernel_us - s.busy_us, abs_tol=_US):
        problems.append(f"{where}: overlap {s.overlap_us:.1f} is not kernel sum − busy")
    phase_busy = sum(p.busy_us_per_token or 0.0 for p in a.phases)
    table = {k.name for k in a.kernels}
    expected = sum(k.busy_us for k in s.kernels if k.name in table)
    if not math.isclose(phase_busy, expected, abs_tol=_US):
        problems.append(f"{where}: the phases hold {phase_busy:.1f} busy µs/token, their "
                        f"kernels {expected:.1f}")
    shares = sum(p.busy_share or 0.0 for p in a.phases)
    if s.busy_us > 0 and not math.isclose(shares, 1.0, abs_tol=1e-6):
        problems.append(f"{where}: the phases' shares of the busy time add up to "
                        f"{shares:.4f}, not 1")
    return problems
