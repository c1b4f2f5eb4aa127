"""The tok/s figures read back as matplotlib objects: one y scale, the legend, the colours."""

from matplotlib.colors import to_hex

from jobs.views.plots import ARM_COLOURS, BASELINE_COLOUR, LEGEND, metric_figure
from tests.support.records import OLD, record


def two_commits():  # type: ignore[no-untyped-def]
    return record({"gather@main": OLD["gather"], "fused@main": OLD["fused"],
                   "gather@v2": OLD["gather"], "fused@v2": [v * 0.7 for v in OLD["fused"]]},
                  commits="[main, v2]")


def test_every_panel_shares_one_y_scale_from_zero() -> None:
    fig = metric_figure(two_commits(), "decode")
    assert fig is not None
    panels = [ax for ax in fig.axes if ax.axison]
    assert len(panels) == 2
    assert {ax.get_ylim() for ax in panels} == {panels[0].get_ylim()}
    assert panels[0].get_ylim()[0] == 0 and panels[0].get_ylim()[1] >= max(OLD["fused"])
    assert panels[0].get_ylabel() == "decode tok/s (higher is better)"


def test_the_legend_says_what_the_dot_whiskers_and_grey_points_are() -> None:
    fig = metric_figure(two_commits(), "prefill")
    assert fig is not None and len(fig.legends) == 1
    assert [t.get_text() for t in fig.legends[0].get_texts()] == list(LEGEND)


def test_the_baseline_is_grey_and_the_arms_take_the_palette() -> None:
    fig = metric_figure(two_commits(), "decode")
    assert fig is not None
    ax = fig.axes[0]
    dots = [line for line in ax.get_lines() if line.get_marker() == "o"]
    colours = [to_hex(line.get_color()) for line in dots]
    assert colours == [BASELINE_COLOUR.lower(), ARM_COLOURS[0].lower()]
