"""Notes on a running cell (workers/shared/notes.py): its phase and why it waits go into its
state while it runs this very attempt, and never bring back a cell that ended, was cancelled
or went to another worker."""

import json

from tests.support.cells import Submitted
from workers.shared import redis_keys
from workers.shared.leases import Lease
from workers.shared.notes import Notes

WAITING = "waiting for an idle host: load1 2.40 > 0.6 for 3 min (max 10 min)"


def _running(submitted: Submitted, index: int = 0) -> str:
    cell = submitted.cells[index].id
    Lease(submitted.store.r, "w1", "i1").take({"backend": "cpu"}, takeover=False)
    assert submitted.store.take(submitted.sweep_id, cell, 0, "w1", "i1").attempt == 1
    return cell


def test_a_note_on_its_running_cell_says_the_phase_and_why_and_wakes_watchers(
        submitted: Submitted) -> None:
    store, sweep_id = submitted.store, submitted.sweep_id
    cell = _running(submitted)
    logged = len(store.log(sweep_id))
    pubsub = store.r.pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe(redis_keys.sweep(sweep_id, "events"))
    pubsub.get_message(timeout=5.0)  # the subscription's confirmation
    notes = Notes(store.r, "w1", "i1")
    assert notes.note(sweep_id, cell, 1, "gating", WAITING)
    state = store.state(sweep_id, cell)
    assert state is not None and (state.status, state.phase, state.reason) == (
        "running", "gating", WAITING)
    heard = pubsub.get_message(timeout=5.0)
    assert heard is not None and json.loads(heard["data"]) == {
        "cell": cell, "status": "running", "phase": "gating", "reason": WAITING}
    assert notes.note(sweep_id, cell, 1, "measuring")  # the next phase: the reason goes
    state = store.state(sweep_id, cell)
    assert state is not None and (state.phase, state.reason) == ("measuring", None)
    assert len(store.log(sweep_id)) == logged  # a note is not a change of state
    pubsub.close()


def test_a_note_never_brings_back_a_cell_that_ended(submitted: Submitted) -> None:
    store, sweep_id = submitted.store, submitted.sweep_id
    done = _running(submitted, 0)
    assert store.finish(sweep_id, done, "w1", "i1", 1, "done", None)
    cancelled = submitted.cells[1].id
    assert store.cancel(sweep_id, cancelled)[0] == 1
    before = store.r.hgetall(redis_keys.sweep(sweep_id, "states"))
    notes = Notes(store.r, "w1", "i1")
    assert not notes.note(sweep_id, done, 1, "gating", WAITING)
    assert not notes.note(sweep_id, cancelled, 0, "gating", WAITING)
    assert store.r.hgetall(redis_keys.sweep(sweep_id, "states")) == before


def test_a_note_of_an_attempt_the_cell_moved_past_is_not_written(submitted: Submitted) -> None:
    store, sweep_id = submitted.store, submitted.sweep_id
    cell = _running(submitted)
    before = store.r.hget(redis_keys.sweep(sweep_id, "states"), cell)
    assert not Notes(store.r, "w1", "i0").note(sweep_id, cell, 1, "gating", WAITING)  # restarted
    assert not Notes(store.r, "w2", "i1").note(sweep_id, cell, 1, "gating", WAITING)
    assert not Notes(store.r, "w1", "i1").note(sweep_id, cell, 2, "gating", WAITING)
    assert store.r.hget(redis_keys.sweep(sweep_id, "states"), cell) == before
