"""A command cannot read its worker's environment or memory (the Redis password is there):
the worker is not dumpable, so /proc/WORKER/environ and mem are closed to processes of its own
user. Root reads them all the same (CAP_SYS_PTRACE), so here the worker and its commands run
as root without any capability: the same user, as /proc sees it, and nothing more."""

from pathlib import Path

import pytest

from tests.support.fleet import wait
from tests.trust.conftest import PASSWORD, trust_fleet

pytestmark = pytest.mark.integration

SAME_USER_ONLY = ("setpriv", "--inh-caps=-all", "--bounding-set=-all", "--")


def test_a_command_cannot_read_its_workers_environ_or_memory(tmp_path: Path) -> None:
    with trust_fleet(tmp_path, [("cpu", "sealed")], wrap=SAME_USER_ONLY) as fleet:
        sweep_id = fleet.submit(fleet.sweep_file(
            "peek", backends={"cpu": {"build": "peek-build"}}))
        wait(fleet.store, sweep_id)
        assert {s.status for s in fleet.store.states(sweep_id).values()} == {"done"}
        (peek,) = (Path(fleet.settings.artifacts) / sweep_id).glob(
            "*/attempt-*/build/peek.stdout.txt")
        seen = peek.read_text()
        worker = fleet.workers.procs["sealed/cpu"]
        assert f"parent {worker.pid}\n" in seen, seen  # it peeked at the worker itself
        assert "environ refused" in seen and "mem refused" in seen, seen
        assert PASSWORD not in seen and "BENCHFLEET_REDIS_URL" not in seen
