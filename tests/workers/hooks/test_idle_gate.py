"""The idle gate waits for an idle host before a message's first measured command and after a
gap, not before every command; the attempt carries the gate its message passed last."""

from pathlib import Path

from jobs.record.attempts import AttemptResult
from tests.support.cells import Submitted, python_command
from workers.hooks.idle_gate import GateConfig, IdleGate
from workers.host_facts import facts
from workers.shared.clock import now

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
