"""Work in a forked child (runner/forked.py), and the record's figures drawn that way: the
child's result or exception comes back, a child that dies is said, one left behind is
stopped, a primed child primes before its input exists, and the figures are the bytes the
record's own process would have drawn."""

import ctypes
import errno
import os
import select
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from jobs.record.model import Record
from runner import forked, records
from runner.forked import ChildFailed, Forked, Primed
from runner.records import write
from tests.support.cells import Submitted
from tests.support.records import OLD, record
from workers.shared.stores.local import LocalStore

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


class TwoPart(Exception):
    """An exception that pickles but cannot be rebuilt from its pickle (two arguments)."""

    def __init__(self, what: str, where: str) -> None:
        super().__init__(f"{what} at {where}")


def _raise_two_part() -> None:
    raise TwoPart("bad panel", "row 3")


def test_an_exception_that_does_not_come_back_whole_comes_back_in_words() -> None:
    with Forked(_raise_two_part) as child, \
            pytest.raises(RuntimeError, match="TwoPart: bad panel at row 3"):
        child.result()


def _draw_badly() -> None:
    raise ValueError("no such axis")


def test_its_traceback_in_the_child_comes_with_it() -> None:
    with Forked(_draw_badly) as child, pytest.raises(ValueError) as raised:
        child.result()
    notes = "\n".join(getattr(raised.value, "__notes__", []))
    assert "raised in the child" in notes and "_draw_badly" in notes


def test_a_child_killed_while_sending_is_said_as_killed() -> None:
    with Forked(lambda: b"x" * 4_000_000) as child:  # more than the pipe holds: it waits
        select.select([child._read], [], [], 60)  # its answer has begun
        os.kill(child._pid, signal.SIGKILL)
        with pytest.raises(ChildFailed, match="killed by SIGKILL"):
            child.result()


class Stopped(Exception):
    """What this test's SIGTERM handler raises, in place of the process's own ending."""


def _stop(*_: object) -> None:
    raise Stopped


def test_a_stop_signal_that_lands_during_the_fork_leaves_no_child(
        monkeypatch: pytest.MonkeyPatch) -> None:
    forked_pids: list[int] = []
    real_fork = os.fork

    def fork_then_stop() -> int:
        pid = real_fork()
        if pid:  # the parent: a stop arrives now, held back until the fork is done
            forked_pids.append(pid)
            # To this thread, whose mask holds it back (pytest-xdist's other threads would
            # take a signal sent to the process at once).
            signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
        return pid

    read, write_end = os.pipe()
    previous = signal.signal(signal.SIGTERM, _stop)
    monkeypatch.setattr(os, "fork", fork_then_stop)
    try:
        with pytest.raises(Stopped):
            Forked(lambda: os.read(read, 1))  # a child that would wait for ever
    finally:
        monkeypatch.undo()
        signal.signal(signal.SIGTERM, previous)
        os.close(read)
        os.close(write_end)
    with pytest.raises(ChildProcessError):  # stopped and reaped, not left behind
        os.waitpid(forked_pids[0], os.WNOHANG)


def test_a_result_is_collected_once() -> None:
    with Forked(lambda: 1) as child:
        assert child.result() == 1
        with pytest.raises(RuntimeError, match="once"):
            child.result()


def test_where_fork_fails_the_work_is_done_here_and_nothing_leaks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fork() -> int:
        raise OSError(errno.EAGAIN, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    before = len(os.listdir("/proc/self/fd"))
    with Forked(os.getpid) as child:
        assert child.result() == os.getpid()
    assert len(os.listdir("/proc/self/fd")) == before


def _how_it_ends() -> tuple[bool, bool, int]:
    death = ctypes.c_int(0)
    ctypes.CDLL(None, use_errno=True).prctl(2, ctypes.byref(death))  # PR_GET_PDEATHSIG
    return (signal.getsignal(signal.SIGINT) == signal.SIG_DFL,
            signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, death.value)


def test_a_stop_signal_or_the_parent_s_death_ends_the_child_outright() -> None:
    # Python's own handler would unwind the child through the parent's code (its finally
    # blocks and atexit): the child takes the signals' defaults, and dies with its parent.
    assert signal.getsignal(signal.SIGINT) != signal.SIG_DFL
    with Forked(_how_it_ends) as child:
        assert child.result() == (True, True, signal.SIGKILL)
    assert signal.getsignal(signal.SIGINT) != signal.SIG_DFL  # the parent's are as they were
    assert not signal.pthread_sigmask(signal.SIG_BLOCK, set()) & {signal.SIGINT,
                                                                   signal.SIGTERM}


def test_without_fork_the_work_is_done_here_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forked, "FORKS", False)
    done: list[int] = []
    child = Forked(lambda: done.append(os.getpid()))
    assert done == []
    child.result()
    assert done == [os.getpid()]


