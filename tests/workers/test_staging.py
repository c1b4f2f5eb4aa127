"""The next attempt's staging folder, made between cells (workers/staging.py): the attempt
takes the spare's inodes under their own names, and a stored attempt holds no spare."""

import os
from pathlib import Path

from workers.shared.stores.local import LocalStore
from workers.staging import SPARE_DIR, SPARE_FILES, Staging, named_file, named_folder, tidy


def _inode(path: Path) -> int:
    return os.stat(path).st_ino


def test_an_attempt_takes_the_spare_folder_and_its_inodes(tmp_path: Path) -> None:
    staging = Staging(LocalStore(tmp_path))
    staging.prepare()
    spare = staging.spare
    assert spare is not None and spare.parent == tmp_path / ".staging"
    made = {name: _inode(spare / name) for name in (SPARE_DIR, *SPARE_FILES)}

    taken = staging.take()
    out = named_folder(taken, "out")
    stdout = named_file(taken, "measure.stdout.txt")
    stderr = named_file(taken, "measure.stderr.txt")
    assert taken == spare and staging.spare is None
    assert (_inode(out), _inode(stdout), _inode(stderr)) == tuple(made.values())
    assert sorted(os.listdir(taken)) == ["measure.stderr.txt", "measure.stdout.txt", "out"]

    # The spares are gone: the next command's files and folders are made as before.
    later = named_file(taken, "other.stdout.txt")
    assert not later.exists()
    assert named_folder(taken, "out") == out and out.is_dir()


def test_unused_spares_are_removed_before_the_attempt_is_stored(tmp_path: Path) -> None:
    staging = Staging(LocalStore(tmp_path))
    staging.prepare()
    taken = staging.take()
    named_file(taken, "probe-help.stdout.txt")
    tidy(taken)
    assert sorted(os.listdir(taken)) == ["probe-help.stdout.txt"]
    tidy(taken)  # twice, or with nothing left: nothing to do


def test_a_spare_removed_under_the_worker_is_made_again(tmp_path: Path) -> None:
    staging = Staging(LocalStore(tmp_path))
    staging.prepare()
    staging.prepare()  # one spare at a time
    assert len(os.listdir(tmp_path / ".staging")) == 1
    assert staging.spare is not None
    os.rename(staging.spare, tmp_path / "elsewhere")
    taken = staging.take()
    assert taken.is_dir() and taken.parent == tmp_path / ".staging" and os.listdir(taken) == []
    assert named_folder(taken, "out").is_dir()


def test_a_name_the_spare_cannot_take_is_left_to_the_caller(tmp_path: Path) -> None:
    staging = Staging(LocalStore(tmp_path))
    staging.prepare()
    taken = staging.take()
    (taken / "a-folder.stdout.txt").mkdir()
    assert named_file(taken, "a-folder.stdout.txt") == taken / "a-folder.stdout.txt"
    tidy(taken)
    assert sorted(os.listdir(taken)) == ["a-folder.stdout.txt"]


def test_a_store_that_cannot_stage_leaves_no_spare_and_discard_removes_one(
        tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    staging = Staging(LocalStore(blocked))
    staging.prepare()
    assert staging.spare is None

    staging = Staging(LocalStore(tmp_path / "store"))
    staging.prepare()
    assert staging.spare is not None
    staging.discard()
    assert os.listdir(tmp_path / "store" / ".staging") == [] and staging.spare is None
