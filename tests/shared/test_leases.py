"""Worker leases: a name is held by one live instance; a lease that ran out is claimed once, and
the claimed worker's held cells come back with it; a worker declared dead cannot renew."""

import pytest
import redis

from tests.support.cells import Submitted
from workers.shared import redis_keys
from workers.shared.leases import Lease, LeaseLost, NameTaken, claim_expired, live_offers


def test_a_live_name_is_refused_to_a_second_instance(submitted: Submitted) -> None:
    client = submitted.store.r
    Lease(client, "w1", "i1").take({"backend": "cpu", "host": "h1"}, takeover=False)
    with pytest.raises(NameTaken, match="already runs on host h1; give this one another --name"):
        Lease(client, "w1", "i2").take({"backend": "cpu", "host": "h2"}, takeover=False)


def test_a_takeover_hands_back_what_the_predecessor_held(submitted: Submitted) -> None:
    client = submitted.store.r
    old = Lease(client, "w1", "i1")
    old.take({"backend": "cpu"}, takeover=False)
    old.hold(submitted.sweep_id, ["c1", "c2"], "task-1")
    held = Lease(client, "w1", "i2").take({"backend": "cpu"}, takeover=True)
    assert held is not None and (held.instance, held.cells) == ("i1", ["c1", "c2"])
    with pytest.raises(LeaseLost):
        old.renew(30.0)  # the name is another instance's now


def test_an_expired_lease_is_claimed_once_and_cannot_renew(submitted: Submitted) -> None:
    client: redis.Redis = submitted.store.r
    lease = Lease(client, "w1", "i1")
    lease.take({"backend": "cpu"}, takeover=False)
    lease.hold(submitted.sweep_id, ["c1"], "task-1")
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
