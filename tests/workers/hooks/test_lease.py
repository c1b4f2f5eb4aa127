"""The lease hook holds the whole lease: a message's cells held and released, a cell taken once,
the worker's lease renewed before each command and while it waits, the outcome accepted only
while this attempt holds the cell, and the idle tick that queues a dead worker's cells again."""

import json
from pathlib import Path

import pytest

from jobs.parsers.readings import Failure
from jobs.record.attempts import AttemptResult
from tests.support.cells import Submitted, python_command
from workers.hooks import Dropped, Riders
from workers.hooks.lease import CellLease, outcome
from workers.host_facts import facts
from workers.shared import redis_keys
from workers.shared.clock import epoch, now
from workers.shared.leases import IDLE_TTL_S, Lease
from workers.shared.stores.local import LocalStore

SLACK_S = 7.0


def _hook(submitted: Submitted, tmp_path: Path, name: str = "w1") -> CellLease:
    lease = Lease(submitted.store.r, name, f"{name}-i")
    lease.take({"backend": "cpu"}, takeover=False)
    return CellLease(submitted.store, lease, LocalStore(tmp_path / "artifacts"), SLACK_S, 20.0)


def _result(submitted: Submitted, number: int, failure: Failure | None = None
            ) -> AttemptResult:
    cell = submitted.cells[0]
    return AttemptResult(sweep_id=submitted.sweep_id, cell_id=cell.id, attempt=number,
                         worker="w1", host=facts(), requested_commit=cell.commit,
                         commit=cell.commit, started=now(), ended=now(), failure=failure)


def _expiry(submitted: Submitted, name: str = "w1") -> float:
    return float(submitted.store.r.zscore(redis_keys.WORKERS, name) or 0)


def test_a_message_is_held_and_released(submitted: Submitted, tmp_path: Path) -> None:
    hook = _hook(submitted, tmp_path)
    group = submitted.group()
    submitted.store.r.hset(redis_keys.PENDING, group.task_id, "{}")
    hook.before_group(group)
    holding = json.loads(submitted.store.r.hget(redis_keys.worker("w1"), "holding") or "{}")
    assert holding == {"sweep_id": submitted.sweep_id, "cells": [c.id for c in submitted.cells]}
    assert not submitted.store.r.hexists(redis_keys.PENDING, group.task_id)
    hook.after_group(group)
    assert not submitted.store.r.hexists(redis_keys.worker("w1"), "holding")
    assert _expiry(submitted) == pytest.approx(epoch() + IDLE_TTL_S, abs=2)


def test_a_cell_is_taken_once(submitted: Submitted, tmp_path: Path) -> None:
    first, other = _hook(submitted, tmp_path), _hook(submitted, tmp_path, "w2")
    assert first.take(submitted.arrival(), Riders()).number == 1
    with pytest.raises(Dropped, match="leased by live worker w1"):
        other.take(submitted.arrival(), Riders())
    assert submitted.store.state(submitted.sweep_id, submitted.cells[0].id).status == "running"  # type: ignore[union-attr]


def test_a_final_cell_is_a_replay_and_reported(submitted: Submitted, tmp_path: Path) -> None:
    hook = _hook(submitted, tmp_path)
    number = hook.take(submitted.arrival(), Riders()).number
    hook.settle(submitted.attempt(number=number), _result(submitted, number), Riders())
    with pytest.raises(Dropped, match="replay"):
        hook.take(submitted.arrival(), Riders())
    assert submitted.store.refused()[0]["kind"] == "dropped"


def test_the_lease_covers_each_command_and_a_wait(submitted: Submitted, tmp_path: Path) -> None:
    hook = _hook(submitted, tmp_path)
    command = python_command(tmp_path / "runs", "pass", timeout_s=300.0)
    runs = hook.around_command(submitted.attempt(), command, lambda: ())
    assert runs == ()
    assert _expiry(submitted) == pytest.approx(epoch() + 300.0 + SLACK_S, abs=2)
    hook.cover(1000.0)
    assert _expiry(submitted) == pytest.approx(epoch() + 1000.0 + SLACK_S, abs=2)


def test_a_command_the_takes_lease_covers_costs_no_renewal(submitted: Submitted,
                                                           tmp_path: Path) -> None:
    hook = _hook(submitted, tmp_path)  # setup 20 s and slack 7 s: the take's lease lasts 27 s
    hook.take(submitted.arrival(), Riders())
    taken = _expiry(submitted)
    hook.around_command(submitted.attempt(), python_command(tmp_path, "pass", timeout_s=5.0),
                        lambda: ())
    assert _expiry(submitted) == taken  # 5 s and the slack fit in what is left: no call
    hook.around_command(submitted.attempt(), python_command(tmp_path, "pass", timeout_s=300.0),
                        lambda: ())
    assert _expiry(submitted) == pytest.approx(epoch() + 300.0 + SLACK_S, abs=2)
    hook.between_cells()  # the idle renewal makes it shorter: the next command renews again
    hook.around_command(submitted.attempt(), python_command(tmp_path, "pass", timeout_s=100.0),
                        lambda: ())
    assert _expiry(submitted) == pytest.approx(epoch() + 100.0 + SLACK_S, abs=2)


