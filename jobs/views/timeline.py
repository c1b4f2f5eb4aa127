"""The busy/idle lines under a kernel table: what the trace says a decode token is made of."""

from jobs.profiles.attribution import Attribution

# How many overlapping kernels the record names (the rest are counted).
_LISTED = 8


def timeline_rows(a: Attribution) -> list[str]:
    t = a.timeline
    if t is None:
        return ["\nNo kernel trace was kept: busy and idle time per token are not known, and "
                "no phase is given a share of the wall (a kernel sum is not busy time)."]
    s = t.split
    window = (f"tokens {t.short_tokens + 1} to {t.long_tokens} of the measured pass, the "
              "per-token kernels of the table")
    rows = [f"\n**Timeline** ({window}, {s.streams} stream(s)): busy {s.busy_us:.1f} µs/token "
            f"(the union of kernel intervals), kernel sum {s.kernel_us:.1f} µs/token, overlap "
            f"{s.overlap_us:.1f} µs/token (sum − busy)."]
    if t.flags:
        rows.append("**Flagged:** " + "; ".join(t.flags) + ".")
    if t.wall_usable and t.idle_us is not None:
        rows.append(f"Profiled wall {t.profiled_wall_us:.1f} µs/token (the profiled runs' own "
                    f"decode times, same tokens); idle {t.idle_us:.1f} µs/token (profiled wall "
                    "− busy: launch, host and synchronisation time). % of profiled wall = a "
                    "phase's busy time over that wall; it is read as the phase's share of an "
                    "unprofiled token only if the profiler slows every part alike.")
    if t.overhead is not None and t.unprofiled_wall_us is not None and t.wall_usable:
        rows.append(f"Unprofiled wall {t.unprofiled_wall_us:.1f} µs/token at the same token "
                    f"counts: the profiler's overhead is {t.overhead:.2f}x.")
    rows += _overlaps(a)
    return rows


def _overlaps(a: Attribution) -> list[str]:
    assert a.timeline is not None
    ran = sorted((k for k in a.timeline.split.kernels if k.overlap_us > 0),
                 key=lambda k: -k.overlap_us)
    if not ran:
        return ["No kernel overlapped another."]
    wait = set(a.timeline.split.waiting)
    rows = ["\n| kernel beside others | overlap µs/token | of its own µs | waiting |",
            "|---|---|---|---|"]
    rows += [f"| `{k.name[:90]}` | {k.overlap_us:.1f} | {k.overlap_us / k.kernel_us:.0%} "
             f"| {'yes' if k.name in wait else '–'} |" for k in ran[:_LISTED] if k.kernel_us > 0]
    if len(ran) > _LISTED:
        rows.append(f"\n{len(ran) - _LISTED} more kernels overlapped others.")
    return rows
