"""`benchfleet record` lists each cell's attempts once and reads each attempt once: its files
hashed against the manifest, result.json and the manifest kept from that one read."""

import os
from collections import Counter
from pathlib import Path

import pytest

from jobs.spec.cells import Cell
from jobs.spec.sweep import Sweep
from runner import forked
from runner.records import (
    SWEEP_FILE,
    SWEEP_FILE_PROTOCOL,
    SweepFile,
    gather,
    gather_stored,
    write_sweep_file,
)
from tests.support.cells import Submitted
from tests.support.records import result
from workers.shared.stores import accept
from workers.shared.stores.local import LocalStore


def test_each_attempt_is_listed_and_read_once(small: tuple[Sweep, list[Cell]], tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    sweep, cells = small
    store = LocalStore(tmp_path / "store")
    write_sweep_file(store, SweepFile(protocol=SWEEP_FILE_PROTOCOL, sweep_id="s1",
                                      created="now", source="s.yaml", sweep=sweep, cells=cells))
    for cell in cells:
        tries = 2 if cell.order == 0 else 1  # one cell measured again: both attempts count
        for attempt in range(1, tries + 1):
            staging = store.staging()
            r = result(cell, 20.0 + cell.repeat).model_copy(update={"attempt": attempt})
            (staging / "result.json").write_text(r.model_dump_json(indent=1))
            (staging / "measure.stdout.txt").write_text("decoded\n")
            store.publish(staging, "s1", cell.id, attempt)
        accept(store, "s1", cell.id, tries, "done")
    listed = Counter[str]()
    attempts, read_result = store.attempts, store.read_result
    reads = tmp_path / "reads.txt"  # a line per read, by whichever process reads it

    def counted_attempts(sweep_id: str, cell_id: str) -> list[int]:
        listed[cell_id] += 1
        return attempts(sweep_id, cell_id)

    def counted_read(sweep_id: str, cell_id: str, attempt: int) -> tuple[bytes | None, bytes]:
        with reads.open("a") as f:
            f.write(f"{cell_id} {attempt} {os.getpid()}\n")
        return read_result(sweep_id, cell_id, attempt)

    monkeypatch.setattr(store, "attempts", counted_attempts)
    monkeypatch.setattr(store, "read_result", counted_read)
    monkeypatch.setattr(store, "read", None)  # the record reads through read_result alone
    record = gather_stored(store, "s1")
    assert record.check and record.check.ok, record.check
    assert set(listed.values()) == {1} and len(listed) == len(cells)
    lines = [line.split() for line in reads.read_text().splitlines()]
    read = Counter((cell_id, int(attempt)) for cell_id, attempt, _ in lines)
    assert set(read.values()) == {1} and len(read) == len(cells) + 1
    if forked.FORKS:  # read ahead by a child (runner/read_ahead.py)
        assert {int(pid) for _, _, pid in lines} != {os.getpid()}
    assert {(e.cell_id, e.attempt, e.used) for e in record.evidence if not e.used} == {
        (cells[0].id, 1, False)}


def test_a_record_through_redis_only_asks_whether_the_sweep_file_is_there(
        submitted: Submitted, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = LocalStore(tmp_path / "store")
    sweep_file = tmp_path / "store" / submitted.sweep_id / SWEEP_FILE
    gather(submitted.store, store, submitted.sweep_id)  # a sweep older than the file
    assert SweepFile.model_validate_json(sweep_file.read_bytes()).cells == submitted.cells
    written = sweep_file.stat().st_mtime_ns

    def unread(relative: str) -> None:
        raise AssertionError(f"{relative} was read: 150 MB at 100,000 cells")

    monkeypatch.setattr(store, "get_bytes", unread)
    monkeypatch.setattr(store, "get_json", unread)
    record = gather(submitted.store, store, submitted.sweep_id)
    assert len(record.missing) == len(submitted.cells)
    assert sweep_file.stat().st_mtime_ns == written


def test_the_local_store_says_a_folder_is_not_a_file(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "store")
    store.put_json("s1/sweep.json", {"a": 1})
    assert store.exists("s1/sweep.json") and not store.exists("s1") \
        and not store.exists("s2/sweep.json")
