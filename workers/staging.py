"""The next attempt's staging folder, made while the worker waits for its next cell.

An attempt's staging folder, its `out/` and the stdout and stderr of its first command run in
the folder are four new inodes before that command can start. Where a disk is slow to make
one (in some folders of the benchmark machine's ext4, 0.4 to 0.9 ms a file against 0.02 in
others: docs/benchmarks/overhead-profiles.md), that lay between the message and the command.
So once a cell is settled (and when it starts) the worker makes the next folder with a spare
`out/` and two spare files, and the next attempt's first command takes them under their own
names. Back to back, the next cell waits for them as it would have; after an idle spell they
are there already. Spares an attempt does not use are removed before it is stored, so a
stored attempt holds what it held before. The worker removes its spare when it stops; what a
killed one left under the spare's name, the next worker of that name removes.
"""

import contextlib
import logging
import os
import shutil
from pathlib import Path

from workers.shared.stores import ArtifactStore

log = logging.getLogger(__name__)

SPARE_DIR = ".spare-out"
SPARE_FILES = (".spare-stdout", ".spare-stderr")


class Staging:
    def __init__(self, store: ArtifactStore, worker: str) -> None:
        self.store = store
        # One name a worker: what a killed one left under it (its spare, or the folder of the
        # attempt it was killed in, which nothing reads) goes when the name makes its next.
        self.name = f"spare-{worker}"
        self.spare: Path | None = None

    def take(self) -> Path:
        """A staging folder for the attempt starting now: the spare, or a new one."""
        spare, self.spare = self.spare, None
        if spare is not None and spare.is_dir():
            return spare
        return self.store.staging()

    def prepare(self) -> None:
        """Make the spare; a store that cannot stage now is left for the next attempt's own
        `take` to say why."""
        if self.spare is not None:
            return
        spare = None
        try:
            spare = self._folder()
            os.mkdir(spare / SPARE_DIR)
            for name in SPARE_FILES:  # as open(name, "wb") would make it
                os.close(os.open(spare / name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
        except OSError as error:
            log.debug("no spare staging folder: %s", error)
            if spare is not None:  # half made
                shutil.rmtree(spare, ignore_errors=True)
            return
        self.spare = spare

    def _folder(self) -> Path:
        try:
            return self.store.staging(self.name)
        except FileExistsError as left:  # this name's, from before: no attempt stored reads it
            shutil.rmtree(left.filename, ignore_errors=True)
        return self.store.staging(self.name)

    def discard(self) -> None:
        """Remove the spare (the worker is stopping)."""
        spare, self.spare = self.spare, None
        if spare is not None:
            shutil.rmtree(spare, ignore_errors=True)


def named_folder(staging: Path, name: str) -> Path:
    """`staging/name` made, from the spare where it is still there."""
    path = staging / name
    try:
        os.rename(staging / SPARE_DIR, path)  # an empty folder onto a missing or empty one
    except OSError:
        path.mkdir(parents=True, exist_ok=True)
    return path


def take_spare(path: Path) -> bool:
    """Rename a spare file of `path`'s folder to `path`: an empty file, made earlier. False
    where its folder has none left (or `path` names no file: the caller's open says why)."""
    for spare in SPARE_FILES:
        try:
            os.rename(path.parent / spare, path)
        except FileNotFoundError:
            continue
        except OSError:
            return False
        return True
    return False


def tidy(staging: Path) -> None:
    """Remove the spares an attempt did not use: a stored attempt holds only its own files.
    Never fails the attempt: a spare it cannot remove is stored with it."""
    for name in SPARE_FILES:
        with contextlib.suppress(OSError):
            os.unlink(staging / name)
    shutil.rmtree(staging / SPARE_DIR, ignore_errors=True)
