"""Redis round trips a worker makes per cell: a no-op sweep of one group on a private
redis-server, every command its clients sent read from MONITOR, the scripts' own commands left
out (they run inside Redis), and the worker's socket writes counted with strace.

Run: .venv/bin/python -m tests.bench.round_trips [--cells 100]
"""

import argparse
import collections
import contextlib
import json
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import redis

from runner.demo.redis_server import RedisServer
from tests.bench.cells import noop_spec, quiesce
from tests.bench.procwatch import watching
from tests.bench.rig import Rig


def count(rig: Rig, worker: int, cells: int) -> dict[str, Any]:
    """Commands per cell by name, from every client but this process's own, and the worker's
    `sendto` calls (one per round trip: redis-py writes a command or a pipeline at once)."""
    rig.wait_final(rig.submit(noop_spec(rig, "metal", 1))[0])  # clone and build: not counted
    quiesce(worker)
    seen: list[tuple[str, str]] = []  # (client port, command)
    monitor = threading.Thread(target=_monitor, args=(rig.server.url, seen), daemon=True)
    monitor.start()
    time.sleep(0.5)  # MONITOR is on before the sweep goes out
    strace = subprocess.Popen(["strace", "-f", "-c", "-e", "trace=sendto", "-p", str(worker)],
                              stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)  # attached
    sweep_id = rig.submit(noop_spec(rig, "metal", cells))[0]
    rig.wait_final(sweep_id)
    quiesce(worker)
    strace.terminate()
    sendto = _sendto(strace.communicate()[1])
    ports = _ports(worker, server_port=int(rig.server.url.rsplit(":", 1)[1].split("/")[0]))
    theirs = collections.Counter(name for addr, name in list(seen)
                                 if int(addr) in ports)
    return {"cells": cells, "commands_per_cell": sum(theirs.values()) / cells,
            "sendto_per_cell": sendto / cells, "connections": len(ports),
            "by_command": {k: v / cells for k, v in theirs.most_common()}}


def _monitor(url: str, seen: list[tuple[str, str]]) -> None:
    """Every command a client sent, with its address; a script's own commands are left out."""
    client = redis.Redis.from_url(url, decode_responses=True)
    with client.monitor() as m, contextlib.suppress(redis.ConnectionError):  # server stopped
        for event in m.listen():
            if event.get("client_type") == "lua":
                continue
            seen.append((event["client_port"], event["command"].split()[0].upper()))


def _ports(pid: int, server_port: int) -> set[int]:
    """The worker's local ports of its connections to the server (ss names the process)."""
    out = subprocess.run(["ss", "-tnpH", f"dport = :{server_port}"], capture_output=True,
                         text=True, check=True).stdout
    return {int(line.split()[3].rsplit(":", 1)[1]) for line in out.splitlines()
            if f"pid={pid}," in line}


def _sendto(report: str) -> int:
    for line in report.splitlines():
        parts = line.split()
        if parts and parts[-1] == "sendto":
            return int(parts[3])
    return 0


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m tests.bench.round_trips", description=__doc__)
    p.add_argument("--cells", type=int, default=100)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp, RedisServer(Path(tmp) / "redis") as server, \
            watching() as watch:
        rig = Rig(Path(tmp), server, watch)
        try:
            print(json.dumps(count(rig, rig.worker("metal", "bench-metal"), args.cells),
                             indent=1))
        finally:
            rig.stop()


if __name__ == "__main__":
    main()
