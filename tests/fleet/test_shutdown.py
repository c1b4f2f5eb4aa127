"""Ctrl-C on a real worker in the middle of a group of slow cells: once, the running cell ends
`done` and the rest stay queued for another worker (which then runs them); twice, the running
command's process group is killed, its cell ends `cancelled`, and the rest stay queued."""

import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.faults.harness import Lab, descendants_gone, lab, wait_for_command
from tests.support.waits import eventually
from workers.hooks.shutdown import COLD_REASON

pytestmark = pytest.mark.integration
CELLS = 4
# The stand-in command computes this long: a cell long enough to stop in the middle of.
CELL_S = 3.0
EXIT_DEADLINE_S = 60.0


def _start_mid_cell(lab_: Lab, name: str) -> tuple[subprocess.Popen[bytes], str, str, list[int]]:
    worker = lab_.fleet.start("cpu", name)
    sweep_id = lab_.sweep(name, recipe="slow-bench", n=CELLS, params={"seconds": CELL_S})
    pids = wait_for_command(worker.pid, "time.monotonic")
    running = [c for c, s in lab_.store.states(sweep_id).items() if s.status == "running"]
    assert len(running) == 1, lab_.store.states(sweep_id)
    return worker, sweep_id, running[0], pids


def _log(lab_: Lab, name: str) -> str:
    return (lab_.root / "logs" / f"worker-{name}-cpu.log").read_text()


def _statuses(lab_: Lab, sweep_id: str) -> dict[str, str]:
    return {c: s.status for c, s in lab_.store.states(sweep_id).items()}


def test_one_ctrl_c_ends_after_the_running_cell(tmp_path: Path) -> None:
    with lab(tmp_path) as lab_:
        worker, sweep_id, running, _ = _start_mid_cell(lab_, "warm")
        start = time.monotonic()
        worker.send_signal(signal.SIGINT)
        assert worker.wait(timeout=EXIT_DEADLINE_S) == 0, _log(lab_, "warm")
        took = time.monotonic() - start
        statuses = _statuses(lab_, sweep_id)
        assert statuses.pop(running) == "done"
        assert set(statuses.values()) == {"queued"}, statuses
        assert len(statuses) == CELLS - 1
        print(f"warm: worker exited {took:.1f} s after one Ctrl-C (a cell computes {CELL_S} s)")
        # The cells left are in a message on the queue: a second worker takes them.
        lab_.fleet.start("cpu", "after")
        second = lab_.wait(sweep_id)
        assert set(_statuses(lab_, sweep_id).values()) == {"done"}
        lab_.verify(sweep_id)
        print(f"warm: a second worker ran the {CELLS - 1} cells left in {second:.1f} s")


def test_two_ctrl_c_cancel_the_running_cell_now(tmp_path: Path) -> None:
    with lab(tmp_path) as lab_:
        worker, sweep_id, running, pids = _start_mid_cell(lab_, "cold")
        worker.send_signal(signal.SIGINT)
        eventually(lambda: "warm shutdown" in _log(lab_, "cold"), 10.0, "the first Ctrl-C heard")
        start = time.monotonic()
        worker.send_signal(signal.SIGINT)
        state = eventually(lambda: (s := lab_.store.state(sweep_id, running)) is not None
                           and s.status == "cancelled" and s, 10.0, "the running cell cancelled")
        took = time.monotonic() - start
        assert state.reason == COLD_REASON
        assert descendants_gone(pids), "the command's process group outlived the cell"
        assert worker.wait(timeout=EXIT_DEADLINE_S) == 0, _log(lab_, "cold")
        statuses = _statuses(lab_, sweep_id)
        statuses.pop(running)
        assert set(statuses.values()) == {"queued"} and len(statuses) == CELLS - 1, statuses
        assert took < CELL_S, f"cancelled after {took:.1f} s: the command was not cut short"
        print(f"cold: the running cell was cancelled {took:.2f} s after the second Ctrl-C")
