"""Benchmark: the SFTP artifact store against OpenSSH's scp and sftp, on loopback, same run.

One attempt of 100 MiB (a 96 MiB profile and 16 logs of 256 KiB, random bytes) goes from a
worker's staging directory to a private sshd started here, and back to a coordinator's cache:
- OpenSSH: `scp -r` and `sftp -b` (`put -r` / `get -r`), default cipher, and `scp` with
  AES-GCM (the store's cipher) to show what the cipher alone is worth;
- the store (`SftpStore.publish` / `.read`, asyncssh): the whole path, hashing, the storage
  host's re-hash and the rename included;
- paramiko (`SFTPClient.put` / `.get`): its default cipher (AES-CTR + HMAC) and AES-GCM;
- asyncssh (`SFTPClient.put` / `.get`, recursive): its default cipher and AES-GCM, the
  store's transport without the store's checks.
Every round runs every contestant once, in an order rotated each round; the figure is the
median (min to max) over rounds, ratios against OpenSSH's median in the same run.
Writes docs/benchmarks/sftp.{md,json}.
Run: .venv/bin/python -m tests.bench.sftp_throughput [ROUNDS]
"""

import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import asyncssh
import paramiko

from runner.demo.redis_server import free_port
from tests.hosts.sshd import SshServer, keygen
from workers.shared.stores.sftp import SftpStore

OUT = Path(__file__).parents[2] / "docs" / "benchmarks"
MIB = 1 << 20
BIG, SMALL, SMALL_COUNT = 96 * MIB, 256 << 10, 16
TOTAL = BIG + SMALL * SMALL_COUNT
GCM = "aes128-gcm@openssh.com"
GOAL = 0.8
STORE_UP, STORE_DOWN = "store publish (asyncssh)", "store read (asyncssh)"


