"""The artifact store on a storage host, over SFTP (paramiko): workers publish attempts to it,
the coordinator reads them into a local cache, so artifacts stay on the storage host while the
laptop is away.

An attempt is uploaded into `<root>/.staging/<uuid>/`, hashed again on the storage host, and
accepted by one rename to `<root>/<sweep>/<cell>/attempt-N`: an upload cut off at any point
leaves only a staging directory that nothing reads. Every file is hashed while it is sent and
again after it is fetched, so both sides check the manifest's sha256.
"""

import hashlib
import json
import posixpath
import shutil
import socket
import stat
import uuid
from pathlib import Path
from shlex import join
from types import TracebackType
from typing import IO
from urllib.parse import urlsplit

import paramiko

from jobs.errors import UserError
from workers.fleet.artifacts import MANIFEST, CorruptArtifact, sha256_file

# AES-GCM first: one AEAD pass in OpenSSL instead of AES-CTR plus a separate HMAC, the cheapest
# cipher paramiko speaks (docs/benchmarks/sftp.md measures it).
CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "aes128-ctr", "aes256-ctr")
# Reads and writes go in the largest request OpenSSH's sftp-server accepts without splitting.
BLOCK = 32768
# Outstanding read requests while fetching a file (paramiko's prefetch).
READ_AHEAD = 64
CONNECT_TIMEOUT_S = 15.0
DEFAULT_KEYS = ("id_ed25519", "id_ecdsa", "id_rsa")
# Hashes files on the storage host; python3 because coreutils' sha256sum is several times
# slower than OpenSSL's and the check is on the publish path.
_REMOTE_SHA256 = ("import hashlib,json,sys\n"
                  "def h(p):\n"
                  " d=hashlib.sha256()\n"
                  " with open(p,'rb') as f:\n"
                  "  for b in iter(lambda:f.read(1<<20),b''):d.update(b)\n"
                  " return d.hexdigest()\n"
                  "print(json.dumps({p:h(p) for p in sys.argv[1:]}))\n")


