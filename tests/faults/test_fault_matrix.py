"""The fault matrix: each fault a lab host meets, on real workers, Redis and git, ending with
every cell final, at most one accepted measurement per cell and generation, and every stored
artifact verifying against its sha256 (Lab.verify)."""

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from runner.demo.redis_server import RedisServer
from tests.faults.harness import Lab, descendants_gone, kill, lab, small_tmpfs, wait_for_command
from tests.support.fleet import cli
from tests.support.waits import eventually
from workers.shared.stores import get_json
from workers.shared.stores.local import LocalStore

pytestmark = pytest.mark.integration
LONG = {"prompt_tokens": 64, "max_tokens": 160}  # a few seconds of real decoding


def test_sigkill_mid_cell_is_measured_again_without_orphans(tmp_path: Path,
                                                            matrix: list[dict]) -> None:
    with lab(tmp_path) as lab_:
        victim = lab_.fleet.start("cpu", "victim")
        sweep_id = lab_.sweep("sigkill", params=LONG, n=2)
        children = wait_for_command(victim.pid, "--prompt-tokens")  # kill *during* a command
        (held,) = [c for c, s in lab_.store.states(sweep_id).items() if s.status == "running"]
        killed_at = time.monotonic()
        kill(victim)
        lab_.fleet.start("cpu", "rescuer")
        eventually(lambda: descendants_gone(children), 10, "no orphan outlives its worker")
        # Recovered when the killed cell runs again, as a second attempt (until its lease
        # expires it still reads "running", under the dead worker's name).
        lab_.wait(sweep_id, lambda _: lab_.store.state(sweep_id, held).attempt >= 2)
        recovered_s = time.monotonic() - killed_at
        lab_.wait(sweep_id)
        accepted = lab_.verify(sweep_id)
        states = lab_.store.states(sweep_id)
        assert all(s.status == "done" for s in states.values())
        assert any(a >= 2 for a in accepted.values())  # the killed attempt did not count
        # The killed attempt's folder was the victim's spare: the next worker of that name
        # removes it and makes its own (workers/staging.py); the rescuer's is beside it.
        staging = Path(lab_.settings.artifacts) / ".staging"
        assert any(n.endswith(".stdout.txt") for n in os.listdir(staging / "spare-victim"))
        lab_.fleet.start("cpu", "victim")
        eventually(lambda: sorted(os.listdir(staging / "spare-victim")) == [
            ".spare-out", ".spare-stderr", ".spare-stdout"], 30, "the victim's fresh spare")
        assert sorted(os.listdir(staging)) == ["spare-rescuer", "spare-victim"]
        matrix.append({"fault": "SIGKILL of a worker mid-cell", "outcome": "cell queued again "
                       "when the lease expired; measured by another worker; the killed "
                       "command died with its worker", "recovery_s": round(recovered_s, 1)})


# Decodes for far longer than a cancel may take to land.
VERY_LONG = {"prompt_tokens": 64, "max_tokens": 4000}


def test_cancel_mid_command_kills_it_at_once(tmp_path: Path, matrix: list[dict]) -> None:
    with lab(tmp_path) as lab_:
        worker = lab_.fleet.start("cpu", "w1")
        sweep_id = lab_.sweep("cancel", params=VERY_LONG, n=2)
        children = wait_for_command(worker.pid, "--prompt-tokens")  # cancel *during* it
        (held,) = [c for c, s in lab_.store.states(sweep_id).items() if s.status == "running"]
        asked = time.monotonic()
        done = cli(lab_.settings, "cancel", sweep_id, held)
        assert done.returncode == 0, done.stderr
        lab_.wait(sweep_id, lambda states: states[held] == "cancelled", deadline_s=30)
        cancelled_s = time.monotonic() - asked
        eventually(lambda: descendants_gone(children), 10, "the cancelled command is gone")
        state = lab_.store.state(sweep_id, held)
        assert state is not None and state.reason == "cancelled while measure ran"
        print(f"cancel landed in {cancelled_s:.2f} s")
        assert cancelled_s < 15, f"the cancel took {cancelled_s:.1f} s to land"
        matrix.append({"fault": "cancel of a cell mid-command", "outcome": "the worker's poll "
                       "woke on its control line; the command's process group was killed and "
                       "the cell ended cancelled", "recovery_s": round(cancelled_s, 1)})


