"""The history index: an embedded SQLite file built from the artifact store, which stays the
truth. Delete it any time; `benchfleet history --rebuild` makes it again from the store."""

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from jobs.errors import UserError
from jobs.trends.fingerprint import Testbed, clashes
from jobs.trends.order import in_history, lost_sentence
from jobs.trends.series import Point, aa_floors, record_points
from runner.records import gather_stored
from runner.trends.gitorder import mainline
from runner.trends.imports import IMPORTS, stored_imports
from runner.trends.verdicts import VERDICTS
from workers.shared.stores import ArtifactStore

_SCHEMA = """
CREATE TABLE points (testbed TEXT, model TEXT, arm TEXT, metric TEXT, commit_sha TEXT,
  position INTEGER, sweep_id TEXT, created TEXT, n INTEGER, mean REAL, min REAL, max REAL,
  flags TEXT, check_ok INTEGER, mlx_pin TEXT, source TEXT);
CREATE INDEX points_series ON points (testbed, model, arm, metric, position);
CREATE TABLE testbeds (id TEXT, hostname TEXT, fields TEXT, declared INTEGER);
CREATE TABLE problems (sentence TEXT);
CREATE TABLE floors (testbed TEXT, metric TEXT, floor REAL, sweep_id TEXT);
"""
_COLUMNS = ("testbed", "model", "arm", "metric", "commit", "position", "sweep_id", "created",
            "n", "mean", "min", "max", "flags", "check_ok", "mlx_pin", "source")


@dataclass
class Built:
    points: list[Point] = field(default_factory=list)
    testbeds: dict[str, Testbed] = field(default_factory=dict)
    repos: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    floors: list[tuple[str, str, float, str]] = field(default_factory=list)


def build(store: ArtifactStore, db: Path, branch: str = "HEAD") -> list[str]:
    """Read every sweep in the store into a new index at `db`; the sentences say what could
    not be read or placed (the rest is indexed all the same)."""
    built = read_store(store)
    write(db, built, _placed(built, branch))
    return built.problems


def read_store(store: ArtifactStore) -> Built:
    built = Built()
    for sweep_id in store.sweeps():
        if sweep_id in (IMPORTS, VERDICTS.split("/")[0]):
            continue
        try:
            record = gather_stored(store, sweep_id)
        except UserError as error:
            built.problems.append(f"sweep {sweep_id} left out: {error}")
            continue
        points, beds = record_points(record, source=sweep_id)
        built.points += points
        built.testbeds.update(beds)
        built.floors += [(*f, sweep_id) for f in aa_floors(record, beds)]
        built.repos.add(record.repo)
        built.problems += [f"sweep {sweep_id}, cell {m.cell_id}: not in history ({m.reason})"
                           for m in record.missing if m.status != "skipped"]
    imported, problems, repos = stored_imports(store)
    built.points += imported
    built.repos |= repos
    built.problems += problems + clashes(built.testbeds)
    return built


def _placed(built: Built, branch: str) -> dict[int, int]:
    history: list[str] = []
    for repo in sorted(built.repos):
        try:
            history += mainline(repo, branch)
        except UserError as error:
            built.problems.append(str(error))
    return placed(built, history)


def placed(built: Built, history: list[str]) -> dict[int, int]:
    """id(point) -> its commit's position on the first-parent line (oldest first)."""
    position = {sha: i for i, sha in enumerate(history)}
    known, lost = in_history(built.points, history)
    sentence = lost_sentence(lost)
    if sentence:
        built.problems.append(sentence)
    return {id(p): position[p.commit] for p in known}


def write(db: Path, built: Built, positions: dict[int, int]) -> None:
    db.parent.mkdir(parents=True, exist_ok=True)
    fresh = db.with_name(f".{db.name}.building")
    fresh.unlink(missing_ok=True)
    with sqlite3.connect(fresh) as conn:
        conn.executescript(_SCHEMA)
        conn.executemany(f"INSERT INTO points VALUES ({','.join('?' * len(_COLUMNS))})",
                         (_row(p, positions.get(id(p))) for p in built.points))
        conn.executemany("INSERT INTO testbeds VALUES (?,?,?,?)",
                         ((b.id, host, json.dumps(b.fields), b.declared)
                          for host, b in sorted(built.testbeds.items())))
        conn.executemany("INSERT INTO problems VALUES (?)", ((s,) for s in built.problems))
        conn.executemany("INSERT INTO floors VALUES (?,?,?,?)", built.floors)
    conn.close()
    fresh.replace(db)  # a reader never sees half an index


def _row(p: Point, position: int | None) -> tuple[object, ...]:
    return (p.testbed, p.model, p.arm, p.metric, p.commit, position, p.sweep_id, p.created,
            p.n, p.mean, p.min, p.max, json.dumps(p.flags), p.check_ok, p.mlx_pin, p.source)


def connect(db: Path) -> sqlite3.Connection:
    if not db.is_file():
        raise UserError(f"no history index at {db}; make it with `benchfleet history "
                        "--rebuild`")
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    return conn