class SftpStore:
    """The `ArtifactStore` interface over SFTP; see the module's docstring."""

    def __init__(self, url: str, cache: Path, key: Path | None = None,
                 known_hosts: Path | None = None) -> None:
        parts = urlsplit(url)
        self.url = url
        self.user = parts.username or ""
        self.host = parts.hostname or ""
        self.port = parts.port or 22
        # `/~/x` is x under the login's home; SFTP resolves relative paths from there.
        self.root = parts.path[3:] if parts.path.startswith("/~/") else parts.path
        self.cache = cache
        self.key = key
        self.known_hosts = known_hosts or Path.home() / ".ssh" / "known_hosts"
        self._transport: paramiko.Transport | None = None
        self._sftp: paramiko.SFTPClient | None = None

    # The ArtifactStore interface

    def staging(self) -> Path:
        path = self.cache / ".staging" / uuid.uuid4().hex
        path.mkdir(parents=True)
        return path

    def publish(self, staging: Path, sweep_id: str, cell_id: str, attempt: int) -> str:
        """Upload, verify on the storage host, accept with one rename; the local staging
        directory is removed once the attempt is accepted. The connection is closed after, so
        a worker holds nothing open while it measures."""
        final = self._attempt_dir(sweep_id, cell_id, attempt)
        try:
            sftp = self._open()
            remote = posixpath.join(self.root, ".staging", uuid.uuid4().hex)
            manifest = self._upload_tree(sftp, staging, remote)
            self._verify_remote(remote, manifest)
            _makedirs(sftp, posixpath.dirname(final))
            sftp.rename(remote, final)  # refused if the attempt exists: never rewritten
        finally:
            self.close()
        shutil.rmtree(staging)
        return f"{self._origin()}{final}"

    def attempts(self, sweep_id: str, cell_id: str) -> list[int]:
        folder = posixpath.join(self.root, _segment(sweep_id), _segment(cell_id))
        try:
            names = self._open().listdir(folder)
        except FileNotFoundError:
            return []
        return sorted(int(n.removeprefix("attempt-")) for n in names
                      if n.startswith("attempt-") and n[8:].isdigit())

    def read(self, sweep_id: str, cell_id: str, attempt: int) -> dict[str, Path]:
        """The attempt's files, fetched into the cache (once) and checked against the
        manifest's sha256."""
        remote = self._attempt_dir(sweep_id, cell_id, attempt)
        local = self.cache / sweep_id / cell_id / f"attempt-{attempt}"
        sftp = self._open()
        try:
            manifest = json.loads(_read_small(sftp, posixpath.join(remote, MANIFEST)))["files"]
        except (OSError, ValueError, KeyError) as error:
            raise CorruptArtifact(f"{self._origin()}{remote}: manifest unreadable "
                                  f"({error})") from None
        paths = {}
        for name, entry in manifest.items():
            path = local / name
            if not (path.is_file() and sha256_file(path) == entry["sha256"]):
                try:
                    got = download(sftp, posixpath.join(remote, name), path)
                except OSError as error:
                    raise CorruptArtifact(f"{self._origin()}{remote}/{name}: missing "
                                          f"({error})") from None
                if got != entry["sha256"]:
                    path.unlink()
                    raise CorruptArtifact(f"{self._origin()}{remote}/{name}: does not match "
                                          "its sha256")
            paths[name] = path
        return paths

    # Single files beside the attempts (the coordinator's sweep.json)

    def put_file(self, local: Path, relative: str) -> str:
        """Upload to `<root>/<relative>`, replacing it whole; returns the sha256 sent."""
        sftp = self._open()
        target = posixpath.join(self.root, relative)
        _makedirs(sftp, posixpath.dirname(target))
        temp = f"{target}.{uuid.uuid4().hex}.part"
        digest = upload(sftp, local, temp)
        sftp.posix_rename(temp, target)
        return digest

    def get_file(self, relative: str, local: Path) -> str:
        """Download `<root>/<relative>` to `local`; returns its sha256."""
        return download(self._open(), posixpath.join(self.root, relative), local)

    # The connection

    def close(self) -> None:
        if self._sftp is not None:
            self._sftp.close()
        if self._transport is not None:
            self._transport.close()
        self._sftp = self._transport = None

    def __enter__(self) -> "SftpStore":
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def _open(self) -> paramiko.SFTPClient:
        if self._sftp is None or self._transport is None or not self._transport.is_active():
            self.close()
            self._transport = connect(self.user, self.host, self.port, self.key,
                                      self.known_hosts)
            self._sftp = paramiko.SFTPClient.from_transport(self._transport)
        assert self._sftp is not None
        return self._sftp

    def _origin(self) -> str:
        return f"sftp://{self.user}@{self.host}:{self.port}"

    def _attempt_dir(self, sweep_id: str, cell_id: str, attempt: int) -> str:
        return posixpath.join(self.root, _segment(sweep_id), _segment(cell_id),
                              f"attempt-{int(attempt)}")

    def _upload_tree(self, sftp: paramiko.SFTPClient, staging: Path,
                     remote: str) -> dict[str, dict[str, object]]:
        files = sorted(p for p in staging.rglob("*") if p.is_file() and p.name != MANIFEST)
        manifest: dict[str, dict[str, object]] = {}
        _makedirs(sftp, remote)
        for path in files:
            name = path.relative_to(staging).as_posix()
            _makedirs(sftp, posixpath.dirname(posixpath.join(remote, name)))
            manifest[name] = {"sha256": upload(sftp, path, posixpath.join(remote, name)),
                              "bytes": path.stat().st_size}
        # The manifest goes last: a staging directory without one is visibly incomplete.
        (staging / MANIFEST).write_text(json.dumps({"files": manifest}, indent=1))
        upload(sftp, staging / MANIFEST, posixpath.join(remote, MANIFEST))
        return manifest

    def _verify_remote(self, remote: str, manifest: dict[str, dict[str, object]]) -> None:
        names = sorted(manifest)
        assert self._transport is not None
        found = json.loads(run(self._transport, ["python3", "-c", _REMOTE_SHA256,
                                                 *(posixpath.join(remote, n) for n in names)]))
        for name in names:
            if found.get(posixpath.join(remote, name)) != manifest[name]["sha256"]:
                raise CorruptArtifact(f"{self._origin()}{remote}/{name}: the storage host's "
                                      "copy does not match the sha256 sent; not accepted")


def connect(user: str, host: str, port: int, key: Path | None,
            known_hosts: Path) -> paramiko.Transport:
    """An authenticated SSH transport to a host whose key `known_hosts` names; anything else is
    refused in one sentence."""
    where = f"{user}@{host}:{port}"
    try:
        sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
    except OSError as error:
        raise UserError(f"cannot reach the SSH server {where} ({error}); check the host, "
                        "port and network") from None
    transport = paramiko.Transport(sock)
    transport.get_security_options().ciphers = CIPHERS
    try:
        transport.start_client(timeout=CONNECT_TIMEOUT_S)
        _check_host_key(transport, host, port, known_hosts, where)
        transport.auth_publickey(user, _private_key(key))
    except paramiko.AuthenticationException:
        transport.close()
        raise UserError(f"{where} refused the key {key or 'in ~/.ssh'}; add its public half "
                        "to that account's authorized_keys") from None
    except (paramiko.SSHException, OSError) as error:
        transport.close()
        raise UserError(f"SSH to {where} failed ({error})") from None
    except BaseException:
        transport.close()
        raise
    return transport