class Bench:
    """The sshd, the attempt, and one function per contestant and direction."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.key = keygen(root / "id_ed25519")
        self.sshd = SshServer(root / "sshd", "127.0.0.1", free_port(), self.key).start()
        self.known = root / "known_hosts"
        self.known.write_text(self.sshd.known_hosts_line())
        self.attempt = make_attempt(root / "attempt")
        self.remote = root / "remote"
        self.store = SftpStore(f"sftp://root@127.0.0.1:{self.sshd.port}{self.remote}",
                               root / "cache", self.key, self.known)

    def ssh_options(self, port_flag: str) -> list[str]:
        return ["-i", str(self.key), "-o", f"UserKnownHostsFile={self.known}", "-o",
                "BatchMode=yes", port_flag, str(self.sshd.port)]

    # uploads: the attempt into self.remote/up

    def scp_up(self, cipher: str | None = None) -> None:
        extra = ["-c", cipher] if cipher else []
        subprocess.run(["scp", "-q", "-r", *extra, *self.ssh_options("-P"), str(self.attempt),
                        f"root@127.0.0.1:{self.remote}/up"], check=True)

    def sftp_up(self) -> None:
        batch = f"put -r {self.attempt} {self.remote}/up\n"
        subprocess.run(["sftp", "-q", "-b", "-", *self.ssh_options("-P"), "root@127.0.0.1"],
                       input=batch.encode(), check=True, stdout=subprocess.DEVNULL)

    def store_up(self) -> None:
        staging = self.store.staging()
        shutil.copytree(self.attempt, staging, dirs_exist_ok=True, copy_function=os.link)
        self.store.publish(staging, "bench", "up", 1)

    def paramiko_up(self, cipher: str | None = None) -> None:
        with self._paramiko(cipher) as sftp:
            sftp.mkdir(f"{self.remote}/up")
            for path in sorted(self.attempt.iterdir()):
                sftp.put(str(path), f"{self.remote}/up/{path.name}")

    def asyncssh_up(self, cipher: str | None = None) -> None:
        asyncio.run(self._asyncssh("put", cipher))

    # downloads: self.remote/down (a published attempt) into self.root/down

    def scp_down(self) -> None:
        subprocess.run(["scp", "-q", "-r", *self.ssh_options("-P"),
                        f"root@127.0.0.1:{self.remote}/down", str(self.root / "down")],
                       check=True)

    def sftp_down(self) -> None:
        batch = f"get -r {self.remote}/down {self.root / 'down'}\n"
        subprocess.run(["sftp", "-q", "-b", "-", *self.ssh_options("-P"), "root@127.0.0.1"],
                       input=batch.encode(), check=True, stdout=subprocess.DEVNULL)

    def store_down(self) -> None:
        self.store.read("bench", "down", 1)
        self.store.close()

    def paramiko_down(self, cipher: str | None = None) -> None:
        (self.root / "down").mkdir()
        with self._paramiko(cipher) as sftp:
            for name in sftp.listdir(f"{self.remote}/down"):
                sftp.get(f"{self.remote}/down/{name}", str(self.root / "down" / name))

    def asyncssh_down(self, cipher: str | None = None) -> None:
        asyncio.run(self._asyncssh("get", cipher))

    @contextmanager
    def _paramiko(self, cipher: str | None) -> Iterator[paramiko.SFTPClient]:
        client = paramiko.SSHClient()
        client.load_host_keys(str(self.known))
        others = [c for c in paramiko.Transport._preferred_ciphers if c != cipher]
        client.connect("127.0.0.1", self.sshd.port, "root", key_filename=str(self.key),
                       look_for_keys=False, allow_agent=False,
                       disabled_algorithms={"ciphers": others} if cipher else None)
        try:
            yield client.open_sftp()
        finally:
            client.close()

    async def _asyncssh(self, direction: str, cipher: str | None) -> None:
        options = {"encryption_algs": [cipher]} if cipher else {}
        async with asyncssh.connect("127.0.0.1", self.sshd.port, username="root",
                                    client_keys=[str(self.key)], known_hosts=str(self.known),
                                    **options) as conn, conn.start_sftp_client() as sftp:
            if direction == "put":
                await sftp.put(str(self.attempt), f"{self.remote}/up", recurse=True)
            else:
                await sftp.get(f"{self.remote}/down", str(self.root / "down"), recurse=True)

    def reset(self) -> None:
        """Between runs, untimed: remove what the last one wrote, keep the published source."""
        for path in (self.remote / "up", self.remote / "bench" / "up", self.root / "down",
                     self.root / "cache" / "bench" / "down"):
            shutil.rmtree(path, ignore_errors=True)

    def close(self) -> None:
        self.store.close()
        self.sshd.stop()


def make_attempt(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "profile.nsys-rep").write_bytes(os.urandom(BIG))
    for i in range(SMALL_COUNT):
        (path / f"run-{i:02d}.stdout").write_bytes(os.urandom(SMALL))
    return path


def contestants(b: Bench) -> dict[str, dict[str, Callable[[], None]]]:
    return {
        "upload": {"scp": b.scp_up, "sftp": b.sftp_up, f"scp -c {GCM}": lambda: b.scp_up(GCM),
                   STORE_UP: b.store_up,
                   "paramiko defaults (SFTPClient.put)": b.paramiko_up,
                   f"paramiko {GCM}": lambda: b.paramiko_up(GCM),
                   "asyncssh defaults": b.asyncssh_up,
                   f"asyncssh {GCM} (the store's transport, no checks)":
                       lambda: b.asyncssh_up(GCM)},
        "download": {"scp": b.scp_down, "sftp": b.sftp_down,
                     STORE_DOWN: b.store_down,
                     "paramiko defaults (SFTPClient.get)": b.paramiko_down,
                     f"paramiko {GCM}": lambda: b.paramiko_down(GCM),
                     "asyncssh defaults": b.asyncssh_down,
                     f"asyncssh {GCM} (the store's transport, no checks)":
                         lambda: b.asyncssh_down(GCM)}}


def measure(rounds: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        bench = Bench(Path(tmp))
        try:
            shutil.copytree(bench.attempt, bench.remote / "bench" / "down" / "attempt-1")
            manifest_for(bench)
            runs = contestants(bench)
            seconds: dict[str, dict[str, list[float]]] = {d: {n: [] for n in c}
                                                          for d, c in runs.items()}
            for r in range(rounds):
                for direction, named in runs.items():
                    names = list(named)
                    for name in names[r % len(names):] + names[:r % len(names)]:
                        bench.reset()
                        start = time.perf_counter()
                        named[name]()
                        seconds[direction][name].append(time.perf_counter() - start)
        finally:
            bench.close()
    return {"seconds": seconds, "rounds": rounds, "bytes": TOTAL, "provenance": provenance()}


def manifest_for(bench: Bench) -> None:
    """The download source is a published attempt, so `read` checks a real manifest."""
    from workers.shared.stores.manifest import sha256_file

    folder = bench.remote / "bench" / "down" / "attempt-1"
    files = {p.name: {"sha256": sha256_file(p), "bytes": p.stat().st_size}
             for p in sorted(folder.iterdir())}
    (folder / "manifest.json").write_text(json.dumps({"files": files}))
    shutil.copytree(folder, bench.remote / "down")


def provenance() -> dict[str, str]:
    ssh = subprocess.run(["ssh", "-V"], capture_output=True, text=True).stderr.strip()
    return {"date": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores",
            "python": platform.python_version(), "openssh": ssh,
            "paramiko": paramiko.__version__, "asyncssh": asyncssh.__version__,
            "load1_at_end": f"{os.getloadavg()[0]:.2f}"}


def mbps(seconds: list[float]) -> list[float]:
    return [TOTAL / MIB / s for s in seconds]


def summary(results: dict[str, object]) -> dict[str, dict[str, dict[str, float]]]:
    """Per direction and contestant: MiB/s median, min, max, and the ratio of medians
    against OpenSSH's faster client (scp or sftp) in the same run."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    seconds: dict[str, dict[str, list[float]]] = results["seconds"]  # type: ignore[assignment]
    for direction, named in seconds.items():
        baseline = max(statistics.median(mbps(named["scp"])),
                       statistics.median(mbps(named["sftp"])))
        out[direction] = {name: {"median": statistics.median(mbps(s)), "min": min(mbps(s)),
                                 "max": max(mbps(s)),
                                 "ratio": statistics.median(mbps(s)) / baseline}
                          for name, s in named.items()}
    return out


