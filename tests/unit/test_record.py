"""The record: statistics from attempt results, missing cells with reasons, and its views."""

import json

import pytest

from jobs.attempts import AttemptResult, CellState, HostFacts, Run
from jobs.cells import Cell, expand
from jobs.markdown import render
from jobs.plot import decode_png
from jobs.readings import BenchReading, Failure
from jobs.record import Record, build_record
from jobs.specfile import load
from jobs.stats import Ratio, Span, ratio_text, span_text
from jobs.sweep import Sweep
from tests.unit.conftest import SWEEP

HOST = HostFacts(hostname="gb10-a", os="Ubuntu 24.04", kernel="6.11", arch="aarch64",
                 cpu="Cortex-X925", chip="NVIDIA GB10 sm_121", cores=20, memory_gb=119.7,
                 gpu="NVIDIA GB10 sm_121", python="3.12.3")
SHA = "81ba1c6a" * 5


def result(cell: Cell, decode: float | None, load1: float = 0.2,
           failure: Failure | None = None) -> AttemptResult:
    run = Run(role="measure", argv=["bench", "-m", cell.model], env={}, cwd="/t", exit_code=0,
              timed_out=False, wall_s=3.0, started="2026-11-30T10:00:00+00:00",
              ended="2026-11-30T10:00:03+00:00", load1_before=load1, load1_after=load1 + 0.1,
              stdout="measure.stdout.txt", stderr="measure.stderr.txt")
    reading = (BenchReading(prompt_tokens=512, generated_tokens=128, prefill_tps=decode * 10,
                            decode_tps=decode, peak_gb=19.0) if decode else None)
    return AttemptResult(sweep_id="s1", cell_id=cell.id, attempt=1, worker="gb10-a", host=HOST,
                         requested_commit=cell.commit, commit=SHA, started=run.started,
                         ended=run.ended, runs=[run], reading=reading, failure=failure)


@pytest.fixture
def small() -> tuple[Sweep, list[Cell]]:
    text = SWEEP.replace("[main, v2]", "main").replace("  metal: {build: tinymoe-build}\n", "")
    sweep = load(Sweep, text.replace("[tinymoe-a3, tinymoe-b5]", "[tinymoe-a3]")
                 .replace("models: [tinymoe-b5]", "models: [tinymoe-a3]"), "s.yaml")[0]
    return sweep, expand(sweep)


def test_spans_ratios_and_overlap() -> None:
    base, arm = Span.of([10.0, 11.0, 12.0]), Span.of([20.0, 21.0, 25.0])
    assert base and arm and base.mean == 11.0 and arm.n == 3
    ratio = Ratio.of(arm, base)
    assert ratio and ratio.mean == pytest.approx(22 / 11) and ratio.low == pytest.approx(20 / 12)
    assert ratio.high == pytest.approx(25 / 10) and not ratio.no_effect
    assert ratio_text(ratio) == "+100.0% (+66.7% to +150.0%)"
    close = Span.of([11.5, 12.5])
    assert close and Ratio.of(close, base).no_effect  # type: ignore[union-attr]
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
    assert rows["long"].decode_vs_baseline.no_effect  # type: ignore[union-attr]
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
    assert "+0.0% (-8.7% to +9.5%), no effect" in text
    assert "None: every cell was measured." in text and "NVIDIA GB10 sm_121" in text
    assert Record.model_validate(json.loads(record.model_dump_json())) == record
    assert decode_png(record).startswith(b"\x89PNG")
