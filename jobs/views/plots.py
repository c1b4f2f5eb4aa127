"""The record's plots: decode and prefill tok/s per arm (mean, min-max whiskers and every
point, y from zero, one scale across a figure's panels), and per-token time by phase. A plot
with nothing to show is not made. Every text is at least MIN_POINTS, every axis says which way
is better, and the colours are neutral and colour-blind safe (Okabe and Ito's palette).
"""

import io
import textwrap

import matplotlib

matplotlib.use("Agg")  # no display on lab hosts or in CI
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from jobs.profiles.attribution import Attribution  # noqa: E402
from jobs.record.model import Record  # noqa: E402
from jobs.record.parts import ArmRow, Group  # noqa: E402
from jobs.views.shown import Shown, shown  # noqa: E402

_COLS = 3
_PANEL = (4.6, 3.8)  # inches per group panel
_DPI = 130  # with the font sizes below, readable at 100 % zoom
_TEXT, _SMALL = 10, 9  # points: axis labels and titles; ticks, words and the legend
MIN_POINTS = _SMALL  # no text smaller: at 130 dpi, 9 pt is 16 pixels high
# Okabe and Ito's colour-blind-safe palette, without its yellow (too pale on white) and with
# its vermillion last, so the first arms are never told apart by red against green alone.
ARM_COLOURS = ("#0072B2", "#E69F00", "#CC79A7", "#56B4E9", "#009E73", "#D55E00")
BASELINE_COLOUR = "#666666"  # the baseline, and the A/A arm (hollow): grey, neutral
POINT_COLOUR = "#AAAAAA"  # each measurement, beside its arm's dot
# Which way is better, per plotted metric (both are tok/s).
BETTER = {"decode": "higher", "prefill": "higher"}
LEGEND = ("mean (dot)", "min to max (whiskers)", "each measurement (grey points)",
          "baseline arm (grey)")
LEGEND_AA = "A/A arm (hollow)"  # only where the sweep measured one
# Phases: the palette with its yellow (a bar is large enough), then again hatched; never grey,
# which is the GPU idle row's.
PHASE_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442")
IDLE_COLOUR = "#BBBBBB"


def decode_png(record: Record) -> bytes | None:
    return png(shown(record, "decode"))


def prefill_png(record: Record) -> bytes | None:
    return png(shown(record, "prefill"))


def phases_png(record: Record) -> bytes | None:
    return png(shown(record, "phases"))


def png(what: Shown | None) -> bytes | None:
    """The figure `what` says, as PNG; None when it has nothing to draw."""
    if what is None:
        return None
    return _png(_phases(what) if what.figure == "phases" else _metric(what))


def metric_figure(record: Record, metric: str) -> Figure | None:
    """One panel per group on one y scale, from zero; None when nothing was measured."""
    what = shown(record, metric)
    return _metric(what) if what else None


