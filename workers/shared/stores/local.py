"""The artifact store: per cell and attempt, raw logs, parsed JSON and a sha256 manifest.

An attempt is written into a staging directory and appears whole or not at all (one rename).
`ArtifactStore` is the interface the task and the record use; `LocalStore` keeps attempts in a
directory, `SftpStore` (sftp_store.py) on a storage host over SSH.
"""

import hashlib
import json
import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from jobs.errors import UserError
from jobs.spec.confine import inside

if TYPE_CHECKING:
    from workers.shared.settings import Settings

MANIFEST = "manifest.json"


class CorruptArtifact(Exception):
    """An attempt whose files do not match its manifest."""


class ArtifactExists(Exception):
    """An attempt number the store already holds: attempts are never rewritten."""


class ArtifactStore(Protocol):
    def staging(self) -> Path: ...
    def publish(self, staging: Path, sweep_id: str, cell_id: str, attempt: int) -> str: ...
    def attempts(self, sweep_id: str, cell_id: str) -> list[int]: ...
    def read(self, sweep_id: str, cell_id: str, attempt: int) -> dict[str, Path]: ...
    def put_file(self, local: Path, relative: str) -> str: ...
    def get_file(self, relative: str, local: Path) -> str: ...


class LocalStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def staging(self) -> Path:
        path = self.root / ".staging" / uuid.uuid4().hex
        path.mkdir(parents=True)
        return path

    def publish(self, staging: Path, sweep_id: str, cell_id: str, attempt: int) -> str:
        files = sorted(p for p in staging.rglob("*") if p.is_file() and p.name != MANIFEST)
        manifest = {str(p.relative_to(staging)): {"sha256": sha256_file(p),
                                                  "bytes": p.stat().st_size} for p in files}
        _write_atomic(staging / MANIFEST, json.dumps({"files": manifest}, indent=1))
        final = self._dir(sweep_id, cell_id, attempt)
        final.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(staging, final)  # fails if the attempt exists: never rewritten
        except OSError as error:
            if final.exists():
                raise ArtifactExists(
                    f"the artifact store already holds attempt {attempt} of this cell "
                    "(Redis lost its attempt counters? start Redis with AOF on); rerun the "
                    "cell") from None
            raise error
        return str(final)

    def attempts(self, sweep_id: str, cell_id: str) -> list[int]:
        cell = self.root / sweep_id / cell_id
        if not cell.is_dir():
            return []
        return sorted(int(p.name.removeprefix("attempt-")) for p in cell.glob("attempt-*"))

    def read(self, sweep_id: str, cell_id: str, attempt: int) -> dict[str, Path]:
        """The attempt's files, each checked against the manifest's sha256."""
        folder = self._dir(sweep_id, cell_id, attempt)
        try:
            manifest = json.loads((folder / MANIFEST).read_text())["files"]
        except (OSError, ValueError, KeyError) as error:
            raise CorruptArtifact(f"{folder}: manifest unreadable ({error})") from None
        confined(manifest, str(folder))
        paths = {}
        for name, entry in manifest.items():
            path = folder / name
            if not path.is_file() or sha256_file(path) != entry["sha256"]:
                raise CorruptArtifact(f"{path}: missing or does not match its sha256")
            paths[name] = path
        return paths

    def put_file(self, local: Path, relative: str) -> str:
        """Copy to `<root>/<relative>`, replacing it whole; returns its sha256."""
        target = self.root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.part")
        shutil.copyfile(local, temp)
        os.replace(temp, target)
        return sha256_file(target)

    def get_file(self, relative: str, local: Path) -> str:
        local.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.root / relative, local)
        return sha256_file(local)

    def _dir(self, sweep_id: str, cell_id: str, attempt: int) -> Path:
        return self.root / sweep_id / cell_id / f"attempt-{attempt}"


def confined(manifest: dict[str, object], where: str) -> None:
    """Refuse a manifest naming a file outside its attempt: whoever wrote the attempt (a
    worker, anyone on the storage host) must not make the coordinator read or write
    elsewhere."""
    for name in manifest:
        if name.startswith("/") or inside(name, "/attempt") in (None, "/attempt"):
            raise CorruptArtifact(f"{where}: the manifest names {name[:120]!r}, outside the "
                                  "attempt")


def put_json(store: ArtifactStore, relative: str, data: object) -> None:
    """A JSON file beside the attempts (sweep.json, accepted markers), replaced whole."""
    if isinstance(store, LocalStore):  # one write and a rename, no copy
        target = store.root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(target, json.dumps(data, separators=(",", ":")))  # `jq .` reads it
        return
    with tempfile.TemporaryDirectory() as tmp:
        local = Path(tmp) / "data.json"
        local.write_text(json.dumps(data, separators=(",", ":")))
        store.put_file(local, relative)


def get_json(store: ArtifactStore, relative: str) -> object | None:
    """A JSON file beside the attempts, or None when the store has none."""
    if isinstance(store, LocalStore):
        try:
            return json.loads((store.root / relative).read_bytes())
        except FileNotFoundError:
            return None
    with tempfile.TemporaryDirectory() as tmp:
        local = Path(tmp) / "data.json"
        try:
            store.get_file(relative, local)
        except FileNotFoundError:
            return None
        return json.loads(local.read_text())


def accept(store: ArtifactStore, sweep_id: str, cell_id: str, attempt: int,
           status: str) -> None:
    """Record in the store itself which attempt of a cell counts, so a record can be made
    from the store alone when Redis has lost everything."""
    put_json(store, f"{sweep_id}/{cell_id}/accepted.json", {"attempt": attempt,
                                                            "status": status})


def open_store(where: "Path | str", settings: "Settings | None" = None) -> ArtifactStore:
    """The store BENCHFLEET_ARTIFACTS names: a directory, or sftp://USER@HOST[:PORT]/PATH
    (its key, known_hosts and local cache from `settings`, else from the environment)."""
    if str(where).startswith("sftp:"):
        from workers.shared.settings import load_settings
        from workers.shared.stores.sftp import SftpStore

        s = settings or load_settings()
        return SftpStore(str(where), s.artifact_cache, s.ssh_key, s.ssh_known_hosts)
    root = Path(where)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"cannot create the artifact store at {root} ({error.strerror}); "
                        "set BENCHFLEET_ARTIFACTS to a writable directory") from None
    return LocalStore(root)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _write_atomic(path: Path, text: str) -> None:
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # two workers may race here
    temp.write_text(text)
    os.replace(temp, path)
