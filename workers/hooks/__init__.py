"""The behaviours around running one cell, each one small piece with one or more hooks.

The task body (workers/task.py) is the measurement: checkout, build, run, parse, push. What
happens around it — signature check, lease, cancel, retries, host lease, idle gate — lives in
one file each here, and the worker chains them in a fixed order (workers/service.py):

- `before_cell(job)`: may raise `Refused` (never run; reported), `Dropped` (a duplicate,
  replay or cancelled cell: not run) or, once the cell is taken, `Rejected` (a signed cell
  this worker will not run: it ends failed with the reason);
- `around_command(job, command, proceed)`: wraps each command the cell runs (build, warm-up,
  measured run, profile step); calls `proceed()` zero or more times and returns the Run;
- `on_failure(job, failure)`: the cell failed (before `after_cell`);
- `after_cell(job, result)`: the attempt's result is stored; report it.
"""

from collections.abc import Callable, Sequence

from jobs.parsers.readings import Failure
from jobs.record.attempts import AttemptResult, Run
from workers.execute import Command
from workers.in_flight import Job

Proceed = Callable[[], Run]


class Refused(Exception):
    """A message that must not run: unsigned, tampered, foreign, outside the allow-list."""


class Dropped(Exception):
    """A cell that is not run now (a duplicate, a replay, cancelled, no longer needed)."""


class Rejected(Exception):
    """A signed cell, taken, that this worker will not run (a repository outside its
    allow-list, a tag it lacks): nothing of it runs, and it ends failed with `failure`."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.reason)
        self.failure = failure


class Hook:
    def before_cell(self, job: Job) -> None:
        pass

    def around_command(self, job: Job, command: Command, proceed: Proceed) -> Run:
        return proceed()

    def on_failure(self, job: Job, failure: Failure) -> None:
        pass

    def after_cell(self, job: Job, result: AttemptResult) -> None:
        pass


class Chain:
    """The hooks in order: the first hook's around_command is the outermost."""

    def __init__(self, hooks: Sequence[Hook]) -> None:
        self.hooks = list(hooks)

    def before_cell(self, job: Job) -> None:
        for hook in self.hooks:
            hook.before_cell(job)

    def command(self, job: Job, command: Command, innermost: Proceed) -> Run:
        proceed = innermost
        for hook in reversed(self.hooks):
            proceed = _bind(hook, job, command, proceed)
        return proceed()

    def on_failure(self, job: Job, failure: Failure) -> None:
        for hook in self.hooks:
            hook.on_failure(job, failure)

    def after_cell(self, job: Job, result: AttemptResult) -> None:
        """Every hook hears the outcome, even when an earlier one failed to."""
        failed: Exception | None = None
        for hook in self.hooks:
            try:
                hook.after_cell(job, result)
            except Exception as error:
                failed = failed or error
        if failed:
            raise failed


def _bind(hook: Hook, job: Job, command: Command, proceed: Proceed) -> Proceed:
    return lambda: hook.around_command(job, command, proceed)
