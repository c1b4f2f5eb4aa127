"""The history index: an embedded SQLite file built from the artifact store, which stays the
truth. Each build reads again only the sweeps whose stored attempts changed since the index last
read them (a digest per sweep), and drops those the store no longer holds; `--rebuild` reads
the whole store into a new file. Delete it any time."""

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from jobs.errors import UserError
from jobs.record.model import SCHEMA as RECORD_SCHEMA
from jobs.trends.fingerprint import Testbed, clashes
from jobs.trends.order import lost_sentence
from jobs.trends.series import Point, RecordRead, aa_floors, record_points
from runner.records import SWEEP_FILE, gather_stored
from runner.trends.gitorder import mainline
from runner.trends.imports import IMPORTS, imported_names, stored_imports
from runner.trends.verdicts import VERDICTS
from workers.shared.stores import ArtifactStore, get_json

# PRAGMA user_version: an index of another version (or none) is built again whole.
INDEX_VERSION = 2
_SCHEMA = f"""
CREATE TABLE points (testbed TEXT, model TEXT, arm TEXT, metric TEXT, commit_sha TEXT,
  position INTEGER, sweep_id TEXT, created TEXT, n INTEGER, mean REAL, min REAL, max REAL,
  flags TEXT, check_ok INTEGER, mlx_pin TEXT, source TEXT, read_from TEXT);
CREATE INDEX points_series ON points (testbed, model, arm, metric, position);
CREATE INDEX points_read_from ON points (read_from);
CREATE TABLE testbeds (id TEXT, hostname TEXT, fields TEXT, declared INTEGER);
CREATE TABLE problems (sentence TEXT);
CREATE TABLE floors (testbed TEXT, metric TEXT, floor REAL, sweep_id TEXT);
CREATE TABLE sweeps (sweep_id TEXT PRIMARY KEY, digest TEXT, repos TEXT, testbeds TEXT,
  problems TEXT);
PRAGMA user_version = {INDEX_VERSION};
"""
_POINT = f"INSERT INTO points VALUES ({','.join('?' * 17)})"


@dataclass
class Swept:
    """What the index keeps of one sweep (or of the imported files), and the digest of what
    it was read from."""

    digest: str
    points: list[Point] = field(default_factory=list)
    testbeds: dict[str, Testbed] = field(default_factory=dict)
    floors: list[tuple[str, str, float]] = field(default_factory=list)
    repos: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)


def build(store: ArtifactStore, db: Path, branch: str = "HEAD", rebuild: bool = False
          ) -> list[str]:
    """Bring the index at `db` up to date with the store; the sentences say what could not be
    read or placed (the rest is indexed all the same)."""
    with opened(db, rebuild) as conn:
        now = {s: sweep_digest(store, s) for s in store.sweeps()
               if s != VERDICTS.split("/")[0]}
        known = digests(conn)
        replace(conn, {s: read_sweep(store, s, d) for s, d in now.items() if known.get(s) != d},
                gone=[s for s in known if s not in now])
        history, problems = _mainline(repos(conn), branch)
        return settle(conn, history, problems)


def sweep_digest(store: ArtifactStore, sweep_id: str) -> str:
    """What the sweep's record is made of: its sweep file and, per cell, the attempt the store
    accepts and the attempts it holds (a published attempt is never rewritten, so its number
    names it). The record's schema is in it too: a new builder reads every sweep again."""
    if sweep_id == IMPORTS:  # an imported file is named by its content's sha256
        return _sha([RECORD_SCHEMA, imported_names(store)])
    try:
        sweep = get_json(store, f"{sweep_id}/{SWEEP_FILE}")
    except (OSError, ValueError) as error:
        return _sha([RECORD_SCHEMA, f"unreadable: {error}"])
    cells = sweep.get("cells") if isinstance(sweep, dict) else None
    ids = [c["id"] for c in cells if isinstance(c, dict) and isinstance(c.get("id"), str)
           ] if isinstance(cells, list) else []
    parts: list[object] = [RECORD_SCHEMA, sweep]
    for cell in ids:
        try:
            parts.append(get_json(store, f"{sweep_id}/{cell}/accepted.json"))
        except (OSError, ValueError) as error:
            parts.append(f"unreadable: {error}")
        parts.append(store.attempts(sweep_id, cell))
    return _sha(parts)


