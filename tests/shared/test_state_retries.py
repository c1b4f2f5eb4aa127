"""A worker's call to Redis whose reply is lost (Redis restarted, the link cut) is retried
(workers/hooks/lease.py); the take and finish scripts must answer a retry as they answered the
first call, or the cell stays `running` under a live worker that dropped it."""

from pathlib import Path

import pytest

from runner.demo.redis_server import RedisServer
from runner.demo.target_repo import make_target_repo
from tests.support.fleet import fleet_settings, submit, sweep_file
from workers.shared.leases import Lease
from workers.shared.state import Store

pytestmark = pytest.mark.integration


def test_a_retried_take_and_finish_answer_as_the_first_did(tmp_path: Path) -> None:
    repo = tmp_path / "target"
    make_target_repo(repo)
    with RedisServer(tmp_path / "redis") as server:
        settings = fleet_settings(tmp_path, server.url)
        spec = {"name": "retried", "target": {"repo": str(repo), "commits": "main"},
                "models": ["tinymoe-a3"], "backends": {"cpu": {"build": "tinymoe-build"}},
                "arms": [{"name": "a", "recipe": "tinymoe-bench-decode", "baseline": True}], "n": 3}
        sweep_id = submit(settings, sweep_file(tmp_path, spec), "--wait-for-worker")
        store = Store.connect(server.url)
        Lease(store.r, "w1", "i1").take({"backend": "cpu"}, takeover=False)
        cell = sorted(store.states(sweep_id))[0]
        first = store.take(sweep_id, cell, 0, "w1", "i1", 60)
        again = store.take(sweep_id, cell, 0, "w1", "i1", 60)
        assert (first.attempt, again.attempt) == (1, 1)
        Lease(store.r, "w2", "i2").take({"backend": "cpu"}, takeover=False)
        other = store.take(sweep_id, cell, 0, "w2", "i2", 60)  # a duplicate elsewhere: refused
        assert other.attempt is None and "leased by live worker w1" in (other.why_not or "")
        assert store.finish(sweep_id, cell, "w1", "i1", 1, "done", None, 60)[0]
        assert store.finish(sweep_id, cell, "w1", "i1", 1, "done", None, 60)[0]
        assert not store.finish(sweep_id, cell, "w2", "i2", 1, "done", None, 60)[0]
        assert not store.take(sweep_id, cell, 0, "w1", "i1", 60).attempt  # final: a replay
        done = [e for e in store.log(sweep_id) if e["cell"] == cell and e["status"] == "done"]
        assert len(done) == 1
