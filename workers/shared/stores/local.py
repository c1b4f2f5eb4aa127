"""The artifact store in a directory: an attempt is written into a staging directory and appears
whole or not at all (one rename).

What a worker does once a cell (publish, and the accepted marker's read and write) names its
paths as strings, not `Path`s: pathlib would intern the sweep's and the cell's ids, new with
every sweep, and grow the worker's memory (workers/shared/kept_names.py says how).
"""

import hashlib
import json
import os
import shutil
import uuid
from pathlib import Path

from workers.shared.stores.manifest import (
    MANIFEST,
    ArtifactExists,
    CorruptArtifact,
    confined,
    encoded,
    sha256_file,
)


class LocalStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def staging(self, name: str | None = None) -> Path:
        path = self.root / ".staging" / (name or uuid.uuid4().hex)
        path.mkdir(parents=True)  # refuses a name already there
        return path

    def publish(self, staging: Path, sweep_id: str, cell_id: str, attempt: int) -> str:
        files = sorted(p for p in staging.rglob("*") if p.is_file() and p.name != MANIFEST)
        manifest = {str(p.relative_to(staging)): _entry(p) for p in files}
        # Written in place: the staging folder is this attempt's alone and appears whole by
        # the rename below, so a temporary file and a rename of its own would guard nothing.
        (staging / MANIFEST).write_text(json.dumps({"files": manifest}, indent=1))
        cell = os.path.join(self.root, sweep_id, cell_id)
        final = os.path.join(cell, f"attempt-{attempt}")
        os.makedirs(cell, exist_ok=True)
        try:
            os.rename(staging, final)  # fails if the attempt exists: never rewritten
        except OSError as error:
            if os.path.exists(final):
                raise ArtifactExists(
                    f"the artifact store already holds attempt {attempt} of this cell "
                    "(Redis lost its attempt counters? start Redis with AOF on); rerun the "
                    "cell") from None
            raise error
        return final

    def sweeps(self) -> list[str]:
        """The sweep ids the store holds (its top folders; history reads them all)."""
        return sorted(p.name for p in self.root.iterdir()
                      if p.is_dir() and not p.name.startswith("."))

    def attempts(self, sweep_id: str, cell_id: str) -> list[int]:
        # scandir, not Path.glob: a record lists every cell's folder, and glob's matching
        # cost 0.2 ms a cell, most of listing 10,000 of them.
        try:
            names = [e.name for e in os.scandir(os.path.join(self.root, sweep_id, cell_id))]
        except (FileNotFoundError, NotADirectoryError):
            return []
        return sorted(int(n.removeprefix("attempt-")) for n in names
                      if n.startswith("attempt-") and n.removeprefix("attempt-").isdigit())

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

    def read_result(self, sweep_id: str, cell_id: str, attempt: int
                    ) -> tuple[bytes | None, bytes]:
        # strings: pathlib's parsing of three parts cost 15 µs an attempt, os.path.join 2 µs
        # a part (the parts are plain names: the cell's are checked, the manifest's confined)
        folder = f"{self.root}/{sweep_id}/{cell_id}/attempt-{attempt}"
        try:
            with open(f"{folder}/{MANIFEST}", "rb") as f:
                raw = f.read()
            manifest = json.loads(raw)["files"]
            sums = {name: entry["sha256"] for name, entry in manifest.items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            raise CorruptArtifact(f"{folder}: manifest unreadable ({error})") from None
        confined(sums, folder)
        result = None
        for name, expected in sums.items():
            path = f"{folder}/{name}"
            try:
                with open(path, "rb") as f:
                    if name == "result.json":
                        result = f.read()
                        digest = hashlib.sha256(result).hexdigest()
                    else:  # kept out of memory: a profile's exports can be large
                        digest = hashlib.file_digest(f, "sha256").hexdigest()
            except OSError:
                digest = None
            if digest != expected:
                raise CorruptArtifact(f"{path}: missing or does not match its sha256")
        return result, raw

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

    def put_json(self, relative: str, data: object) -> None:
        target = os.path.join(self.root, relative)  # one write and a rename, no copy
        os.makedirs(os.path.dirname(target), exist_ok=True)
        _write_atomic(target, encoded(data))

    def get_json(self, relative: str) -> object | None:
        data = self.get_bytes(relative)
        return None if data is None else json.loads(data)

    def exists(self, relative: str) -> bool:
        return os.path.isfile(os.path.join(self.root, relative))

    def get_bytes(self, relative: str) -> bytes | None:
        try:
            with open(os.path.join(self.root, relative), "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def _dir(self, sweep_id: str, cell_id: str, attempt: int) -> Path:
        return self.root / sweep_id / cell_id / f"attempt-{attempt}"


def _entry(path: Path) -> dict[str, object]:
    """A file's manifest entry, from one read of it (its size is where the read ended)."""
    with path.open("rb") as f:
        return {"sha256": hashlib.file_digest(f, "sha256").hexdigest(), "bytes": f.tell()}


def _write_atomic(path: str, data: bytes) -> None:
    folder, name = os.path.split(path)
    temp = os.path.join(folder, f".{name}.{os.getpid()}.tmp")  # two workers may race here
    with open(temp, "wb") as f:
        f.write(data)
    os.replace(temp, path)
