"""Series out of the index, in the target's order, with their steps."""

import json
import sqlite3
from pathlib import Path
from statistics import median

from jobs.errors import UserError
from jobs.trends.thresholds import ThresholdsFile, parse
from jobs.trends.timeline import Series, SeriesPoint, with_steps


def read_thresholds(path: Path | None) -> ThresholdsFile:
    """BENCHFLEET_HISTORY_THRESHOLDS, or every default when it is not set."""
    if path is None:
        return ThresholdsFile()
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        why = getattr(error, "strerror", None) or "not UTF-8 text"
        raise UserError(f"cannot read the thresholds file {path} ({why}); fix "
                        "BENCHFLEET_HISTORY_THRESHOLDS or unset it for the defaults") from None
    return parse(text, str(path))


def series(conn: sqlite3.Connection, thresholds: ThresholdsFile, **where: str | None
           ) -> list[Series]:
    clauses = [(k, v) for k, v in where.items() if v]
    sql = "SELECT * FROM points" + (" WHERE " + " AND ".join(f"{k} = ?" for k, _ in clauses)
                                    if clauses else "")
    rows = conn.execute(sql + " ORDER BY testbed, model, arm, metric, position IS NULL, "
                        "position, created, sweep_id", [v for _, v in clauses]).fetchall()
    grouped: dict[tuple[str, str, str, str], list[SeriesPoint]] = {}
    for r in rows:
        grouped.setdefault((r["testbed"], r["model"], r["arm"], r["metric"]), []).append(
            _point(r))
    floors = testbed_floors(conn)
    return [with_steps(key, points, thresholds.for_testbed(key[0], floors.get((key[0], key[3]))))
            for key, points in grouped.items()]


def testbed_floors(conn: sqlite3.Connection) -> dict[tuple[str, str], float]:
    """Per (testbed, metric), the median A/A floor its sweeps measured: one noisy sweep
    neither silences nor loosens a testbed."""
    found: dict[tuple[str, str], list[float]] = {}
    for r in conn.execute("SELECT testbed, metric, floor FROM floors"):
        found.setdefault((r["testbed"], r["metric"]), []).append(r["floor"])
    return {k: median(v) for k, v in found.items()}


def _point(r: sqlite3.Row) -> SeriesPoint:
    flags = json.loads(r["flags"])
    ok = None if r["check_ok"] is None else bool(r["check_ok"])
    return SeriesPoint(commit=r["commit_sha"], position=r["position"], sweep_id=r["sweep_id"],
                       created=r["created"], n=r["n"], mean=r["mean"], min=r["min"],
                       max=r["max"], flags=flags, check_ok=ok, mlx_pin=r["mlx_pin"],
                       used=not flags and r["position"] is not None)


def position_of(conn: sqlite3.Connection, commit: str) -> int:
    """The first-parent position of a commit the index holds, by sha or a prefix of one."""
    rows = conn.execute("SELECT DISTINCT commit_sha, position FROM points WHERE commit_sha "
                        "LIKE ? AND position IS NOT NULL", (f"{commit}%",)).fetchall()
    if len(rows) != 1:
        what = "no commit" if not rows else f"{len(rows)} commits"
        raise UserError(f"history holds {what} on the branch matching {commit!r}; give a "
                        "sha (or a longer prefix) that `benchfleet history` lists")
    return int(rows[0]["position"])
