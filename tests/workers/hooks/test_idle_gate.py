"""The idle gate waits for an idle host before a message's first measured command and after a
gap, not before every command; the attempt carries the gate its message passed last."""

import fcntl
import logging
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from jobs.record.attempts import AttemptResult, CellState
from tests.support.cells import Submitted, python_command
from tests.support.load import BURNERS, MARGIN, burners
from tests.support.waits import eventually
from tests.workers.hooks.test_host_lease import HOLDER
from workers.execute import Command
from workers.hooks import Runs
from workers.hooks.host_lease import HostLease
from workers.hooks.idle_gate import GateConfig, IdleGate
from workers.hooks.phase import Phases
from workers.host_facts import facts
from workers.in_flight import Attempt
from workers.shared.clock import now
from workers.shared.leases import Lease
from workers.shared.notes import Notes

# A threshold no host reaches: idle at the second reading.
ALWAYS_IDLE = GateConfig(threshold=1e6, max_wait_s=5.0, gap_s=300.0, interval_s=0.01)


def _result(submitted: Submitted) -> AttemptResult:
    cell = submitted.cells[0]
    return AttemptResult(sweep_id=submitted.sweep_id, cell_id=cell.id, attempt=1, worker="w1",
                         host=facts(), requested_commit=cell.commit, commit=cell.commit,
                         started=now(), ended=now())


def test_the_first_measured_command_passes_the_gate_and_the_attempt_carries_it(
        submitted: Submitted, tmp_path: Path) -> None:
    hook = IdleGate(ALWAYS_IDLE)
    attempt = submitted.attempt()
    hook.before_group(attempt.group)
    hook.around_command(attempt, python_command(tmp_path, "", role="build", label="b"),
                        lambda: ())
    assert hook.before_store(attempt, _result(submitted)).gate is None  # a build is not gated
    hook.around_command(attempt, python_command(tmp_path, ""), lambda: ())
    gate = hook.before_store(attempt, _result(submitted)).gate
    assert gate is not None and gate.idle and len(gate.load1) == 2
    hook.around_command(attempt, python_command(tmp_path, ""), lambda: ())
    assert hook.gate is gate  # the next run follows closely: no second wait


def test_after_a_gap_the_gate_is_passed_again(submitted: Submitted, tmp_path: Path) -> None:
    hook = IdleGate(GateConfig(threshold=1e6, max_wait_s=5.0, gap_s=0.0, interval_s=0.01))
    attempt = submitted.attempt()
    hook.around_command(attempt, python_command(tmp_path, ""), lambda: ())
    first = hook.gate
    hook.around_command(attempt, python_command(tmp_path, ""), lambda: ())
    assert first is not None and hook.gate is not first


def test_a_busy_host_is_waited_for_at_most_the_cap(submitted: Submitted, tmp_path: Path) -> None:
    hook = IdleGate(GateConfig(threshold=0.0, max_wait_s=0.05, gap_s=300.0, interval_s=0.01))
    hook.around_command(submitted.attempt(), python_command(tmp_path, ""), lambda: ())
    assert hook.gate is not None and not hook.gate.idle
    assert "threshold 0" in (hook.gate.reason or "") and hook.gate.waited_s >= 0.05


def test_a_new_message_starts_with_no_gate(submitted: Submitted, tmp_path: Path) -> None:
    hook = IdleGate(ALWAYS_IDLE)
    attempt = submitted.attempt()
    hook.around_command(attempt, python_command(tmp_path, ""), lambda: ())
    hook.before_group(submitted.group("task-2"))
    assert hook.gate is None and hook.before_store(attempt, _result(submitted)).gate is None


def _lock_free(path: Path) -> bool:
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def _around_host_lease(gate: IdleGate, lease: HostLease, attempt: Attempt, command: Command,
                       proceed: Callable[[], Runs]) -> Runs:
    """The chain's order (workers/service.py): the gate, the host lease, the gate's inner half."""
    return gate.around_command(attempt, command, lambda: lease.around_command(
        attempt, command, lambda: gate.under_lease.around_command(attempt, command, proceed)))


def test_a_waiting_gate_leaves_the_host_lease_to_its_neighbours(
        submitted: Submitted, tmp_path: Path) -> None:
    path = tmp_path / "host.lock"
    gate = IdleGate(GateConfig(threshold=0.0, max_wait_s=2.0, gap_s=300.0, interval_s=0.05))
    lease = HostLease(path, "w1", 5.0, lambda s: None)
    command = python_command(tmp_path / "runs", "")
    held_when_run: list[bool] = []
    waiter = threading.Thread(target=_around_host_lease, args=(
        gate, lease, submitted.attempt(), command,
        lambda: held_when_run.append(not _lock_free(path)) or ()))
    waiter.start()
    free_while_waiting = eventually(lambda: gate.gate is None and _lock_free(path), 5.0,
                                    "the lock free while the gate waits")
    waiter.join(timeout=30)
    assert free_while_waiting and held_when_run == [True]
    assert gate.gate is not None and not gate.gate.idle and gate.gate.waited_s >= 2.0


