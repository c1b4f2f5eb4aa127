"""The next attempt's staging folder, made while the worker waits between cells.

An attempt's folder, its `out/` and its first command's stdout and stderr are four new inodes
before that command can start. Where the store's disk is slow to allocate one (an NFS home, or
a block group of this machine's ext4 where each took 0.4 ms against 0.02 elsewhere: the
floors block of docs/benchmarks/overhead.md), that is on the way from the message to the
command. So after each cell the worker makes the next folder with a spare `out/` and two spare
files; the next attempt renames them to their names, and any left unused are removed before
the attempt is stored, so a stored attempt holds what it held before.
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
    def __init__(self, store: ArtifactStore) -> None:
        self.store = store
        self.spare: Path | None = None

    def take(self) -> Path:
        """A staging folder for the attempt starting now: the spare, or a new one."""
        spare, self.spare = self.spare, None
        if spare is not None and spare.is_dir():
            return spare
        return self.store.staging()

    def prepare(self) -> None:
        """Make the spare, between cells; a store that cannot stage now is left for the next
        attempt's own `take` to say why."""
        if self.spare is not None:
            return
        try:
            spare = self.store.staging()
            os.mkdir(spare / SPARE_DIR)
            for name in SPARE_FILES:
                os.close(os.open(spare / name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except OSError as error:
            log.debug("no spare staging folder: %s", error)
            return
        self.spare = spare

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


def named_file(staging: Path, name: str) -> Path:
    """`staging/name`, a spare file renamed there where one is left (the caller opens it for
    writing, which empties a file of that name either way)."""
    path = staging / name
    for spare in SPARE_FILES:
        try:
            os.rename(staging / spare, path)
        except FileNotFoundError:
            continue
        except OSError:
            pass  # not a plain file's name: the caller's open says why
        return path
    return path


def tidy(staging: Path) -> None:
    """Remove the spares an attempt did not use: a stored attempt holds only its own files."""
    for name in SPARE_FILES:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staging / name)
    with contextlib.suppress(FileNotFoundError):
        os.rmdir(staging / SPARE_DIR)
