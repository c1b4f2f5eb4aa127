"""Work in a forked child (runner/forked.py), and the record's figures drawn that way: the
child's result or exception comes back, a child that dies is said, one left behind is
stopped, and the figures are the bytes the record's own process would have drawn."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.record.model import Record
from runner import forked
from runner.forked import ChildFailed, Forked
from runner.records import write

H200 = next((Path(__file__).parents[2] / "docs" / "records" / "h200-moe-decode" / "run-4")
            .glob("h200-moe-decode-*.json"))
pytestmark = pytest.mark.skipif(not forked.FORKS, reason="children are forked only on Linux")


def test_the_work_runs_in_another_process_and_its_result_comes_back() -> None:
    with Forked(lambda: (os.getpid(), b"x" * 1_000_000)) as child:  # more than a pipe holds
        pid, data = child.result()
    assert pid != os.getpid() and data == b"x" * 1_000_000


def test_its_exception_is_raised_here() -> None:
    with Forked(lambda: int("not a number")) as child, \
            pytest.raises(ValueError, match="not a number"):
        child.result()


def test_a_child_that_dies_is_said_with_how() -> None:
    with Forked(lambda: os.kill(os.getpid(), signal.SIGKILL)) as child, \
            pytest.raises(ChildFailed, match="killed by SIGKILL"):
        child.result()


def test_a_child_left_behind_is_stopped_and_reaped() -> None:
    read, write_end = os.pipe()
    with Forked(lambda: os.read(read, 1)) as child:  # waits for a byte that never comes
        pid = child._pid
        assert os.waitpid(pid, os.WNOHANG) == (0, 0)  # still running
    os.close(write_end)
    os.close(read)
    with pytest.raises(ChildProcessError):  # reaped: no such child any more
        os.waitpid(pid, os.WNOHANG)


def test_without_fork_the_work_is_done_here_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forked, "FORKS", False)
    done: list[int] = []
    child = Forked(lambda: done.append(os.getpid()))
    assert done == []
    child.result()
    assert done == [os.getpid()]


def test_the_figures_drawn_in_children_are_those_drawn_here(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = Record.model_validate_json(H200.read_bytes())
    there = write(record, tmp_path / "children")
    monkeypatch.setattr(forked, "FORKS", False)
    here = write(record, tmp_path / "here")
    assert [p.name for p in there.plots] == [p.name for p in here.plots]
    assert len(there.plots) == 3  # decode, prefill and phases
    for a, b in zip(there.plots, here.plots, strict=True):
        assert a.read_bytes() == b.read_bytes()
    assert there.markdown.read_text() == here.markdown.read_text()


def test_the_record_process_itself_never_imports_matplotlib(tmp_path: Path) -> None:
    program = ("import sys\nfrom pathlib import Path\nfrom runner.records import load, write\n"
               f"write(load(Path({str(H200)!r})), Path({str(tmp_path)!r}))\n"
               "print('matplotlib' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.strip() == "False"
    assert len(list(tmp_path.glob("*.png"))) == 3
