"""Busy and idle from a kernel timeline: the union, the even shares, the two-run difference,
and the trace layout read back from what cupti-kernsum and the nsys stand-in write."""

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.parsers.gpu_trace import BadTrace, intervals
from jobs.timeline import (
    DecodeTimeline,
    Interval,
    per_token_wall_us,
    run_timeline,
    token_split,
    union_ns,
    waiting,
)
from workers.tools.cupti_kernsum import TRACE_COLUMNS, Launch, trace_rows

NSYS = Path(__file__).parents[1] / "tools" / "nsys"


def iv(start: int, length: int, name: str, stream: str = "7") -> Interval:
    return Interval(start_ns=start, duration_ns=length, stream=stream, name=name)


def test_union_merges_overlaps_and_keeps_gaps() -> None:
    assert union_ns([]) == 0
    assert union_ns([iv(0, 10, "a"), iv(5, 10, "b"), iv(30, 5, "c")]) == 15 + 5
    assert union_ns([iv(0, 100, "wait"), iv(10, 5, "x"), iv(50, 5, "y")]) == 100
    assert union_ns([iv(0, 10, "a"), iv(10, 10, "b")]) == 20  # touching, not overlapping


def test_busy_is_shared_evenly_and_adds_up_to_the_union() -> None:
    # A 100 ns kernel that waits while two short ones run beside it on another stream.
    run = run_timeline([iv(0, 100, "wait", "1"), iv(10, 20, "x", "2"), iv(60, 20, "y", "2")])
    assert run.busy_ns == 100 and run.kernel_ns == 140 and run.streams == 2
    assert run.kernels["x"].busy_ns == pytest.approx(10.0)  # half of its 20 ns
    assert run.kernels["wait"].busy_ns == pytest.approx(80.0)  # 60 alone + 2 x 10 shared
    assert sum(k.busy_ns for k in run.kernels.values()) == pytest.approx(run.busy_ns)
    assert run.kernels["wait"].overlap_ns == 40 and run.kernels["x"].overlap_ns == 20


def test_back_to_back_kernels_never_overlap() -> None:
    run = run_timeline([iv(0, 10, "a"), iv(10, 10, "b"), iv(20, 10, "a")])
    assert run.busy_ns == run.kernel_ns == 30
    assert all(k.overlap_ns == 0 for k in run.kernels.values())


def test_per_token_split_is_the_long_run_minus_the_short() -> None:
    def tokens(n: int) -> list[Interval]:
        load = [iv(0, 1000, "load")]  # the same in both runs: cancels
        step = [k for t in range(n) for k in (iv(2000 + 100 * t, 50, "wait", "1"),
                                               iv(2010 + 100 * t, 20, "mm", "2"))]
        return load + step

    split = token_split(run_timeline(tokens(30)), run_timeline(tokens(10)), 20)
    assert split.busy_us == pytest.approx(0.050) and split.kernel_us == pytest.approx(0.070)
    assert split.overlap_us == pytest.approx(0.020)
    assert [k.name for k in waiting(split)] == ["mm"]  # all of its time beside "wait"
    kernels = {k.name: k for k in split.kernels}
    assert kernels["load"].kernel_us == 0 and kernels["mm"].busy_us == pytest.approx(0.010)


def test_idle_and_overhead_are_of_the_same_tokens() -> None:
    split = token_split(run_timeline([iv(0, 3000, "k")]), run_timeline([iv(0, 1000, "k")]), 1)
    t = DecodeTimeline(short_tokens=10, long_tokens=11, split=split,
                       profiled_wall_us=per_token_wall_us(12.5, 7.5, 1),
                       unprofiled_wall_us=2500.0)
    assert t.profiled_wall_us == pytest.approx(5000.0) and split.busy_us == pytest.approx(2.0)
    assert t.idle_us == pytest.approx(4998.0) and t.overhead == pytest.approx(2.0)
    assert DecodeTimeline(short_tokens=1, long_tokens=2, split=split).idle_us is None


def test_trace_layout_reads_back_and_leaves_copies_out() -> None:
    rows = trace_rows([Launch("void k<int, 4>(int const*)", 500, 30, "7", "0", "11"),
                       Launch("b", 100, 20, "13", "0", "10")])
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerows([TRACE_COLUMNS, *rows, ["900", "5", "12", *[""] * 13, "0", "", "", "7",
                                             "[CUDA memcpy DtoH]"]])
    found = intervals("Processing [x.sqlite] with [cuda_gpu_trace.py]...\n" + out.getvalue())
    assert found == [iv(100, 20, "b", "13"), iv(500, 30, "void k<int, 4>(int const*)", "7")]
    assert intervals(",".join(TRACE_COLUMNS) + "\n") == []
    with pytest.raises(BadTrace, match="no cuda_gpu_trace CSV header"):
        intervals("Time (%),Total Time (ns),Name\n")
    with pytest.raises(BadTrace, match="not a whole number"):
        intervals("Start (ns),Duration (ns),Strm,Name\nx,1,7,k\n")


def test_nsys_standin_writes_the_trace_from_the_kernel_log(tmp_path: Path) -> None:
    log = tmp_path / "long.nsys-rep"
    log.write_text("".join(json.dumps(r) + "\n" for r in [
        {"name": "b", "ns": 5, "start_ns": 40, "pid": 3},
        {"name": "a, with comma", "ns": 10, "start_ns": 0, "pid": 3}]))
    done = subprocess.run([sys.executable, str(NSYS), "stats", "--report", "cuda_gpu_trace",
                           "--format", "csv", "--force-export=true", "--output",
                           str(tmp_path / "long"), str(log)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "long_cuda_gpu_trace.csv").read_text()
    assert text.splitlines()[0] == ",".join(TRACE_COLUMNS)
    assert intervals(text) == [iv(0, 10, "a, with comma", "3"), iv(40, 5, "b", "3")]
    log.write_text(json.dumps({"name": "a", "ns": 10}) + "\n")  # no start times
    done = subprocess.run([sys.executable, str(NSYS), "stats", "--report", "cuda_gpu_trace",
                           "--format", "csv", "--output", str(tmp_path / "s"), str(log)],
                          capture_output=True, text=True)
    assert done.returncode == 0 and "without start_ns" in done.stderr
    assert intervals((tmp_path / "s_cuda_gpu_trace.csv").read_text()) == []
