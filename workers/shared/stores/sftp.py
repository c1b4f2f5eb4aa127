"""The artifact store on a storage host, over SFTP: workers publish attempts to it, the
coordinator reads them into a local cache, so artifacts stay on the storage host while the
laptop is away.

An attempt is uploaded into `<root>/.staging/<uuid>/`, hashed again on the storage host, and
accepted by one rename to `<root>/<sweep>/<cell>/attempt-N`: an upload cut off at any point
leaves only a staging directory that nothing reads. The manifest's sha256 is checked on both
sides: by the storage host before the rename, by the coordinator after each fetch.

asyncssh, not paramiko: paramiko reached 0.6x to 0.7x of OpenSSH's sftp on a 100 MB attempt,
asyncssh more than 1x (docs/benchmarks/sftp.md). Its event loop runs only inside a call, so a
worker holds no thread and no timer while it measures.
"""

import asyncio
import json
import posixpath
import shutil
import tempfile
import uuid
from collections.abc import Coroutine
from pathlib import Path
from shlex import join
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import urlsplit

import asyncssh
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential_jitter

from jobs.errors import UserError
from workers.shared.stores.manifest import (
    MANIFEST,
    REMOTE_SHA256,
    ArtifactExists,
    CorruptArtifact,
    confined,
    encoded,
    sha256_file,
)

# AES-GCM first: one AEAD pass in OpenSSL, the fastest cipher both ends speak (the benchmark
# measures it against OpenSSH's default, chacha20-poly1305).
CIPHERS = ["aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com",
           "aes128-ctr", "aes256-ctr"]
CONNECT_TIMEOUT_S = 15.0
# An upload cut off by the network is tried again, from a fresh staging directory.
PUBLISH_TRIES = 3
T = TypeVar("T")


