"""The SFTP artifact store between namespace hosts: a worker host publishes, the coordinator's
host reads, the store lives on a third host's sshd."""

import hashlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hosts.netns import Host, Lab
from tests.support.waits import eventually

ROOT = Path(__file__).parents[2]
# The killed upload's host sends at most this fast, so the kill lands mid-file in a bounded
# time (16 MiB at 40 Mbit/s: about 3.4 s) and the test's traffic stays small.
SLOW_RATE = "40mbit"
BIG = 16 << 20
DEADLINE_S = 30.0

Client = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def store_lab(lab: Lab, client_key: Path) -> Lab:
    for name in ("store", "coord", "worker"):
        lab.add(name, client_key if name == "store" else None)
    lab.add("slow", rate=SLOW_RATE)
    return lab


def client_env(lab: Lab, client_key: Path, cache: Path) -> dict[str, str]:
    store = lab.hosts["store"]
    return {**os.environ, "BENCHFLEET_ARTIFACTS": f"sftp://root@{store.address}{store.root}/a",
            "BENCHFLEET_SSH_KEY": str(client_key),
            "BENCHFLEET_SSH_KNOWN_HOSTS": str(lab.known_hosts()),
            "BENCHFLEET_ARTIFACT_CACHE": str(cache)}


@pytest.fixture
def on(store_lab: Lab, client_key: Path, tmp_path: Path) -> Callable[[str], Client]:
    """`on("worker")("publish", ...)`: a store command run on that host, its own cache."""
    def at(name: str) -> Client:
        env = client_env(store_lab, client_key, tmp_path / f"cache-{name}")

        def call(*args: str) -> subprocess.CompletedProcess[str]:
            return store_lab.hosts[name].run(sys.executable, "-m", "tests.hosts.store_client",
                                             *args, env=env, cwd=ROOT)
        return call
    return at


def attempt_files(tmp: Path) -> dict[str, str]:
    source = tmp / "attempt"
    (source / "runs").mkdir(parents=True)
    (source / "result.json").write_text(json.dumps({"status": "done"}))
    (source / "runs" / "decode.stdout").write_bytes(os.urandom(3 << 20))
    return {p.relative_to(source).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in source.rglob("*") if p.is_file()}


def test_publish_then_read_on_another_host(on: Callable[[str], Client], store_lab: Lab,
                                           tmp_path: Path) -> None:
    sent = attempt_files(tmp_path)
    published = on("worker")("publish", str(tmp_path / "attempt"), "s1", "c1", "1")
    assert published.returncode == 0, published.stderr
    final = store_lab.hosts["store"].root / "a" / "s1" / "c1" / "attempt-1"
    assert json.loads(published.stdout).endswith(str(final))
    manifest = json.loads((final / "manifest.json").read_text())["files"]
    assert {n: e["sha256"] for n, e in manifest.items()} == sent
    assert list((final.parents[2] / ".staging").iterdir()) == []  # renamed away, not copied

    read = on("coord")("read", "s1", "c1", "1")
    assert read.returncode == 0, read.stderr
    assert json.loads(read.stdout) == sent
    result = on("coord")("read_result", "s1", "c1", "1")
    assert json.loads(result.stdout) == [json.dumps({"status": "done"}), sent["result.json"]]
    assert json.loads(on("coord")("attempts", "s1", "c1").stdout) == [1]

    again = on("worker")("publish", str(tmp_path / "attempt"), "s1", "c1", "1")
    assert again.returncode == 1, "an accepted attempt must never be rewritten"
    assert json.loads(on("coord")("read", "s1", "c1", "1").stdout) == sent


def test_sweep_file_beside_the_attempts(on: Callable[[str], Client], store_lab: Lab,
                                        tmp_path: Path) -> None:
    sweep = tmp_path / "sweep.json"
    for version in ("first", "second"):
        sweep.write_text(json.dumps({"version": version}))
        put = on("coord")("put", str(sweep), "s2/sweep.json")
        assert put.returncode == 0, put.stderr
    got = on("worker")("get", "s2/sweep.json", str(tmp_path / "back.json"))
    assert json.loads(got.stdout) == hashlib.sha256(sweep.read_bytes()).hexdigest()
    assert json.loads((tmp_path / "back.json").read_text()) == {"version": "second"}
    assert json.loads(on("worker")("exists", "s2/sweep.json").stdout) is True
    assert json.loads(on("worker")("exists", "s9/sweep.json").stdout) is False
    assert json.loads(on("worker")("exists", "s2").stdout) is False  # a folder, not a file
    assert sorted(p.name for p in (store_lab.hosts["store"].root / "a" / "s2").iterdir()) \
        == ["sweep.json"]


