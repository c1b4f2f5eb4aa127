"""The chain (workers/hooks/__init__.py): before-hooks in order, after-hooks in reverse, the
first hook's around_command outermost; exactly one hook takes cells and settles them, with what
the other hooks ask to ride its take and its finish; after the take a hook that rejects the
cell (or fails) gives the failure it ends with."""

from dataclasses import replace
from pathlib import Path

import pytest

from jobs.parsers.readings import Failure
from jobs.record.attempts import AttemptResult
from tests.support.cells import Submitted, python_command
from workers.hooks import Chain, Dropped, Hook, Proceed, Rejected, Riders, Runs
from workers.in_flight import Arrival, Attempt, Group
from workers.shared.state import TaskEvent


class Recorder(Hook):
    def __init__(self, name: str, heard: list[str], takes: bool = False) -> None:
        self.name, self.heard, self.takes = name, heard, takes

    def before_group(self, group: Group) -> Group:
        self.heard.append(f"{self.name}.before_group")
        return replace(group, task_id=group.task_id + self.name)

    def before_cell(self, arrival: Arrival) -> None:
        self.heard.append(f"{self.name}.before_cell")

    def after_take(self, attempt: Attempt) -> None:
        self.heard.append(f"{self.name}.after_take")

    def around_command(self, attempt: Attempt, command: object, proceed: Proceed) -> Runs:
        self.heard.append(f"{self.name}.enter")
        try:
            return proceed()
        finally:
            self.heard.append(f"{self.name}.leave")

    def before_store(self, attempt: Attempt, result: AttemptResult) -> AttemptResult:
        self.heard.append(f"{self.name}.before_store")
        return result

    def after_cell(self, attempt: Attempt, result: AttemptResult) -> None:
        self.heard.append(f"{self.name}.after_cell")

    def after_group(self, group: Group) -> None:
        self.heard.append(f"{self.name}.after_group")


class Taker(Recorder):
    riders: list[Riders]

    def take(self, arrival: Arrival, riders: Riders) -> Attempt:
        self.heard.append(f"{self.name}.take")
        self.riders = [riders]
        return arrival.taken(7)

    def settle(self, attempt: Attempt, result: AttemptResult, riders: Riders) -> None:
        self.heard.append(f"{self.name}.settle")
        self.riders.append(riders)


class Rider(Hook):
    def __init__(self, mark: str | None = None, event: str | None = None) -> None:
        self.riders = Riders(mark, TaskEvent(event, "", "") if event else None)

    def rides_take(self, arrival: Arrival) -> Riders:
        return self.riders

    def rides_finish(self, attempt: Attempt, result: AttemptResult) -> Riders:
        return Riders(event=TaskEvent("end", "", ""))


def test_befores_in_order_afters_in_reverse(submitted: Submitted, tmp_path: Path) -> None:
    heard: list[str] = []
    chain = Chain([Recorder("a", heard), Taker("b", heard), Recorder("c", heard)])
    group = chain.before_group(submitted.group())
    assert group.task_id == "task-1abc"  # each hook's copy goes on to the next
    attempt, failure = chain.admit(Arrival(group, group.cells[0]))
    assert (attempt.number, failure) == (7, None)
    chain.command(attempt, python_command(tmp_path, ""), lambda: ())
    result = AttemptResult.model_construct()  # type: ignore[call-arg]
    chain.before_store(attempt, result)
    chain.after_cell(attempt, result)
    chain.after_group(group)
    assert heard == [
        "a.before_group", "b.before_group", "c.before_group",
        "a.before_cell", "b.before_cell", "c.before_cell", "b.take",
        "a.after_take", "b.after_take", "c.after_take",
        "a.enter", "b.enter", "c.enter", "c.leave", "b.leave", "a.leave",
        "c.before_store", "b.before_store", "a.before_store",
        "c.after_cell", "b.settle", "a.after_cell",
        "c.after_group", "b.after_group", "a.after_group"]


def test_what_other_hooks_ask_rides_the_takers_take_and_finish(submitted: Submitted) -> None:
    heard: list[str] = []
    taker = Taker("t", heard)
    chain = Chain([Rider(mark="c@0"), taker, Rider(event="received")])
    attempt, _ = chain.admit(submitted.arrival())
    chain.after_cell(attempt, AttemptResult.model_construct())  # type: ignore[call-arg]
    took, settled = taker.riders
    assert took == Riders("c@0", TaskEvent("received", "", ""))
    assert settled == Riders(None, TaskEvent("end", "", ""))


def test_a_chain_has_exactly_one_taker() -> None:
    heard: list[str] = []
    with pytest.raises(ValueError, match="exactly one hook that takes cells, not 0"):
        Chain([Recorder("a", heard)])
    with pytest.raises(ValueError, match="not 2"):
        Chain([Taker("a", heard), Taker("b", heard)])


class Refusing(Hook):
    def before_cell(self, arrival: Arrival) -> None:
        raise Dropped("a duplicate")


class Rejecting(Hook):
    def after_take(self, attempt: Attempt) -> None:
        raise Rejected(Failure(kind="refused", reason="not in the allow-list"))


class Broken(Hook):
    def after_take(self, attempt: Attempt) -> None:
        raise KeyError("tags")

    def after_cell(self, attempt: Attempt, result: AttemptResult) -> None:
        raise OSError("disk full")


def test_a_cell_dropped_before_the_take_is_not_taken(submitted: Submitted) -> None:
    heard: list[str] = []
    with pytest.raises(Dropped):
        Chain([Refusing(), Taker("t", heard)]).admit(submitted.arrival())
    assert "t.take" not in heard


def test_after_the_take_a_rejection_or_a_failure_ends_the_cell(submitted: Submitted) -> None:
    heard: list[str] = []
    attempt, failure = Chain([Taker("t", heard), Rejecting()]).admit(submitted.arrival())
    assert attempt.number == 7 and failure == Failure(kind="refused",
                                                      reason="not in the allow-list")
    _, failure = Chain([Taker("t", heard), Broken()]).admit(submitted.arrival())
    assert failure is not None and failure.kind == "setup" and "Broken: KeyError" in failure.reason


def test_every_hook_hears_the_outcome_even_when_one_fails(submitted: Submitted) -> None:
    heard: list[str] = []
    chain = Chain([Taker("a", heard), Broken(), Recorder("c", heard)])
    with pytest.raises(OSError, match="disk full"):
        chain.after_cell(submitted.attempt(), AttemptResult.model_construct())  # type: ignore[call-arg]
    assert heard == ["c.after_cell", "a.settle"]
