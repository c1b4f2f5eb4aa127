"""A Redis Sentinel group on loopback: a primary, a replica and three sentinels, each in its
own directory, with the short timers a test can wait out (failover within seconds)."""

import subprocess
from pathlib import Path
from types import TracebackType

import redis

from runner import processes
from runner.demo.redis_server import RedisServer, free_port
from tests.support.waits import eventually
from workers.shared.private_files import write_private

SERVICE = "benchfleet"
QUORUM = 2
# Down after 1 s without an answer; a failover that stalls is tried again after 5 s.
TIMERS = {"down-after-milliseconds": 1000, "failover-timeout": 5000, "parallel-syncs": 1}


class SentinelGroup:
    def __init__(self, root: Path, sentinels: int = 3, primary_args: tuple[str, ...] = (),
                 password: str | None = None) -> None:
        self.root, self.password = root, password
        # No diskless-sync delay: the replica holds the data in milliseconds, not 5 s.
        quick = ("--repl-diskless-sync-delay", "0",
                 *(("--masterauth", password) if password else ()))
        self.primary = RedisServer(root / "primary", password=password,
                                   args=(*quick, *primary_args))
        self.replica = RedisServer(root / "replica", password=password, args=quick)
        self.ports = [free_port() for _ in range(sentinels)]
        self.procs: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{port}" for port in self.ports)
        auth = f":{self.password}@" if self.password else ""
        return f"sentinel://{auth}{hosts}/{SERVICE}/0"

    def start(self) -> "SentinelGroup":
        self.primary.start()
        self.replica.args += ("--replicaof", "127.0.0.1", str(self.primary.port))
        self.replica.start()
        for port in self.ports:
            self.procs.append(self._sentinel(port))
        eventually(self._watching, 20, "every sentinel sees the primary, the replica and "
                   "the other sentinels")
        return self

    def _sentinel(self, port: int) -> subprocess.Popen[bytes]:
        workdir = self.root / f"sentinel-{port}"
        workdir.mkdir(parents=True)
        lines = [f"port {port}", "bind 127.0.0.1", f'dir "{workdir}"',
                 f'logfile "{workdir / "sentinel.log"}"',
                 f"sentinel monitor {SERVICE} 127.0.0.1 {self.primary.port} {QUORUM}",
                 *(f"sentinel {name} {SERVICE} {value}" for name, value in TIMERS.items()),
                 *([f"sentinel auth-pass {SERVICE} {self.password}"] if self.password else [])]
        conf = workdir / "sentinel.conf"  # Sentinel rewrites its conf: it must be writable
        write_private(conf, ("\n".join(lines) + "\n").encode())
        return subprocess.Popen([RedisServer.binary(), str(conf), "--sentinel"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                start_new_session=True)

    def _watching(self) -> bool:
        link = redis.Redis(port=self.replica.port, password=self.password).info(
            "replication")["master_link_status"]
        if link != "up":
            return False
        for port in self.ports:
            try:
                found = redis.Redis(port=port, socket_timeout=1).sentinel_master(SERVICE)
            except redis.RedisError:
                return False
            if found["num-slaves"] < 1 or found["num-other-sentinels"] < len(self.ports) - 1:
                return False
        return True

    def primary_port(self) -> int | None:
        """The primary's port as the sentinels' majority names it now."""
        named = []
        for port in self.ports:
            try:
                named.append(int(redis.Redis(port=port, socket_timeout=1)
                                 .sentinel_get_master_addr_by_name(SERVICE)[1]))
            except (redis.RedisError, TypeError):
                continue
        return max(set(named), key=named.count) if named else None

    def stop(self) -> None:
        for proc in self.procs:
            processes.stop(proc)
        self.replica.stop()
        self.primary.stop()

    def __enter__(self) -> "SentinelGroup":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()