def test_killed_upload_leaves_nothing_accepted(on: Callable[[str], Client], store_lab: Lab,
                                               client_key: Path, tmp_path: Path) -> None:
    source = tmp_path / "attempt"
    source.mkdir()
    (source / "profile.nsys-rep").write_bytes(os.urandom(BIG))
    staging_root = store_lab.hosts["store"].root / "a" / ".staging"
    before = set(staging_root.iterdir()) if staging_root.is_dir() else set()
    slow: Host = store_lab.hosts["slow"]
    upload = subprocess.Popen(
        slow.argv(sys.executable, "-m", "tests.hosts.store_client", "publish", str(source),
                  "s3", "c1", "1"),
        env=client_env(store_lab, client_key, tmp_path / "cache-slow"), cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    partial = _wait_for_partial(staging_root, before, upload)
    upload.send_signal(signal.SIGKILL)
    upload.wait(timeout=10)
    assert 0 < partial.stat().st_size < BIG, "the kill must land mid-file"

    assert not (store_lab.hosts["store"].root / "a" / "s3").exists()
    assert json.loads(on("coord")("attempts", "s3", "c1").stdout) == []
    failed = on("coord")("read", "s3", "c1", "1")
    assert failed.returncode == 1 and "manifest unreadable" in failed.stderr

    retried = on("worker")("publish", str(source), "s3", "c1", "1")
    assert retried.returncode == 0, retried.stderr
    assert json.loads(on("coord")("attempts", "s3", "c1").stdout) == [1]


def test_corrupted_remote_file_fails_read(on: Callable[[str], Client], store_lab: Lab,
                                          tmp_path: Path) -> None:
    attempt_files(tmp_path)
    assert on("worker")("publish", str(tmp_path / "attempt"), "s4", "c1", "1").returncode == 0
    stored = store_lab.hosts["store"].root / "a" / "s4" / "c1" / "attempt-1" / "runs"
    blob = bytearray((stored / "decode.stdout").read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    (stored / "decode.stdout").write_bytes(bytes(blob))
    read = on("coord")("read", "s4", "c1", "1")
    assert read.returncode == 1
    assert "runs/decode.stdout: does not match its sha256" in read.stderr
    assert not (tmp_path / "cache-coord" / "s4" / "c1" / "attempt-1" / "runs" /
                "decode.stdout").exists(), "a file that failed its check is not kept"


def test_a_manifest_naming_a_path_outside_its_attempt_writes_nothing(
        on: Callable[[str], Client], store_lab: Lab, tmp_path: Path) -> None:
    """Whoever can write to the store (a worker) must not make the coordinator write
    elsewhere: its cache holds each attempt, manifest included, and nothing else."""
    attempt_files(tmp_path)
    assert on("worker")("publish", str(tmp_path / "attempt"), "s6", "c1", "1").returncode == 0
    assert on("coord")("read", "s6", "c1", "1").returncode == 0
    cached = tmp_path / "cache-coord" / "s6" / "c1" / "attempt-1"
    stored = store_lab.hosts["store"].root / "a" / "s6" / "c1" / "attempt-1"
    assert (cached / "manifest.json").read_bytes() == (stored / "manifest.json").read_bytes()
    escape = "../../../../escaped.txt"
    (stored / "runs" / "escaped.txt").write_text("planted")
    manifest = json.loads((stored / "manifest.json").read_text())
    manifest["files"][escape] = {"sha256": hashlib.sha256(b"planted").hexdigest(), "bytes": 7}
    (stored / "manifest.json").write_text(json.dumps(manifest))
    read = on("coord")("read", "s6", "c1", "1")
    assert read.returncode == 1
    assert f"the manifest names {escape!r}, outside the attempt" in read.stderr
    assert not list(tmp_path.rglob("escaped.txt"))


@pytest.mark.parametrize(("known", "sentence"), [("", "host key is not in"),
                                                 (None, "no known_hosts file at")])
def test_unknown_host_key_is_refused(store_lab: Lab, client_key: Path, tmp_path: Path,
                                     known: str | None, sentence: str) -> None:
    path = tmp_path / "known_hosts"
    if known is not None:
        path.write_text(known)
    env = {**client_env(store_lab, client_key, tmp_path / "cache"),
           "BENCHFLEET_SSH_KNOWN_HOSTS": str(path)}
    done = store_lab.hosts["coord"].run(sys.executable, "-m", "tests.hosts.store_client",
                                        "attempts", "s1", "c1", env=env, cwd=ROOT)
    assert done.returncode == 1
    assert sentence in done.stderr and "Traceback" not in done.stderr


def _wait_for_partial(staging_root: Path, before: set[Path],
                      upload: "subprocess.Popen[bytes]") -> Path:
    def started() -> Path | None:
        assert upload.poll() is None, upload.communicate()
        for folder in set(staging_root.iterdir()) - before if staging_root.is_dir() else ():
            part = folder / "profile.nsys-rep"
            if part.is_file() and part.stat().st_size > 0:
                return part
        return None

    return eventually(started, DEADLINE_S, "the upload starts")