def table(rows: dict[str, dict[str, float]]) -> str:
    lines = ["| | MiB/s, median (min to max) | vs OpenSSH (faster of scp, sftp) |",
             "|---|---|---|"]
    for name, r in rows.items():
        lines.append(f"| {name} | {r['median']:.0f} ({r['min']:.0f} to {r['max']:.0f}) "
                     f"| {r['ratio']:.2f}x |")
    return "\n".join(lines)


def write(results: dict[str, object]) -> None:
    s = summary(results)
    results["summary"] = s
    p: dict[str, str] = results["provenance"]  # type: ignore[assignment]
    up, down = s["upload"][STORE_UP], s["download"][STORE_DOWN]
    verdict = "met" if min(up["ratio"], down["ratio"]) >= GOAL else "NOT met"
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "sftp.json").write_text(json.dumps(results, indent=1) + "\n")
    (OUT / "sftp.md").write_text(f"""# SFTP artifact store throughput

Measured {p['date']} on {p['machine']}, Python {p['python']}, {p['openssh']},
paramiko {p['paramiko']}, asyncssh {p['asyncssh']}, by
`.venv/bin/python -m tests.bench.sftp_throughput {results['rounds']}`
(`tests/bench/sftp_throughput.py`). Raw seconds per run: `sftp.json`.

One attempt of {TOTAL / MIB:.0f} MiB (a 96 MiB profile and {SMALL_COUNT} logs of 256 KiB,
random bytes) over loopback to a private sshd (Debian's openssh-server) the benchmark starts.
Client and server share this machine's cores, so every figure includes the server's work.
{results['rounds']} rounds; each round runs every contestant once, order rotated each round.
Figures are MiB/s, median (min to max) over rounds; ratios are of medians, against the faster
OpenSSH client (scp or sftp, its default cipher) measured in the same run.

The store's figures are the whole path: on upload, sha256 of every byte as it is sent, the
storage host re-hashing the staged files (python3 there), and the rename that accepts the
attempt; on download, fetching into the cache and checking every file against the manifest.
Load average at the end: {p['load1_at_end']} (the machine is shared).

## Upload (worker to storage host)
{table(s['upload'])}

## Download (storage host to coordinator)
{table(s['download'])}

## Goal
100 MB in one attempt at >= {GOAL}x the OpenSSH client: **{verdict}** (publish
{up['ratio']:.2f}x, read {down['ratio']:.2f}x).

Why asyncssh: paramiko is the library the user chose, and it was measured first: with
AES-GCM it uploads at {s['upload'][f'paramiko {GCM}']['ratio']:.2f}x and downloads at
{s['download'][f'paramiko {GCM}']['ratio']:.2f}x of OpenSSH here (one Python call per 32 KiB
request; its prefetching reader is slower still), and the store's checks cost more on top.
asyncssh keeps up to 128 requests of the size the server advertises in flight. The store
prefers AES-GCM (`aes128-gcm@openssh.com`), one AEAD pass in OpenSSL, where OpenSSH's default
is chacha20-poly1305; the `scp -c` row shows what that choice alone is worth to OpenSSH. The
store hashes the attempt in a thread while it uploads, so the sha256 costs little time.
""")


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    write(measure(rounds))
    print((OUT / "sftp.md").read_text())


if __name__ == "__main__":
    main()
