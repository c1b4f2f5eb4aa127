"""The record: statistics from attempt results, missing cells with reasons, and its views."""

import json

import pytest

from jobs.parsers.readings import Failure
from jobs.record.attempts import CellState
from jobs.record.model import Record, build_record
from jobs.spec.cells import Cell
from jobs.spec.sweep import Sweep
from jobs.statistics.spans import Ratio, Span, ratio_text, span_text
from jobs.strict import dumped
from jobs.views.markdown import render
from jobs.views.plots import decode_png, phases_png, prefill_png
from tests.support.records import (
    FASTER,
    SHA,
    adaptive_record,
    result,
)


def test_spans_ratios_and_overlap() -> None:
    base, arm = Span.of([10.0, 11.0, 12.0]), Span.of([20.0, 21.0, 25.0])
    assert base and arm and base.mean == 11.0 and arm.n == 3
    ratio = Ratio.of(arm, base)
    assert ratio and ratio.mean == pytest.approx(22 / 11) and ratio.low == pytest.approx(20 / 12)
    assert ratio.high == pytest.approx(25 / 10) and not ratio.ranges_overlap
    assert ratio_text(ratio) == "+100.0% (+66.7% to +150.0%)"
    close = Span.of([11.5, 12.5])
    assert close and Ratio.of(close, base).ranges_overlap  # type: ignore[union-attr]
    assert span_text(Span.of([3.0])) == "3.00 (n = 1)"
    assert Span.of([]) is None


def test_record_rows_are_recomputed_from_results(small: tuple[Sweep, list[Cell]]) -> None:
    sweep, cells = small
    decode = {"gather": [20.0, 22.0, 21.0], "fused": [30.0, 33.0, 36.0], "long": [19.0, 23.0, 21]}
    seen: dict[str, int] = {}
    results = {}
    for cell in cells:
        i = seen.setdefault(cell.arm, 0)
        seen[cell.arm] += 1
        results[cell.id] = result(cell, decode[cell.arm][i])
    states = {c.id: CellState(status="done", attempt=1) for c in cells}
    record = build_record("s1", sweep, cells, states, results, {}, "2026-11-30T12:00:00+00:00")
    [group] = record.groups
    rows = {r.arm: r for r in group.rows}
    assert rows["gather"].baseline and rows["gather"].decode_vs_baseline is None
    assert rows["fused"].decode_tps == Span(n=3, mean=33.0, min=30.0, max=36.0)
    assert rows["fused"].decode_vs_baseline.mean == pytest.approx(33 / 21)  # type: ignore[union-attr]
    assert rows["long"].decode_vs_baseline.ranges_overlap  # type: ignore[union-attr]
    assert rows["fused"].load1 == Span(n=6, mean=0.25, min=0.2, max=0.30000000000000004)
    assert record.commits == {"main": [SHA]} and record.cells_measured == 9
    assert len(group.measurements) == 9 and not record.missing


def test_failed_running_and_unreadable_cells_are_listed(small: tuple[Sweep, list[Cell]]) -> None:
    sweep, cells = small
    failed, running, corrupt, *rest = cells
    results = {c.id: result(c, 20.0 + i) for i, c in enumerate(rest)}
    results[failed.id] = result(failed, None, failure=Failure(kind="oom", reason="killed (137)"))
    states = {c.id: CellState(status="done", attempt=1) for c in rest}
    states[failed.id] = CellState(status="failed", reason="killed (137)")
    states[running.id] = CellState(status="running", worker="gb10-a")
    states[corrupt.id] = CellState(status="done")
    record = build_record("s1", sweep, cells, states, results,
                          {corrupt.id: "manifest unreadable"}, "now")
    reasons = {m.cell_id: (m.status, m.reason) for m in record.missing}
    assert reasons == {failed.id: ("failed", "killed (137)"),
                       running.id: ("running", "still running when the record was made"),
                       corrupt.id: ("done", "artifacts unreadable: manifest unreadable")}
    row = next(r for r in record.groups[0].rows if r.arm == failed.arm)
    assert (row.n, row.expected) == (2, 3)


def test_views_show_the_model_without_recomputing(small: tuple[Sweep, list[Cell]]) -> None:
    sweep, cells = small
    results = {c.id: result(c, 20.0 + c.repeat) for c in cells}
    states = {c.id: CellState(status="done", attempt=1) for c in cells}
    record = build_record("s1", sweep, cells, states, results, {}, "now")
    text = render(record, {"decode": "plot.png"})
    assert "| gather (baseline) | 3 | 512 | 22.00 (21.00 to 23.00) | – |" in text
    assert "+0.0% (-8.7% to +9.5%), **~**" in text
    assert "None: every cell was measured." in text and "NVIDIA GB10 sm_121" in text
    assert Record.model_validate(json.loads(record.model_dump_json())) == record
    assert decode_png(record).startswith(b"\x89PNG")