def _sha(parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def read_sweep(store: ArtifactStore, sweep_id: str, digest: str) -> Swept:
    if sweep_id == IMPORTS:
        points, problems, found = stored_imports(store)
        return Swept(digest, points, repos=found, problems=problems)
    try:
        record = gather_stored(store, sweep_id)
    except UserError as error:
        return Swept(digest, problems=[f"sweep {sweep_id} left out: {error}"])
    return swept(RecordRead.model_validate(record, from_attributes=True), digest)


def read_record_file(path: Path) -> RecordRead:
    """What the index needs of a record JSON file, the rest of it unvalidated."""
    try:
        return RecordRead.model_validate_json(path.read_bytes())
    except OSError as error:
        raise UserError(f"cannot read {path} ({error.strerror})") from None
    except ValidationError as error:
        where = ".".join(str(p) for p in error.errors()[0]["loc"])
        raise UserError(f"{path} is not a benchfleet record ({where}: "
                        f"{error.errors()[0]['msg']})") from None


def swept(record: RecordRead, digest: str) -> Swept:
    points, beds = record_points(record, source=record.sweep_id)
    problems = [f"sweep {record.sweep_id}, cell {m.cell_id}: not in history ({m.reason})"
                for m in record.missing if m.status != "skipped"]
    return Swept(digest, points, beds, aa_floors(record, beds), {record.repo}, problems)


@contextmanager
def opened(db: Path, rebuild: bool = False) -> Iterator[sqlite3.Connection]:
    """The index, to update in one transaction; a new file, renamed into place when done, for
    a rebuild or where there is no index of this version (a reader never sees half of one)."""
    db.parent.mkdir(parents=True, exist_ok=True)
    fresh = rebuild or _version(db) != INDEX_VERSION
    path = db.with_name(f".{db.name}.building") if fresh else db
    if fresh:
        path.unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    try:
        with conn:
            if fresh:
                conn.executescript(_SCHEMA)
            yield conn
    finally:
        conn.close()
    if fresh:
        path.replace(db)


def _version(db: Path) -> int | None:
    if not db.is_file():
        return None
    try:
        conn = sqlite3.connect(db)
        try:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return None


def digests(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT sweep_id, digest FROM sweeps").fetchall())


def replace(conn: sqlite3.Connection, read: Mapping[str, Swept], gone: Iterable[str]) -> None:
    """Drop what the index held of each sweep read again or gone, then put in what was read."""
    for sweep_id in [*read, *gone]:
        conn.execute("DELETE FROM points WHERE read_from = ?", (sweep_id,))
        conn.execute("DELETE FROM floors WHERE sweep_id = ?", (sweep_id,))
        conn.execute("DELETE FROM sweeps WHERE sweep_id = ?", (sweep_id,))
    for sweep_id, s in read.items():
        conn.executemany(_POINT, (_row(p, sweep_id) for p in s.points))
        conn.executemany("INSERT INTO floors VALUES (?,?,?,?)",
                         ((*f, sweep_id) for f in s.floors))
        conn.execute("INSERT INTO sweeps VALUES (?,?,?,?,?)", (
            sweep_id, s.digest, json.dumps(sorted(s.repos)),
            json.dumps({h: b.model_dump() for h, b in s.testbeds.items()}),
            json.dumps(s.problems)))


def repos(conn: sqlite3.Connection) -> set[str]:
    return {r for (found,) in conn.execute("SELECT repos FROM sweeps")
            for r in json.loads(found)}


def _mainline(found: set[str], branch: str) -> tuple[list[str], list[str]]:
    history: list[str] = []
    problems = []
    for repo in sorted(found):
        try:
            history += mainline(repo, branch)
        except UserError as error:
            problems.append(str(error))
    return history, problems


def settle(conn: sqlite3.Connection, history: Sequence[str], problems: list[str]
           ) -> list[str]:
    """Place every point on `history` (the first-parent line, oldest first) and gather the
    index's testbeds and sentences from its sweeps; returns the sentences."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS line (sha TEXT PRIMARY KEY, position INTEGER)")
    conn.execute("DELETE FROM line")
    conn.executemany("INSERT OR REPLACE INTO line VALUES (?,?)",
                     ((sha, i) for i, sha in enumerate(history)))
    conn.execute("UPDATE points SET position = (SELECT position FROM line "
                 "WHERE sha = commit_sha)")
    lost = [c for (c,) in conn.execute("SELECT commit_sha FROM points WHERE position IS NULL")]
    beds: dict[str, Testbed] = {}
    sentences: list[str] = []
    for found, said in conn.execute("SELECT testbeds, problems FROM sweeps ORDER BY sweep_id"):
        beds.update({h: Testbed.model_validate(b) for h, b in json.loads(found).items()})
        sentences += json.loads(said)
    sentences += clashes(beds) + problems
    sentence = lost_sentence(lost)
    sentences += [sentence] if sentence else []
    conn.execute("DELETE FROM testbeds")
    conn.executemany("INSERT INTO testbeds VALUES (?,?,?,?)",
                     ((b.id, host, json.dumps(b.fields), b.declared)
                      for host, b in sorted(beds.items())))
    conn.execute("DELETE FROM problems")
    conn.executemany("INSERT INTO problems VALUES (?)", ((s,) for s in sentences))
    return sentences


def _row(p: Point, read_from: str) -> tuple[object, ...]:
    return (p.testbed, p.model, p.arm, p.metric, p.commit, None, p.sweep_id, p.created,
            p.n, p.mean, p.min, p.max, json.dumps(p.flags), p.check_ok, p.mlx_pin, p.source,
            read_from)


def connect(db: Path) -> sqlite3.Connection:
    if not db.is_file():
        raise UserError(f"no history index at {db}; make it with `benchfleet history "
                        "--rebuild`")
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    return conn
