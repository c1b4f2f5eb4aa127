"""The floor under benchfleet's figures on this machine: what one Redis round trip, one
Ed25519 signature, a fork and exec of `true`, a bare Python start, the libraries' imports and a
cgroup move cost, and `benchfleet --version` against `python -c pass` (issue 17's start-up
goal). Medians (min to max) of
interleaved repeats, each against a private redis-server.

Run: .venv/bin/python -m tests.bench.floors [--repeats 200]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

from runner.demo.redis_server import RedisServer
from tests.bench.figures import RECORD_IMPORTS, TIME, interleave
from workers import deathwatch, descendants
from workers.shared.signing import generate, signer

ENVELOPE = b"x" * 1500  # about one cell's envelope
PASS, VERSION = "`python -c pass`", "`benchfleet --version`"
IDLE_MOVE = "cgroup move after 150 ms without one"
# The worker's staging of a command, as the keeper sees it: Python holding the GIL.
STAGING_S = 0.010
KEPT_MOVE = (f"cgroup move after 150 ms without one and {STAGING_S * 1e3:.0f} ms of staging "
             "beside the worker's keeper (workers/descendants.py)")
BORN = ("start of `true` born inside a cgroup by the worker's watch (workers/births.py), "
        "after 150 ms idle, until it exec'd")
SPAWNED = "start of `true` by subprocess.Popen (vfork), after 150 ms idle, until it exec'd"
# The libraries every benchfleet command loads (settings are pydantic-settings, states are
# pydantic models, output is rich, the CLI is click), and those only `record` adds (numpy for
# the same-threshold's simulation, matplotlib for the plots; scipy only where samples share a
# value): a process that must import them cannot start faster than this.
STACK = "import redis, orjson, pydantic, pydantic_settings, click, rich.console"
RECORD_STACK = f"{STACK}, numpy, matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot"


def measure(repeats: int) -> dict[str, list[float]]:
    """Seconds per repeat of each floor; the process starts a tenth as often (at least 3)."""
    exe = Path(sys.executable).with_name("benchfleet")
    with tempfile.TemporaryDirectory() as tmp, RedisServer(Path(tmp) / "redis") as server:
        client = redis.Redis.from_url(server.url)
        script = client.register_script("return 1")
        generate(Path(tmp) / "k.pem", Path(tmp) / "k.pub")
        key = signer(Path(tmp) / "k.pem")
        client.ping()
        script()
        fast = interleave(repeats, {
            "Redis round trip (PING)": client.ping,
            "Redis script call (EVALSHA of `return 1`)": script,
            "Ed25519 signature of 1.5 kB": lambda: key.sign(ENVELOPE)})
    starts = interleave(max(3, repeats // 10), {
        "fork+exec of `true`": lambda: subprocess.run(["true"], check=True),
        PASS: lambda: subprocess.run([sys.executable, "-c", "pass"], check=True),
        VERSION: lambda: subprocess.run([str(exe), "--version"], check=True,
                                        stdout=subprocess.DEVNULL),
        f"`python -c '{STACK}'`": lambda: subprocess.run([sys.executable, "-c", STACK],
                                                         check=True),
        RECORD_IMPORTS: lambda: subprocess.run([sys.executable, "-c", RECORD_STACK], check=True)})
    return {**fast, **starts, **cgroup_moves(max(3, repeats // 20)),
            **births(max(3, repeats // 20))}


def import_peaks(repeats: int = 3) -> dict[str, list[int]]:
    """Peak RSS (KiB) of a Python that only imports the libraries: what a command that needs
    them holds before it holds any data. Under GNU time, as the record's own peak is read
    (tests/bench/scale.py): wait4 on a child of this process would count this process's RSS,
    which Linux charges a forked child until its exec."""
    stacks = {PASS: "pass", f"`python -c '{STACK}'`": STACK, RECORD_IMPORTS: RECORD_STACK}
    peaks: dict[str, list[int]] = {name: [] for name in stacks}
    with tempfile.NamedTemporaryFile("r") as rss:
        for _ in range(repeats):
            for name, code in stacks.items():
                subprocess.run([TIME, "-f", "%M", "-o", rss.name, sys.executable, "-c", code],
                               check=True)
                rss.seek(0)
                peaks[name].append(int(rss.read().split()[-1]))
    return peaks


def cgroup_moves(repeats: int) -> dict[str, list[float]]:
    """A process moving itself into a cgroup, as a worker does before each command so that
    the command is born there: after 150 ms with no move (an idle worker's next message),
    right after another, 12 and 20 ms after another (how long the move stays quick, which
    the keeper's QUICK_AFTER_MOVE_S is set by), and after 150 ms and a staging beside the
    worker's keeper (its join counted in). The kernel's first migration after a quiet spell
    waits out an RCU grace period unless cgroup2 is mounted with `favordynmods` (which, on
    Linux 6.17 and later, cannot be turned off again until reboot). {} where cgroup v2 is not
    writable."""
    own = descendants.own_cgroup()
    if own is None or not os.access(own / "cgroup.procs", os.W_OK):
        return {}
    probe = own / f"bench-floor-{os.getpid()}"
    probe.mkdir()
    # Each case's spell without a move before it (None: an idle spell, then the staging).
    spells: dict[str, float | None] = {
        IDLE_MOVE: 0.15, "cgroup move right after another": 0.0,
        "cgroup move 12 ms after another": 0.012, "cgroup move 20 ms after another": 0.020,
        KEPT_MOVE: None}
    out: dict[str, list[float]] = {name: [] for name in spells}
    try:
        for _ in range(repeats):
            for name, spell in spells.items():
                keeper = _staged(own) if spell is None else None
                time.sleep(spell or 0.0)  # the spell is the condition measured, not work
                start = time.perf_counter()
                if keeper:  # its join is on the way to the command too
                    keeper.stop()
                (probe / "cgroup.procs").write_text(str(os.getpid()))
                out[name].append(time.perf_counter() - start)
                (own / "cgroup.procs").write_text(str(os.getpid()))
    finally:
        (own / "cgroup.procs").write_text(str(os.getpid()))
        probe.rmdir()
    return out


def births(repeats: int) -> dict[str, list[float]]:
    """How long a command's start takes when the watch bears it inside the commands' cgroup
    (what a worker does for the first command after an idle spell), against a plain vfork
    outside any cgroup change (what bare Celery's subprocess does): each timed until the exec,
    as both return then. {} where the watch cannot bear children into a cgroup here."""
    own = descendants.own_cgroup()
    if own is None or not os.access(own / "cgroup.procs", os.W_OK):
        return {}
    probe = own / f"bench-births-{os.getpid()}"
    probe.mkdir()
    out: dict[str, list[float]] = {BORN: [], SPAWNED: []}
    null = os.open(os.devnull, os.O_RDWR)
    try:
        if not deathwatch.start(probe):
            return {}
        env = dict(os.environ)
        for _ in range(repeats):
            time.sleep(0.15)  # the quiet spell is the condition measured, not timed work
            start = time.perf_counter()
            born = deathwatch.spawn(["true"], "/", env, (null, null, null), [])
            out[BORN].append(time.perf_counter() - start)
            if born is None:
                return {}
            born.wait()
            time.sleep(0.15)
            start = time.perf_counter()
            spawned = subprocess.Popen(["true"], cwd="/", env=env, stdin=null, stdout=null,
                                       stderr=null, start_new_session=True)
            out[SPAWNED].append(time.perf_counter() - start)
            spawned.wait()
    finally:
        deathwatch.stop()
        os.close(null)
        probe.rmdir()
    return out


def _staged(own: Path) -> descendants.Keeper:
    """As a worker stages a command after an idle spell: its keeper beside STAGING_S of
    Python that holds the GIL, as the worker's own code does."""
    time.sleep(0.15)  # the quiet spell is the condition measured, not timed work
    keeper = descendants.Keeper(own)
    keeper.start()
    end = time.perf_counter() + STAGING_S
    while time.perf_counter() < end:
        pass
    return keeper


def new_inodes(folder: Path, repeats: int = 60) -> dict[str, float]:
    """Median ms to make a folder under `folder`, then a file in it: what each of an attempt's
    folders and files costs where the worker makes them. ext4 allocates a new inode in its
    folder's block group, and on this machine's disk some groups took 0.4 ms a file against
    0.02 in others: so it is read in the rig's own store, in the run it explains."""
    folder.mkdir(parents=True, exist_ok=True)
    made: list[float] = []
    created: list[float] = []
    try:
        for i in range(repeats):
            start = time.perf_counter()
            os.mkdir(folder / str(i))
            middle = time.perf_counter()
            os.close(os.open(folder / str(i) / "f", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            created.append(time.perf_counter() - middle)
            made.append(middle - start)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"folder_ms": statistics.median(made) * 1e3,
            "file_ms": statistics.median(created) * 1e3, "repeats": repeats}


def version_ratio(floors: dict[str, list[float]]) -> list[float]:
    """`benchfleet --version` over `python -c pass`, per round (they ran interleaved)."""
    return [a / b for a, b in zip(floors[VERSION], floors[PASS], strict=True)]


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m tests.bench.floors", description=__doc__)
    p.add_argument("--repeats", type=int, default=200, help="of the in-process figures; a "
                   "tenth as many of the process starts")
    floors = measure(p.parse_args().repeats)
    print(f"load1 {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores\n")
    print("| floor | median | min to max |\n|---|---|---|")
    for name, xs in floors.items():
        print(f"| {name} | {_ms(statistics.median(xs))} | {_ms(min(xs))} to {_ms(max(xs))} |")
    version = version_ratio(floors)
    print(f"\n`benchfleet --version` / `python -c pass`, per round: "
          f"{statistics.median(version):.2f}x ({min(version):.2f} to {max(version):.2f})")


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


if __name__ == "__main__":
    main()
