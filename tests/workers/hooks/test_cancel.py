"""Cancel: a cancel told while a command runs kills it at once (the control line wakes the
worker's poll); one told before a command stops the cell before it starts; either way the cell
ends `cancelled`."""

import time
from pathlib import Path

import pytest

from tests.support.cells import Submitted, python_command
from workers import execute
from workers.hooks.cancel import Cancel
from workers.shared import cancels
from workers.workspace import CellFailure

ROOT = Path(__file__).parents[3]


def _tell(submitted: Submitted, worker: str = "w1") -> None:
    cancels.tell(submitted.store.r, submitted.sweep_id, {worker: [submitted.cells[0].id]})


def test_a_cancel_told_while_the_command_runs_kills_it(submitted: Submitted,
                                                       tmp_path: Path) -> None:
    hook = Cancel(submitted.store.r, submitted.url, "w1")
    # The command itself tells the cancel, then would run for a minute.
    code = ("import sys, time, redis; sys.path.insert(0, sys.argv[1]); "
            "from workers.shared import cancels; "
            f"cancels.tell(redis.Redis.from_url({submitted.url!r}), {submitted.sweep_id!r}, "
            f"{{'w1': [{submitted.cells[0].id!r}]}}); time.sleep(60)")
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
