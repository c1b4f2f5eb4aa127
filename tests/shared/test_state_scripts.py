"""The cell scripts' contract (workers/shared/lua): cancel, skip and rerun change a cell's state
only from the states they name, atomically; take and finish do all a cell's start and end need
in one step each; the sweep is found by id or unique prefix."""

import base64
import json
from pathlib import Path

import pytest
import redis

from jobs.errors import UserError
from tests.support.cells import Submitted
from tests.support.waits import eventually
from workers.shared import cancels, redis_keys
from workers.shared.clock import epoch
from workers.shared.leases import Lease
from workers.shared.state import CellRow, TaskEvent


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


def _event(uuid: str) -> TaskEvent:
    return TaskEvent("events-test", json.dumps({"body": "@body@", "n": 1}),
                     json.dumps({"uuid": f"{uuid}:@attempt@", "retries": "@retries@"}))


def _published(pubsub: redis.client.PubSub) -> list[dict[str, object]]:
    found = []
    while (message := pubsub.get_message(timeout=0.2)) is not None:
        envelope = json.loads(message["data"])
        found.append({**envelope, "body": json.loads(base64.b64decode(envelope["body"]))})
    return found


def test_the_take_renews_takes_reads_the_cancel_mark_and_sends_its_event_in_one_step(
        submitted: Submitted) -> None:
    """One script, one test of its contract: the lease renewed, the cell taken, its cancel
    mark read and its task event sent with the attempt's number, or nothing of it."""
    store, sweep_id = submitted.store, submitted.sweep_id
    first, second, third = (c.id for c in submitted.cells[:3])
    Lease(store.r, "w1", "i1").take({"backend": "cpu"}, takeover=False)
    cancels.tell(store.r, sweep_id, {"w9": {first: 0}})
    pubsub = store.r.pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe("events-test")
    eventually(lambda: pubsub.get_message(timeout=0.1) is None and pubsub.subscribed, 5,
               "the subscription")
    # Bodies of every length modulo 3 (base64's padding), one not ASCII.
    taken = [store.take(sweep_id, cell, 0, "w1", "i1", 500, cancels.mark(cell, 0), _event(u))
             for cell, u in ((first, "a"), (second, "bé"), (third, "ccc"))]
    assert [(t.attempt, t.marked) for t in taken] == [(1, True), (1, False), (1, False)]
    assert float(store.r.zscore(redis_keys.WORKERS, "w1") or 0) == pytest.approx(
        epoch() + 500, abs=2)
    assert [m["body"] for m in _published(pubsub)] == [
        {"uuid": "a:1", "retries": 0}, {"uuid": "bé:1", "retries": 0},
        {"uuid": "ccc:1", "retries": 0}]
    # The same take again (its reply was lost): the same attempt, its event not sent twice.
    again = store.take(sweep_id, first, 0, "w1", "i1", 60, cancels.mark(first, 0), _event("a"))
    assert (again.attempt, again.marked) == (1, True) and _published(pubsub) == []
    # Refused, or the lease gone: nothing taken, nothing sent.
    assert store.take(sweep_id, first, 0, "w2", "i2", 60, None, _event("x")).lease_lost
    assert store.finish(sweep_id, second, "w1", "i1", 1, "done", None, 60)[0]
    assert store.take(sweep_id, second, 0, "w1", "i1", 60, None, _event("x")).attempt is None
    assert _published(pubsub) == []
    pubsub.close()


def test_the_finish_settles_releases_and_sends_its_event_in_one_step(
        submitted: Submitted) -> None:
    store, sweep_id = submitted.store, submitted.sweep_id
    cell = _running(submitted)
    store.r.hset(redis_keys.worker("w1"), "holding", "{}")
    pubsub = store.r.pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe("events-test")
    eventually(lambda: pubsub.get_message(timeout=0.1) is None and pubsub.subscribed, 5,
               "the subscription")
    assert store.finish(sweep_id, cell, "w1", "i1", 1, "done", None, 30, release=True,
                        event=_event("end")) == (True, True)
    assert not store.r.hexists(redis_keys.worker("w1"), "holding")
    # A stale finish is not accepted, and its event still goes out (the attempt did end).
    assert store.finish(sweep_id, cell, "w1", "i1", 2, "failed", "x", 30,
                        event=_event("stale")) == (False, True)
    assert [m["body"] for m in _published(pubsub)] == [{"uuid": "end:1", "retries": 0},
                                                        {"uuid": "stale:2", "retries": 1}]
    pubsub.close()


def test_a_sweeps_rows_are_read_without_its_cells(submitted: Submitted) -> None:
    """`status` counts and shows rows (id, backend, model, where it may run), kept with the
    sweep; a sweep saved before rows were kept gives them from its cells."""
    store, sweep_id = submitted.store, submitted.sweep_id
    rows = store.rows(sweep_id)
    assert rows == [CellRow.of(c) for c in submitted.cells]
    assert store.r.hdel(redis_keys.sweep(sweep_id), "rows") == 1
    assert store.rows(sweep_id) == rows
    assert store.statuses(sweep_id) == {c.id: "queued" for c in submitted.cells}



def test_an_event_that_names_no_attempt_is_encoded_by_the_worker(submitted: Submitted) -> None:
    """A finish's event names its attempt already: the worker encodes its body (TaskEvent.of)
    and the script sends the message as it is."""
    store, sweep_id = submitted.store, submitted.sweep_id
    Lease(store.r, "w1", "i1").take({"backend": "cpu"}, takeover=False)
    pubsub = store.r.pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe("events-test")
    eventually(lambda: pubsub.get_message(timeout=0.1) is None and pubsub.subscribed, 5,
               "the subscription")
    bodies = [{"uuid": u, "result": "é" * n} for u, n in (("a", 1), ("b", 2), ("c", 3))]
    for cell, body in zip((c.id for c in submitted.cells), bodies, strict=False):
        made = TaskEvent.of("events-test", json.dumps({"body": "@body@", "n": 1}),
                            json.dumps(body))
        assert made.body == "" and "@body@" not in made.message
        assert store.take(sweep_id, cell, 0, "w1", "i1", 60).attempt == 1
        assert store.finish(sweep_id, cell, "w1", "i1", 1, "done", None, 30, event=made)[0]
    assert [(m["body"], m["n"]) for m in _published(pubsub)] == [(b, 1) for b in bodies]
    pubsub.close()


def test_the_scripts_base64_is_pythons(submitted: Submitted) -> None:
    """A take's event body is encoded by the script (its attempt is known only there): the
    same digits as Python's, at every length modulo 3, beyond ASCII."""
    event_lua = Path(__file__).parents[2] / "workers" / "shared" / "lua" / "event.lua"
    encode = submitted.store.r.register_script(event_lua.read_text()
                                               + "\nreturn base64(ARGV[1])")
    for raw in [b"", b"a", b"ab", b"abc", b"abcd", "é".encode() * 5, bytes(range(256)),
                json.dumps({"uuid": "x" * 700}).encode()]:
        assert encode(args=[raw]) == base64.b64encode(raw).decode(), raw[:20]