def test_redis_restart_mid_sweep_loses_nothing(tmp_path: Path, matrix: list[dict]) -> None:
    with lab(tmp_path) as lab_:
        lab_.fleet.start("cpu", "w1")
        sweep_id = lab_.sweep("redis-restart", n=6)
        lab_.wait(sweep_id, lambda s: sum(v == "done" for v in s.values()) >= 2)
        lab_.server.stop()  # SIGTERM: Redis writes its AOF before it exits
        restarted = RedisServer(lab_.server.workdir, port=lab_.server.port).start()
        try:
            back = time.monotonic()
            count = _done(lab_, sweep_id)
            lab_.wait(sweep_id, lambda s: sum(v == "done" for v in s.values()) > count)
            resumed_s = time.monotonic() - back
            lab_.wait(sweep_id)
            lab_.verify(sweep_id)
            assert all(s.status == "done" for s in lab_.store.states(sweep_id).values())
        finally:
            restarted.stop()
        matrix.append({"fault": "Redis restarted (AOF on) mid-sweep", "outcome": "sweep, states "
                       "and attempt counters survive; workers reconnect and finish",
                       "recovery_s": round(resumed_s, 1)})


def test_transient_failure_is_retried_and_kept(tmp_path: Path, matrix: list[dict]) -> None:
    with lab(tmp_path) as lab_:
        lab_.fleet.start("cpu", "w1")
        sweep_id = lab_.sweep("flaky", recipe="flaky-bench", n=1)
        lab_.wait(sweep_id)
        lab_.verify(sweep_id)
        (state,) = lab_.store.states(sweep_id).values()
        assert state.status == "done" and state.attempt == 1
        (cell,) = lab_.store.sweep(sweep_id)[1]
        attempt = Path(lab_.settings.artifacts) / sweep_id / cell.id / "attempt-1"
        assert sorted(p.name for p in attempt.glob("measure*.stderr.txt")) == [
            "measure.stderr.txt", "measure.try2.stderr.txt", "measure.try3.stderr.txt"]
        matrix.append({"fault": "a command fails twice (exit 75, marked transient), then "
                       "succeeds", "outcome": "retried with backoff within the attempt; all "
                       "three tries' logs kept; n = 1 measured", "recovery_s": None})


def test_build_that_always_fails_builds_once(tmp_path: Path, matrix: list[dict]) -> None:
    with lab(tmp_path) as lab_:
        lab_.fleet.start("cpu", "w1")
        sweep_id = lab_.sweep("broken", build="broken-build", n=3, arms=2)
        lab_.wait(sweep_id)
        lab_.verify(sweep_id)
        states = lab_.store.states(sweep_id).values()
        assert {s.status for s in states} == {"failed"}
        assert {s.reason for s in states} == {"build failed: exited with code 101: "
                                              "error[E0425]: cannot find value `x`"}
        builds = list((Path(lab_.settings.workspace) / "builds").rglob("build.json"))
        assert len(builds) == 1  # one build for six cells: no retry storm
        rerun = cli(lab_.settings, "rerun", sweep_id, "--failed")
        assert rerun.returncode == 0 and "6 cells queued again" in rerun.stdout
        lab_.wait(sweep_id)
        assert {s.generation for s in lab_.store.states(sweep_id).values()} == {1}
        matrix.append({"fault": "a build that always fails", "outcome": "built once; every cell "
                       "of the group failed with the compiler's line; `rerun --failed` builds "
                       "again, once", "recovery_s": None})