class SftpStore:
    """The `ArtifactStore` interface over SFTP; see the module's docstring."""

    def __init__(self, url: str, cache: Path, key: Path | None = None,
                 known_hosts: Path | None = None) -> None:
        parts = urlsplit(url)
        self.user = parts.username or ""
        self.host = parts.hostname or ""
        self.port = parts.port or 22
        # `/~/x` is x under the login's home; SFTP resolves relative paths from there.
        self.root = parts.path[3:] if parts.path.startswith("/~/") else parts.path
        self.cache = cache
        self.key = key
        self.known_hosts = known_hosts or Path.home() / ".ssh" / "known_hosts"
        self._runner: asyncio.Runner | None = None
        self._conn: asyncssh.SSHClientConnection | None = None
        self._sftp: asyncssh.SFTPClient | None = None

    @property
    def origin(self) -> str:
        return f"sftp://{self.user}@{self.host}:{self.port}"

    # The ArtifactStore interface

    def staging(self, name: str | None = None) -> Path:
        path = self.cache / ".staging" / (name or uuid.uuid4().hex)
        path.mkdir(parents=True)  # refuses a name already there
        return path

    def publish(self, staging: Path, sweep_id: str, cell_id: str, attempt: int) -> str:
        """Upload, verify on the storage host, accept with one rename; the local staging
        directory is removed once the attempt is accepted. The connection is closed after, so
        a worker holds nothing open while it measures."""
        final = self._attempt_dir(sweep_id, cell_id, attempt)
        try:
            for tried in Retrying(stop=stop_after_attempt(PUBLISH_TRIES), reraise=True,
                                  wait=wait_exponential_jitter(initial=1, max=20),
                                  retry=retry_if_exception_type((OSError, asyncssh.Error))):
                with tried:
                    if tried.retry_state.attempt_number > 1:
                        self.close()  # a fresh connection for each try
                    self._publish_once(staging, final)
        except (OSError, asyncssh.Error) as error:
            raise OSError(f"cannot publish to {self.origin}: {error}") from None
        finally:
            self.close()
        shutil.rmtree(staging)
        return f"{self.origin}{final}"

    def _publish_once(self, staging: Path, final: str) -> None:
        try:
            self._run(self._publish(staging, final))
        except asyncssh.SFTPError:
            if self._run(self._exists(final)):
                raise ArtifactExists(f"the artifact store {self.origin} already holds "
                                     f"{final}: attempts are never rewritten") from None
            raise

    def sweeps(self) -> list[str]:
        return sorted(n for n in self._run(self._listdir(self.root)) if not n.startswith("."))

    def attempts(self, sweep_id: str, cell_id: str) -> list[int]:
        folder = posixpath.join(self.root, _segment(sweep_id), _segment(cell_id))
        names = self._run(self._listdir(folder))
        return sorted(int(n.removeprefix("attempt-")) for n in names
                      if n.startswith("attempt-") and n[8:].isdigit())

    def read(self, sweep_id: str, cell_id: str, attempt: int) -> dict[str, Path]:
        """The attempt's files, fetched into the cache (once) and checked against the
        manifest's sha256; a file that fails is not kept."""
        remote = self._attempt_dir(sweep_id, cell_id, attempt)
        local = self.cache / sweep_id / cell_id / f"attempt-{attempt}"
        try:
            raw = self._run(self._read_bytes(posixpath.join(remote, MANIFEST)))
            manifest = json.loads(raw)["files"]
        except (OSError, asyncssh.SFTPError, ValueError, KeyError) as error:
            raise CorruptArtifact(f"{self.origin}{remote}: manifest unreadable "
                                  f"({error})") from None
        confined(manifest, f"{self.origin}{remote}")
        stale = [n for n, e in manifest.items()
                 if not ((local / n).is_file() and sha256_file(local / n) == e["sha256"])]
        if stale:
            self._run(self._fetch(remote, local, stale))
        for name in stale:
            if sha256_file(local / name) != manifest[name]["sha256"]:
                (local / name).unlink()
                raise CorruptArtifact(f"{self.origin}{remote}/{name}: does not match its sha256")
        # The manifest beside its files, as in the store: a record names its sha256.
        if not (local / MANIFEST).is_file() or (local / MANIFEST).read_bytes() != raw:
            local.mkdir(parents=True, exist_ok=True)
            (local / f".{MANIFEST}.part").write_bytes(raw)
            (local / f".{MANIFEST}.part").replace(local / MANIFEST)
        return {name: local / name for name in manifest}

    def read_result(self, sweep_id: str, cell_id: str, attempt: int
                    ) -> tuple[bytes | None, bytes]:
        files = self.read(sweep_id, cell_id, attempt)  # verified in the local cache
        result = files.get("result.json")
        manifest = (self.cache / sweep_id / cell_id / f"attempt-{attempt}" / MANIFEST)
        return (result.read_bytes() if result else None), manifest.read_bytes()

    # Single files beside the attempts (the coordinator's sweep.json)

    def put_file(self, local: Path, relative: str) -> str:
        """Upload to `<root>/<relative>`, replacing it whole; returns its sha256."""
        self._run(self._put_file(local, posixpath.join(self.root, relative)))
        return sha256_file(local)

    def get_file(self, relative: str, local: Path) -> str:
        """Download `<root>/<relative>` to `local` (whole or not at all); returns its sha256."""
        local.parent.mkdir(parents=True, exist_ok=True)
        temp = local.with_name(f".{local.name}.{uuid.uuid4().hex}.part")
        try:
            self._run(self._sftp_call("get", posixpath.join(self.root, relative), str(temp)))
            temp.replace(local)
        except asyncssh.SFTPNoSuchFile:
            raise FileNotFoundError(f"{self.origin}{self.root}/{relative}") from None
        finally:
            temp.unlink(missing_ok=True)
        return sha256_file(local)

    def put_json(self, relative: str, data: object) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            local = Path(tmp) / "data.json"
            local.write_bytes(encoded(data))
            self.put_file(local, relative)

    def get_json(self, relative: str) -> object | None:
        data = self.get_bytes(relative)
        return None if data is None else json.loads(data)

    def exists(self, relative: str) -> bool:
        try:  # a regular file, as the local store's; refused, an OSError, as get_bytes's
            return self._run(self._isfile(posixpath.join(self.root, relative)))
        except asyncssh.SFTPError as error:
            raise OSError(f"{self.origin}{self.root}/{relative}: {error.reason}") from None

    def get_bytes(self, relative: str) -> bytes | None:
        with tempfile.TemporaryDirectory() as tmp:
            local = Path(tmp) / "data.json"
            try:
                self.get_file(relative, local)
            except FileNotFoundError:
                return None
            except asyncssh.SFTPError as error:  # refused, say: an OSError, as a local read's
                raise OSError(f"{self.origin}{self.root}/{relative}: {error.reason}") from None
            return local.read_bytes()

    # The connection, and the event loop it lives in between calls

    def close(self) -> None:
        if self._runner is None:
            return
        if self._conn is not None:
            self._conn.close()
            self._runner.run(self._conn.wait_closed())
        self._runner.close()
        self._runner = self._conn = self._sftp = None

    def __enter__(self) -> "SftpStore":
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        if self._runner is None:
            self._runner = asyncio.Runner()
        return self._runner.run(work)

    async def _client(self) -> asyncssh.SFTPClient:
        if self._sftp is None:
            self._conn = await connect(self.user, self.host, self.port, self.key,
                                       self.known_hosts)
            self._sftp = await self._conn.start_sftp_client()
        return self._sftp

    async def _sftp_call(self, name: str, *args: Any) -> Any:
        sftp = await self._client()
        return await getattr(sftp, name)(*args)

    # The steps, as coroutines

    async def _publish(self, staging: Path, final: str) -> None:
        # The manifest is hashed in a thread while the files go out (hashlib releases the GIL).
        hashing = asyncio.create_task(asyncio.to_thread(_manifest, staging))
        sftp = await self._client()
        assert self._conn is not None
        # The storage host's hasher starts now, so its start-up overlaps the upload.
        hasher = await self._conn.create_process(join(["python3", "-c", REMOTE_SHA256]))
        remote = posixpath.join(self.root, ".staging", uuid.uuid4().hex)
        await sftp.makedirs(remote)
        # The tree first, the manifest last: a staging directory without one is incomplete.
        tree = [str(p) for p in sorted(staging.iterdir()) if p.name != MANIFEST]
        if tree:
            await sftp.put(tree, remote, recurse=True)
        manifest = await hashing
        (staging / MANIFEST).write_text(json.dumps({"files": manifest}, indent=1))
        await sftp.put(str(staging / MANIFEST), posixpath.join(remote, MANIFEST))
        await self._verify_remote(hasher, remote, manifest)
        await sftp.makedirs(posixpath.dirname(final), exist_ok=True)
        await sftp.rename(remote, final)  # refused if the attempt exists: never rewritten

    async def _verify_remote(self, hasher: "asyncssh.SSHClientProcess[str]", remote: str,
                             manifest: dict[str, dict[str, object]]) -> None:
        paths = {posixpath.join(remote, name): name for name in sorted(manifest)}
        hasher.stdin.write("".join(f"{path}\n" for path in paths))
        hasher.stdin.write_eof()
        out, err = await hasher.stdout.read(), await hasher.stderr.read()
        done = await hasher.wait()
        if done.exit_status != 0:
            raise UserError(f"hashing the staged attempt on {self.host} failed (exit "
                            f"{done.exit_status}): {err.strip()[:300]}; the storage host "
                            "needs python3 3.8 or newer")
        found = json.loads(out)
        for path, name in paths.items():
            if found.get(path) != manifest[name]["sha256"]:
                raise CorruptArtifact(f"{self.origin}{path}: the storage host's copy does not "
                                      "match the sha256 sent; not accepted")

    async def _exists(self, path: str) -> bool:
        sftp = await self._client()
        return bool(await sftp.exists(path))

    async def _isfile(self, path: str) -> bool:
        sftp = await self._client()
        return bool(await sftp.isfile(path))

    async def _listdir(self, folder: str) -> list[str]:
        sftp = await self._client()
        try:
            return [str(n) for n in await sftp.listdir(folder)]
        except asyncssh.SFTPNoSuchFile:
            return []

    async def _read_bytes(self, path: str) -> bytes:
        sftp = await self._client()
        async with sftp.open(path, "rb") as f:
            data: bytes = await f.read()
            return data

    async def _fetch(self, remote: str, local: Path, names: list[str]) -> None:
        sftp = await self._client()
        for name in names:
            target = local / name
            target.parent.mkdir(parents=True, exist_ok=True)
            temp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.part")
            try:
                await sftp.get(posixpath.join(remote, name), str(temp))
                temp.replace(target)
            except (OSError, asyncssh.SFTPError) as error:
                raise CorruptArtifact(f"{self.origin}{remote}/{name}: missing "
                                      f"({error})") from None
            finally:
                temp.unlink(missing_ok=True)

    async def _put_file(self, local: Path, target: str) -> None:
        sftp = await self._client()
        await sftp.makedirs(posixpath.dirname(target), exist_ok=True)
        temp = f"{target}.{uuid.uuid4().hex}.part"
        await sftp.put(str(local), temp)
        await sftp.posix_rename(temp, target)

    def _attempt_dir(self, sweep_id: str, cell_id: str, attempt: int) -> str:
        return posixpath.join(self.root, _segment(sweep_id), _segment(cell_id),
                              f"attempt-{int(attempt)}")


