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
from jobs.parsers.timeline import (
    DecodeTimeline,
    Interval,
    per_token_wall_us,
    run_timeline,
    token_split,
    union_ns,
    waiting,
)
from tests.support.samples import SAMPLES, TOOLS
from workers.tools.cupti_kernsum import TRACE_COLUMNS, Launch, trace_rows

NSYS = TOOLS / "nsys"


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


class RecordedEvent:
    """A kineto event as the H200 printed it (tests/samples/h200_kineto_events.txt). torch 2.11
    has no activity_type(); the recorded device type stands for it here, since torch is not
    installed on this machine (cupti-kernsum reads the device type the same way there)."""

    def __init__(self, line: str) -> None:
        name, rest = line[1:].split("' DeviceType.", 1)
        fields = rest.split()
        self._name, self._cuda = name, fields[0] == "CUDA"
        self._values = dict(zip(fields[1::2], fields[2::2], strict=False))

    def name(self) -> str:
        return self._name

    def activity_type(self) -> str:
        return "kernel" if self._cuda else "cpu_op"

    def start_ns(self) -> int:
        return int(self._values["start_ns"])

    def duration_ns(self) -> int:
        return int(self._values["dur_ns"])

    def device_resource_id(self) -> int:
        return int(self._values["res"])

    def device_index(self) -> int:
        return int(self._values["dev"])

    def correlation_id(self) -> int:
        return int(self._values["corr"])


def test_real_h200_kineto_events_make_a_trace_with_two_overlapping_streams() -> None:
    from types import SimpleNamespace

    from workers.tools.cupti_kernsum import kernel_launches

    sample = SAMPLES / "h200_kineto_events.txt"
    lines = sample.read_text().splitlines()
    events = [RecordedEvent(x) for x in lines if x.startswith("'")]
    profiler = SimpleNamespace(profiler=SimpleNamespace(
        kineto_results=SimpleNamespace(events=lambda: events)))
    launches = kernel_launches(profiler, "kernel")
    assert len(launches) == 9 and {x.stream for x in launches} == {"13", "17"}
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([TRACE_COLUMNS, *trace_rows(launches)])
    run = run_timeline(intervals(out.getvalue()))
    # The device's own sum and union of the same events, printed beside them.
    stated = next(x for x in lines if x.startswith("kernel sum ns")).split()
    assert run.kernel_ns == int(stated[3]) and run.busy_ns == int(stated[6])
    assert run.streams == 2 and run.kernel_ns - run.busy_ns > 1_000_000  # the streams overlap
    assert sum(k.busy_ns for k in run.kernels.values()) == pytest.approx(run.busy_ns)


DECODER = """
import json, os, sys, time
tokens, log = int(sys.argv[1]), []
def kernel(name, n):
    start = time.monotonic_ns()
    sum(i * i for i in range(n))
    log.append({"name": name, "ns": time.monotonic_ns() - start, "start_ns": start})
kernel("prefill_gemm<float>", 20000)
began = time.perf_counter()
for _ in range(tokens):
    kernel("gather_qmv_kernel<float, 4>", 3000)
    kernel("rms_norm<float>", 500)
    sum(i * i for i in range(2000))  # the host's share of a token, outside every kernel
decode_ms = (time.perf_counter() - began) * 1000
if os.environ.get("STANDIN_KERNEL_LOG"):
    with open(os.environ["STANDIN_KERNEL_LOG"], "a") as f:
        f.write("".join(json.dumps(r) + "\\n" for r in log))
print("[Profile Results]\\n  Prompt tokens:    8\\n  Generated tokens: %d\\n"
      "  Prefill:          1.00 ms (8000.00 tok/s)\\n  Decode:           %.2f ms (%.2f tok/s)"
      % (tokens, decode_ms, tokens / decode_ms * 1000))
"""


def test_a_profile_with_its_traces_and_plain_runs_splits_the_token(tmp_path: Path) -> None:
    from jobs.parsers import nsys_delta
    from jobs.parsers.readings import ProfileInput, ProfileReading, RunOutput

    program = tmp_path / "decoder.py"
    program.write_text(DECODER)

    def run(*argv: str) -> RunOutput:
        done = subprocess.run([sys.executable, *argv], capture_output=True, text=True,
                              timeout=60)
        return RunOutput(stdout=done.stdout, stderr=done.stderr, exit_code=done.returncode)

    steps = {}
    for name, tokens in (("long", "60"), ("short", "20")):
        report = str(tmp_path / name)
        steps[name] = run(str(NSYS), "profile", "-t", "cuda", "-o", report, sys.executable,
                          str(program), tokens)
        steps[f"{name}-stats"] = run(str(NSYS), "stats", "--report", "cuda_gpu_kern_sum",
                                     "--format", "csv", f"{report}.nsys-rep")
        steps[f"{name}-trace"] = run(str(NSYS), "stats", "--report", "cuda_gpu_trace",
                                     "--format", "csv", "--output", report, f"{report}.nsys-rep")
        steps[f"plain-{name}"] = run(str(program), tokens)
    files = {p.name: p.read_text() for p in tmp_path.glob("*_cuda_gpu_trace.csv")}
    reading = nsys_delta.parse(ProfileInput(steps=steps, files=files))
    assert isinstance(reading, ProfileReading) and reading.timeline is not None, reading
    t = reading.timeline
    assert (t.short_tokens, t.long_tokens) == (20, 60) and t.split.streams == 1
    kernels = sum(k.us_per_token or 0.0 for k in reading.kernels)
    # One stream, back to back: busy is the kernel sum of the per-token kernels, and the host's
    # share of every token (the loop, the log) is idle time inside the profiled wall.
    assert t.split.busy_us == pytest.approx(kernels) and t.split.overlap_us == pytest.approx(0)
    assert t.profiled_wall_us is not None and t.idle_us is not None and t.idle_us > 0
    assert t.unprofiled_wall_us is not None and t.overhead is not None and t.overhead > 0
    missing = nsys_delta.parse(ProfileInput(steps={k: v for k, v in steps.items()
                                                   if not k.startswith("plain")}, files=files))
    assert isinstance(missing, ProfileReading) and missing.timeline is not None
    assert missing.timeline.overhead is None
    assert any("profiler's overhead is not known" in n for n in missing.notes)
    untraced = nsys_delta.parse(ProfileInput(steps=steps))
    assert isinstance(untraced, ProfileReading) and untraced.timeline is None
    assert any("no kernel trace" in n for n in untraced.notes)
