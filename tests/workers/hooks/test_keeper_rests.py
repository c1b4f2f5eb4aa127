"""The hooks that wait before a command rest the worker's keeper (workers/descendants.py) for
the whole wait, since another worker's command may be measured meanwhile: the idle gate for
every reading, the host lease while another worker holds it; and neither rests it when it
does not wait, nor while the command runs."""

import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.cells import Submitted, python_command
from tests.workers.hooks.test_host_lease import HOLDER
from workers import descendants
from workers.hooks import Runs, idle_gate
from workers.hooks.host_lease import HostLease
from workers.hooks.idle_gate import GateConfig, IdleGate


class Rests:
    """Stands in for descendants.resting: counts the rests and says whether one is on."""

    def __init__(self) -> None:
        self.on, self.count = False, 0

    @contextmanager
    def __call__(self) -> Iterator[None]:
        self.on, self.count = True, self.count + 1
        try:
            yield
        finally:
            self.on = False

    def proceed(self, ran: list[bool]) -> Callable[[], Runs]:
        """The command: it notes whether a rest was on while it ran."""
        def run() -> Runs:
            ran.append(self.on)
            return ()
        return run


@pytest.fixture
def rests(monkeypatch: pytest.MonkeyPatch) -> Rests:
    fake = Rests()
    monkeypatch.setattr(descendants, "resting", fake)
    return fake


def test_the_idle_gate_rests_the_keeper_for_every_reading(
        submitted: Submitted, tmp_path: Path, rests: Rests,
        monkeypatch: pytest.MonkeyPatch) -> None:
    readings: list[bool] = []

    def load1() -> float:
        readings.append(rests.on)
        return 1.0

    monkeypatch.setattr(idle_gate, "load1", load1)
    ran: list[bool] = []
    hook = IdleGate(GateConfig(threshold=0.5, max_wait_s=0.1, gap_s=300.0, interval_s=0.02))
    hook.around_command(submitted.attempt(), python_command(tmp_path, ""),
                        rests.proceed(ran))
    assert len(readings) >= 2 and all(readings), readings
    assert ran == [False] and rests.count == 1


def test_the_host_lease_rests_the_keeper_only_while_another_worker_holds_it(
        submitted: Submitted, tmp_path: Path, rests: Rests) -> None:
    path = tmp_path / "host.lock"
    command = python_command(tmp_path / "runs", "pass", timeout_s=60.0)
    ran: list[bool] = []
    HostLease(path, "w1", 5.0, lambda s: None).around_command(
        submitted.attempt(), command, rests.proceed(ran))
    assert rests.count == 0  # free: no wait, no rest
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"

    def keep_alive(seconds: float) -> None:
        assert holder.stdin is not None
        holder.stdin.close()  # the holder's command ends: the waiter gets its turn

    HostLease(path, "w1", 5.0, keep_alive).around_command(
        submitted.attempt(), command, rests.proceed(ran))
    holder.wait(timeout=30)
    assert rests.count == 1 and ran == [False, False]
