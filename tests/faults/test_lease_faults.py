"""Leases under the faults that strand cells: a worker whose clock is a minute off, and a
paused worker whose name another took meanwhile. Leases run on Redis's clock, so neither a
slow nor a fast clock expires a healthy lease; a worker that lost its name stops and never
takes it back from a live one."""

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.faults.harness import lab
from tests.support.waits import eventually
from workers.shared import redis_keys
from workers.shared.leases import live_expiries

pytestmark = pytest.mark.integration
LONG = {"prompt_tokens": 64, "max_tokens": 160}  # a few seconds of real decoding


def skewed(shift: str) -> tuple[str, ...]:
    """Run a worker with its wall clock `shift` off (libfaketime). Its monotonic clock moves
    by the same offset, so the timeouts it measures stay true (keeping monotonic unfaked
    breaks Python's sleep under libfaketime 0.9.10: EINVAL)."""
    return ("faketime", "-f", shift)


def _attempts(lab_, sweep_id: str) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return {c: s.attempt or 0 for c, s in lab_.store.states(sweep_id).items()}


def test_a_worker_a_minute_behind_finishes_every_cell_once(tmp_path: Path,
                                                           matrix: list[dict]) -> None:
    with lab(tmp_path) as lab_:
        lab_.fleet.start("cpu", "behind", wrap=skewed("-60s"))
        sweep_id = lab_.sweep("behind", n=8)
        took = lab_.wait(sweep_id)
        lab_.verify(sweep_id)
        assert {s.status for s in lab_.store.states(sweep_id).values()} == {"done"}
        assert set(_attempts(lab_, sweep_id).values()) == {1}  # none expired and redone
    matrix.append({"fault": "a worker whose clock is 60 s behind (libfaketime)", "outcome":
                   "leases follow Redis's clock: all 8 cells done at their first attempt",
                   "recovery_s": None, "sweep_s": round(took, 1)})


def test_a_worker_a_minute_ahead_declares_no_healthy_worker_dead(tmp_path: Path,
                                                                 matrix: list[dict]) -> None:
    with lab(tmp_path) as lab_:
        # The fast one serves another backend: idle, its tick reaps every 10 s while the
        # steady one measures cells longer than their lease would last on the fast clock.
        lab_.fleet.start("cuda", "ahead", wrap=skewed("+60s"))
        lab_.fleet.start("cpu", "steady")
        sweep_id = lab_.sweep("ahead", params=LONG, n=4)
        took = lab_.wait(sweep_id)
        lab_.verify(sweep_id)
        assert set(_attempts(lab_, sweep_id).values()) == {1}  # no measurement thrown away
        lost = [e for e in lab_.store.log(sweep_id) if "lost its lease" in str(e.get("reason"))]
        assert lost == []
    matrix.append({"fault": "a worker whose clock is 60 s ahead (libfaketime), reaping",
                   "outcome": "it declares no live worker dead; every cell measured once",
                   "recovery_s": None, "sweep_s": round(took, 1)})


def test_a_paused_worker_finds_its_name_taken_and_exits(tmp_path: Path,
                                                        matrix: list[dict]) -> None:
    with lab(tmp_path) as lab_:
        on = {h: lab_.settings.model_copy(update={"host": h, "host_lock": tmp_path / f"{h}.lock"})
              for h in ("h1", "h2")}
        first = lab_.fleet.start("cpu", "twin", settings=on["h1"])
        client = lab_.store.r
        eventually(lambda: "twin" in live_expiries(client), 60, "the first twin registers")
        os.kill(first.pid, signal.SIGSTOP)  # paused past its lease (30 s while idle)
        eventually(lambda: "twin" not in live_expiries(client), 60, "its lease runs out")
        second = lab_.fleet.start("cpu", "twin", settings=on["h2"])
        eventually(lambda: client.hget(redis_keys.worker("twin"), "host") == "h2"
                   and "twin" in live_expiries(client), 60, "the second twin registers")
        sweep_id = lab_.sweep("twins", n=4)
        woke = time.monotonic()
        os.kill(first.pid, signal.SIGCONT)
        try:
            first.wait(timeout=60)  # it finds the name taken and stops
        except subprocess.TimeoutExpired:
            pytest.fail("the paused worker came back and kept running beside its twin")
        exited_s = time.monotonic() - woke
        lab_.wait(sweep_id)
        lab_.verify(sweep_id)
        assert second.poll() is None
        assert client.hget(redis_keys.worker("twin"), "host") == "h2"  # never flipped back
        log = (lab_.root / "logs" / "worker-twin-cpu.log").read_text()
        assert "already runs on host h2" in log and "this worker stops" in log
    matrix.append({"fault": "two workers of one name on two hosts, the first paused past its "
                   "lease (SIGSTOP), then woken", "outcome": "the second takes the expired "
                   "name; the first, woken, finds it taken and exits; the sweep finishes",
                   "recovery_s": round(exited_s, 1)})
