"""Adaptive repeats: an extra repeat runs only while a comparison of its group is "not yet
known"; once every one is decided it ends `skipped` without running. Readings come from this
worker's own cells, or from the artifact store (a group split by a lost worker)."""

from pathlib import Path

import pytest
import redis

from jobs.parsers.readings import BenchReading
from jobs.record.attempts import AttemptResult
from tests.support.cells import SPEC, Submitted, submit
from workers.hooks import Dropped
from workers.hooks.adaptive import Adaptive
from workers.host_facts import facts
from workers.shared.clock import now
from workers.shared.leases import Lease
from workers.shared.stores.local import LocalStore

ADAPTIVE = SPEC.replace("n: 2\n", "n: 5\nadaptive: {max_n: 6}\n")
# Two repeats apart: the ranges are, but two against two cannot say different (p >= 0.33).
SHORT = SPEC.replace("n: 2\n", "n: 2\nadaptive: {max_n: 3}\n")


def _result(submitted: Submitted, cell_id: str, tps: float) -> AttemptResult:
    cell = next(c for c in submitted.cells if c.id == cell_id)
    reading = BenchReading(prompt_tokens=32, generated_tokens=16, prefill_tps=100.0,
                           decode_tps=tps)
    return AttemptResult(sweep_id=submitted.sweep_id, cell_id=cell_id, attempt=1, worker="w1",
                         host=facts(), requested_commit=cell.commit, commit=cell.commit,
                         started=now(), ended=now(), reading=reading)


def _measured(submitted: Submitted, hook: Adaptive, stored: LocalStore) -> None:
    """The regular repeats' readings: the first through the artifact store and Redis, the
    rest heard by this worker."""
    regular = [c for c in submitted.cells if not c.adaptive]
    for i, cell in enumerate(regular):
        tps = (10.0 if cell.baseline else 20.0) + cell.repeat  # the arms' ranges apart
        result = _result(submitted, cell.id, tps)
        if i == 0:
            staging = stored.staging()
            (staging / "result.json").write_text(result.model_dump_json())
            stored.publish(staging, submitted.sweep_id, cell.id, 1)
            Lease(submitted.store.r, "w0", "i0").take({"backend": "cpu"}, takeover=False)
            submitted.store.take(submitted.sweep_id, cell.id, 0, "w0", "i0", 60)
            submitted.store.finish(submitted.sweep_id, cell.id, "w0", "i0", 1, "done", None, 60)
        else:
            hook.after_cell(submitted.attempt(index=submitted.cells.index(cell)), result)


@pytest.fixture
def adaptive(unit_redis: tuple[redis.Redis, str], tmp_path: Path) -> Submitted:
    return submit(*unit_redis, tmp_path / "keys", ADAPTIVE)


@pytest.fixture
def short(unit_redis: tuple[redis.Redis, str], tmp_path: Path) -> Submitted:
    return submit(*unit_redis, tmp_path / "keys", SHORT)


def test_a_repeat_no_comparison_needs_is_skipped(adaptive: Submitted, tmp_path: Path) -> None:
    stored = LocalStore(tmp_path / "artifacts")
    hook = Adaptive(adaptive.store, stored)
    _measured(adaptive, hook, stored)
    extra = next(i for i, c in enumerate(adaptive.cells) if c.adaptive)
    with pytest.raises(Dropped, match="decided before repeat 6"):
        hook.before_cell(adaptive.arrival(extra))
    state = adaptive.store.state(adaptive.sweep_id, adaptive.cells[extra].id)
    assert state is not None and state.status == "skipped"


def test_a_repeat_still_needed_runs(short: Submitted, tmp_path: Path) -> None:
    stored = LocalStore(tmp_path / "artifacts")
    hook = Adaptive(short.store, stored)
    _measured(short, hook, stored)
    extra = next(i for i, c in enumerate(short.cells) if c.adaptive)
    hook.before_cell(short.arrival(extra))
    state = short.store.state(short.sweep_id, short.cells[extra].id)
    assert state is not None and state.status == "queued"


def test_a_regular_cell_always_runs(adaptive: Submitted, tmp_path: Path) -> None:
    hook = Adaptive(adaptive.store, LocalStore(tmp_path / "artifacts"))
    hook.before_cell(adaptive.arrival(0))  # no readings at all: still runs


def test_a_worker_keeps_only_its_messages_readings(adaptive: Submitted, tmp_path: Path) -> None:
    """The rule reads a group's own readings: one kept past its message would make a worker
    grow with every cell it ever ran."""
    hook = Adaptive(adaptive.store, LocalStore(tmp_path / "artifacts"))
    hook.before_group(adaptive.group())
    cell = adaptive.cells[0]
    hook.after_cell(adaptive.attempt(), _result(adaptive, cell.id, 10.0))
    assert list(hook.readings) == [cell.id]
    hook.before_group(adaptive.group(task_id="task-2"))
    assert hook.readings == {}
