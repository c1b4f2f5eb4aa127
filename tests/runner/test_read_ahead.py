"""A record's attempts read ahead by a child (runner/read_ahead.py): what comes back is what
reading them here gives, errors included and in order; a child that dies part-way leaves the
rest to be read here; a store that is not local is read here; a reader that stops early stops
the child."""

import os
import signal
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from jobs.spec.cells import Cell
from runner import forked, records
from runner.read_ahead import Got, read_one, read_results
from workers.shared.stores import CorruptArtifact
from workers.shared.stores.local import LocalStore

needs_fork = pytest.mark.skipif(not forked.FORKS, reason="children are forked only on Linux")


class Watched(LocalStore):
    """A local store that notes which process read each attempt, raises an OSError for the
    cell named "unreachable", and kills the reading process at the cell named `die_at` where
    that process is not the test's own."""

    def __init__(self, root: Path, die_at: str = "") -> None:
        super().__init__(root)
        self.log, self.die_at, self.test = root.parent / "reads.txt", die_at, os.getpid()

    def read_result(self, sweep_id: str, cell_id: str, attempt: int
                    ) -> tuple[bytes | None, bytes]:
        if cell_id == self.die_at and os.getpid() != self.test:
            os.kill(os.getpid(), signal.SIGKILL)
        with self.log.open("a") as f:
            f.write(f"{cell_id} {os.getpid()}\n")
        if cell_id == "unreachable":
            raise OSError(5, "Input/output error", f"{self.root}/{sweep_id}/{cell_id}")
        return super().read_result(sweep_id, cell_id, attempt)

    def readers(self) -> dict[str, set[int]]:
        found: dict[str, set[int]] = {}
        for line in self.log.read_text().splitlines():
            cell_id, pid = line.split()
            found.setdefault(cell_id, set()).add(int(pid))
        return found


def _publish(store: LocalStore, cell_id: str, files: dict[str, bytes]) -> Path:
    staging = store.staging()
    for name, data in files.items():
        (staging / name).write_bytes(data)
    return Path(store.publish(staging, "s1", cell_id, 1))


@pytest.fixture
def wanted(tmp_path: Path) -> list[tuple[str, int]]:
    """Attempts of every kind: whole ones (one result.json larger than a pipe holds), a file
    changed after it was stored, none with no result.json, a missing attempt, one whose read
    raises an OSError, one whose manifest names no sha256."""
    store = LocalStore(tmp_path / "store")
    cells = []
    for k in range(40):
        result = b'{"n": %d, "pad": "%s"}' % (k, b"x" * (300_000 if k == 3 else 10))
        _publish(store, f"good-{k}", {"result.json": result, "run.stdout.txt": b"ok\n"})
        cells.append(f"good-{k}")
    changed = _publish(store, "changed", {"result.json": b"{}", "run.stdout.txt": b"a\n"})
    (changed / "run.stdout.txt").write_bytes(b"b\n")
    _publish(store, "no-result", {"run.stdout.txt": b"a\n"})
    _publish(store, "unreachable", {"result.json": b"{}"})
    malformed = _publish(store, "malformed", {"result.json": b"{}"})
    (malformed / "manifest.json").write_text('{"files": {"result.json": {}}}')  # no sha256
    cells[5:5] = ["changed", "no-result", "missing", "unreachable", "malformed"]
    return [(cell_id, 1) for cell_id in cells]


def _same(got: list[Got], expected: list[Got]) -> None:
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        if isinstance(e, tuple):
            assert g == e
        else:
            assert type(g) is type(e) and str(g) == str(e)


def _here(store: LocalStore, wanted: list[tuple[str, int]]) -> list[Got]:
    return [read_one(store, "s1", cell_id, attempt) for cell_id, attempt in wanted]


@needs_fork
def test_a_child_reads_them_and_each_comes_back_as_read_here(
        tmp_path: Path, wanted: list[tuple[str, int]]) -> None:
    store = Watched(tmp_path / "store")
    got = list(read_results(store, "s1", wanted))
    readers = store.readers()
    assert readers.keys() == {c for c, _ in wanted} and all(
        pids == {pids.copy().pop()} and os.getpid() not in pids for pids in readers.values())
    expected = _here(store, wanted)
    _same(got, expected)
    kinds = [type(g).__name__ for g in expected]
    assert kinds.count("tuple") == 41 and kinds.count("CorruptArtifact") == 3
    assert kinds.count("OSError") == 1 and expected[6] == (None, expected[6][1])  # no result


@needs_fork
def test_what_a_child_that_died_left_is_read_here(tmp_path: Path,
                                                   wanted: list[tuple[str, int]]) -> None:
    store = Watched(tmp_path / "store", die_at="good-20")
    got = list(read_results(store, "s1", wanted))
    readers = store.readers()
    assert readers["good-19"] != {os.getpid()}  # before it died, the child read them
    assert readers["good-20"] == readers["good-39"] == {os.getpid()}  # after, this process
    _same(got, _here(store, wanted))


def test_a_store_that_is_not_local_is_read_here(tmp_path: Path,
                                                wanted: list[tuple[str, int]]) -> None:
    local = Watched(tmp_path / "store")

    class Remote:  # the protocol's read_result, not a LocalStore (as the SFTP store)
        read_result = local.read_result
        root = local.root

    got = list(read_results(Remote(), "s1", wanted))  # type: ignore[arg-type]
    assert set().union(*local.readers().values()) == {os.getpid()}
    _same(got, _here(local, wanted))


@needs_fork
def test_a_reader_that_stops_early_stops_the_child(tmp_path: Path,
                                                   wanted: list[tuple[str, int]]) -> None:
    store = Watched(tmp_path / "store")
    results = read_results(store, "s1", wanted)
    first = next(results)
    assert isinstance(first, tuple)
    (child,) = store.readers()["good-0"]
    results.close()
    with pytest.raises(ChildProcessError):  # reaped: no such child any more
        os.waitpid(child, os.WNOHANG)


def test_errors_keep_their_words(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "store")
    error = read_one(store, "s1", "nowhere", 1)
    assert isinstance(error, CorruptArtifact) and "manifest unreadable" in str(error)


@needs_fork
def test_a_record_whose_reading_fails_stops_the_child(
        tmp_path: Path, wanted: list[tuple[str, int]], monkeypatch: pytest.MonkeyPatch) -> None:
    """runner/records.py closes the reading however it ends: an attempt whose handling raises
    does not leave the child behind, blocked on a full pipe."""
    store = Watched(tmp_path / "store")
    # Only a cell's id is read here.
    cells = cast(list[Cell], [SimpleNamespace(id=cell_id) for cell_id, _ in wanted])

    def fails(*_: object) -> None:
        raise RuntimeError("a digest failed")

    monkeypatch.setattr(records, "_read_one", fails)
    with pytest.raises(RuntimeError, match="a digest failed") as raised:
        records._read(store, "s1", cells, dict(wanted), [])
    # The traceback, held as a caller handling the error would, keeps the reading's frame:
    # the child is stopped when the reading ends, not when its frame is freed.
    assert raised.tb is not None
    (child,) = set().union(*store.readers().values()) - {os.getpid()}
    with pytest.raises(ChildProcessError):  # reaped: no such child any more
        os.waitpid(child, os.WNOHANG)
