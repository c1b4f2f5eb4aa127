"""The artifact store: per cell and attempt, raw logs, parsed JSON and a sha256 manifest.

An attempt is written into a staging directory and appears whole or not at all (one rename).
`ArtifactStore` is the interface the task and the record use, so a store on another host
(over SSH) can stand beside the local one.
"""

import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import Protocol

from jobs.errors import UserError

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
    def put_json(self, sweep_id: str, name: str, data: object) -> None: ...
    def get_json(self, sweep_id: str, name: str) -> object | None: ...
    def accept(self, sweep_id: str, cell_id: str, attempt: int, status: str) -> None: ...


class LocalStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def staging(self) -> Path:
        path = self.root / ".staging" / uuid.uuid4().hex
        path.mkdir(parents=True)
        return path

    def publish(self, staging: Path, sweep_id: str, cell_id: str, attempt: int) -> str:
        files = sorted(p for p in staging.rglob("*") if p.is_file() and p.name != MANIFEST)
        manifest = {str(p.relative_to(staging)): {"sha256": _sha256(p), "bytes": p.stat().st_size}
                    for p in files}
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

    def put_json(self, sweep_id: str, name: str, data: object) -> None:
        """A file beside the sweep's cells (sweep.json, accepted markers), written whole."""
        path = self.root / sweep_id / name
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(path, json.dumps(data, indent=1))

    def get_json(self, sweep_id: str, name: str) -> object | None:
        try:
            return json.loads((self.root / sweep_id / name).read_text())
        except FileNotFoundError:
            return None

    def accept(self, sweep_id: str, cell_id: str, attempt: int, status: str) -> None:
        """Record in the store itself which attempt counts, so a record can be made from the
        store alone when Redis has lost everything."""
        self.put_json(sweep_id, f"{cell_id}/accepted.json", {"attempt": attempt,
                                                             "status": status})

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
        paths = {}
        for name, entry in manifest.items():
            path = folder / name
            if not path.is_file() or _sha256(path) != entry["sha256"]:
                raise CorruptArtifact(f"{path}: missing or does not match its sha256")
            paths[name] = path
        return paths

    def _dir(self, sweep_id: str, cell_id: str, attempt: int) -> Path:
        return self.root / sweep_id / cell_id / f"attempt-{attempt}"


def open_store(root: Path) -> LocalStore:
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"cannot create the artifact store at {root} ({error.strerror}); "
                        "set BENCHFLEET_ARTIFACTS to a writable directory") from None
    return LocalStore(root)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _write_atomic(path: Path, text: str) -> None:
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # two workers may race here
    temp.write_text(text)
    os.replace(temp, path)
