"""Retries: a failure the recipe marks transient runs again, each try with its own logs; the
tries before the last stay in the attempt, superseded; a deterministic failure runs once."""

from pathlib import Path

from jobs.spec.recipes import RetryPolicy
from tests.support.cells import Submitted, python_command
from workers import execute
from workers.hooks.retries import Retries

# Fails with exit 75 until it has been run `n` times (a counter file beside its logs).
FLAKY = ("import pathlib, sys; p = pathlib.Path('count'); n = int(p.read_text() or 0) + 1 "
         "if p.exists() else 1; p.write_text(str(n)); sys.exit(0 if n >= {n} else 75)")


def _run(submitted: Submitted, tmp_path: Path, code: str, policy: RetryPolicy
         ) -> tuple[execute.Command, tuple]:
    command = python_command(tmp_path, code, retry=policy)
    runs = Retries().around_command(submitted.attempt(), command,
                                    lambda: (execute.run(command),))
    return command, runs


def test_a_transient_failure_is_tried_again_with_its_own_logs(submitted: Submitted,
                                                              tmp_path: Path) -> None:
    policy = RetryPolicy(tries=3, transient_exits=[75], backoff_s=0.01, max_backoff_s=0.02)
    command, runs = _run(submitted, tmp_path, FLAKY.format(n=3), policy)
    assert [(r.try_number, r.exit_code, r.superseded) for r in runs] == [
        (1, 75, True), (2, 75, True), (3, 0, False)]
    assert [r.stdout for r in runs] == ["measure.stdout.txt", "measure.try2.stdout.txt",
                                        "measure.try3.stdout.txt"]
    assert command.files.stdout.name == "measure.stdout.txt"  # put back for the next hook


def test_tries_end_at_the_recipes_number(submitted: Submitted, tmp_path: Path) -> None:
    policy = RetryPolicy(tries=2, transient_exits=[75], backoff_s=0.01, max_backoff_s=0.02)
    _, runs = _run(submitted, tmp_path, FLAKY.format(n=5), policy)
    assert [(r.exit_code, r.superseded) for r in runs] == [(75, True), (75, False)]


def test_a_deterministic_failure_runs_once(submitted: Submitted, tmp_path: Path) -> None:
    policy = RetryPolicy(tries=3, transient_exits=[75], backoff_s=0.01, max_backoff_s=0.02)
    _, runs = _run(submitted, tmp_path, "import sys; sys.exit(1)", policy)
    assert [(r.exit_code, r.try_number) for r in runs] == [(1, 1)]