def _doubled(given: bytes) -> tuple[int, bytes]:
    return os.getpid(), given * 2


def test_a_primed_child_primes_before_its_input_exists_and_works_on_it_whole() -> None:
    read, write_end = os.pipe()
    try:
        with Primed(lambda: os.write(write_end, b"primed"), _doubled) as child:
            assert select.select([read], [], [], 60)[0]  # primed, with no input given yet
            assert os.read(read, 16) == b"primed"
            child.give(b"ab" * 300_000)  # more than a pipe holds
            pid, doubled = child.result()
    finally:
        os.close(read)
        os.close(write_end)
    assert pid != os.getpid() and doubled == b"ab" * 600_000


def test_giving_a_large_input_never_waits_for_the_priming() -> None:
    gate_read, gate_write = os.pipe()  # the priming lasts until the test opens this gate

    def too_slow(*_: object) -> None:
        raise TimeoutError("give() waited for the priming")

    previous = signal.signal(signal.SIGALRM, too_slow)
    try:
        with Primed(lambda: os.read(gate_read, 1), _doubled) as child:
            signal.alarm(30)
            try:
                child.give(b"ab" * 1_000_000)  # many times what a pipe holds
            finally:
                signal.alarm(0)
            os.write(gate_write, b"go")
            assert child.result()[1] == b"ab" * 2_000_000
    finally:
        signal.signal(signal.SIGALRM, previous)
        os.close(gate_read)
        os.close(gate_write)


def test_a_primed_child_that_dies_before_its_input_is_said_with_how() -> None:
    with Primed(lambda: os.kill(os.getpid(), signal.SIGKILL), _doubled) as child:
        child.give(b"x" * 1_000_000)  # no reader: given nonetheless, without an error
        with pytest.raises(ChildFailed, match="killed by SIGKILL"):
            child.result()


def test_a_primed_child_whose_input_never_comes_is_stopped_and_reaped() -> None:
    with Primed(lambda: None, _doubled) as child:
        pid = child._child._pid
        with pytest.raises(RuntimeError, match="before its input"):
            child.result()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_without_fork_a_primed_work_is_done_here_unprimed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forked, "FORKS", False)
    primed: list[int] = []
    child = Primed(lambda: primed.append(1), _doubled)
    child.give(b"c")
    assert child.result() == (os.getpid(), b"cc") and primed == []
    with pytest.raises(RuntimeError, match="once"):
        child.result()


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


def test_a_figure_that_fails_leaves_the_record_before_it_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = Record.model_validate_json(H200.read_bytes())
    first = write(record, tmp_path)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}

    def broken(what: object) -> bytes:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(records, "_figure", broken)
    changed = record.model_copy(update={"created": "2026-12-05T09:00:00+00:00"})
    with pytest.raises(OSError, match="No space left"):
        write(changed, tmp_path)
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert after == before  # nothing replaced, nothing half-written or left beside
    assert first.json in after


def test_a_primed_child_is_given_its_input_once() -> None:
    with Primed(lambda: None, _doubled) as child:
        assert not child.given
        child.give(b"ab")
        assert child.given
        with pytest.raises(RuntimeError, match="given once"):
            child.give(b"cd")
        assert child.result()[1] == b"abab"


def test_the_figures_are_given_before_the_record_is_checked(
        submitted: Submitted, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check changes no figure: the figures' child draws while the record is checked."""
    seen: list[bool] = []
    check = records.check_record

    def checked(record: Record, flagged: dict[tuple[str, int], list[str]]) -> list[str]:
        seen.append(drawer.given)
        return check(record, flagged)

    monkeypatch.setattr(records, "check_record", checked)
    with records.figure_drawer() as drawer:
        records.gather(submitted.store, LocalStore(tmp_path / "store"), submitted.sweep_id,
                       drawer)
        assert seen == [True]
        drawer.result()


def test_a_large_record_s_figures_are_drawn_one_after_another_by_one_child(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A record that does not wait for its figures keeps a second drawing child off its peak."""
    small = record(OLD)
    picked, side_by_side = records.drawn(small)
    assert side_by_side and len(picked) >= 2
    large = small.model_copy(update={"cells_expected": records.SIDE_BY_SIDE_UP_TO + 1})
    picked, side_by_side = records.drawn(large)
    assert not side_by_side
    monkeypatch.setattr(records, "Forked", None)  # no figure may get a child of its own
    pngs = records._draw((picked, side_by_side))
    assert pngs.keys() == picked.keys()
    assert all(png and png.startswith(b"\x89PNG") for png in pngs.values())
