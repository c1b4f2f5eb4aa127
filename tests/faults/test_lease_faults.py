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

from tests.faults.harness import descendants_gone, lab, wait_for_command
from tests.support.waits import eventually
from workers.shared import redis_keys
from workers.shared.leases import IDLE_RENEW_S, live_expiries

pytestmark = pytest.mark.integration
LONG = {"prompt_tokens": 64, "max_tokens": 160}  # a few seconds of real decoding


def skewed(shift: str) -> tuple[str, ...]:
    """Run a worker with its wall clock `shift` off (libfaketime). Its monotonic clock moves
    by the same offset, so the timeouts it measures stay true (keeping monotonic unfaked
    breaks Python's sleep under libfaketime 0.9.10: EINVAL). The library is preloaded through
    `env`, which execs the worker: the `faketime` command forks it instead, and the fleet's
    SIGTERM then ended `faketime` alone, leaving the worker running."""
    found = sorted(Path("/usr/lib").glob("*/faketime/libfaketime.so.1"))
    if not found:
        pytest.skip("libfaketime is not installed (apt-get install faketime)")
    return ("env", f"LD_PRELOAD={found[0]}", f"FAKETIME={shift}")


def _attempts(lab_, sweep_id: str) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return {c: s.attempt or 0 for c, s in lab_.store.states(sweep_id).items()}


def _ticks(client, name: str, seen: int):  # type: ignore[no-untyped-def]
    """True once `name` has renewed its lease `seen` times from now (its `seen` field moves
    at every tick)."""
    values = set()
    while True:
        values.add(client.hget(redis_keys.worker(name), "seen"))
        yield len(values) >= seen


def test_a_worker_a_minute_behind_finishes_every_cell_once(tmp_path: Path,
                                                           matrix: list[dict]) -> None:
    with lab(tmp_path) as lab_:
        # A second worker, with a true clock and another backend, reaps while idle: it is
        # the one that would find the slow one's leases expired the moment they are written.
        lab_.fleet.start("cuda", "reaper")
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
        client = lab_.store.r
        eventually(lambda: {"ahead", "steady"} <= set(live_expiries(client)), 60, "both live")
        # Two of the fast one's ticks with the steady one idle (its idle lease, 30 s, ends
        # before the fast clock's "now"), then cells longer than a tick.
        first_seen = client.hget(redis_keys.worker("steady"), "started")
        ticks = _ticks(client, "ahead", 3)
        eventually(lambda: next(ticks), 4 * IDLE_RENEW_S, "the fast worker ticks twice")
        sweep_id = lab_.sweep("ahead", params=LONG, n=4)
        took = lab_.wait(sweep_id)
        lab_.verify(sweep_id)
        assert set(_attempts(lab_, sweep_id).values()) == {1}  # no measurement thrown away
        lost = [e for e in lab_.store.log(sweep_id) if "lost its lease" in str(e.get("reason"))]
        assert lost == []
        # Never declared dead: the steady one still holds the lease it registered.
        assert client.hget(redis_keys.worker("steady"), "started") == first_seen
        log = (lab_.root / "logs" / "worker-steady-cpu.log").read_text()
        assert "lost its lease" not in log and "lease expired" not in log, log[-2000:]
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


def test_a_worker_paused_mid_cell_past_its_lease_never_replaces_the_accepted_attempt(
        tmp_path: Path, matrix: list[dict]) -> None:
    with lab(tmp_path) as lab_:
        stale = lab_.fleet.start("cpu", "stale")
        sweep_id = lab_.sweep("stale", params=LONG, n=1)
        wait_for_command(stale.pid, "--prompt-tokens")
        (held,) = [c for c, s in lab_.store.states(sweep_id).items() if s.status == "running"]
        os.kill(stale.pid, signal.SIGSTOP)  # its lease: the command's timeout and a slack
        paused = time.monotonic()
        # On another host: the paused worker's command still holds this host's lock.
        elsewhere = lab_.settings.model_copy(update={"host": "h2",
                                                     "host_lock": tmp_path / "h2.lock"})
        lab_.fleet.start("cpu", "rescuer", settings=elsewhere)
        lab_.wait(sweep_id, lambda s: s[held] == "done")
        recovered_s = time.monotonic() - paused
        os.kill(stale.pid, signal.SIGCONT)  # it finishes its attempt 1, late
        log = lab_.root / "logs" / "worker-stale-cpu.log"
        eventually(lambda: "was not accepted" in log.read_text(), 60,
                   "the stale worker's finish is refused")
        state = lab_.store.state(sweep_id, held)
        assert state is not None and state.attempt == 2
        lab_.verify(sweep_id)  # accepted.json names attempt 2, as Redis does
    matrix.append({"fault": "a worker paused mid-cell past its lease (SIGSTOP), then woken",
                   "outcome": "the cell is measured again elsewhere (attempt 2); the stale "
                   "attempt's finish is refused and accepted.json keeps attempt 2",
                   "recovery_s": round(recovered_s, 1)})


def test_a_skewed_worker_stops_with_its_fleet(tmp_path: Path) -> None:
    with lab(tmp_path) as lab_:
        lab_.fleet.start("cpu", "behind", wrap=skewed("-60s"))
        client = lab_.store.r
        eventually(lambda: "behind" in live_expiries(client), 60, "the skewed worker is live")
        pid = int(client.hget(redis_keys.worker("behind"), "pid"))
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert b"FAKETIME=-60s" in environ and any(
            v.startswith(b"LD_PRELOAD=") and b"libfaketime" in v for v in environ), environ
        lab_.fleet.stop()
    # Before: the fleet signalled a `faketime` that forks its command; the worker lived on.
    assert descendants_gone([pid]), f"worker {pid} outlived its fleet"
