"""The history index brought up to date with the store: a sweep whose stored attempts did not
change is not read again, a changed one's points are replaced, a removed one's are dropped;
`--rebuild` reads everything. The record read is a real one (the H200 run 4), its sweep made
many by new ids; what the store holds of each sweep is its sweep file and accepted markers."""

import shutil
import sqlite3
from pathlib import Path

import pytest

from jobs.errors import UserError
from jobs.record.model import Record
from jobs.trends.series import RecordRead, record_points
from runner.records import gather_stored
from runner.trends import index
from runner.trends.index import build, read_record_file
from workers.shared.stores import accept, put_json
from workers.shared.stores.local import LocalStore

RECORD = (Path(__file__).parents[2] / "docs" / "records" / "h200-moe-decode" / "run-4"
          / "h200-moe-decode-20261202-063530-8e13.json")
REAL = Record.model_validate_json(RECORD.read_bytes())
COMMITS = sorted({g.commit for g in REAL.groups})


class Store(LocalStore):
    """A store whose sweeps the test makes, and a count of the records read from it."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        super().__init__(root)
        self.read: list[str] = []
        self.models: dict[str, str] = {}
        monkeypatch.setattr(index, "gather_stored", self._record)
        monkeypatch.setattr(index, "mainline", lambda repo, branch: COMMITS)

    def sweep(self, sweep_id: str, model: str = "m", attempt: int = 1) -> None:
        put_json(self, f"{sweep_id}/sweep.json", {"cells": [{"id": "c1"}]})
        accept(self, sweep_id, "c1", attempt, "done")
        self.models[sweep_id] = model

    def _record(self, store: object, sweep_id: str) -> Record:
        self.read.append(sweep_id)
        if sweep_id not in self.models:
            return gather_stored(self, sweep_id)  # the store's own sentence
        groups = [g.model_copy(update={"model": self.models[sweep_id]}) for g in REAL.groups]
        return REAL.model_copy(update={"sweep_id": sweep_id, "groups": groups})


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    return Store(tmp_path / "store", monkeypatch)


def points(db: Path) -> list[tuple[str, str, int | None]]:
    with sqlite3.connect(db) as conn:
        return sorted(conn.execute("SELECT sweep_id, model, position FROM points").fetchall())


def test_an_unchanged_sweep_is_not_read_again(store: Store, tmp_path: Path) -> None:
    db = tmp_path / "history.sqlite"
    for i in range(3):
        store.sweep(f"s{i}")
    build(store, db)
    before = points(db)
    store.read.clear()
    build(store, db)
    assert store.read == []
    assert points(db) == before
    assert all(position is not None for _, _, position in before)


def test_a_changed_sweep_is_replaced_and_nothing_else_read(store: Store, tmp_path: Path) -> None:
    db = tmp_path / "history.sqlite"
    for i in range(3):
        store.sweep(f"s{i}")
    build(store, db)
    per_sweep = len(points(db)) // 3
    store.read.clear()
    store.sweep("s1", model="other", attempt=2)  # a rerun the store now accepts
    build(store, db)
    assert store.read == ["s1"]
    found = points(db)
    assert len(found) == 3 * per_sweep  # no duplicates
    assert {m for s, m, _ in found if s == "s1"} == {"other"}  # no stale points
    assert {m for s, m, _ in found if s != "s1"} == {"m"}


def test_a_removed_sweep_is_gone_and_a_new_one_read(store: Store, tmp_path: Path) -> None:
    db = tmp_path / "history.sqlite"
    store.sweep("s0")
    store.sweep("s1")
    build(store, db)
    shutil.rmtree(store.root / "s0")
    store.sweep("s2")
    store.read.clear()
    build(store, db)
    assert store.read == ["s2"]
    assert {s for s, _, _ in points(db)} == {"s1", "s2"}
    with sqlite3.connect(db) as conn:
        assert {s for (s,) in conn.execute("SELECT sweep_id FROM floors")} <= {"s1", "s2"}


def test_rebuild_reads_every_sweep_and_keeps_a_left_out_ones_sentence(
        store: Store, tmp_path: Path) -> None:
    db = tmp_path / "history.sqlite"
    store.sweep("s0")
    (store.root / "torn").mkdir()
    first = build(store, db)
    assert "sweep torn left out: the artifact store has no torn/sweep.json" in " ".join(first)
    store.read.clear()
    assert build(store, db) == first  # the torn sweep's sentence stays, unread
    assert store.read == []
    build(store, db, rebuild=True)
    assert store.read == ["s0", "torn"]


def test_an_index_of_an_older_version_is_built_again_whole(store: Store,
                                                           tmp_path: Path) -> None:
    db = tmp_path / "history.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE points (testbed TEXT)")
    store.sweep("s0")
    build(store, db)
    assert store.read == ["s0"]
    assert len(points(db)) > 0


def test_the_narrow_read_gives_the_points_the_full_record_gives() -> None:
    narrow, _ = record_points(read_record_file(RECORD), source="x")
    full, _ = record_points(RecordRead.model_validate(REAL, from_attributes=True), source="x")
    assert len(narrow) > 0
    assert [vars_of(p) for p in narrow] == [vars_of(p) for p in full]


def vars_of(p: object) -> tuple[object, ...]:
    return tuple(getattr(p, name) for name in type(p).__slots__)  # type: ignore[attr-defined]


def test_a_file_that_is_not_a_record_is_one_sentence_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"sweep_id": "s", "groups": []}')
    with pytest.raises(UserError) as error:
        read_record_file(bad)
    assert str(error.value).startswith(f"{bad} is not a benchfleet record (")
    assert "\n" not in str(error.value)
