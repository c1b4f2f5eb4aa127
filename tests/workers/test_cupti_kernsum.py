"""cupti-kernsum's pieces that need no profiler: the nsys cuda_gpu_kern_sum layout it writes, and
how it decides what it can run in-process."""

import csv
import statistics
import zipapp
from pathlib import Path

import pytest

from workers.tools.cupti_kernsum import COLUMNS, WrapError, main, resolve, summarise, write_csv

GATHER = "void mlx::core::cu::gather_qmv_kernel<__nv_bfloat16, 32, 4, true>(const uint32_t *, int)"


def test_rows_follow_cuda_gpu_kern_sum(tmp_path: Path) -> None:
    durations = {GATHER: [3000, 1000, 2000, 6000], "copy_g_nd": [500, 700], "arange": [90]}
    rows = summarise(durations)
    assert [r[8] for r in rows] == [GATHER, "copy_g_nd", "arange"]  # slowest total first
    time_pct, total, count, avg, med, low, high, std, _ = rows[0]
    assert (total, count, low, high) == ("12000", "4", "1000", "6000")
    assert (avg, med) == ("3000.0", "2500.0")
    assert std == f"{statistics.stdev([3000, 1000, 2000, 6000]):.1f}"
    assert time_pct == f"{100 * 12000 / 13290:.1f}"
    assert rows[2][7] == "0.0"  # one instance: no spread
    write_csv(tmp_path / "k.csv", rows)
    with (tmp_path / "k.csv").open(newline="") as f:
        read = list(csv.reader(f))
    assert read[0] == COLUMNS
    assert read[1][8] == GATHER  # a name with commas survives as one quoted field
    assert (tmp_path / "k.csv").read_text().splitlines()[0] == ",".join(COLUMNS)


def test_no_events_is_a_header_only_table(tmp_path: Path) -> None:
    write_csv(tmp_path / "k.csv", summarise({}))
    assert (tmp_path / "k.csv").read_text() == ",".join(COLUMNS) + "\n"


def test_python_programs_resolve_in_every_form(tmp_path: Path) -> None:
    script = tmp_path / "bench"
    script.write_text("#!/usr/bin/env python3\nprint('hi')\n")
    assert resolve([str(script), "-n", "3"]).argv == [str(script), "-n", "3"]
    assert resolve(["python3", "-m", "json.tool", "x"]).argv == ["json.tool", "x"]
    assert resolve(["python", "-c", "pass", "a"]).argv == ["-c", "a"]
    app = tmp_path / "app"
    (app / "src").mkdir(parents=True)
    (app / "src" / "__main__.py").write_text("print('zip')\n")
    zipapp.create_archive(app / "src", app / "prog.pyz")  # no #! line: found by its zip
    assert resolve([str(app / "prog.pyz")]).path0 == str(app)


@pytest.mark.parametrize(("command", "says"), [
    (["/bin/true"], "is not a Python program"),
    (["no-such-program-anywhere"], "was not found"),
    (["python3"], "needs a script, -m MODULE or -c CODE"),
    (["python3", "missing.py"], "missing.py was not found"),
])
def test_what_cannot_run_in_process_is_refused_in_one_sentence(command: list[str],
                                                                says: str) -> None:
    with pytest.raises(WrapError, match=says):
        resolve(command)


def test_the_command_comes_after_a_double_dash(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--csv", "k.csv", "python3", "x.py"]) == 2
    assert "give the command to profile after --" in capsys.readouterr().err
