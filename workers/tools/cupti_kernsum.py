"""cupti-kernsum: run a Python CUDA program inside this process under CUPTI (PyTorch's profiler)
and write its kernel sums in the layout of `nsys stats --report cuda_gpu_kern_sum --format csv`.

    python -m workers.tools.cupti_kernsum --csv OUT.csv [--trace TRACE.csv]
        [--activity cuda|cpu] -- CMD ARGS...

`--trace` also writes every launch in the layout of `nsys stats --report cuda_gpu_trace
--format csv` (start, duration, stream and name filled in; the columns CUPTI's kineto view
does not give are left empty), so busy time can be read from the timeline.

It is for machines without Nsight Systems. torch.profiler sees only its own process, so CMD must
be a Python program this interpreter can run: `python script.py`, `python -m module`,
`python -c CODE`, a script whose `#!` line names Python, or a zip application. The program's
own output and exit status pass through unchanged; the wrapper speaks only on stderr.
`--activity cpu` summarises PyTorch's CPU operators instead of kernels: it exists to check the
wrapper where no GPU is present and is not a kernel profile."""

from __future__ import annotations

import argparse
import csv
import os
import runpy
import shutil
import statistics
import sys
import traceback
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# nsys's cuda_gpu_kern_sum columns, in its order.
COLUMNS = ["Time (%)", "Total Time (ns)", "Instances", "Avg (ns)", "Med (ns)", "Min (ns)",
           "Max (ns)", "StdDev (ns)", "Name"]
# nsys's cuda_gpu_trace columns (Nsight Systems 2024+), in its order.
TRACE_COLUMNS = ["Start (ns)", "Duration (ns)", "CorrId", "GrdX", "GrdY", "GrdZ", "BlkX", "BlkY",
                 "BlkZ", "Reg/Trd", "StcSMem (MB)", "DymSMem (MB)", "Bytes (MB)",
                 "Throughput (MB/s)", "SrcMemKd", "DstMemKd", "Device", "Ctx", "GreenCtx",
                 "Strm", "Name"]
# Which profiler events each activity summarises (kineto's activity types).
EVENT_KINDS = {"cuda": "kernel", "cpu": "cpu_op"}
USAGE_EXIT = 2


class WrapError(Exception):
    """The wrapper cannot run what it was given; one sentence for the user."""


@dataclass(frozen=True)
class Program:
    """How to start the wrapped program in this process, as `python ...` would."""

    argv: list[str]
    path0: str  # what Python puts first on sys.path: the script's folder, or "" (the cwd)
    start: Callable[[], object]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        options().print_usage(sys.stderr)
        print("cupti-kernsum: give the command to profile after --", file=sys.stderr)
        return USAGE_EXIT
    split = argv.index("--")
    args = options().parse_args(argv[:split])
    try:
        program = resolve(argv[split + 1:])
        profiler = start_profiler(args.activity)
    except WrapError as e:
        print(f"cupti-kernsum: {e}", file=sys.stderr)
        return USAGE_EXIT
    code = 1
    try:
        code = run_program(program)
    finally:
        profiler.stop()
        launches = kernel_launches(profiler, EVENT_KINDS[args.activity])
        durations = by_name(launches)
        write_csv(args.csv, summarise(durations))
        if args.trace is not None:
            write_csv(args.trace, trace_rows(launches), TRACE_COLUMNS)
        if not durations:
            print(f"cupti-kernsum: no {EVENT_KINDS[args.activity]} events were recorded; "
                  f"{args.csv} has the header only", file=sys.stderr)
    return code


def options() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cupti-kernsum", description=__doc__.split("\n\n")[0])
    p.add_argument("--csv", type=Path, required=True, help="where to write the kernel sums")
    p.add_argument("--trace", type=Path, help="where to write every launch (cuda_gpu_trace)")
    p.add_argument("--activity", choices=sorted(EVENT_KINDS), default="cuda",
                   help="cuda: GPU kernels (default); cpu: PyTorch CPU operators, for tests")
    p.usage = ("cupti-kernsum --csv OUT.csv [--trace TRACE.csv] [--activity cuda|cpu] -- "
               "CMD ARGS...")
    return p


def resolve(command: list[str]) -> Program:
    """Find how to run `command` in-process, or say why it cannot be."""
    first, rest = command[0], command[1:]
    if Path(first).name.startswith("python"):
        return _interpreter_command(first, rest)
    path = Path(first) if os.sep in first else Path(shutil.which(first) or first)
    if not path.is_file():
        raise WrapError(f"{first} was not found")
    if zipfile.is_zipfile(path) or _python_script(path):
        _note_interpreter(path)
        return Program([str(path), *rest], str(path.parent),
                       lambda: runpy.run_path(str(path), run_name="__main__"))
    raise WrapError(f"{path} is not a Python program (no python #! line, not a zip "
                    "application); torch.profiler sees only its own process, so a native "
                    "binary cannot be profiled this way: use nsys where it is installed")


