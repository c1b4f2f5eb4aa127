"""The cell scripts' contract (workers/shared/lua): cancel, skip and rerun change a cell's state
only from the states they name, atomically; the sweep is found by id or unique prefix."""

import pytest

from jobs.errors import UserError
from tests.support.cells import Submitted
from workers.shared.leases import Lease


def _running(submitted: Submitted, index: int = 0) -> str:
    cell = submitted.cells[index].id
    Lease(submitted.store.r, "w1", "i1").take({"backend": "cpu"}, takeover=False)
    assert submitted.store.take(submitted.sweep_id, cell, 0, "w1", "i1", 60).attempt == 1
    return cell


def test_cancel_ends_a_queued_cell_and_names_the_worker_of_a_running_one(
        submitted: Submitted) -> None:
    store, sweep_id = submitted.store, submitted.sweep_id
    queued = submitted.cells[1].id
    assert store.cancel(sweep_id, queued)[0] == 1
    assert store.state(sweep_id, queued).status == "cancelled"  # type: ignore[union-attr]
    assert store.cancel(sweep_id, queued) == (0, "cancelled", 0)  # already final
    running = _running(submitted)
    assert store.cancel(sweep_id, running) == (2, "w1", 0)


def test_skip_ends_only_a_queued_cell(submitted: Submitted) -> None:
    store, sweep_id = submitted.store, submitted.sweep_id
    assert store.skip(sweep_id, submitted.cells[1].id, "not needed")
    assert store.state(sweep_id, submitted.cells[1].id).status == "skipped"  # type: ignore[union-attr]
    assert not store.skip(sweep_id, _running(submitted), "not needed")


def test_rerun_starts_a_new_generation_of_a_final_cell_only(submitted: Submitted) -> None:
    store, sweep_id = submitted.store, submitted.sweep_id
    cell = _running(submitted)
    signed = submitted.signed[cell]
    assert store.rerun(sweep_id, cell, 1, signed) == "it is running, not final"
    assert store.finish(sweep_id, cell, "w1", "i1", 1, "failed", "exit 1", 60)[0]
    assert store.rerun(sweep_id, cell, 1, signed) is None
    state = store.state(sweep_id, cell)
    assert state is not None and (state.status, state.generation) == ("queued", 1)
    assert store.take(sweep_id, cell, 0, "w1", "i1", 60).attempt is None  # the old one: a replay
    assert store.take(sweep_id, cell, 1, "w1", "i1", 60).attempt == 2


def test_a_sweep_is_found_by_id_or_unique_prefix(submitted: Submitted) -> None:
    store = submitted.store
    assert store.resolve(None) == store.resolve("hoo") == submitted.sweep_id
    with pytest.raises(UserError, match="matches 0 sweeps"):
        store.resolve("nope")
    with pytest.raises(UserError, match="no sweep 'nope' in Redis"):
        store.sweep("nope")


def test_a_refused_rerun_changes_nothing(submitted: Submitted) -> None:
    """A rerun of a running cell is refused and leaves its envelope as it was, so when its
    worker is lost the cell is queued again at the generation it has, and taken."""
    from jobs.spec.envelope import decode
    from runner.submit import sign_all

    store, sweep_id = submitted.store, submitted.sweep_id
    cell = _running(submitted)
    newer = sign_all(submitted.key, sweep_id, 1, "planted", [submitted.cells[0]])[cell]
    assert store.rerun(sweep_id, cell, 1, newer) == "it is running, not final"
    assert store.envelopes(sweep_id, [cell]) == [submitted.signed[cell]]
    assert store.requeue(sweep_id, cell, "w1", "i1", 3, "its worker was lost")
    (stored,) = store.envelopes(sweep_id, [cell])
    generation = decode(stored.envelope.encode()).generation
    assert store.state(sweep_id, cell).generation == generation == 0  # type: ignore[union-attr]
    assert store.take(sweep_id, cell, generation, "w1", "i1", 60).attempt == 2
