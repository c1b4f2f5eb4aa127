"""Celery remote control, as anyone who can write to Redis would use it: inspection answers,
every other command is refused, and the worker keeps serving its queues."""

import json
import time
from collections.abc import Iterator

import pytest

from tests.support.fleet import wait
from tests.trust.conftest import DEADLINE_S, PASSWORD, Fleet, trust_fleet
from workers.app import create_app

# Commands that would stop, reshape or silence a worker; each with the arguments it takes.
WRITES = {"shutdown": {}, "pool_restart": {"reload": True}, "pool_grow": {"n": 2},
          "autoscale": {"max": 4, "min": 1}, "add_consumer": {"queue": "attacker"},
          "cancel_consumer": {"queue": "benchfleet.backend.cpu"},
          "rate_limit": {"task_name": "benchfleet.run_group", "rate_limit": "1/h"},
          "time_limit": {"task_name": "benchfleet.run_group", "hard": 1},
          "revoke": {"task_id": "x"}, "enable_events": {}, "conf": {}}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    with trust_fleet(tmp_path_factory.mktemp("control"), [("cpu", "ctl")]) as fleet:
        yield fleet


def test_write_commands_are_refused_and_the_worker_keeps_working(fleet: Fleet) -> None:
    app = create_app(fleet.settings)
    deadline = time.monotonic() + DEADLINE_S
    while not app.control.inspect(timeout=1, limit=1).ping():
        assert time.monotonic() < deadline, "the worker never answered ping"
    app.control.broadcast("shutdown")  # fire and forget, as an attacker would
    for command, arguments in WRITES.items():
        replies = app.control.broadcast(command, arguments=arguments, reply=True, timeout=5,
                                          limit=1)
        assert len(replies) == 1, (command, replies)
        (answer,) = replies[0].values()
        assert answer == {"error": f"remote control command {command!r} refused: benchfleet "
                                   "workers answer only active_queues, ping, registered, "
                                   "stats"}, command

    inspect = app.control.inspect(timeout=5, limit=1)
    (pong,) = inspect.ping().values()
    assert pong == {"ok": "pong"}
    (queues,) = inspect.active_queues().values()
    assert "attacker" not in {q["name"] for q in queues}
    assert "benchfleet.backend.cpu" in {q["name"] for q in queues}
    (registered,) = inspect.registered().values()
    assert registered == ["benchfleet.run_group"]
    (stats,) = inspect.stats().values()
    assert stats["broker"].get("password") in (None, "***")
    assert PASSWORD not in json.dumps(stats)

    worker = next(iter(fleet.workers.procs.values()))
    assert worker.poll() is None, "the worker did not shut down"
    sweep_id = fleet.submit(fleet.sweep_file("after-control"))
    wait(fleet.store, sweep_id)
    assert {s.status for s in fleet.store.states(sweep_id).values()} == {"done"}

    refused = fleet.reported(lambda r: "remote control command" in r["why"], len(WRITES) + 1)
    assert {r["why"].split("'")[1] for r in refused} == set(WRITES)
    hosts = fleet.cli("hosts")
    assert "remote control command" in hosts.stdout and "refused" in hosts.stdout
