"""`benchfleet` with its submit cut at a chosen step, for the tests of `submit --resume`:
python -m tests.support.cut_submit STEP ARGS... runs `benchfleet ARGS...` and

- after-sweep-file: SIGKILLs itself once sweep.json is in the store (nothing in Redis yet);
- after-save: SIGKILLs itself once the sweep is saved in Redis (no message queued);
- mid-publish: queues the first half of the group messages, then SIGKILLs itself;
- pause-before-save=FIFO: waits, just before the save, until a line comes down FIFO.

The steps are found by wrapping the functions that make them, never by timing; SIGKILL
leaves no `finally` or atexit to tidy up, as a killed coordinator would. `cut` runs it
from a test (or tests/faults/survive.py) and returns the sweep id the cut submit announced."""

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import runner.submit
from runner import cli
from runner.demo.local_fleet import settings_env
from workers.shared.settings import Settings
from workers.shared.state import Store

STEPS = ("after-sweep-file", "after-save", "mid-publish")
_STARTED = re.compile(r"^sweep (\S+): storing and queuing", re.MULTILINE)


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _then_die(step: Callable[..., Any]) -> Callable[..., Any]:
    def cut(*args: Any, **kwargs: Any) -> Any:
        step(*args, **kwargs)
        _die()
    return cut


def _half_then_die(self: Store, sweep_id: str, messages: list[Any]) -> None:
    assert original_queue_once and len(messages) >= 2, "mid-publish needs two groups or more"
    original_queue_once(self, sweep_id, messages[:len(messages) // 2])
    _die()


def _paused(fifo: str) -> Callable[..., Any]:
    def save(*args: Any, **kwargs: Any) -> Any:
        with open(fifo) as f:  # opening blocks until the test opens it to write
            f.readline()
        return original_save(*args, **kwargs)
    return save


original_save = Store.save_sweep
original_queue_once = getattr(Store, "queue_once", None)  # None before submit had it


def main(step: str, args: list[str]) -> int:
    if step == "after-sweep-file":
        runner.submit.store_sweep_file = _then_die(runner.submit.store_sweep_file)  # type: ignore[assignment]
    elif step == "after-save":
        Store.save_sweep = _then_die(original_save)  # type: ignore[method-assign]
    elif step == "mid-publish":
        Store.queue_once = _half_then_die  # type: ignore[method-assign,assignment]
    elif step.startswith("pause-before-save="):
        Store.save_sweep = _paused(step.split("=", 1)[1])  # type: ignore[method-assign]
    else:
        raise SystemExit(f"unknown step {step!r}")
    return cli.main(args)


def cut(settings: Settings, step: str, path: Path) -> str:
    """`submit --wait-for-worker PATH`, killed at `step`; the sweep id it announced before
    storing anything."""
    done = subprocess.run([sys.executable, "-m", "tests.support.cut_submit", step, "submit",
                           "--wait-for-worker", str(path)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **settings_env(settings)})
    assert done.returncode == -9, done.stderr
    found = _STARTED.search(done.stderr)
    assert found, done.stderr
    return found.group(1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