def test_hanging_command_times_out_without_orphans(tmp_path: Path, matrix: list[dict]) -> None:
    with lab(tmp_path) as lab_:
        lab_.fleet.start("cpu", "w1")
        sweep_id = lab_.sweep("hang", recipe="hang", n=1)
        took = lab_.wait(sweep_id)
        lab_.verify(sweep_id)
        (state,) = lab_.store.states(sweep_id).values()
        assert state.status == "timed_out" and "timed out after 3 s" in (state.reason or "")
        (cell,) = lab_.store.sweep(sweep_id)[1]
        pid_file = (Path(lab_.settings.artifacts) / sweep_id / cell.id / "attempt-1" / "out"
                    / "child.pid")
        assert descendants_gone([int(pid_file.read_text())])
        matrix.append({"fault": "a command that hangs past its timeout", "outcome": "its whole "
                       "process group killed at the timeout; cell timed_out, no orphan",
                       "recovery_s": round(took, 1)})


def test_full_artifact_store_fails_cells_with_the_reason(tmp_path: Path,
                                                         matrix: list[dict]) -> None:
    with small_tmpfs(tmp_path / "small") as store, lab(tmp_path, artifacts=store) as lab_:
        sweep_id = lab_.sweep("full", n=2)  # submit stores the spec; then the disk fills
        (store / "filler").write_bytes(b"\0" * (60_000 - _used(store)))
        lab_.fleet.start("cpu", "w1")
        lab_.wait(sweep_id)
        states = lab_.store.states(sweep_id).values()
        assert {s.status for s in states} == {"failed"}
        assert all("No space left on device" in (s.reason or "") for s in states), states
        (store / "filler").unlink()
        subprocess.run(["mount", "-o", "remount,size=64m", str(store)], check=True)
        assert cli(lab_.settings, "rerun", sweep_id, "--failed").returncode == 0
        lab_.wait(sweep_id)
        lab_.verify(sweep_id)
        assert {s.status for s in lab_.store.states(sweep_id).values()} == {"done"}
    matrix.append({"fault": "the artifact store is full (64 KiB tmpfs)", "outcome": "cells "
                   "fail with ENOSPC's sentence in their state; after space is freed, "
                   "`rerun --failed` measures them", "recovery_s": None})


def test_coordinator_away_while_the_sweep_finishes(tmp_path: Path, matrix: list[dict]) -> None:
    with lab(tmp_path) as lab_:
        lab_.fleet.start("cpu", "w1")
        sweep_id = lab_.sweep("away", n=3, arms=2)  # submit, then no coordinator process at all
        lab_.wait(sweep_id)
        lab_.verify(sweep_id)
        made = cli(lab_.settings, "record", sweep_id, "-o", str(tmp_path / "record"))
        assert made.returncode == 0, made.stdout + made.stderr
        matrix.append({"fault": "the coordinator is down while the sweep finishes",
                       "outcome": "workers finish on their own; `record` later reads "
                       "everything", "recovery_s": None})


def test_a_marker_the_store_refuses_does_not_hold_the_cell(tmp_path: Path,
                                                          matrix: list[dict]) -> None:
    with lab(tmp_path) as lab_:
        sweep_id = lab_.sweep("marker", n=2)  # no worker yet: the cells wait
        first, second = sorted(lab_.store.states(sweep_id))
        # A directory where the marker goes: its write fails with EISDIR, as a full or
        # read-only store's would, after the attempt itself was published.
        (Path(lab_.settings.artifacts) / sweep_id / first / "accepted.json").mkdir(parents=True)
        lab_.fleet.start("cpu", "w1")
        lab_.wait(sweep_id)
        states = lab_.store.states(sweep_id)
        assert {s.status for s in states.values()} == {"done"}, states
        assert states[first].attempt == 1  # settled at once, not after a lost lease
        # The worker writes the marker once Redis has settled the cell (workers/hooks/lease.py:
        # settle): the last cell's state can read done a moment before its marker is there.
        marker = eventually(lambda: get_json(LocalStore(Path(lab_.settings.artifacts)),
                                             f"{sweep_id}/{second}/accepted.json"), 30,
                            "the second cell's accepted marker")
        assert marker == {"attempt": 1, "status": "done", "generation": 0}
        log = (lab_.root / "logs").glob("*w1*.log")
        assert any("accepted marker was not written" in p.read_text() for p in log)
    matrix.append({"fault": "the store refuses a cell's accepted marker", "outcome": "the "
                   "cell is settled in Redis at once (done, attempt 1); the worker's log says "
                   "`record --from-store` will not see it", "recovery_s": None})


