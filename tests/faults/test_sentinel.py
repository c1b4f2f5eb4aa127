"""Redis through Sentinel: a primary, a replica and three sentinels; the primary killed
mid-sweep, the replica promoted, and every sweep ends with each cell measured once. And the
eviction check, asked of the primary the sentinels name; and a write that waits for the
replica."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from runner.demo.local_fleet import settings_env
from tests.faults.harness import Lab, lab_on, wait_for_command
from tests.support.fleet import cli, fleet_settings
from tests.support.sentinel import SERVICE, SentinelGroup
from tests.support.waits import eventually
from workers.shared import redis_keys
from workers.shared.leases import Lease
from workers.shared.queues import backend_queue
from workers.shared.redis_client import REPLICA_WAIT_MS, connect
from workers.shared.stores.local import LocalStore

pytestmark = pytest.mark.integration
# The longest a failover may take here: down after 1 s, then a vote and a promotion.
FAILOVER_S = 20.0
# The longest any one step of the sweeps may take (the test passes in about 35 s).
STEP_S = 40.0
VERY_LONG = {"prompt_tokens": 64, "max_tokens": 4000}  # decodes until it is cancelled
# About a second a cell here: the sweep outlasts a `status --watch` starting on a loaded host.
LONGER = {"prompt_tokens": 16, "max_tokens": 600}
# A cancel heard on the control line lands in a second or two; asked between commands, never.
CANCEL_S = 15.0


def test_primary_killed_mid_sweep_fails_over_losing_nothing(tmp_path: Path,
                                                            matrix: list[dict]) -> None:
    with SentinelGroup(tmp_path / "redis", password="s3cret") as group, \
            lab_on(tmp_path, group.primary, group.url) as lab_:
        worker = lab_.fleet.start("cpu", "w1")
        # Submitted through the sentinels: one running when the primary dies, one queued.
        running = lab_.sweep("running", n=3, arms=2, params=LONGER)
        queued = lab_.sweep("queued", n=2)
        # Watching from the start: on a loaded host the sweep's last cells could otherwise
        # end before a watch started later subscribes.
        watching = subprocess.Popen(
            [sys.executable, "-m", "runner.cli", "status", "--watch", running],
            env={**os.environ, **settings_env(lab_.settings)}, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # follows the sweep through it
        events = redis_keys.sweep(running, "events")
        eventually(lambda: lab_.store.r.pubsub_numsub(events)[0][1] == 1, STEP_S,
                   "`status --watch` listens to the sweep's events")
        lab_.wait(running, lambda s: sum(v == "done" for v in s.values()) >= 2, STEP_S)
        done_before = _done(lab_, running)
        killed_at = time.monotonic()
        old = group.primary_port()
        assert group.primary.proc is not None
        os.kill(group.primary.proc.pid, signal.SIGKILL)
        group.primary.proc.wait()
        eventually(lambda: group.primary_port() not in (None, old), FAILOVER_S,
                   "the sentinels promote the replica")
        failover_s = time.monotonic() - killed_at
        eventually(lambda: _done(lab_, running) > done_before, STEP_S, "a cell done after it")
        recovered_s = time.monotonic() - killed_at
        # The new primary serves the coordinator (submit, cancel) and the worker: its Celery
        # consumer, the message guard on the reconnected channel, and its control line.
        lab_.store.r.lpush(backend_queue("cpu"), "junk")
        after = lab_.sweep("after", n=1, params=VERY_LONG)
        for sweep_id in (running, queued):
            lab_.wait(sweep_id, deadline_s=STEP_S)
            _measured_once(lab_, sweep_id)
        out, err = watching.communicate(timeout=STEP_S)
        assert watching.returncode == 0 and "6/6 cells" in out, out + err
        wait_for_command(worker.pid, f"{VERY_LONG['max_tokens']}", STEP_S)
        asked = time.monotonic()
        assert cli(lab_.settings, "cancel", after).returncode == 0
        lab_.wait(after, deadline_s=CANCEL_S)
        assert time.monotonic() - asked < CANCEL_S
        (state,) = lab_.store.states(after).values()
        assert state.reason == "cancelled while measure ran", state
        assert worker.poll() is None
        assert [r["why"][:40] for r in lab_.store.refused()] == [
            "a message on benchfleet.backend.cpu is n"]
        print(f"failover in {failover_s:.1f} s; a cell done {recovered_s:.1f} s after the kill")
    matrix.append({"fault": "the Redis primary SIGKILLed mid-sweep (Sentinel: one replica, "
                   "three sentinels)", "outcome": "the replica promoted; the worker, its Celery "
                   "consumer and the coordinator (`status --watch` too) followed it; the "
                   "running and the queued sweep ended with every cell measured once (attempt "
                   "1); a cancel after it landed mid-command",
                   "recovery_s": round(recovered_s, 1)})


def _done(lab_: Lab, sweep_id: str) -> int:
    return sum(s.status == "done" for s in lab_.store.states(sweep_id).values())


def _measured_once(lab_: Lab, sweep_id: str) -> None:
    """Every cell done, at its first attempt, with one attempt in the artifact store."""
    lab_.verify(sweep_id)
    states = lab_.store.states(sweep_id)
    assert all(s.status == "done" and s.attempt == 1 for s in states.values()), states
    artifacts = LocalStore(Path(lab_.settings.artifacts))
    stored = {cell: artifacts.attempts(sweep_id, cell) for cell in states}
    assert all(attempts == [1] for attempts in stored.values()), stored


def test_an_evicting_primary_found_through_sentinel_is_refused(tmp_path: Path) -> None:
    with SentinelGroup(tmp_path / "redis", primary_args=(
            "--maxmemory-policy", "allkeys-lru")) as group:
        settings = fleet_settings(tmp_path, group.url)
        refused = cli(settings, "cancel", "nosuchsweep")
    assert refused.returncode != 0
    assert "Traceback" not in refused.stderr, refused.stderr
    assert f"the primary of Sentinel service {SERVICE}) evicts keys (maxmemory-policy " \
           "allkeys-lru)" in refused.stderr, refused.stderr


def test_a_write_waits_for_the_replica_and_goes_on_warned_without_one(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with SentinelGroup(tmp_path / "redis") as group:
        lease = Lease(connect(group.url, decode_responses=True), "w1", "first")
        lease.take({"host": "h1"}, takeover=False)
        replica = redis.Redis(port=group.replica.port, decode_responses=True)
        assert replica.hget(redis_keys.worker("w1"), "instance") == "first"
        assert group.replica.proc is not None
        os.kill(group.replica.proc.pid, signal.SIGSTOP)  # connected, but confirms nothing
        try:
            started = time.monotonic()
            lease.renew(30)  # WAIT on the connection that wrote: it waits for the replica
            waited = time.monotonic() - started
            lease.renew(30)  # alone: unconfirmed, at once
            again = time.monotonic() - started - waited
        finally:
            os.kill(group.replica.proc.pid, signal.SIGCONT)
    assert waited >= REPLICA_WAIT_MS / 1000 and again < REPLICA_WAIT_MS / 1000, (waited, again)
    assert f"no replica of Sentinel service {SERVICE} confirmed a write" in caplog.text