def _metric(what: Shown) -> Figure:
    groups, metric = what.groups, what.figure
    cols = min(len(groups), _COLS)
    rows = (len(groups) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(_PANEL[0] * cols, _PANEL[1] * rows),
                             squeeze=False, sharey=True)  # its height is set by _grid_layout
    arms = list(dict.fromkeys(r.arm for g in groups for r in g.rows  # a colour per arm
                              if not (r.baseline or r.aa)))
    for ax, group in zip(axes.flat, groups, strict=False):
        _panel(ax, group, metric, arms)
    for ax in list(axes.flat)[len(groups):]:
        ax.axis("off")
    top = max(getattr(r, f"{metric}_tps").max for g in groups for r in g.rows
              if getattr(r, f"{metric}_tps"))
    axes[0][0].set_ylim(0, top * 1.25 if top > 0 else 1)  # shared; room for the labels
    for ax in axes[:, 0]:
        ax.set_ylabel(f"{metric} tok/s ({BETTER[metric]} is better)", fontsize=_TEXT)
    title = (f"{what.sweep_name}: {metric} tok/s per arm; above each arm its n and its "
             "word against the baseline"
             + (f" (the first {len(groups)} of {what.of} groups; the tables have them "
                "all)" if what.of > len(groups) else ""))
    # As many characters a line as the figure's width holds (at most 0.6 em each).
    heading = _wrap(title, int((fig.get_figwidth() - 2 * _PAD) / (0.6 * (_TEXT + 1) / 72)))
    handles = _legend_handles(any(r.aa for g in groups for r in g.rows))
    across = _legend_columns(handles, fig.get_figwidth())
    fig.legend(handles=handles, loc="lower center", ncols=across, fontsize=_SMALL,
               frameon=False, bbox_to_anchor=(0.5, 0), borderaxespad=_PAD * 72 / _SMALL)
    y, (low, high) = axes[0][0].yaxis, axes[0][0].get_ylim()
    digits = max((len(label) for label in y.get_major_formatter().format_ticks(
        [t for t in y.get_majorticklocs() if low <= t <= high])), default=1)
    _grid_layout(fig, rows, cols, _lines(heading),
                 max(_lines(ax.get_title()) for ax in axes.flat),
                 max(_lines(t.get_text()) for ax in axes.flat for t in ax.get_xticklabels()),
                 digits, -(-len(handles) // across))
    fig.suptitle(heading, fontsize=_TEXT + 1, y=1 - _PAD / fig.get_figheight(), va="top")
    return fig


def _legend_columns(handles: list[Line2D], width: float) -> int:
    """As many of the legend's entries side by side as the figure's width holds: each its
    marker and spacing (4.8 em) and its label (at most 0.6 em a character)."""
    em = _SMALL / 72
    for across in range(len(handles), 1, -1):
        per = -(-len(handles) // across)  # matplotlib fills the columns one after another
        columns = [handles[k * per:(k + 1) * per] for k in range(across)]
        need = sum(4.8 * em + max(len(str(h.get_label())) for h in col) * 0.6 * em
                   for col in columns if col)
        if need <= width - 2 * _PAD:
            return across
    return 1


# Margins set from the lines of text each one holds, in inches: matplotlib's constrained
# layout found them by drawing every panel twice, half a second of each figure here.
_PLOT_H = 2.95  # each panel's plotting area; the figure grows with the text around them
_PAD = 0.12  # between a text and what is next to it
_TICK = 0.1  # a tick mark and its pad to the label
_GAP = 0.25  # between panels side by side (they share the y axis: no labels between)


def _lines(text: str) -> int:
    return text.count("\n") + 1 if text else 0


def _grid_layout(fig: Figure, rows: int, cols: int, heading: int, title: int,
                 ticks: int, digits: int, legend: int) -> None:
    """Panels placed so that the figure's title, each panel's title, the x tick labels, the
    y label and the legend below never meet, whatever their number of lines and digits: the
    figure is as tall as its panels and the text around them."""
    width = fig.get_figwidth()
    # DejaVu Sans' digits are 0.64 em wide; the y label is one line
    yaxis = _PAD + _TEXT * 1.3 / 72 + _PAD + digits * 0.64 * _SMALL / 72 + _TICK
    title_in = title * _TEXT * 1.3 / 72 + _PAD
    ticks_in = ticks * _SMALL * 1.3 / 72 + _TICK + _PAD
    top = _PAD + heading * (_TEXT + 1) * 1.3 / 72 + _PAD + title_in
    bottom = ticks_in + legend * _SMALL * 1.6 / 72 + 2 * _PAD  # the legend under the ticks
    row_gap = ticks_in + title_in
    panel_h = _PLOT_H
    height = top + bottom + rows * panel_h + (rows - 1) * row_gap
    fig.set_figheight(height)
    panel_w = (width - yaxis - _PAD - (cols - 1) * _GAP) / cols
    fig.subplots_adjust(left=yaxis / width, right=1 - _PAD / width, top=1 - top / height,
                        bottom=bottom / height, wspace=_GAP / panel_w, hspace=row_gap / panel_h)


def _legend_handles(aa: bool) -> list[Line2D]:
    dot, whiskers, points, baseline = LEGEND
    handles = [Line2D([], [], marker="o", color=ARM_COLOURS[0], linestyle="", label=dot),
               Line2D([], [], marker="|", markersize=14, markeredgewidth=1.5,
                      color=ARM_COLOURS[0], linestyle="", label=whiskers),
               Line2D([], [], marker="o", markersize=4, color=POINT_COLOUR, linestyle="",
                      label=points),
               Line2D([], [], marker="o", color=BASELINE_COLOUR, linestyle="", label=baseline)]
    return handles + [Line2D([], [], marker="o", color=BASELINE_COLOUR, mfc="white",
                             linestyle="", label=LEGEND_AA)] * aa


def _panel(ax: Axes, group: Group, metric: str, arms: list[str]) -> None:
    names = [r.arm for r in group.rows]
    for x, row in enumerate(group.rows):
        span = getattr(row, f"{metric}_tps")
        if span is None:
            continue
        colour = arm_colour(row, arms)
        ax.errorbar([x], [span.mean], yerr=[[span.mean - span.min], [span.max - span.mean]],
                    fmt="o", capsize=6, color=colour, mfc="white" if row.aa else colour,
                    zorder=2)
        points = [getattr(m, f"{metric}_tps") for m in group.measurements if m.arm == row.arm]
        ax.scatter([x + 0.16] * len(points), points, s=14, color=POINT_COLOUR, zorder=3)
        ax.annotate(_label(row, metric), (x, span.max), textcoords="offset points",
                    xytext=(0, 5), ha="center", va="bottom", fontsize=_SMALL)
    ax.set_xticks(range(len(names)), [_wrap(n, 14) for n in names], fontsize=_SMALL)
    ax.tick_params(axis="y", labelsize=_SMALL)
    ax.set_xlim(-0.6, len(names) - 0.4)
    ax.set_title(f"{group.backend} · {_wrap(group.model, 34)}\n{group.commit[:12]}",
                 fontsize=_TEXT)
    ax.grid(axis="y", alpha=0.3)


def _label(row: ArmRow, metric: str) -> str:
    comparison = getattr(row, f"{metric}_comparison")
    answer = "baseline" if row.baseline else comparison.word if comparison else "–"
    return f"n={row.n}\n{answer}"


def arm_colour(row: ArmRow, arms: list[str]) -> str:
    """Grey for the baseline and its A/A twin; the palette in order for the other `arms`."""
    if row.baseline or row.aa:
        return BASELINE_COLOUR
    return ARM_COLOURS[arms.index(row.arm) % len(ARM_COLOURS)]


# The token's wall time not spent in kernels (jobs/profiles/attribution.py's Idle), drawn as a row.
IDLE = "GPU idle (wall − kernels)"


def phases_figure(record: Record) -> Figure | None:
    """Per-token time by phase for every timed profile; None when none has timings."""
    what = shown(record, "phases")
    return _phases(what) if what else None


def _phases(what: Shown) -> Figure:
    """Whatever rows the attribution has are drawn, a negative one (GPU idle below the kernel
    time) below zero as it is."""
    several = what.several_commits
    timed = [(f"{g.backend}\n{_wrap(g.model, 18)}" + (f"\n{g.commit[:8]}" if several else "")
              + ("\nbusy only (flagged)" if _flagged(g.profile.attribution) else ""),
              g.profile.attribution) for g in what.groups if g.profile]
    phases = [p for p in dict.fromkeys([*(p.phase for _, a in timed for p in a.phases), IDLE])
              if any(_us(a, p) for _, a in timed)]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.4 * len(timed) + 3.5), 4.6),
                           layout="constrained")
    labels = [label for label, _ in timed]
    up, down = [0.0] * len(timed), [0.0] * len(timed)
    for i, phase in enumerate(phases):
        heights = [_us(a, phase) for _, a in timed]
        bottoms = [u if h >= 0 else d for h, u, d in zip(heights, up, down, strict=True)]
        colour, hatch = _phase_style(i, phase)
        bars = ax.bar(labels, heights, bottom=bottoms, label=phase, color=colour, hatch=hatch,
                      edgecolor="white")
        for bar, h in zip(bars, heights, strict=True):
            if h < 0:  # say a negative row's value where it is drawn
                ax.annotate(f"{phase} {h:.0f}", (bar.get_x() + bar.get_width() / 2,
                                                 bar.get_y() + h / 2),
                            ha="center", va="center", fontsize=_SMALL)
        up = [u + max(h, 0) for u, h in zip(up, heights, strict=True)]
        down = [d + min(h, 0) for d, h in zip(down, heights, strict=True)]
    ax.axhline(0, color="black", linewidth=0.8)
    if any(d < 0 for d in down):  # a negative row: show where the rows add up to
        net = [u + d for u, d in zip(up, down, strict=True)]
        ax.scatter(labels, net, marker="D", color="black", zorder=4, label="sum of the rows")
    ax.set_ylim(min(min(down) * 1.15, 0), max(up) * 1.1 if max(up) > 0 else 1)
    ax.set_ylabel("µs per decode token (lower is better)", fontsize=_TEXT)
    ax.tick_params(labelsize=_SMALL)
    ax.legend(fontsize=_SMALL, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
    ax.set_title(_wrap(f"{what.sweep_name}: per-token time by phase (two-run profile delta)",
                       70), fontsize=_TEXT + 1)
    return fig


def _phase_style(index: int, phase: str) -> tuple[str, str | None]:
    """The colour and hatch of a phase's row: GPU idle grey, unclassified hatched, the phases
    in the palette and hatched on its second round, so no two rows look alike."""
    if phase == IDLE:
        return IDLE_COLOUR, None
    lap = index // len(PHASE_COLOURS)
    hatch = "//" if phase == "unclassified" else ".." if lap else None
    return PHASE_COLOURS[index % len(PHASE_COLOURS)], hatch


def _flagged(a: Attribution) -> bool:
    return a.timeline is not None and bool(a.timeline.flags)


def _us(a: Attribution, phase: str) -> float:
    """With a kernel trace, busy time by phase and the window's idle time, which stack up to
    the profiled wall; without one, kernel sums and the older unprofiled-wall difference."""
    t = a.timeline
    if phase == IDLE:
        if t is not None:  # a flagged window has no idle time to draw (its flags say why)
            return (t.idle_us or 0.0) if t.wall_usable else 0.0
        return a.idle.idle_us_per_token if a.idle else 0.0
    row = a.phase(phase)
    if row is None:
        return 0.0
    return (row.busy_us_per_token or 0.0) if t is not None else (row.us_per_token or 0.0)


def _wrap(text: str, width: int) -> str:
    """Wrapped at spaces and hyphens, never inside a word or a model name's part."""
    return textwrap.fill(text, width, break_long_words=False)


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=_DPI)
    plt.close(fig)
    return buffer.getvalue()
