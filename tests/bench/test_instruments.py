"""The benchmark's instruments measure what they say: the kernel's exec and exit times of a
child, the moment an LPUSH goes to Redis, per-thread run counts, and the minimal reader's
verification."""

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from runner.demo.redis_server import RedisServer
from tests.bench import floors, minimal, report, scale
from tests.bench.bare_worker import bare_app
from tests.bench.cells import threads
from tests.bench.figures import percentile
from tests.bench.procwatch import ProcWatch, Unavailable
from tests.bench.rig import sent
from workers.shared import redis_keys
from workers.shared.messages import GroupMessage, Signed
from workers.shared.state import Store
from workers.shared.stores.local import LocalStore


@pytest.fixture
def watch() -> Iterator[ProcWatch]:
    try:
        w = ProcWatch()
    except Unavailable as why:
        pytest.skip(str(why))
    yield w
    w.close()


def test_exec_and_exit_of_a_child_are_seen_in_order(watch: ProcWatch) -> None:
    watch.follow(os.getpid())
    before = time.monotonic_ns()
    child = subprocess.Popen(["sleep", "0.2"])
    started = watch.wait_exec(os.getpid(), before, 10.0)
    child.wait()
    ended = watch.wait_exit(child.pid, 10.0)
    assert started.pid == child.pid and started.direct
    assert started.argv == ("sleep", "0.2")
    assert before < started.ns < ended <= time.monotonic_ns()
    assert 0.15 < (ended - started.ns) / 1e9 < 5.0


def test_grandchildren_count_but_are_not_commands(watch: ProcWatch) -> None:
    watch.follow(os.getpid())
    before = time.monotonic_ns()
    subprocess.run(["sh", "-c", "true; sleep 0.05"], check=True)
    execs = watch.since(os.getpid(), before)
    assert [e.direct for e in execs][:1] == [True]
    assert any(not e.direct and e.argv and e.argv[0] == "sleep" for e in execs)
    with pytest.raises(TimeoutError):
        watch.wait_exec(os.getpid(), time.monotonic_ns(), 0.2)


def test_the_send_clock_reads_the_message_of_both_sides(tmp_path: Path) -> None:
    with RedisServer(tmp_path / "redis") as server:
        client = redis.Redis.from_url(server.url)
        before = time.monotonic_ns()
        with sent() as clock:
            client.lpush("q", "x")
        assert before < clock.ns < time.monotonic_ns()
        store = Store(client)
        client.sadd(redis_keys.sweep("s", "unpublished"), "g")
        with sent() as clock:  # submit's way: the queue_once script, its LPUSH inside Redis
            store.queue_once("s", [GroupMessage("s", "bench-q", ["c"], [Signed("e", "x")],
                                                group="g")])
        assert clock.ns and client.llen("bench-q") == 1
        with sent() as clock:
            bare_app(server.url).send_task("bare.run", args=[["true"], None, {}, "/dev/null"],
                                           queue="bench-test")
        assert clock.ns and client.llen("bench-test") == 1
        with pytest.raises(RuntimeError, match="no LPUSH"), sent():
            client.set("k", "v")


def test_run_counts_rise_only_when_a_thread_runs() -> None:
    stop = threading.Event()

    def tick() -> None:
        while not stop.is_set():
            time.sleep(0.01)

    ticker = threading.Thread(target=tick)
    ticker.start()
    first = threads(os.getpid())
    time.sleep(0.3)
    second = threads(os.getpid())
    stop.set()
    ticker.join()
    tid = str(ticker.native_id)
    assert second[tid]["runs"] - first[tid]["runs"] >= 10
    assert second[tid]["voluntary"] > first[tid]["voluntary"]