@contextmanager
def _load_over(threshold: float) -> Iterator[None]:
    """Shell loops at nice 19 on one CPU until load1 passes `threshold` (each counts as a
    runnable task, however little CPU it gets), then for as long as the block runs."""
    with burners(BURNERS):
        eventually(lambda: os.getloadavg()[0] > threshold, 30.0, f"load1 over {threshold}")
        yield


def test_a_host_busy_again_under_the_lease_lets_it_go_and_waits_again(
        submitted: Submitted, tmp_path: Path) -> None:
    path = tmp_path / "host.lock"
    threshold = round(os.getloadavg()[0] + MARGIN, 2)
    gate = IdleGate(GateConfig(threshold=threshold, max_wait_s=3.0, gap_s=300.0,
                               interval_s=0.1))
    lease = HostLease(path, "w1", 5.0, lambda s: None)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    ran: list[bool] = []
    waiter = threading.Thread(target=_around_host_lease, args=(
        gate, lease, submitted.attempt(), python_command(tmp_path / "runs", ""),
        lambda: ran.append(True) or ()))
    waiter.start()
    eventually(lambda: gate.gate is not None, 10.0, "the gate finds the host idle")
    with _load_over(threshold):
        assert holder.stdin is not None
        holder.stdin.close()  # the neighbour's command ends; the host is busy by now
        holder.wait(timeout=10)
        # The gate took the lease (its name is in the file), found the host busy, let it go.
        eventually(lambda: '"w1"' in path.read_text() and _lock_free(path), 10.0,
                   "the lease taken and let go")
        assert not ran and waiter.is_alive()  # waiting again, within what is left of its cap
        waiter.join(timeout=30)
    assert ran == [True]
    final = gate.gate
    assert final is not None and not final.idle and final.waited_s >= 3.0
    first, second, under_lease, *later = final.load1
    assert first < threshold and second < threshold and under_lease > threshold and later


def test_a_waiting_gate_says_why_in_the_cells_state_and_the_log(
        submitted: Submitted, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store, sweep_id = submitted.store, submitted.sweep_id
    Lease(store.r, "w1", "i1").take({"backend": "cpu"}, takeover=False)
    attempt = submitted.attempt()
    assert store.take(sweep_id, attempt.cell.id, 0, "w1", "i1", 60).attempt == attempt.number
    notes = Notes(store.r, "w1", "i1")
    gate = IdleGate(GateConfig(threshold=0.0, max_wait_s=1.0, gap_s=300.0, interval_s=0.05),
                    notes)
    lease = HostLease(tmp_path / "host.lock", "w1", 5.0, lambda s: None)
    phases = Phases(notes)
    seen: list[CellState | None] = []
    caplog.set_level(logging.INFO, logger="workers.hooks.idle_gate")
    _around_host_lease(gate, lease, attempt, python_command(tmp_path / "runs", ""), lambda: (
        phases.around_command(attempt, python_command(tmp_path / "runs", ""), lambda: seen.append(
            store.state(sweep_id, attempt.cell.id)) or ())))
    waiting = [e for e in store.log(sweep_id) if e.get("reason")]
    assert not waiting  # notes are not state changes
    (measuring,) = seen
    assert measuring is not None and (measuring.phase, measuring.reason) == ("measuring", None)
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2, said  # when the wait starts, and when it ends
    assert re.fullmatch(rf"cell {attempt.cell.id}: waiting for an idle host: load1 \d+\.\d\d > 0 "
                        r"for 0 s \(max 1 s\)", said[0]), said
    assert said[1].startswith(f"cell {attempt.cell.id}: measuring on a busy host (the record "
                              "marks it): load1 ")


def test_the_cells_state_carries_the_gates_reason_at_every_reading(
        submitted: Submitted, tmp_path: Path) -> None:
    store, sweep_id = submitted.store, submitted.sweep_id
    Lease(store.r, "w1", "i1").take({"backend": "cpu"}, takeover=False)
    attempt = submitted.attempt()
    store.take(sweep_id, attempt.cell.id, 0, "w1", "i1", 60)
    gate = IdleGate(GateConfig(threshold=0.0, max_wait_s=3.0, gap_s=300.0, interval_s=0.2),
                    Notes(store.r, "w1", "i1"))
    waiter = threading.Thread(target=gate.around_command, args=(
        attempt, python_command(tmp_path, ""), lambda: ()))
    waiter.start()
    reasons: set[str] = set()
    while waiter.is_alive():
        state = store.state(sweep_id, attempt.cell.id)
        if state is not None and state.phase == "gating" and state.reason:
            reasons.add(state.reason)
        time.sleep(0.05)
    assert all(r.startswith("waiting for an idle host: load1 ") and r.endswith("(max 3 s)")
               for r in reasons), reasons
    assert {re.search(r"for (\d) s", r).group(1) for r in reasons} >= {"0", "1", "2"}  # type: ignore[union-attr]
