"""The plots read back as matplotlib objects: one y scale, the legend, the colours, the sizes."""

from pathlib import Path

import pytest
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.text import Text

from jobs.record.model import Record
from jobs.views.plots import (
    ARM_COLOURS,
    BASELINE_COLOUR,
    IDLE_COLOUR,
    LEGEND,
    LEGEND_AA,
    MIN_POINTS,
    metric_figure,
    phases_figure,
)
from tests.support.records import OLD, record

# A real record with four timed profiles: the H200 run 4, two commits, two models.
H200 = (Path(__file__).parents[3] / "docs" / "records" / "h200-moe-decode" / "run-4"
        / "h200-moe-decode-20261202-063530-8e13.json")


def two_commits() -> Record:
    return record({"gather@main": OLD["gather"], "fused@main": OLD["fused"],
                   "gather@v2": OLD["gather"], "fused@v2": [v * 0.7 for v in OLD["fused"]]},
                  commits="[main, v2]")


def h200() -> Record:
    return Record.model_validate_json(H200.read_bytes())


def panels(fig: Figure) -> list:  # type: ignore[type-arg]
    return [ax for ax in fig.axes if ax.axison]


def test_every_panel_shares_one_y_scale_from_zero() -> None:
    fig = metric_figure(two_commits(), "decode")
    assert fig is not None
    shown = panels(fig)
    assert len(shown) == 2
    assert {ax.get_ylim() for ax in shown} == {shown[0].get_ylim()}
    assert shown[0].get_ylim()[0] == 0 and shown[0].get_ylim()[1] >= max(OLD["fused"])
    assert shown[0].get_ylabel() == "decode tok/s (higher is better)"


def test_one_y_scale_across_backends_models_and_commits_of_a_real_record() -> None:
    r = h200()
    for metric in ("decode", "prefill"):
        fig = metric_figure(r, metric)
        assert fig is not None
        shown = panels(fig)
        assert len(shown) == len(r.groups) == 4
        assert len({g.commit for g in r.groups}) == 2 and len({g.model for g in r.groups}) == 2
        assert {ax.get_ylim() for ax in shown} == {shown[0].get_ylim()}
        top = max(getattr(row, f"{metric}_tps").max for g in r.groups for row in g.rows)
        assert shown[0].get_ylim()[0] == 0 and shown[0].get_ylim()[1] >= top


def test_the_legend_says_what_the_dot_whiskers_and_grey_points_are() -> None:
    fig = metric_figure(two_commits(), "prefill")
    assert fig is not None and len(fig.legends) == 1
    assert [t.get_text() for t in fig.legends[0].get_texts()] == list(LEGEND)
    with_aa = metric_figure(record({**OLD, "gather-aa": OLD["gather"]}, aa=True), "decode")
    assert with_aa is not None
    assert [t.get_text() for t in with_aa.legends[0].get_texts()] == [*LEGEND, LEGEND_AA]


def test_the_baseline_is_grey_and_the_arms_take_the_palette() -> None:
    fig = metric_figure(two_commits(), "decode")
    assert fig is not None
    ax = fig.axes[0]
    dots = [line for line in ax.get_lines() if line.get_marker() == "o"]
    colours = [to_hex(line.get_color()) for line in dots]
    assert colours == [BASELINE_COLOUR.lower(), ARM_COLOURS[0].lower()]


@pytest.mark.parametrize("draw", ["decode", "prefill", "phases"])
def test_no_text_is_smaller_than_nine_points(draw: str) -> None:
    fig = phases_figure(h200()) if draw == "phases" else metric_figure(h200(), draw)
    assert fig is not None
    fig.canvas.draw()  # tick labels exist once drawn
    texts = [t for t in fig.findobj(Text) if t.get_text().strip() and t.get_visible()]
    assert len(texts) > 20
    small = {t.get_text(): t.get_fontsize() for t in texts
             if float(t.get_fontsize()) < MIN_POINTS}
    assert small == {}
    assert MIN_POINTS >= 9


