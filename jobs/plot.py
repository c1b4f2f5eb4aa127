"""The record's plot: decode tok/s per arm, mean with min–max whiskers and every point."""

import io

import matplotlib

matplotlib.use("Agg")  # no display on lab hosts or in CI
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from jobs.attribution import Attribution  # noqa: E402
from jobs.record import Record  # noqa: E402


def decode_png(record: Record) -> bytes:
    groups = [g for g in record.groups if any(r.decode_tps for r in g.rows)]
    count = max(len(groups), 1)
    cols = min(count, 3)
    rows = (count + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False)
    for ax, group in zip(axes.flat, groups, strict=False):
        names = [r.arm for r in group.rows]
        for x, row in enumerate(group.rows):
            span = row.decode_tps
            if span is None:
                continue
            ax.errorbar([x], [span.mean], yerr=[[span.mean - span.min], [span.max - span.mean]],
                        fmt="o", capsize=6, color="C0" if row.baseline else "C1")
            points = [m.decode_tps for m in group.measurements if m.arm == row.arm]
            ax.scatter([x + 0.12] * len(points), points, s=10, color="grey", zorder=3)
            ax.annotate(f"n={span.n}", (x, span.max), textcoords="offset points",
                        xytext=(0, 6), ha="center", fontsize=8)
        ax.set_xticks(range(len(names)), names, rotation=20)
        ax.set_xlim(-0.6, len(names) - 0.4)
        ax.set_title(f"{group.backend} · {group.model} · {group.commit[:10]}", fontsize=9)
        ax.set_ylabel("decode tok/s")
    for ax in list(axes.flat)[len(groups):]:
        ax.axis("off")
    fig.suptitle(f"{record.sweep_name}: decode tok/s, mean with min–max (n per arm)")
    return _png(fig)


def phases_png(record: Record) -> bytes | None:
    """Stacked per-token kernel time by phase, per backend and model; None without timings."""
    timed = [(f"{g.backend}\n{g.model}", g.profile.attribution) for g in record.groups
             if g.profile and g.profile.attribution.timed]
    if not timed:
        return None
    phases = list(dict.fromkeys(p.phase for _, a in timed for p in a.phases))
    fig, ax = plt.subplots(figsize=(max(5.0, 1.3 * len(timed) + 2), 4.2))
    labels = [label for label, _ in timed]
    bottom = [0.0] * len(timed)
    for i, phase in enumerate(phases):
        heights = [_us(a, phase) for _, a in timed]
        hatch = "//" if phase == "unclassified" else None
        ax.bar(labels, heights, bottom=bottom, label=phase, color=f"C{i}", hatch=hatch)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    ax.set_ylabel("kernel µs per decode token")
    ax.tick_params(axis="x", labelsize=7)
    ax.legend(fontsize=8)
    ax.set_title(f"{record.sweep_name}: per-token kernel time by phase (two-run delta)")
    return _png(fig)


def _us(a: Attribution, phase: str) -> float:
    row = a.phase(phase)
    return (row.us_per_token or 0.0) if row else 0.0


def _png(fig: Figure) -> bytes:
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    return buffer.getvalue()