def test_minimal_reader_verifies_every_file(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    staging = store.staging()
    (staging / "result.json").write_text(json.dumps({"ok": True}))
    (staging / "measure.stdout.txt").write_text("decode\n")
    store.publish(staging, "s1", "c1", 1)
    assert minimal.record(tmp_path, "s1") == 1
    (tmp_path / "s1" / "c1" / "attempt-1" / "measure.stdout.txt").write_text("changed\n")
    with pytest.raises(ValueError, match="sha256"):
        minimal.record(tmp_path, "s1")


def test_percentile_is_nearest_rank() -> None:
    xs = [float(i) for i in range(1, 31)]
    assert percentile(xs, 50) == 15.0
    assert percentile(xs, 99) == 30.0
    assert percentile([3.0], 99) == 3.0


def test_a_wrapped_command_starts_at_its_own_exec(watch: ProcWatch) -> None:
    watch.follow(os.getpid())
    before = time.monotonic_ns()
    subprocess.run(["sh", "-c", "exec sleep 0.5"], check=True)
    commands = watch.commands(os.getpid(), before)
    assert [c.argv for c in commands] == [("sleep", "0.5")]
    first = watch.wait_exec(os.getpid(), before, 1.0)
    # The times and pids are the kernel's; argv is read from /proc when the event is read,
    # and on a busy host the wrapper may have exec'd its command by then.
    assert first.pid == commands[0].pid and first.ns < commands[0].ns
    assert first.argv in (None, ("sh", "-c", "exec sleep 0.5"), ("sleep", "0.5"))


def test_a_processs_peak_rss_is_its_own_not_the_benchmarks() -> None:
    ballast = b"x" * (256 << 20)  # this process large and resident, as the benchmark's is
    peaks: list[int] = []
    for code in ("pass", "b = b'x' * (96 << 20)"):
        assert scale._process([sys.executable, "-c", code], subprocess.DEVNULL, peaks=peaks)[0] == 0
    assert len(ballast) and peaks[0] < 64 << 10 < 96 << 10 < peaks[1] < 200 << 10, peaks


def test_a_run_of_some_blocks_keeps_the_others_and_says_when_they_ran() -> None:
    from tests.bench.report import _earlier, merged

    first = {"date": "first", "arguments": {"blocks": "dispatch,scale,floors"}, "host": "h",
             "dispatch": {"run": 1}, "scale": {"run": 1}, "floors": {"run": 1}}
    second = {"date": "second", "arguments": {"blocks": "scale,floors"}, "host": "h",
              "scale": {"run": 2}, "floors": {"run": 2}}
    third = {"date": "third", "arguments": {"blocks": "scale"}, "host": "h", "scale": {"run": 3}}
    out = merged(merged(first, second), third)
    assert (out["dispatch"], out["floors"], out["scale"]) == ({"run": 1}, {"run": 2}, {"run": 3})
    assert out["date"] == "third"
    assert [(e["date"], e["blocks"]) for e in out["earlier"]] == [("first", ["dispatch"]),
                                                                   ("second", ["floors"])]
    text = _earlier(out)
    assert "dispatch block is kept from the run of first (`--blocks dispatch,scale" in text
    assert "floors block is kept from the run of second" in text
    assert merged(third, third)["earlier"] == [] and _earlier(merged(third, third)) == ""
    assert "another machine" not in text  # all three ran on "h"
    elsewhere = _earlier(merged(first, {**second, "host": "g"}))
    assert "dispatch block is kept from the run of first" in elsewhere
    assert "**on another machine**: h." in elsewhere


def test_the_inode_floor_is_read_in_a_folder_and_said_per_cell(tmp_path: Path) -> None:
    cost = floors.new_inodes(tmp_path / "probe", repeats=5)
    assert cost["repeats"] == 5 and 0 < cost["folder_ms"] < 1000 and 0 < cost["file_ms"] < 1000
    assert not (tmp_path / "probe").exists()  # what it made is gone
    said = report._inodes({"store_inodes": {"folder_ms": 0.2, "file_ms": 0.5, "repeats": 60},
                           "attempt_inodes": 9, "benchfleet": {"median": 100.0}})
    assert "a file in it 0.500 ms" in said and "about 4.5 ms of benchfleet's 10.0 ms a cell" in said
    assert report._inodes({"benchfleet": {"median": 100.0}}) == ""  # a block kept from before


def test_a_timed_process_is_waited_for_without_polling(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # subprocess's timed wait polls (sleeps up to 50 ms), and so read a process's end late:
    # the scale block waits with no timeout, its limit a timer that kills.
    timeouts: list[float | None] = []
    wait = subprocess.Popen.wait

    def watched(self: subprocess.Popen[bytes], timeout: float | None = None) -> int:
        timeouts.append(timeout)
        return wait(self, timeout)

    monkeypatch.setattr(subprocess.Popen, "wait", watched)
    with (tmp_path / "out").open("w") as out, (tmp_path / "err").open("w") as err:
        assert scale.waited([sys.executable, "-c", "raise SystemExit(3)"], out, err, None,
                            60.0) == 3
        assert timeouts and all(t is None for t in timeouts)
        with pytest.raises(subprocess.TimeoutExpired):
            scale.waited([sys.executable, "-c", "import time; time.sleep(30)"], out, err, None,
                         0.5)
