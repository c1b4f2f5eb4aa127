"""A private redis-server on a free loopback port, for the demo (and the tests)."""

import shutil
import socket
import subprocess
from pathlib import Path
from types import TracebackType

import redis
from tenacity import retry, retry_if_exception_type, stop_after_delay, wait_fixed

from jobs.errors import UserError
from runner import processes
from workers.shared.private_files import write_private

INSTALL_HINT = ("install it with `sudo apt-get install redis-server` (Debian/Ubuntu) or "
                "`brew install redis` (macOS), or run ./install.sh")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """AOF on (fsync every second): a restart keeps sweeps, states and attempt counters. The
    demo and the tests run it as a child; `benchfleet fleet up` under the supervisor."""

    def __init__(self, workdir: Path, port: int = 0, password: str | None = None,
                 bind: tuple[str, ...] = ("127.0.0.1",), args: tuple[str, ...] = ()) -> None:
        self.workdir = workdir
        self.port = port
        self.password = password
        self.bind = bind
        self.args = args  # more redis-server options (tests: --maxmemory-policy ...)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    @staticmethod
    def binary() -> str:
        found = shutil.which("redis-server")
        if found is None:
            raise UserError(f"redis-server is not on PATH; {INSTALL_HINT}")
        return found

    def conf(self) -> str:
        """redis.conf: AOF (fsync every second), never evicting (a Redis that evicts loses
        sweeps silently), and the password here rather than on a command line `ps` shows."""
        auth = [f"requirepass {self.password}"] if self.password else []
        return "\n".join([f"port {self.port}", f"bind {' '.join(self.bind)}", 'save ""',
                          "appendonly yes", "appendfsync everysec",
                          "maxmemory-policy noeviction", f'dir "{self.workdir}"',
                          f'logfile "{self.workdir / "redis.log"}"', *auth]) + "\n"

    def command(self) -> list[str]:
        """redis-server over its conf (mode 600), written now; `args` after it win."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        conf = self.workdir / "redis.conf"
        write_private(conf, self.conf().encode())
        return [self.binary(), str(conf), *self.args]

    def start(self) -> "RedisServer":
        self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, start_new_session=True)
        self.wait_ready()
        return self

    @retry(stop=stop_after_delay(15), wait=wait_fixed(0.05), reraise=True,
           retry=retry_if_exception_type(redis.ConnectionError))
    def wait_ready(self) -> None:
        if self.proc and self.proc.poll() is not None:
            raise UserError(f"redis-server exited at start; see {self.workdir / 'redis.log'}")
        redis.Redis(port=self.port, password=self.password, socket_connect_timeout=1).ping()

    def stop(self) -> None:
        processes.stop(self.proc)

    def __enter__(self) -> "RedisServer":
        return self.start()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()
