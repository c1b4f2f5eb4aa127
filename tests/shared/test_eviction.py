"""A Redis whose maxmemory-policy can evict is refused, in one sentence naming the setting, by
every coordinator command that writes and by a worker at start-up; noeviction runs as before."""

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from runner.demo.local_fleet import LocalFleet
from runner.demo.redis_server import RedisServer
from tests.support.fleet import Target, arms, cli, fleet_settings, sweep_file
from tests.support.waits import eventually
from workers.shared.eviction import policy
from workers.shared.redis_keys import WORKERS
from workers.shared.settings import Settings

pytestmark = pytest.mark.integration

EVICTING = ("--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru")
WORKER_START_S = 60.0


@pytest.fixture
def evicting(tmp_path: Path) -> Iterator[tuple[RedisServer, Settings]]:
    with RedisServer(tmp_path / "redis", args=EVICTING) as server:
        yield server, fleet_settings(tmp_path / "fleet", server.url)


def _sentence(server: RedisServer, found: str = "allkeys-lru") -> str:
    return (f"benchfleet: Redis at 127.0.0.1:{server.port} evicts keys (maxmemory-policy "
            f"{found}): benchfleet's sweeps and queues would be lost silently; set "
            "maxmemory-policy noeviction (redis-cli CONFIG SET maxmemory-policy noeviction, "
            "and in redis.conf)\n")


def test_writing_commands_refuse_an_evicting_redis_and_run_on_noeviction(
        evicting: tuple[RedisServer, Settings], target: Target, tmp_path: Path) -> None:
    server, settings = evicting
    path = sweep_file(tmp_path, {
        "name": "evicted", "target": {"repo": str(target.repo), "commits": "main"},
        "models": ["tinymoe-a3"], "backends": {"nobody": {"build": "tinymoe-build"}},
        "arms": arms("gather"), "n": 1})
    client = redis.Redis.from_url(server.url, decode_responses=True)
    for args in (["submit", str(path)], ["rerun", "any", "--failed"], ["cancel", "any"],
                 ["restore", "any"]):
        done = cli(settings, *args)
        assert (done.returncode, done.stderr) == (2, _sentence(server)), args
    assert client.keys("*") == []  # nothing saved, nothing queued

    client.config_set("maxmemory-policy", "noeviction")
    done = cli(settings, "submit", "--wait-for-worker", str(path))  # nobody serves it
    assert done.returncode == 0, done.stderr
    sweep_id = done.stdout.strip().splitlines()[-1]
    assert cli(settings, "cancel", sweep_id).returncode == 0


def test_a_worker_refuses_to_start_on_an_evicting_redis_and_starts_on_noeviction(
        evicting: tuple[RedisServer, Settings], tmp_path: Path) -> None:
    server, settings = evicting
    logs = tmp_path / "logs"
    fleet = LocalFleet(settings, logs)
    try:
        refused = fleet.start("cpu", "evicted")
        assert refused.wait(timeout=WORKER_START_S) == 2
        log = (logs / "worker-evicted-cpu.log").read_text()
        assert log == _sentence(server), log

        client = redis.Redis.from_url(server.url, decode_responses=True)
        client.config_set("maxmemory-policy", "noeviction")
        started = fleet.start("cpu", "kept")
        eventually(lambda: client.zscore(WORKERS, "kept") is not None or started.poll(),
                   WORKER_START_S, "the worker to lease its name")
        assert started.poll() is None, (logs / "worker-kept-cpu.log").read_text()
    finally:
        fleet.stop()


@pytest.mark.parametrize("found", ["volatile-lru", "allkeys-lfu", "allkeys-random"])
def test_every_evicting_policy_is_named_and_config_renamed_falls_back_to_info(
        tmp_path: Path, found: str) -> None:
    hidden = ("--rename-command", "CONFIG", "")  # as managed Redis services do
    with RedisServer(tmp_path / "redis", args=(*EVICTING[:2], "--maxmemory-policy", found,
                                               *hidden)) as server:
        client = redis.Redis.from_url(server.url, decode_responses=True)
        with pytest.raises(redis.ResponseError):
            client.config_get("maxmemory-policy")
        assert policy(client) == found
        settings = fleet_settings(tmp_path / "fleet", server.url)
        done = cli(settings, "cancel", "any")
    assert (done.returncode, done.stderr) == (2, _sentence(server, found))