def _interpreter_command(python: str, rest: list[str]) -> Program:
    if not rest:
        raise WrapError(f"{python} needs a script, -m MODULE or -c CODE to run")
    if rest[0] == "-m" and len(rest) > 1:
        module = rest[1]
        return Program([module, *rest[2:]], "",
                       lambda: runpy.run_module(module, run_name="__main__", alter_sys=True))
    if rest[0] == "-c" and len(rest) > 1:
        code = rest[1]
        return Program(["-c", *rest[2:]], "",
                       lambda: exec(compile(code, "<string>", "exec"), {"__name__": "__main__"}))
    script = Path(rest[0])
    if not script.is_file():
        raise WrapError(f"{script} was not found")
    return Program([str(script), *rest[1:]], str(script.parent),
                   lambda: runpy.run_path(str(script), run_name="__main__"))


def _python_script(path: Path) -> bool:
    with path.open("rb") as f:
        first_line = f.readline(256)
    return path.suffix == ".py" or (first_line.startswith(b"#!") and b"python" in first_line)


def _note_interpreter(path: Path) -> None:
    with path.open("rb") as f:
        first_line = f.readline(512).decode(errors="replace").strip()
    named = first_line[2:].strip() if first_line.startswith("#!") else ""
    if named and Path(named.split()[0]).resolve() != Path(sys.executable).resolve():
        print(f"cupti-kernsum: {path} names {named}; running it in {sys.executable}, which "
              "must import what the program imports", file=sys.stderr)


def start_profiler(activity: str) -> Any:
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile
    except ImportError:
        raise WrapError(f"{sys.executable} cannot import torch; the wrapper records through "
                        "torch.profiler (CUPTI)") from None
    if activity == "cuda" and not torch.cuda.is_available():
        raise WrapError("torch sees no CUDA device (torch.cuda.is_available() is False); "
                        "nothing can be profiled here (--activity cpu checks the wrapper alone)")
    kind = ProfilerActivity.CUDA if activity == "cuda" else ProfilerActivity.CPU
    profiler = profile(activities=[kind])
    profiler.start()
    return profiler


def run_program(program: Program) -> int:
    """Runs the program as `python PROGRAM ARGS` would, returning its exit status."""
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = program.argv
    sys.path.insert(0, program.path0)
    try:
        program.start()
        return 0
    except SystemExit as e:
        return _exit_status(e.code)
    except BaseException:
        traceback.print_exc()
        return 1
    finally:
        sys.stdout.flush()
        sys.argv, sys.path[:] = saved_argv, saved_path


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


@dataclass(frozen=True)
class Launch:
    name: str
    start_ns: int
    duration_ns: int
    stream: str
    device: str
    correlation: str


def kernel_launches(profiler: Any, kind: str) -> list[Launch]:
    """Every profiler event of `kind`, from kineto's own records, which keep CUPTI's
    nanoseconds (the FunctionEvent view rounds to microseconds); for a kernel, kineto's
    resource id is its stream."""
    events = profiler.profiler.kineto_results.events()
    return [Launch(name=e.name(), start_ns=_start_ns(e), duration_ns=int(e.duration_ns()),
                   stream=str(_call(e, "device_resource_id", "")),
                   device=str(_call(e, "device_index", "")),
                   correlation=str(_call(e, "correlation_id", "")))
            for e in events if _kind(e) == kind]


def _start_ns(event: Any) -> int:
    if hasattr(event, "start_ns"):
        return int(event.start_ns())
    return int(event.start_us() * 1000)


def _call(event: Any, method: str, default: object) -> object:
    return getattr(event, method)() if hasattr(event, method) else default


def by_name(launches: Iterable[Launch]) -> dict[str, list[int]]:
    durations: dict[str, list[int]] = {}
    for launch in launches:
        durations.setdefault(launch.name, []).append(launch.duration_ns)
    return durations


def trace_rows(launches: Iterable[Launch]) -> list[list[str]]:
    """Rows in cuda_gpu_trace's layout, in start order."""
    unknown = [""] * 13  # grid, block, registers, shared memory, bytes, throughput, copy kinds
    return [[str(x.start_ns), str(x.duration_ns), x.correlation, *unknown, x.device, "", "",
             x.stream, x.name] for x in sorted(launches, key=lambda x: (x.start_ns, x.name))]


def _kind(event: Any) -> Any:
    """kineto's activity type: read where torch offers it (newer releases); else from the
    device (torch 2.11, as on the lent H200, has no activity_type()): an event on the GPU is a
    kernel unless it is a copy or a fill, which nsys's kernel summary leaves out too."""
    if hasattr(event, "activity_type"):
        return event.activity_type()
    from torch._C._autograd import DeviceType

    if event.device_type() == DeviceType.CUDA:
        name = event.name()
        return "gpu_memcpy" if name.startswith(("Memcpy", "Memset")) else "kernel"
    return "cpu_op"


def summarise(durations: dict[str, list[int]]) -> list[list[str]]:
    """Rows in cuda_gpu_kern_sum's layout, slowest total first."""
    grand = sum(sum(v) for v in durations.values()) or 1
    rows = []
    for name, ns in sorted(durations.items(), key=lambda item: (-sum(item[1]), item[0])):
        total = sum(ns)
        spread = statistics.stdev(ns) if len(ns) > 1 else 0.0
        rows.append([f"{100 * total / grand:.1f}", str(total), str(len(ns)),
                     f"{total / len(ns):.1f}", f"{statistics.median(ns):.1f}", str(min(ns)),
                     str(max(ns)), f"{spread:.1f}", name])
    return rows


def write_csv(path: Path, rows: Iterable[list[str]], columns: list[str] = COLUMNS) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)


if __name__ == "__main__":
    sys.exit(main())
