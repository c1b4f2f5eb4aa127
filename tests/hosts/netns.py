"""Lab hosts as network namespaces: each host its own namespace, address and sshd, joined by a
bridge in a hub namespace of its own, so no address or route touches the machine's own network.

Every lab is an island: 10.77.0.0/24 is used only inside these namespaces, and two labs (two
pytest-xdist workers) never see each other, so each may use the whole /24. Namespace names
carry the test process's pid; everything a lab starts is ended and its namespaces deleted.
"""

import contextlib
import itertools
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from tests.hosts.sshd import SshServer

SUBNET = "10.77.0"
PREFIX = "bfh"
STOP_GRACE_S = 5.0
_labs = itertools.count()


def missing_netns() -> str | None:
    """Why this machine cannot make namespace hosts, or None."""
    if os.geteuid() != 0:
        return "namespace hosts need root (ip netns add)"
    probe = f"{PREFIX}{os.getpid()}probe"
    done = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if done.returncode != 0:
        return f"`ip netns add` does not work here: {done.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@dataclass
class Host:
    name: str
    netns: str
    address: str
    root: Path
    sshd: SshServer | None = None

    def argv(self, *command: str) -> list[str]:
        """`command` as it runs on this host."""
        return ["ip", "netns", "exec", self.netns, *command]

    def run(self, *command: str, timeout: float = 60, env: dict[str, str] | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.argv(*command), capture_output=True, text=True,
                              timeout=timeout, env=env, cwd=cwd)

    def pids(self) -> list[int]:
        return _pids(self.netns)


@dataclass
class Lab:
    """A hub namespace with a bridge, and hosts added to it one by one."""

    root: Path
    tag: str = field(default_factory=lambda: f"{PREFIX}{os.getpid()}x{next(_labs)}")
    hosts: dict[str, Host] = field(default_factory=dict)

    @property
    def hub(self) -> str:
        return f"{self.tag}-hub"

    def start(self) -> "Lab":
        remove_stale()
        ip("netns", "add", self.hub)
        ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
        ip("-n", self.hub, "link", "set", "br0", "up")
        return self

    def add(self, name: str, client_key: Path | None = None, rate: str | None = None) -> Host:
        """A host with the next address; with `client_key`, an sshd on port 22 that accepts
        it; with `rate` (tc's units, e.g. 40mbit), its outgoing traffic capped."""
        host = Host(name, f"{self.tag}-{name}", f"{SUBNET}.{len(self.hosts) + 1}",
                    self.root / name)
        self.hosts[name] = host
        ip("netns", "add", host.netns)
        port = f"p{len(self.hosts)}"
        ip("link", "add", "eth0", "netns", host.netns, "type", "veth", "peer", "name", port,
           "netns", self.hub)
        ip("-n", self.hub, "link", "set", port, "master", "br0", "up")
        ip("-n", host.netns, "addr", "add", f"{host.address}/24", "dev", "eth0")
        ip("-n", host.netns, "link", "set", "eth0", "up")
        ip("-n", host.netns, "link", "set", "lo", "up")
        if rate:
            subprocess.run(host.argv("tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate",
                                     rate, "burst", "64kbit", "latency", "100ms"), check=True)
        if client_key is not None:
            host.sshd = SshServer(host.root / "sshd", host.address, 22, client_key,
                                  netns=host.netns).start()
        return host

    def known_hosts(self) -> Path:
        """A known_hosts file naming every host's sshd."""
        path = self.root / "known_hosts"
        path.write_text("".join(h.sshd.known_hosts_line() for h in self.hosts.values()
                                if h.sshd))
        return path

    def close(self) -> None:
        for host in self.hosts.values():
            if host.sshd:
                host.sshd.stop()
        for netns in [h.netns for h in self.hosts.values()] + [self.hub]:
            delete(netns)

    def __enter__(self) -> "Lab":
        return self.start()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()


def delete(netns: str) -> None:
    """End every process left in the namespace (a lab's sshd, workers, supervisors), then
    delete it; a namespace outlives its name while any process is inside."""
    _signal_all(netns, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    while _pids(netns) and time.monotonic() < deadline:
        time.sleep(0.05)
    _signal_all(netns, signal.SIGKILL)
    subprocess.run(["ip", "netns", "del", netns], capture_output=True)


def remove_stale() -> None:
    """Namespaces of test processes that died without tearing down (SIGKILL, a crash)."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    for line in listed.splitlines():
        match = re.match(rf"({PREFIX}(\d+)x\d+-\S+)", line)
        if match and not _alive(int(match.group(2))):
            delete(match.group(1))


def _pids(netns: str) -> list[int]:
    done = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True)
    return [int(p) for p in done.stdout.split()]


def _signal_all(netns: str, sig: signal.Signals) -> None:
    for pid in _pids(netns):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