def test_a_lease_never_outlasts_its_command_by_more_than_the_takes(submitted: Submitted,
                                                                   tmp_path: Path) -> None:
    """After the build (a long timeout), the measured command's shorter lease is set: a
    worker lost during it is found within that command's timeout, not the build's."""
    hook = _hook(submitted, tmp_path)  # setup 20 s and slack 7 s
    hook.take(submitted.arrival(), Riders())
    hook.around_command(submitted.attempt(), python_command(tmp_path, "pass", timeout_s=600.0),
                        lambda: ())
    assert _expiry(submitted) == pytest.approx(epoch() + 600.0 + SLACK_S, abs=2)
    hook.around_command(submitted.attempt(), python_command(tmp_path, "pass", timeout_s=5.0),
                        lambda: ())
    assert _expiry(submitted) == pytest.approx(epoch() + 5.0 + SLACK_S, abs=2)
    renewed = _expiry(submitted)
    hook.around_command(submitted.attempt(), python_command(tmp_path, "pass", timeout_s=10.0),
                        lambda: ())
    assert _expiry(submitted) > renewed  # 10 s and the slack do not fit: renewed again


def test_the_messages_last_cell_lets_go_of_its_hold(submitted: Submitted,
                                                    tmp_path: Path) -> None:
    hook = _hook(submitted, tmp_path)
    group = submitted.group(cells=submitted.cells[:2])
    hook.before_group(group)
    holding = redis_keys.worker("w1")
    for index in (0, 1):
        number = hook.take(submitted.arrival(index, group), Riders()).number
        assert submitted.store.r.hexists(holding, "holding")
        hook.settle(submitted.attempt(index, number, group), _result(submitted, number),
                    Riders())
    assert not submitted.store.r.hexists(holding, "holding")
    assert _expiry(submitted) == pytest.approx(epoch() + IDLE_TTL_S, abs=2)


def test_the_outcome_is_accepted_and_marked_in_the_store(submitted: Submitted,
                                                         tmp_path: Path) -> None:
    hook = _hook(submitted, tmp_path)
    number = hook.take(submitted.arrival(), Riders()).number
    failure = Failure(kind="timeout", reason="measured run: took longer than 60 s")
    hook.settle(submitted.attempt(number=number), _result(submitted, number, failure),
                Riders())
    cell = submitted.cells[0].id
    state = submitted.store.state(submitted.sweep_id, cell)
    assert state is not None and (state.status, state.attempt) == ("timed_out", 1)
    marker = json.loads((tmp_path / "artifacts" / submitted.sweep_id / cell /
                         "accepted.json").read_text())
    assert marker == {"attempt": 1, "status": "timed_out", "generation": 0}


def test_an_attempt_the_cell_moved_past_is_not_accepted(submitted: Submitted,
                                                        tmp_path: Path) -> None:
    hook = _hook(submitted, tmp_path)
    number = hook.take(submitted.arrival(), Riders()).number
    cell = submitted.cells[0].id
    # The worker was declared dead and the cell queued again meanwhile.
    submitted.store.requeue(submitted.sweep_id, cell, "w1", "w1-i", 3, "lost its lease")
    hook.settle(submitted.attempt(number=number), _result(submitted, number), Riders())
    state = submitted.store.state(submitted.sweep_id, cell)
    assert state is not None and state.status == "queued"
    # Fencing: a stale attempt's files never become the accepted one.
    assert not (tmp_path / "artifacts" / submitted.sweep_id / cell / "accepted.json").exists()


def test_the_idle_tick_queues_a_dead_workers_cells_again(submitted: Submitted,
                                                         tmp_path: Path) -> None:
    dead, alive = _hook(submitted, tmp_path, "dead"), _hook(submitted, tmp_path, "alive")
    dead.before_group(submitted.group())
    dead.take(submitted.arrival(), Riders())
    dead.lease.renew(-1.0)  # its lease ran out: it stopped answering
    alive.between_cells()
    state = submitted.store.state(submitted.sweep_id, submitted.cells[0].id)
    assert state is not None and state.status == "queued"
    assert _expiry(submitted, "alive") == pytest.approx(epoch() + IDLE_TTL_S, abs=2)


def test_outcome_names_the_status_a_failure_ends_in() -> None:
    assert outcome(AttemptResult.model_construct(failure=None)) == "done"  # type: ignore[call-arg]
    for kind, status in (("timeout", "timed_out"), ("cancelled", "cancelled"),
                         ("build", "failed")):
        result = AttemptResult.model_construct(failure=Failure(kind=kind, reason="x"))  # type: ignore[call-arg, arg-type]
        assert outcome(result) == status


def test_a_cell_set_back_to_queued_is_not_measured_again(submitted: Submitted,
                                                         tmp_path: Path) -> None:
    """The store is the truth for dedup: after one HSET puts a done cell back to `queued`,
    the replayed envelope is refused, since the store holds that generation's accepted attempt."""
    hook = _hook(submitted, tmp_path)
    number = hook.take(submitted.arrival(), Riders()).number
    hook.settle(submitted.attempt(number=number), _result(submitted, number), Riders())
    cell = submitted.cells[0].id
    key = redis_keys.sweep(submitted.sweep_id, "states")
    state = json.loads(submitted.store.r.hget(key, cell) or "{}")
    submitted.store.r.hset(key, cell, json.dumps({**state, "status": "queued"}))  # the attack
    with pytest.raises(Dropped, match="already holds attempt 1 of generation 0"):
        hook.take(submitted.arrival(), Riders())
    assert submitted.store.state(submitted.sweep_id, cell).attempt == 1  # type: ignore[union-attr]
    assert "artifact store" in submitted.store.refused()[0]["why"]