def test_purged_queue_is_noticed_and_queued_again(tmp_path: Path, matrix: list[dict]) -> None:
    with lab(tmp_path, lost_after_s=2.0) as lab_:
        sweep_id = lab_.sweep("purged", n=2)  # no worker yet: the message waits in its queue
        purged = subprocess.run(
            [sys.executable, "-m", "celery", "-A", "workers.app", "purge", "-f", "-Q",
             "benchfleet.backend.cpu"], capture_output=True, text=True,
            env={**os.environ, "BENCHFLEET_REDIS_URL": lab_.settings.redis_url})
        assert purged.returncode == 0 and "Purged 1 message" in purged.stdout, purged.stdout
        purged_at = time.monotonic()
        lab_.fleet.start("cpu", "w1")
        lab_.wait(sweep_id, lambda s: "running" in s.values() or "done" in s.values())
        recovered_s = time.monotonic() - purged_at
        lab_.wait(sweep_id)
        lab_.verify(sweep_id)
        assert {s.status for s in lab_.store.states(sweep_id).values()} == {"done"}
        matrix.append({"fault": "the queue is purged", "outcome": "the missing message is "
                       "noticed and its cells queued again from their signed envelopes",
                       "recovery_s": round(recovered_s, 1)})


def test_second_worker_with_the_same_name_refuses(tmp_path: Path, matrix: list[dict]) -> None:
    with lab(tmp_path) as lab_:
        first = lab_.fleet.start("cpu", "twin")
        sweep_id = lab_.sweep("twins", n=1)
        lab_.wait(sweep_id)  # the first is live and serving
        second = lab_.fleet.start("cpu", "twin")
        assert second.wait(timeout=60) == 2
        log = (lab_.root / "logs" / "worker-twin-cpu.log").read_text()
        assert "a live worker named 'twin' already runs on host" in log
        assert first.poll() is None
        matrix.append({"fault": "two workers started with one name", "outcome": "the second "
                       "refuses to start with one sentence; the first keeps serving",
                       "recovery_s": None})


