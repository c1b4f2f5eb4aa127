"""A taken cell's commands follow: the worker's keeper (workers/descendants.py) starts at once,
so that the first command's move into its cgroup waits beside the staging; a cell ended before
its command leaves none. Last in the chain: a cell another hook rejects starts none."""

from jobs.record.attempts import AttemptResult
from workers import descendants
from workers.hooks import Hook
from workers.in_flight import Attempt


class KeepMoveQuick(Hook):
    def after_take(self, attempt: Attempt) -> None:
        descendants.warm()

    def after_cell(self, attempt: Attempt, result: AttemptResult) -> None:
        descendants.rest()