def test_the_phases_plot_says_lower_is_better_and_keeps_grey_for_idle_time() -> None:
    fig = phases_figure(h200())
    assert fig is not None
    [ax] = fig.axes
    assert ax.get_ylabel() == "µs per decode token (lower is better)"
    legend = ax.get_legend()
    assert legend is not None
    styles: dict[str, tuple[str, str | None]] = {
        t.get_text(): (to_hex(p.get_facecolor()), p.get_hatch())
        for t, p in zip(legend.get_texts(), legend.get_patches(), strict=True)}
    idle = [s for name, s in styles.items() if name.startswith("GPU idle")]
    assert idle == [(IDLE_COLOUR.lower(), None)]
    others = [s for name, s in styles.items() if not name.startswith("GPU idle")]
    assert len(others) >= 8 and len(set(others)) == len(others)  # no two phases alike
    assert all(colour != IDLE_COLOUR.lower() for colour, _ in others)


def _long_names(r: Record) -> Record:
    """Model and arm names long enough to wrap: two-line x labels, three-line panel titles."""
    groups = [g.model_copy(update={
        "model": f"{g.model}-instruct-with-a-rather-long-quantisation-suffix-q4",
        "rows": [row.model_copy(update={"arm": f"{row.arm} with fused experts"})
                 for row in g.rows]}) for g in r.groups]
    return r.model_copy(update={"groups": groups * 4})  # 16 groups: the first 12 drawn


def _six_digits() -> Record:
    return record({arm: [v * 2000 for v in values] for arm, values in
                   {"gather@main": OLD["gather"], "fused@main": OLD["fused"]}.items()})


def _two_panels_with_aa() -> Record:
    return record({"gather@main": OLD["gather"], "fused@main": OLD["fused"],
                   "gather-aa@main": OLD["gather"], "gather@v2": OLD["gather"],
                   "fused@v2": OLD["fused"], "gather-aa@v2": OLD["gather"]},
                  commits="[main, v2]", aa=True)


def _one_panel_long_arms() -> Record:
    r = _long_names(h200())
    arms = "-".join(["a-very-long-arm-name-with-many-parts"] * 8)
    return r.model_copy(update={"groups": [r.groups[0].model_copy(update={"rows": [
        row.model_copy(update={"arm": f"{row.arm}-{arms}"}) for row in r.groups[0].rows]})]})


@pytest.mark.parametrize("make", [h200, two_commits, lambda: _long_names(h200()), _six_digits,
                                  _two_panels_with_aa, _one_panel_long_arms])
def test_no_text_runs_into_another_or_off_the_figure(make) -> None:  # type: ignore[no-untyped-def]
    fig = metric_figure(make(), "decode")
    assert fig is not None
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    shown = panels(fig)
    texts = [fig.texts[0], *fig.legends[0].get_texts(), shown[0].yaxis.label,
             *(t for ax in shown for t in (ax.title, *ax.get_xticklabels(),
                                           *ax.get_yticklabels()) if t.get_text())]
    words = [t for ax in shown for t in ax.texts]  # "n=5" and its word, above each arm
    boxes = [t.get_window_extent(renderer) for t in texts]
    for word in words:  # inside its panel, clear of every other text
        box = word.get_window_extent(renderer)
        assert box.y1 <= word.axes.get_window_extent(renderer).y1, word.get_text()
        assert not any(box.overlaps(b) for b in boxes), word.get_text()
    whole = fig.bbox
    for text, box in zip(texts, boxes, strict=True):
        assert whole.x0 <= box.x0 and box.x1 <= whole.x1 and whole.y0 <= box.y0, text
        assert box.y1 <= whole.y1, text
    for i, (a, box_a) in enumerate(zip(texts, boxes, strict=True)):
        for b, box_b in zip(texts[i + 1:], boxes[i + 1:], strict=True):
            assert not box_a.overlaps(box_b), (a.get_text(), b.get_text())
    for ax in shown:  # nor into a panel's plotting area
        area = ax.get_window_extent(renderer)
        for text, box in zip(texts, boxes, strict=True):
            assert not box.overlaps(area), (text.get_text(), ax.get_title())
