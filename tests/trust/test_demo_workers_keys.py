"""The demo's workers (and every LocalFleet the tests start) hold the verify key only: a command
can read its worker's /proc/PID/environ, so a worker holding the signing key could sign work."""

from pathlib import Path

import pytest

from runner.demo.local_fleet import LocalFleet
from runner.demo.redis_server import RedisServer
from tests.support.fleet import fleet_settings
from tests.support.waits import eventually

pytestmark = pytest.mark.integration


def test_a_local_worker_never_gets_the_signing_key(tmp_path: Path, redis_server: RedisServer,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    settings = fleet_settings(tmp_path, redis_server.url)
    assert settings.signing_key is not None  # the coordinator's settings, as the demo has them
    monkeypatch.setenv("BENCHFLEET_SIGNING_KEY", str(settings.signing_key))  # and its shell
    workers = LocalFleet(settings, tmp_path / "logs")
    try:
        proc = workers.start("cpu", "keyless")
        # Empty until the child has exec'd the worker (Popen may return a moment before).
        environ = eventually(lambda: Path(f"/proc/{proc.pid}/environ").read_bytes(), 30,
                             "the worker's environment in /proc")
        names = {pair.split(b"=", 1)[0].decode() for pair in environ.split(b"\0") if pair}
    finally:
        workers.stop()
    assert "BENCHFLEET_VERIFY_KEY" in names and "BENCHFLEET_SIGNING_KEY" not in names
