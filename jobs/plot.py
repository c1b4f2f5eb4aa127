"""The record's plot: decode tok/s per arm, mean with min–max whiskers and every point."""

import io

import matplotlib

matplotlib.use("Agg")  # no display on lab hosts or in CI
import matplotlib.pyplot as plt  # noqa: E402

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
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    return buffer.getvalue()