def run(transport: paramiko.Transport, argv: list[str]) -> str:
    """Run a command on the host (arguments quoted for its shell); its stdout, or one sentence
    with its stderr when it fails."""
    channel = transport.open_session()
    channel.exec_command(join(argv))
    out, err = channel.makefile("rb").read(), channel.makefile_stderr("rb").read()
    code = channel.recv_exit_status()
    channel.close()
    if code != 0:
        raise UserError(f"`{argv[0]}` failed on {transport.getpeername()[0]} with exit {code}: "
                        f"{err.decode(errors='replace').strip()[:300]}")
    return out.decode()


def upload(sftp: paramiko.SFTPClient, local: Path, remote: str) -> str:
    """Send one file with pipelined writes; returns the sha256 of the bytes sent."""
    digest = hashlib.sha256()
    with local.open("rb") as source, sftp.open(remote, "wb") as target:
        target.set_pipelined(True)
        _copy(source, target, digest)
    return digest.hexdigest()


def download(sftp: paramiko.SFTPClient, remote: str, local: Path) -> str:
    """Fetch one file into place (temp file, then rename); returns the sha256 of the bytes
    received."""
    digest = hashlib.sha256()
    local.parent.mkdir(parents=True, exist_ok=True)
    temp = local.with_name(f".{local.name}.{uuid.uuid4().hex}.part")
    try:
        with sftp.open(remote, "rb") as source, temp.open("wb") as target:
            source.prefetch(source.stat().st_size, max_concurrent_requests=READ_AHEAD)
            _copy(source, target, digest)
        temp.replace(local)
    finally:
        temp.unlink(missing_ok=True)
    return digest.hexdigest()


def _copy(source: IO[bytes], target: IO[bytes], digest: "hashlib._Hash") -> None:
    for block in iter(lambda: source.read(BLOCK * 32), b""):
        digest.update(block)
        target.write(block)


def _read_small(sftp: paramiko.SFTPClient, remote: str) -> bytes:
    with sftp.open(remote, "rb") as f:
        return f.read()


def _makedirs(sftp: paramiko.SFTPClient, path: str) -> None:
    if not path or path in ("/", "."):
        return
    try:
        if stat.S_ISDIR(sftp.stat(path).st_mode or 0):
            return
    except FileNotFoundError:
        pass
    _makedirs(sftp, posixpath.dirname(path))
    try:
        sftp.mkdir(path)
    except OSError:
        if not stat.S_ISDIR(sftp.stat(path).st_mode or 0):  # another writer made it: fine
            raise


def _segment(name: str) -> str:
    # Ids become path segments on another machine: one segment each, never a way out.
    if not name or "/" in name or name in (".", "..") or name.startswith("."):
        raise ValueError(f"{name!r} cannot name a directory in the artifact store")
    return name


def _check_host_key(transport: paramiko.Transport, host: str, port: int, known_hosts: Path,
                    where: str) -> None:
    name = host if port == 22 else f"[{host}]:{port}"
    offered = transport.get_remote_server_key()
    known = paramiko.HostKeys(str(known_hosts)) if known_hosts.is_file() else paramiko.HostKeys()
    entry = known.lookup(name)
    if entry is None or offered.get_name() not in entry:
        raise UserError(f"{where}'s host key is not in {known_hosts}; add it (ssh-keyscan "
                        f"-p {port} {host}, checked against the host) and try again")
    if entry[offered.get_name()] != offered:
        raise UserError(f"{where}'s host key differs from the one in {known_hosts}; refusing "
                        "to connect (someone may be in between)")


def _private_key(key: Path | None) -> paramiko.PKey:
    candidates = [key] if key else [Path.home() / ".ssh" / n for n in DEFAULT_KEYS]
    for path in candidates:
        if path.is_file():
            try:
                return paramiko.PKey.from_path(path)
            except (paramiko.SSHException, OSError) as error:
                raise UserError(f"cannot read the SSH key {path} ({error}); set "
                                "BENCHFLEET_SSH_KEY to an unencrypted private key") from None
    raise UserError(f"no SSH key at {key or '~/.ssh/id_ed25519'}; set BENCHFLEET_SSH_KEY to "
                    "the private key the storage host accepts")
