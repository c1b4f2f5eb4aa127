"""Worker leases: a name is held by one live instance; a lease that ran out is claimed once, and
the claimed worker's held cells come back with it; a worker declared dead cannot renew."""

import subprocess
import sys
from pathlib import Path

import pytest
import redis

from tests.support.cells import Submitted
from workers.shared import redis_keys
from workers.shared.clock import server_time
from workers.shared.leases import (
    IDLE_TTL_S,
    Lease,
    LeaseLost,
    NameTaken,
    claim_expired,
    live_expiries,
    live_offers,
)


def test_a_live_name_is_refused_to_a_second_instance(submitted: Submitted) -> None:
    client = submitted.store.r
    Lease(client, "w1", "i1").take({"backend": "cpu", "host": "h1"}, takeover=False)
    with pytest.raises(NameTaken, match="already runs on host h1; give this one another --name"):
        Lease(client, "w1", "i2").take({"backend": "cpu", "host": "h2"}, takeover=False)


def test_a_takeover_hands_back_what_the_predecessor_held(submitted: Submitted) -> None:
    client = submitted.store.r
    old = Lease(client, "w1", "i1")
    old.take({"backend": "cpu"}, takeover=False)
    old.hold(submitted.sweep_id, ["c1", "c2"], "task-1", 60)
    held = Lease(client, "w1", "i2").take({"backend": "cpu"}, takeover=True)
    assert held is not None and (held.instance, held.cells) == ("i1", ["c1", "c2"])
    with pytest.raises(LeaseLost):
        old.renew(30.0)  # the name is another instance's now


def test_an_expired_lease_is_claimed_once_and_cannot_renew(submitted: Submitted) -> None:
    client: redis.Redis = submitted.store.r
    lease = Lease(client, "w1", "i1")
    lease.take({"backend": "cpu"}, takeover=False)
    lease.hold(submitted.sweep_id, ["c1"], "task-1", 60)
    lease.renew(-1.0)
    (held,) = claim_expired(client)
    assert (held.worker, held.sweep_id, held.cells) == ("w1", submitted.sweep_id, ["c1"])
    assert claim_expired(client) == []
    with pytest.raises(LeaseLost, match="declared dead"):
        lease.renew(30.0)


def test_live_offers_read_what_each_live_worker_published(submitted: Submitted) -> None:
    client = submitted.store.r
    Lease(client, "w1", "i1").take({"backend": "cuda", "host": "h1", "tags": '["gpu=h200"]'},
                                   takeover=False)
    gone = Lease(client, "w2", "i2")
    gone.take({"backend": "cpu"}, takeover=False)
    gone.end()
    (offer,) = live_offers(client)
    assert (offer.name, offer.backend, offer.host, offer.tags) == ("w1", "cuda", "h1",
                                                                   ["gpu=h200"])
    assert client.hget(redis_keys.worker("w2"), "instance") == "stopped:i2"


def test_a_worker_whose_lease_is_gone_takes_nothing(submitted: Submitted) -> None:
    store, cell = submitted.store, submitted.cells[0].id
    lease = Lease(store.r, "w1", "i1")
    lease.take({"backend": "cpu"}, takeover=False)
    lease.renew(-1.0)
    assert [h.worker for h in claim_expired(store.r)] == []  # it held nothing
    taken = store.take(submitted.sweep_id, cell, 0, "w1", "i1", 60)
    assert taken.lease_lost and taken.attempt is None
    assert store.state(submitted.sweep_id, cell).status == "queued"  # type: ignore[union-attr]


def test_a_take_renews_the_lease_on_redis_clock(submitted: Submitted) -> None:
    store = submitted.store
    lease = Lease(store.r, "w1", "i1")
    lease.take({"backend": "cpu"}, takeover=False)
    assert store.take(submitted.sweep_id, submitted.cells[0].id, 0, "w1", "i1", 500).attempt == 1
    assert live_expiries(store.r)["w1"] - server_time(store.r) == pytest.approx(500, abs=2)


# A worker process whose wall clock is off by `shift` (libfaketime), taking a lease and then
# claiming what it thinks has expired; leases must follow Redis's clock, not its own.
SKEWED = """
import sys
import redis
from workers.shared.leases import Lease, claim_expired
client = redis.Redis.from_url(sys.argv[1], decode_responses=True)
Lease(client, "skewed", "s1").take({"backend": "cpu"}, takeover=False)
print(",".join(h.worker for h in claim_expired(client)))
"""


@pytest.mark.parametrize("shift", ["-60s", "+60s"])
def test_a_worker_with_its_clock_a_minute_off_keeps_to_redis_clock(
        submitted: Submitted, shift: str) -> None:
    client = submitted.store.r
    Lease(client, "steady", "t1").take({"backend": "cpu"}, takeover=False)  # live, 30 s left
    done = subprocess.run(["faketime", "-f", shift, sys.executable, "-c", SKEWED,
                           submitted.url], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""  # it declared no live worker dead
    left = {name: at - server_time(client) for name, at in live_expiries(client).items()}
    assert left["skewed"] == pytest.approx(IDLE_TTL_S, abs=5)  # neither expired at once nor long
    assert "steady" in left


def test_a_paused_worker_that_comes_back_finds_its_name_taken_and_stops(
        submitted: Submitted, tmp_path: Path) -> None:
    from celery.worker import state

    from workers.hooks.lease import CellLease
    from workers.shared.stores.local import LocalStore

    store, cell = submitted.store, submitted.cells[0].id
    first = Lease(store.r, "w1", "i1")
    first.take({"backend": "cpu", "host": "h1"}, takeover=False)
    first.hold(submitted.sweep_id, [cell], "task-1", 60)
    assert store.take(submitted.sweep_id, cell, 0, "w1", "i1", 60).attempt == 1
    first.renew(-1.0)  # paused past its lease
    second = Lease(store.r, "w1", "i2")
    held = second.take({"backend": "cpu", "host": "h2"}, takeover=False)  # expired: allowed
    assert held is not None and held.cells == [cell]
    hook = CellLease(store, first, LocalStore(tmp_path), 0, 0)
    state.should_stop = None
    try:
        hook.regain()  # the first comes back
        assert state.should_stop  # it stops ...
    finally:
        state.should_stop = None
    assert store.r.hget(redis_keys.worker("w1"), "instance") == "i2"  # ... and the name stays
    with pytest.raises(NameTaken):
        first.take({}, takeover=False)


def test_a_name_taken_back_first_settles_the_cells_it_held(submitted: Submitted,
                                                           tmp_path: Path) -> None:
    from workers.hooks.lease import CellLease
    from workers.shared.stores.local import LocalStore

    store, cell = submitted.store, submitted.cells[0].id
    lease = Lease(store.r, "w1", "i1")
    lease.take({"backend": "cpu"}, takeover=False)
    lease.hold(submitted.sweep_id, [cell], "task-1", 60)
    assert store.take(submitted.sweep_id, cell, 0, "w1", "i1", 60).attempt == 1
    lease.renew(-1.0)  # expired, and no reaper has claimed it yet
    CellLease(store, lease, LocalStore(tmp_path), 0, 0).regain()
    state = store.state(submitted.sweep_id, cell)
    assert state is not None and state.status == "queued"  # not `running` under no one
    assert "queued again" in (state.reason or "")
    assert live_expiries(store.r)["w1"] > server_time(store.r)  # and it holds its name again
