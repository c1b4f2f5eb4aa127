"""The artifact stores behind one protocol: per cell and attempt, raw logs, parsed JSON and a
sha256 manifest. `LocalStore` (local.py) keeps attempts in a directory, `SftpStore` (sftp.py) on a
storage host over SSH; the task, the record and deploy see only `ArtifactStore`."""

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from jobs.errors import UserError
from workers.shared.stores.manifest import MANIFEST, ArtifactExists, CorruptArtifact

if TYPE_CHECKING:
    from workers.shared.settings import Settings

__all__ = ["MANIFEST", "ArtifactExists", "ArtifactStore", "CorruptArtifact", "accept",
           "get_json", "open_store", "put_json"]


class ArtifactStore(Protocol):
    def staging(self, name: str | None = None) -> Path: ...
    def publish(self, staging: Path, sweep_id: str, cell_id: str, attempt: int) -> str: ...
    def attempts(self, sweep_id: str, cell_id: str) -> list[int]: ...
    def sweeps(self) -> list[str]: ...
    def read(self, sweep_id: str, cell_id: str, attempt: int) -> dict[str, Path]: ...
    def read_result(self, sweep_id: str, cell_id: str, attempt: int
                    ) -> tuple[bytes | None, bytes]:
        """What a record reads of an attempt: its result.json (None when the manifest lists
        none) and its manifest, as bytes, every file checked against the manifest's
        sha256 on the way; each file is read once."""
    def put_file(self, local: Path, relative: str) -> str: ...
    def get_file(self, relative: str, local: Path) -> str: ...
    def put_json(self, relative: str, data: object) -> None:
        """A JSON file beside the attempts (sweep.json, accepted markers), replaced whole:
        `data` as `json.dumps` writes it, or bytes already JSON, written as they are."""
    def get_json(self, relative: str) -> object | None:
        """A JSON file beside the attempts, or None when the store has none."""
    def get_bytes(self, relative: str) -> bytes | None:
        """A file beside the attempts as bytes, or None when the store has none."""
    def exists(self, relative: str) -> bool:
        """Whether the store holds a regular file there, beside the attempts (nothing of it
        read; a folder of that name is not one)."""




def put_json(store: ArtifactStore, relative: str, data: object) -> None:
    store.put_json(relative, data)


def get_json(store: ArtifactStore, relative: str) -> object | None:
    return store.get_json(relative)


def accept(store: ArtifactStore, sweep_id: str, cell_id: str, attempt: int,
           status: str, generation: int = 0) -> None:
    """Record in the store itself which attempt of a cell and generation counts, so a record
    can be made from the store alone when Redis has lost everything, and so that no
    (cell, generation) with an accepted attempt is measured again, whatever Redis says."""
    put_json(store, f"{sweep_id}/{cell_id}/accepted.json",
             {"attempt": attempt, "status": status, "generation": generation})


def accepted(store: ArtifactStore, sweep_id: str, cell_id: str) -> dict | None:
    """The cell's accepted marker, if the store holds one (a marker older than generations
    counts as generation 0)."""
    marker = get_json(store, f"{sweep_id}/{cell_id}/accepted.json")
    if not isinstance(marker, dict) or "attempt" not in marker:
        return None
    return {"generation": 0, **marker}


def open_store(where: "Path | str", settings: "Settings | None" = None) -> ArtifactStore:
    """The store BENCHFLEET_ARTIFACTS names: a directory, or sftp://USER@HOST[:PORT]/PATH
    (its key, known_hosts and local cache from `settings`, else from the environment)."""
    if str(where).startswith("sftp:"):
        from workers.shared.settings import load_settings
        from workers.shared.stores.sftp import SftpStore  # asyncssh only when asked for

        s = settings or load_settings()
        return SftpStore(str(where), s.artifact_cache, s.ssh_key, s.ssh_known_hosts)
    root = Path(where)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"cannot create the artifact store at {root} ({error.strerror}); "
                        "set BENCHFLEET_ARTIFACTS to a writable directory") from None
    from workers.shared.stores.local import LocalStore

    return LocalStore(root)
