"""The behaviours around running one cell, each one small piece with one or more hooks.

The task body (workers/task.py) is the measurement: checkout, build, run, parse, push. What
happens around it — signature check, route, lease, cancel, retries, idle gate, host lease,
phase notes, events — lives in one file each here, and owns its own state; the worker chains
them in a fixed order (workers/service.py). Before-hooks run in that order, after-hooks in
reverse (as dramatiq's do), and the first hook's around_command is the outermost:

- `before_group(group) -> Group`: a message arrived; returns it, or a copy with fewer cells
  (the signature hook fills `cells` with those that verify; route passes some on);
- `before_cell(arrival)`: a cell's turn, before it is taken; may raise `Dropped`;
- `rides_take(arrival) -> Riders`: what this hook wants done in the take's own script (read
  the cell's cancel mark, send its task-received event), so a cell's start is one round trip;
- `take(arrival, riders) -> Attempt`: exactly one hook (the lease) takes the cell, with the
  riders: its attempt, or `Dropped` (a duplicate, a replay, a cell another worker holds);
- `after_take(attempt)`: may raise `Rejected` (a signed cell this worker will not run: it
  ends failed with the reason, nothing of it runs);
- `around_command(attempt, command, proceed)`: wraps each command the cell runs (build,
  probe, warm-up, measured run, profile step); calls `proceed()` zero or more times and
  returns the command's runs, the one that counts last;
- `before_store(attempt, result) -> AttemptResult`: the result is about to be stored; a hook
  adds what it measured (the idle gate's readings);
- `rides_finish(attempt, result) -> Riders`: what rides the finish's script (the end event);
- `after_cell(attempt, result)`: the attempt's result is stored; report it (the hook that
  took the cell settles it instead, `settle(attempt, result, riders)`);
- `after_group(group)`: every cell of the message had its turn.
"""

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from jobs.parsers.readings import Failure
from jobs.record.attempts import AttemptResult, Run
from workers.execute import Command
from workers.in_flight import Arrival, Attempt, Group
from workers.shared.leases import LeaseLost
from workers.shared.state import TaskEvent

Runs = tuple[Run, ...]
Proceed = Callable[[], Runs]
log = logging.getLogger(__name__)


class Dropped(Exception):
    """A cell that is not run now (a duplicate, a replay, cancelled, no longer needed)."""


class Rejected(Exception):
    """A signed cell, taken, that this worker will not run (a repository outside its
    allow-list, a tag it lacks): nothing of it runs, and it ends failed with `failure`."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.reason)
        self.failure = failure


@dataclass(frozen=True)
class Riders:
    """What hooks ask the take's or the finish's script to do in the same step, each a round
    trip saved: read the cell's cancel mark, send a task event."""

    cancel_mark: str | None = None
    event: TaskEvent | None = None

    def __or__(self, other: "Riders") -> "Riders":
        return Riders(self.cancel_mark or other.cancel_mark, self.event or other.event)


class Hook:
    def before_group(self, group: Group) -> Group:
        return group

    def before_cell(self, arrival: Arrival) -> None:
        pass

    def rides_take(self, arrival: Arrival) -> Riders:
        return Riders()

    def take(self, arrival: Arrival, riders: Riders) -> Attempt:
        raise NotImplementedError  # only the hook that takes cells implements it

    def after_take(self, attempt: Attempt) -> None:
        pass

    def around_command(self, attempt: Attempt, command: Command, proceed: Proceed) -> Runs:
        return proceed()

    def before_store(self, attempt: Attempt, result: AttemptResult) -> AttemptResult:
        return result

    def rides_finish(self, attempt: Attempt, result: AttemptResult) -> Riders:
        return Riders()

    def after_cell(self, attempt: Attempt, result: AttemptResult) -> None:
        pass

    def settle(self, attempt: Attempt, result: AttemptResult, riders: Riders) -> None:
        raise NotImplementedError  # only the hook that takes cells implements it

    def after_group(self, group: Group) -> None:
        pass


class Chain:
    """The hooks in order; exactly one of them takes cells."""

    def __init__(self, hooks: Sequence[Hook]) -> None:
        self.hooks = list(hooks)
        takers = [h for h in self.hooks if type(h).take is not Hook.take]
        if len(takers) != 1:
            raise ValueError(f"a chain needs exactly one hook that takes cells, not "
                             f"{len(takers)}")
        self.taker = takers[0]

    def before_group(self, group: Group) -> Group:
        for hook in self.hooks:
            group = hook.before_group(group)
        return group

    def admit(self, arrival: Arrival) -> tuple[Attempt, Failure | None]:
        """Before the take a hook may drop the cell (raises Dropped); after it the attempt
        exists, and a hook that rejects it (or fails) gives the failure it ends with."""
        for hook in self.hooks:
            hook.before_cell(arrival)
        attempt = self.taker.take(arrival, _merged(h.rides_take(arrival) for h in self.hooks))
        for hook in self.hooks:
            try:
                hook.after_take(attempt)
            except Rejected as why:
                return attempt, why.failure
            except LeaseLost:
                raise
            except Exception as error:  # a hook's own failure: a cell taken still ends
                log.exception("after taking %s", attempt.cell.id)
                return attempt, Failure(kind="setup", reason=f"{type(hook).__name__}: "
                                        f"{type(error).__name__}: {error}")
        return attempt, None

    def command(self, attempt: Attempt, command: Command, innermost: Proceed) -> Runs:
        proceed = innermost
        for hook in reversed(self.hooks):
            proceed = _bind(hook, attempt, command, proceed)
        return proceed()

    def before_store(self, attempt: Attempt, result: AttemptResult) -> AttemptResult:
        for hook in reversed(self.hooks):
            result = hook.before_store(attempt, result)
        return result

    def after_cell(self, attempt: Attempt, result: AttemptResult) -> None:
        """Every hook hears the outcome, innermost first, even when another failed to; the
        taker settles it with what rides its finish."""
        riders = _merged(h.rides_finish(attempt, result) for h in self.hooks)
        _each(reversed(self.hooks), lambda hook: hook.settle(attempt, result, riders)
              if hook is self.taker else hook.after_cell(attempt, result))

    def after_group(self, group: Group) -> None:
        _each(reversed(self.hooks), lambda hook: hook.after_group(group))


def _merged(riders: Iterable[Riders]) -> Riders:
    merged = Riders()
    for rider in riders:
        merged |= rider
    return merged


def _each(hooks: Iterable[Hook], call: Callable[[Hook], None]) -> None:
    failed: Exception | None = None
    for hook in hooks:
        try:
            call(hook)
        except Exception as error:
            failed = failed or error
    if failed:
        raise failed


def _bind(hook: Hook, attempt: Attempt, command: Command, proceed: Proceed) -> Proceed:
    return lambda: hook.around_command(attempt, command, proceed)
