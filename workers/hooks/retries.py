"""Retries: a command whose failure its recipe marks transient runs again, with exponential
backoff and jitter (tenacity), up to the recipe's number of tries. Every try keeps its own
logs and stays in the attempt's runs; deterministic failures are never retried."""

import logging

from tenacity import Retrying, retry_if_result, stop_after_attempt, wait_exponential_jitter

from jobs.parsers.exits import is_oom
from jobs.parsers.readings import RunOutput
from jobs.record.attempts import Run
from jobs.spec.retry import transient
from workers import execute
from workers.execute import Command, Files
from workers.hooks import Hook, Proceed
from workers.in_flight import Job

log = logging.getLogger(__name__)


class Retries(Hook):
    def around_command(self, job: Job, command: Command, proceed: Proceed) -> Run:
        policy = command.call.retry
        if policy.tries == 1:
            return proceed()
        first, tries = command.files, []

        def once() -> Run:
            command.files = _try_files(first, len(tries) + 1)
            run = proceed().model_copy(update={"try_number": len(tries) + 1})
            tries.append(run)
            return run

        def again(run: Run) -> bool:
            ooms = sum(is_oom(_output(command, r)) for r in tries[:-1])
            retry = transient(_output(command, run), policy, ooms)
            if retry:
                log.info("%s failed with exit %s, which its recipe marks transient; trying "
                         "again", command.label, run.exit_code)
            return retry

        Retrying(stop=stop_after_attempt(policy.tries), reraise=True,
                 wait=wait_exponential_jitter(initial=policy.backoff_s, max=policy.max_backoff_s),
                 retry=retry_if_result(again), retry_error_callback=lambda state: None)(once)
        command.files = first
        job.runs += [r.model_copy(update={"superseded": True}) for r in tries[:-1]]
        return tries[-1]


def _try_files(first: Files, n: int) -> Files:
    if n == 1:
        return first
    return Files(first.stdout.with_name(first.stdout.name.replace(".stdout", f".try{n}.stdout")),
                 first.stderr.with_name(first.stderr.name.replace(".stderr", f".try{n}.stderr")))


def _output(command: Command, run: Run) -> RunOutput:
    return execute.output(run, command.base, command.call.timeout_s)
