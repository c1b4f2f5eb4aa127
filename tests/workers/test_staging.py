"""The next attempt's staging folder, made between cells (workers/staging.py): the attempt's
first command writes into the spare's inodes under its own names, and a stored attempt holds
no spare."""

import os
import sys
from pathlib import Path

from jobs.spec.recipes import Invocation
from workers import execute
from workers.shared.stores.local import LocalStore
from workers.staging import SPARE_DIR, SPARE_FILES, Staging, named_folder, take_spare, tidy


def _inode(path: Path) -> int:
    return os.stat(path).st_ino


def _run(staging: Path, label: str, code: str) -> execute.Run:
    files = execute.Files(staging / f"{label}.stdout.txt", staging / f"{label}.stderr.txt")
    call = Invocation(argv=[sys.executable, "-c", code], env={}, timeout_s=30)
    return execute.run(execute.Command("measure", label, call, staging, files, staging))


def test_the_first_command_writes_into_the_spares_inodes(tmp_path: Path) -> None:
    staging = Staging(LocalStore(tmp_path), "w1")
    staging.prepare()
    spare = staging.spare
    assert spare is not None and spare.parent == tmp_path / ".staging"
    made = [_inode(spare / name) for name in (SPARE_DIR, *SPARE_FILES)]

    taken = staging.take()
    assert taken == spare and staging.spare is None
    out = named_folder(taken, "out")
    run = _run(taken, "measure", "import sys; print('to out'); print('to err', file=sys.stderr)")
    assert run.exit_code == 0 and (run.stdout, run.stderr) == ("measure.stdout.txt",
                                                               "measure.stderr.txt")
    assert [_inode(out), _inode(taken / run.stdout), _inode(taken / run.stderr)] == made
    assert (taken / run.stdout).read_text() == "to out\n"
    assert (taken / run.stderr).read_text() == "to err\n"
    assert sorted(os.listdir(taken)) == ["measure.stderr.txt", "measure.stdout.txt", "out"]

    # No spare is left: the next command's files are made as before, and written whole.
    again = _run(taken, "other", "print('x' * 10)")
    assert (taken / again.stdout).read_text() == "x" * 10 + "\n"
    assert named_folder(taken, "out") == out and out.is_dir()


def test_a_spare_replaces_a_file_of_that_name_as_an_emptied_one(tmp_path: Path) -> None:
    staging = Staging(LocalStore(tmp_path), "w1")
    staging.prepare()
    taken = staging.take()
    (taken / "measure.stdout.txt").write_text("a longer text from before\n")
    run = _run(taken, "measure", "print('short')")
    assert (taken / run.stdout).read_text() == "short\n"


def test_unused_spares_are_removed_before_the_attempt_is_stored(tmp_path: Path) -> None:
    staging = Staging(LocalStore(tmp_path), "w1")
    staging.prepare()
    taken = staging.take()
    assert take_spare(taken / "probe-help.stdout.txt")
    tidy(taken)
    assert sorted(os.listdir(taken)) == ["probe-help.stdout.txt"]
    tidy(taken)  # twice, or with nothing left: nothing to do
    (taken / SPARE_DIR).mkdir()
    (taken / SPARE_DIR / "stray").write_text("")
    tidy(taken)  # a spare folder something wrote into goes too: the attempt is not failed
    assert sorted(os.listdir(taken)) == ["probe-help.stdout.txt"]


def test_a_spare_folder_removed_under_the_worker_gives_way_to_a_new_folder(
        tmp_path: Path) -> None:
    staging = Staging(LocalStore(tmp_path), "w1")
    staging.prepare()
    staging.prepare()  # one spare at a time
    assert len(os.listdir(tmp_path / ".staging")) == 1
    assert staging.spare is not None
    os.rename(staging.spare, tmp_path / "elsewhere")
    taken = staging.take()
    assert taken.is_dir() and taken.parent == tmp_path / ".staging" and os.listdir(taken) == []
    assert named_folder(taken, "out").is_dir()
    assert not take_spare(taken / "measure.stdout.txt")


def test_a_name_the_spare_cannot_take_is_left_to_the_caller(tmp_path: Path) -> None:
    staging = Staging(LocalStore(tmp_path), "w1")
    staging.prepare()
    taken = staging.take()
    (taken / "a-folder.stdout.txt").mkdir()
    assert not take_spare(taken / "a-folder.stdout.txt")
    tidy(taken)
    assert sorted(os.listdir(taken)) == ["a-folder.stdout.txt"]


def test_a_store_that_cannot_stage_leaves_no_spare_and_discard_removes_one(
        tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    staging = Staging(LocalStore(blocked), "w1")
    staging.prepare()
    assert staging.spare is None

    staging = Staging(LocalStore(tmp_path / "store"), "w1")
    staging.prepare()
    assert staging.spare is not None
    staging.discard()
    assert os.listdir(tmp_path / "store" / ".staging") == [] and staging.spare is None


def test_a_spare_half_made_is_removed(tmp_path: Path) -> None:
    class Full(LocalStore):
        def staging(self, name: str | None = None) -> Path:  # its spare out/ taken by a file
            path = super().staging(name)
            (path / SPARE_DIR).write_text("")
            return path

    staging = Staging(Full(tmp_path), "w1")
    staging.prepare()
    assert staging.spare is None and os.listdir(tmp_path / ".staging") == []


def test_the_spares_take_the_umask_as_an_open_would(tmp_path: Path) -> None:
    old = os.umask(0o002)
    try:
        staging = Staging(LocalStore(tmp_path), "w1")
        staging.prepare()
        assert staging.spare is not None
        assert os.stat(staging.spare / SPARE_FILES[0]).st_mode & 0o777 == 0o664
    finally:
        os.umask(old)


def test_what_a_killed_worker_left_under_its_name_goes_when_the_name_makes_its_next(
        tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    left = Staging(store, "w1")
    left.prepare()  # then killed, mid-cell: the taken folder holds part of an attempt
    assert left.spare is not None
    (left.take() / "measure.stdout.txt").write_text("half")
    other = Staging(store, "w2")
    other.prepare()
    assert other.spare is not None

    again = Staging(store, "w1")
    again.prepare()
    assert again.spare == tmp_path / ".staging" / "spare-w1"
    assert sorted(os.listdir(again.spare)) == sorted([SPARE_DIR, *SPARE_FILES])
    assert sorted(os.listdir(tmp_path / ".staging")) == ["spare-w1", "spare-w2"]
    assert sorted(os.listdir(other.spare)) == sorted([SPARE_DIR, *SPARE_FILES])