async def connect(user: str, host: str, port: int, key: Path | None,
                  known_hosts: Path) -> asyncssh.SSHClientConnection:
    """An authenticated connection to a host whose key `known_hosts` names; anything else is
    refused in one sentence."""
    where = f"{user}@{host}:{port}"
    if not known_hosts.is_file():
        raise UserError(f"no known_hosts file at {known_hosts} to check {where}'s host key; set "
                        "BENCHFLEET_SSH_KNOWN_HOSTS to one that names it")
    keys = {"client_keys": [str(key)], "agent_path": None} if key else {}
    try:
        return await asyncssh.connect(
            host, port, username=user, known_hosts=str(known_hosts), encryption_algs=CIPHERS,
            connect_timeout=CONNECT_TIMEOUT_S, **keys)  # type: ignore[arg-type]
    except asyncssh.HostKeyNotVerifiable:
        raise UserError(f"{where}'s host key is not in {known_hosts} (or differs from it); add "
                        f"it (ssh-keyscan -p {port} {host}, checked against the host)") from None
    except asyncssh.PermissionDenied:
        raise UserError(f"{where} refused the key {key or 'in ~/.ssh'}; add its public half to "
                        "that account's authorized_keys") from None
    except (TimeoutError, OSError, asyncssh.Error) as error:
        raise UserError(f"cannot reach the SSH server {where} ({error or type(error).__name__})"
                        "; check the host, port and network") from None


def _manifest(staging: Path) -> dict[str, dict[str, object]]:
    files = sorted(p for p in staging.rglob("*") if p.is_file() and p.name != MANIFEST)
    return {p.relative_to(staging).as_posix(): {"sha256": sha256_file(p),
                                                "bytes": p.stat().st_size} for p in files}


def _segment(name: str) -> str:
    # Ids become path segments on another machine: one segment each, never a way out.
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"{name!r} cannot name a directory in the artifact store")
    return name