def test_adaptive_repeats_settle_what_three_could_not(small: tuple[Sweep, list[Cell]]) -> None:
    from jobs.record.check import check_record

    record = adaptive_record(FASTER)
    [group] = record.groups
    rows = {r.arm: r for r in group.rows}
    fused = rows["fused"].decode_comparison
    assert fused and fused.answer == "differs" and (fused.n, fused.n_baseline) == (4, 4)
    assert rows["long"].decode_comparison.answer == "overlap"  # type: ignore[union-attr]
    assert group.repeats and group.repeats.needed == [4] and group.repeats.stopped == "decided"
    assert len(record.skipped) == 6 and {s.repeat for s in record.skipped} == {5, 6}
    assert record.cells_measured == 12 and not record.missing
    assert check_record(record) == []
    text = render(record)
    assert "Adaptive repeats: 4 of up to 6 per arm (decided)" in text
    assert "## Adaptive repeats not needed" in text
    # Without adaptive repeats the same first three repeats stay undecided: not yet known.
    plain = build_record("s1", *small, {c.id: CellState(status="done") for c in small[1]},
                         {c.id: result(c, FASTER[c.arm][c.repeat - 1]) for c in small[1]},
                         {}, "now")
    c = plain.groups[0].rows[1].decode_comparison
    assert c and c.answer == "undecided" and "no adaptive repeats" in c.reason
    assert c.word == "not yet known"


def test_the_cap_is_said_when_it_stopped_the_repeats() -> None:
    slow_to_tell = {"gather": [20.0, 20.5, 21.0, 20.2, 20.7, 20.9],
                    "gather-aa": [19.0, 21.5, 20.0, 22.0, 19.5, 20.4],
                    "fused": [21.6, 21.8, 22.0, 21.7, 21.9, 21.65],
                    "long": [20.1, 20.6, 20.9, 20.3, 20.8, 20.4]}
    record = adaptive_record(slow_to_tell, "adaptive: {max_n: 6}\naa: true\n")
    rows = {r.arm: r for r in record.groups[0].rows}
    c = rows["fused"].decode_comparison
    assert c and c.capped and c.answer == "undecided" and c.noise_floor
    assert c.word == "not significant"
    assert "within the A/A noise floor" in c.reason
    assert "the cap (max_n = 6) stopped the repeats" in c.reason
    assert rows["gather-aa"].aa and rows["gather-aa"].decode_comparison.noise_floor is None  # type: ignore[union-attr]
    assert not record.skipped


def test_raw_data_beside_the_record(small: tuple[Sweep, list[Cell]]) -> None:
    import csv
    import io

    from jobs.record.rawdata import files

    sweep, cells = small
    results = {c.id: result(c, 20.0 + c.repeat) for c in cells}
    record = build_record("s1", sweep, cells, {c.id: CellState(status="done") for c in cells},
                          results, {}, "now")
    data = files(record)
    assert sorted(data) == ["comparisons.csv", "measurements.csv", "measurements.json"]
    rows = list(csv.DictReader(io.StringIO(data["measurements.csv"])))
    assert len(rows) == 9 and float(rows[0]["decode_tok_s"]) == 21.0
    assert rows[0]["prefill_ms"] == str(51200 / 21.0) and rows[0]["host_idle"] == "True"
    assert len(json.loads(data["measurements.json"])) == 9
    assert len(list(csv.DictReader(io.StringIO(data["comparisons.csv"])))) == 4


def test_raw_data_comes_in_pieces_as_it_is_written(small: tuple[Sweep, list[Cell]]) -> None:
    from jobs.record.rawdata import parts

    sweep, cells = small
    results = {c.id: result(c, 20.0 + c.repeat) for c in cells}
    record = build_record("s1", sweep, cells, {c.id: CellState(status="done") for c in cells},
                          results, {}, "now")
    pieces = list(parts(record)["measurements.json"])
    assert len(pieces) == 10  # one a measurement, and the closing bracket: never one string
    assert json.loads("".join(pieces)) == [
        {"backend": g.backend, "model": g.model, "requested_commit": g.commit,
         **dumped(m, mode="json")} for g in record.groups for m in g.measurements]


def test_nothing_measured_makes_no_plot(small: tuple[Sweep, list[Cell]]) -> None:
    sweep, cells = small
    record = build_record("s1", sweep, cells, {}, {}, {}, "now")
    assert decode_png(record) is None and prefill_png(record) is None
    assert phases_png(record) is None
    assert "No plot: nothing was measured." in render(record, {})


def test_opening_paragraph_names_what_a_reader_needs(small: tuple[Sweep, list[Cell]]) -> None:
    sweep, cells = small
    sweep = sweep.model_copy(update={"issue": 1859})
    results = {}
    for c in cells:
        r = result(c, 20.0 + c.repeat)
        results[c.id] = r.model_copy(update={"target": {
            "mlx_pin": "81ba1c6a" * 5, "toolchain": "rustc 1.83.0; cargo 1.83.0; nvcc release "
            "12.6; Python 3.12.3", "jit_cache": "present (~/.cache/mlxcel/cuda-ptx/81ba1c6a)"}})
    record = build_record("s1", sweep, cells, {c.id: CellState(status="done") for c in cells},
                          results, {}, "now")
    opening = render(record, {}, "data/s1").split("\n\n")[1]
    assert opening.startswith("Issue #1859. Sweep `s1`")
    for fact in ("gb10-a (NVIDIA GB10 sm_121, Ubuntu 24.04)", "MLX pin `81ba1c6a`",
                 "Toolchain: gb10-a: rustc 1.83.0; cargo 1.83.0; nvcc release 12.6",
                 "Cache state:", "JIT cache before the runs: present", "`gather`: "
                 "`MLXCEL_FUSED_MOE=0`", "Raw data: [`data/s1/`](data/s1/)"):
        assert fact in opening
    assert "| prefill ms mean (min to max) |" in render(record)
