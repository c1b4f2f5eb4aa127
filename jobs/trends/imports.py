"""Past results in the formats mlxcel users already have, read by the same parsers a sweep's
runs are read with: the CSV rows of `scripts/bench_mlxlm.py` and `mlxcel-bench-decode`
outputs. Each row or output is one run (n = 1) at the commit the user names."""

import csv
import io

from jobs.parsers import bench_decode, bench_mlxlm
from jobs.parsers.readings import BenchReading, RunOutput
from jobs.statistics.spans import Span
from jobs.strict import Strict
from jobs.trends.series import METRICS, Point

FORMATS = ("bench-mlxlm-csv", "bench-decode")


class Imported(Strict):
    """One imported file as the store keeps it: its text and the user's labels, so a rebuild
    parses it again with the parsers of the day."""

    format: str
    file: str
    text: str
    stderr: str = ""
    commit: str
    testbed: str | None = None
    model: str | None = None
    arm: str
    # The target repository whose first-parent history places `commit`.
    repo: str | None = None


def imported_points(item: Imported) -> tuple[list[Point], list[str]]:
    if item.format == "bench-decode":
        return _decode_points(item)
    return _csv_points(item)


def _csv_points(item: Imported) -> tuple[list[Point], list[str]]:
    rows = list(csv.reader(io.StringIO(item.text)))
    if not rows or tuple(rows[0][:len(bench_mlxlm.HEADER)]) != bench_mlxlm.HEADER:
        return [], [f"{item.file}: not a bench_mlxlm.py CSV (its header is not "
                    f"{','.join(bench_mlxlm.HEADER)})"]
    points, problems = [], []
    for number, row in enumerate(rows[1:], start=2):
        if not "".join(row).strip():
            continue
        one = io.StringIO()
        csv.writer(one, lineterminator="\n").writerows([rows[0], row])
        run = RunOutput(stdout="", stderr="", exit_code=0,
                        files={f"benchmarks/{item.file.rsplit('/', 1)[-1]}": one.getvalue()})
        reading = bench_mlxlm.parse(run)
        if not isinstance(reading, BenchReading):
            problems.append(f"{item.file} line {number}: not imported ({reading.reason})")
            continue
        labels = dict(zip(bench_mlxlm.HEADER, row, strict=False))
        points += _points(item, reading, item.testbed or labels["hardware"],
                          item.model or labels["model"], labels["date"], f"line {number}")
    return points, problems


def _decode_points(item: Imported) -> tuple[list[Point], list[str]]:
    if not item.testbed or not item.model:
        return [], [f"{item.file}: a bench-decode output names no testbed or model; import "
                    "it with --testbed and --model"]
    reading = bench_decode.parse(RunOutput(stdout=item.text, stderr=item.stderr, exit_code=0))
    if not isinstance(reading, BenchReading):
        return [], [f"{item.file}: not imported ({reading.reason})"]
    return _points(item, reading, item.testbed, item.model, "", "output"), []


def _points(item: Imported, reading: BenchReading, testbed: str, model: str, date: str,
            where: str) -> list[Point]:
    return [Point(testbed=testbed, model=model, arm=item.arm, metric=metric,
                  commit=item.commit, sweep_id=f"import:{item.file}:{where}", created=date,
                  span=Span(n=1, mean=value, min=value, max=value), flags=[],
                  check_ok=None, mlx_pin=None, source=f"import:{item.file}")
            for metric in METRICS if (value := getattr(reading, metric)) is not None]