def _used(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _done(lab_: Lab, sweep_id: str) -> int:
    return sum(s.status == "done" for s in lab_.store.states(sweep_id).values())





def test_worker_cut_off_from_redis_for_30_s(tmp_path: Path, matrix: list[dict]) -> None:
    with netns_host() as (ns, ours, _, link), \
            lab(tmp_path, bind=("127.0.0.1", ours), password="cut-test") as lab_:
        away = lab_.settings.model_copy(update={
            "redis_url": f"redis://:cut-test@{ours}:{lab_.server.port}/0", "host": "cut-host",
            "host_lock": tmp_path / "cut-host.lock"})
        cut = lab_.fleet.start("cpu", "cut", settings=away, wrap=("ip", "netns", "exec", ns))
        sweep_id = lab_.sweep("cut", params=LONG, n=2)
        lab_.fleet.start("cpu", "steady")
        wait_for_command(cut.pid, "--prompt-tokens")  # cut off *during* a measured command
        _link(link, "down")
        cut_at = time.monotonic()
        try:
            lab_.wait(sweep_id, lambda s: _worker_of_running(lab_, sweep_id) == "steady"
                      or "done" in s.values(), deadline_s=60)
            requeued_s = time.monotonic() - cut_at
            time.sleep(max(0.0, 30 - (time.monotonic() - cut_at)))  # the cut is the fault
        finally:
            _link(link, "up")
        lab_.wait(sweep_id)
        lab_.verify(sweep_id)
        states = lab_.store.states(sweep_id)
        assert {s.status for s in states.values()} == {"done"}
        assert {s.worker for s in states.values()} == {"steady"}
    matrix.append({"fault": "a worker cut off from Redis for 30 s (its namespace's link down)",
                   "outcome": "its lease expired; another worker measured its cells; the cut "
                   "worker's late result was not accepted", "recovery_s": round(requeued_s, 1)})


def _worker_of_running(lab_: Lab, sweep_id: str) -> str | None:
    running = [s for s in lab_.store.states(sweep_id).values() if s.status == "running"]
    return running[0].worker if running else None


def _link(name: str, state: str) -> None:
    subprocess.run(["ip", "link", "set", name, state], check=True)


@contextmanager
def netns_host() -> Iterator[tuple[str, str, str, str]]:
    """A network namespace joined to this one by a veth pair: (namespace, our address, its
    address, our end of the link). Traffic stays on that pair."""
    tag = f"{os.getpid() % 100000}"
    ns, ours, theirs = f"bfcut{tag}", f"bfc{tag}a", f"bfc{tag}b"
    net = f"10.251.{os.getpid() % 250}"
    setup = [["ip", "netns", "add", ns],
             ["ip", "link", "add", ours, "type", "veth", "peer", "name", theirs],
             ["ip", "link", "set", theirs, "netns", ns],
             ["ip", "addr", "add", f"{net}.1/30", "dev", ours], ["ip", "link", "set", ours, "up"],
             ["ip", "netns", "exec", ns, "ip", "addr", "add", f"{net}.2/30", "dev", theirs],
             ["ip", "netns", "exec", ns, "ip", "link", "set", theirs, "up"],
             ["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"]]
    for step in setup:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode:
            _teardown(ns, ours)
            pytest.skip(f"cannot make a network namespace here ({' '.join(step)}: "
                        f"{done.stderr.strip()})")
    try:
        yield ns, f"{net}.1", f"{net}.2", ours
    finally:
        _teardown(ns, ours)


def _teardown(ns: str, link: str) -> None:
    subprocess.run(["ip", "link", "del", link], capture_output=True)
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_200_mb_of_output_keeps_the_worker_small(tmp_path: Path, matrix: list[dict]) -> None:
    with lab(tmp_path) as lab_:
        worker = lab_.fleet.start("cpu", "w1")
        sweep_id = lab_.sweep("loud", recipe="loud", n=1)
        lab_.wait(sweep_id)
        lab_.verify(sweep_id)
        (state,) = lab_.store.states(sweep_id).values()
        assert state.status == "done", state.reason
        peak_mb = _peak_rss_mb(worker.pid)
        assert peak_mb < 400, f"the worker grew to {peak_mb:.0f} MB reading 200 MB of output"
        matrix.append({"fault": "200 MB of output, with bytes that are not UTF-8",
                       "outcome": f"parsed from the log's head and tail; the worker's peak "
                       f"RSS stayed at {peak_mb:.0f} MB; the whole log kept as an artifact",
                       "recovery_s": None})


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def test_redis_losing_everything_loses_no_measurement(tmp_path: Path,
                                                      matrix: list[dict]) -> None:
    with lab(tmp_path) as lab_:
        worker = lab_.fleet.start("cpu", "w1")
        sweep_id = lab_.sweep("amnesia", n=3, arms=2)
        lab_.wait(sweep_id, lambda s: sum(v == "done" for v in s.values()) >= 2)
        worker.terminate()  # warm shutdown: the running cell finishes, nothing more starts
        worker.wait(timeout=60)
        done_before = _done(lab_, sweep_id)
        lab_.store.r.flushall()  # Redis loses the sweep, its states and its counters
        offline = cli(lab_.settings, "record", sweep_id, "--from-store", "-o",
                      str(tmp_path / "offline"))
        assert f"{done_before} of 6 cells measured" in offline.stdout, offline.stdout
        restored = cli(lab_.settings, "restore", sweep_id)
        assert restored.returncode == 0, restored.stderr
        assert f"{6 - done_before} cells queued again" in restored.stdout
        lab_.fleet.start("cpu", "w2")
        lab_.wait(sweep_id)
        lab_.verify(sweep_id)
        made = cli(lab_.settings, "record", sweep_id, "-o", str(tmp_path / "record"))
        assert made.returncode == 0, made.stdout
        matrix.append({"fault": "Redis loses everything (FLUSHALL) mid-sweep", "outcome":
                       f"`record --from-store` shows the {done_before} measured cells from the "
                       "artifact store alone; `restore` queues the rest from their signed "
                       "envelopes; the sweep completes", "recovery_s": None})
