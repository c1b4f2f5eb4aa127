"""Cancel: a cancel told while a command runs kills it at once (the control line wakes the
worker's poll); one told before a command stops the cell before it starts; either way the cell
ends `cancelled`."""

import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.cells import Submitted, python_command
from workers import execute
from workers.hooks.cancel import Cancel
from workers.shared import cancels
from workers.workspace import CellFailure

ROOT = Path(__file__).parents[3]


def _tell(submitted: Submitted, worker: str = "w1") -> None:
    cancels.tell(submitted.store.r, submitted.sweep_id, {worker: {submitted.cells[0].id: 0}})


def test_a_cancel_told_while_the_command_runs_kills_it(submitted: Submitted,
                                                       tmp_path: Path) -> None:
    hook = Cancel(submitted.store.r, submitted.url, "w1")
    # The command itself tells the cancel, then would run for a minute.
    code = ("import sys, time, redis; sys.path.insert(0, sys.argv[1]); "
            "from workers.shared import cancels; "
            f"cancels.tell(redis.Redis.from_url({submitted.url!r}), {submitted.sweep_id!r}, "
            f"{{'w1': {{{submitted.cells[0].id!r}: 0}}}}); time.sleep(60)")
    command = python_command(tmp_path, code)
    command.call.argv.append(str(ROOT))
    started = time.monotonic()
    with pytest.raises(CellFailure) as ended:
        hook.around_command(submitted.attempt(), command, lambda: (execute.run(command),))
    assert ended.value.failure.kind == "cancelled"
    assert ended.value.failure.reason == "cancelled while measure ran"
    assert time.monotonic() - started < 30


def test_a_cancel_told_before_a_command_stops_the_cell(submitted: Submitted,
                                                       tmp_path: Path) -> None:
    hook = Cancel(submitted.store.r, submitted.url, "w1")
    _tell(submitted)
    ran: list[str] = []
    with pytest.raises(CellFailure, match="cancelled before measure"):
        hook.around_command(submitted.attempt(), python_command(tmp_path, "pass"),
                            lambda: ran.append("ran") or ())  # type: ignore[func-returns-value]
    assert ran == []


def test_a_cancel_unheard_is_read_from_redis_at_the_cells_first_command(
        submitted: Submitted, tmp_path: Path) -> None:
    hook = Cancel(submitted.store.r, submitted.url, "w1")
    _tell(submitted, worker="someone-else")  # in the cancel set; never on w1's line
    with pytest.raises(CellFailure, match="cancelled before"):
        hook.around_command(submitted.attempt(), python_command(tmp_path, "pass"), lambda: ())


def test_a_cancel_mark_read_in_the_take_stops_the_first_command_without_asking_redis(
        submitted: Submitted, tmp_path: Path) -> None:
    hook = Cancel(submitted.store.r, submitted.url, "w1")
    _tell(submitted, worker="someone-else")  # in the cancel set; never on w1's line
    asked = _sismember_calls(submitted)
    marked = replace(submitted.attempt(), marked=True)
    hook.after_take(marked)
    with pytest.raises(CellFailure, match="cancelled before"):
        hook.around_command(marked, python_command(tmp_path, "pass"), lambda: ())
    hook.after_take(replace(submitted.attempt(index=1), marked=False))
    assert hook.around_command(replace(submitted.attempt(index=1), marked=False),
                               python_command(tmp_path, "pass"), lambda: ()) == ()
    assert _sismember_calls(submitted) == asked  # the take's reading stands for both


def _sismember_calls(submitted: Submitted) -> int:
    stats = submitted.store.r.info("commandstats").get("cmdstat_sismember", {"calls": 0})
    return int(stats["calls"])


def test_a_command_not_cancelled_runs_with_the_line_beside_it(submitted: Submitted,
                                                              tmp_path: Path) -> None:
    hook = Cancel(submitted.store.r, submitted.url, "w1")
    command = python_command(tmp_path, "print('ok')")
    (run,) = hook.around_command(submitted.attempt(), command,
                                 lambda: (execute.run(command),))
    assert run.exit_code == 0 and command.wake_fd == hook.line.fileno() is not None
    _tell(submitted, worker="w1")  # for another cell of the sweep: this one still runs
    other = submitted.attempt(index=1)
    assert hook.around_command(other, command, lambda: ()) == ()


def test_a_rerun_of_a_cell_cancelled_while_running_is_not_cancelled(
        submitted: Submitted, tmp_path: Path) -> None:
    """Cancel marks belong to a cell's generation: the rerun (the next one) runs, on the
    worker that heard the cancel and on one that reads the mark from Redis."""
    from jobs.spec.envelope import decode
    from runner.control import cancel, rerun
    from workers.in_flight import Arrival, Group, SignedCell
    from workers.shared.leases import Lease

    store, sweep_id, cell = submitted.store, submitted.sweep_id, submitted.cells[0]
    heard = Cancel(store.r, submitted.url, "w1")
    Lease(store.r, "w1", "i1").take({"backend": "cpu"}, takeover=False)
    assert store.take(sweep_id, cell.id, 0, "w1", "i1", 60).attempt == 1
    assert cancel(store, sweep_id, [cell]).done == [cell.id]
    with pytest.raises(CellFailure, match="cancelled before"):
        heard.around_command(submitted.attempt(), python_command(tmp_path, "pass"), lambda: ())
    assert store.finish(sweep_id, cell.id, "w1", "i1", 1, "cancelled", "cancelled", 60)[0]
    assert rerun(store, submitted.key, sweep_id, [cell], False).done == [cell.id]
    (signed,) = store.envelopes(sweep_id, [cell.id])
    group = Group(sweep_id, "t2", (signed,),
                  (SignedCell(signed, decode(signed.envelope.encode())),))
    again = Arrival(group, group.cells[0]).taken(2)
    assert again.envelope.generation == 1
    for hook in (heard, Cancel(store.r, submitted.url, "w2")):
        assert hook.around_command(again, python_command(tmp_path, "pass"), lambda: ()) == ()
