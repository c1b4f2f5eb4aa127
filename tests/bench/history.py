"""History at scale: the index build and change detection at 1,000 sweeps and 100,000 points,
as ratios against minimal baselines doing the same reading, measured in one run here.

The seed is real: one sweep of the stand-in (two arms, A/A, n = 3) runs on a real worker and
its record is made from the store. 1,000 records of 50 rows (25 models x 2 arms, 100 points)
are that record's groups repeated under other sweep ids, commits and model names, written as
record JSON files. Timed, interleaved over rounds:
- index, cold: a new index file; each JSON's sha256 (its digest), the fields history needs
  read (`RecordRead`, the rest unvalidated) into points and A/A floors, written to SQLite and
  ordered by a 1,000-commit history (runner/trends/index.py's own steps);
- index, nothing changed: every file's digest compared with the index's, nothing read again,
  the points placed again; and one sweep changed: that one file read again and its points
  replaced; all three against the minimal reader: `json.loads` of each file and a walk of
  its rows' four figures;
- detection: every series (100 of 1,000 points) read from the index and its steps found,
  against reading the same series alone.
Reading a sweep's attempts from the store (sha256 and the record builder) is the record's own
cost, measured once per sweep on the seed and reported beside, not in the ratio.
"""

import hashlib
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from jobs.record.model import Record
from jobs.trends.thresholds import ThresholdsFile
from runner.demo.local_fleet import LocalFleet
from runner.demo.redis_server import RedisServer
from runner.demo.target_repo import DEMO_MODELS, make_models, make_target_repo
from runner.records import gather_stored
from runner.trends.index import connect, digests, opened, read_record_file, replace, settle, swept
from runner.trends.query import series
from tests.support.fleet import fleet_settings, submit, sweep_file, until_live, wait
from workers.shared.state import Store
from workers.shared.stores.local import LocalStore

SWEEPS, MODELS = 1000, 25
OUT = Path(__file__).parents[2] / "docs" / "benchmarks" / "history.md"


def seed(root: Path) -> tuple[Record, float]:
    """A real sweep's record, and the seconds its gather from the store took."""
    repo = root / "target"
    _, good = make_target_repo(repo)
    with RedisServer(root / "redis") as server:
        settings = fleet_settings(root, server.url, idle_load1=1000.0)
        make_models(settings.models_dir, DEMO_MODELS)
        fleet = LocalFleet(settings, root / "logs")
        fleet.start("cpu", "bench-history")
        until_live(settings, "bench-history")
        spec = {"name": "bench-history", "target": {"repo": str(repo), "commits": [good]},
                "models": ["tinymoe-a3"], "backends": {"cpu": {"build": "tinymoe-build"}},
                "arms": [{"name": "fused", "recipe": "tinymoe-bench-decode", "baseline": True,
                          "params": {"prompt_tokens": 16, "max_tokens": 16,
                                     "warmup_tokens": 2}}], "aa": True, "n": 3, "warmup": 0}
        try:
            sweep_id = submit(settings, sweep_file(root, spec))
            wait(Store.connect(server.url), sweep_id, 300)
        finally:
            fleet.stop()
        start = time.perf_counter()
        record = gather_stored(LocalStore(Path(settings.artifacts)), sweep_id)
        return record, time.perf_counter() - start


def records(seed_record: Record, folder: Path) -> list[Path]:
    folder.mkdir(parents=True)
    [group] = seed_record.groups
    paths = []
    for i in range(SWEEPS):
        commit = f"{i:040x}"
        groups = [group.model_copy(update={"commit": commit, "model": f"model-{m}"})
                  for m in range(MODELS)]
        r = seed_record.model_copy(update={"sweep_id": f"bench-{i:04d}", "groups": groups})
        path = folder / f"bench-{i:04d}.json"
        path.write_text(r.model_dump_json())
        paths.append(path)
    return paths


def index(paths: list[Path], db: Path, rebuild: bool = False) -> int:
    """runner/trends/index.py's build with record files for the store; the sweeps read."""
    with opened(db, rebuild) as conn:
        now = {p.stem: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}
        known = digests(conn)
        read = {s: swept(read_record_file(p), now[s]) for s, p in zip(now, paths, strict=True)
                if known.get(s) != now[s]}
        replace(conn, read, gone=[s for s in known if s not in now])
        settle(conn, [f"{i:040x}" for i in range(SWEEPS)], [])
    return len(read)


def change_one(path: Path) -> None:
    """A sweep whose record changed: one figure of its first row."""
    raw = json.loads(path.read_bytes())
    raw["groups"][0]["rows"][0]["decode_tps"]["mean"] *= 1.01
    path.write_text(json.dumps(raw))


def minimal_read(paths: list[Path]) -> int:
    count = 0
    for path in paths:
        raw = json.loads(path.read_bytes())
        for g in raw["groups"]:
            for row in g["rows"]:
                for metric in ("decode_tps", "prefill_tps"):
                    span = row[metric]
                    count += span is not None and span["n"] > 0
    return count


def detect(db: Path) -> int:
    with connect(db) as conn:
        return len(series(conn, ThresholdsFile()))


def read_series(db: Path) -> int:
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT * FROM points ORDER BY testbed, model, arm, metric, "
                        "position").fetchall()
    conn.close()
    return len(rows)


def site(db: Path, root: Path) -> dict[str, float]:
    """Publish the 1,000-sweep index (records left out: the store is empty) and open it in
    Debian's Chromium: the index with its 100 overviews, then one series of 1,000 points."""
    from playwright.sync_api import sync_playwright

    from runner.trends.publish import publish
    from tests.trends.browser import CHROMIUM

    out = root / "site"
    start = time.perf_counter()
    publish(LocalStore(root / "empty"), db, ThresholdsFile(), out, lambda _: None)
    figures = {"publish_s": time.perf_counter() - start,
               "index_kb": (out / "data" / "index.js").stat().st_size / 1024,
               "series_kb": max(p.stat().st_size for p in (out / "data" / "series").iterdir())
               / 1024}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        start = time.perf_counter()
        page.goto((out / "index.html").as_uri())
        page.wait_for_function("document.querySelectorAll('#series tr').length > 100")
        figures["index_load_s"] = time.perf_counter() - start
        start = time.perf_counter()
        page.locator("a.series-link").first.click()
        page.wait_for_function("document.querySelectorAll('#plot circle').length >= 1000")
        figures["series_load_s"] = time.perf_counter() - start
        browser.close()
    return figures


def timed(fn, *args) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def main(rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-history-") as tmp:
        root = Path(tmp)
        record, gather_s = seed(root)
        paths = records(record, root / "records")
        db = root / "history.sqlite"
        times: dict[str, list[float]] = {"index": [], "unchanged": [], "one": [], "read": [],
                                         "detect": [], "series": []}
        for r in range(rounds):
            times["read"].append(timed(minimal_read, paths))
            times["index"].append(timed(index, paths, db, True))
            times["unchanged"].append(timed(index, paths, db))
            change_one(paths[r])
            times["one"].append(timed(index, paths, db))
            times["series"].append(timed(read_series, db))
            times["detect"].append(timed(detect, db))
        with connect(db) as conn:
            points = conn.execute("SELECT COUNT(*) FROM points").fetchone()[0]
            count = conn.execute("SELECT COUNT(DISTINCT testbed || model || arm || metric) "
                                 "FROM points").fetchone()[0]
        shown = site(db, root)
        write_report(times, rounds, points, count, gather_s, record.cells_measured, shown)


def write_report(times: dict[str, list[float]], rounds: int, points: int, count: int,
                 gather_s: float, cells: int, shown: dict[str, float]) -> None:
    med = {k: statistics.median(v) for k, v in times.items()}
    rng = {k: f"{min(v):.2f} to {max(v):.2f}" for k, v in times.items()}
    ratio = {k: statistics.median(i / r for i, r in zip(times[k], times["read"], strict=True))
             for k in ("index", "unchanged", "one")}
    per_series = med["detect"] / count
    lines = [
        "# History at scale", "",
        f"Measured by `.venv/bin/python -m tests.bench.history {rounds}` "
        "(`tests/bench/history.py`, whose docstring says what is timed), on this shared "
        f"2-core machine: {SWEEPS} sweeps, {points} points, {count} series of "
        f"{points // count} points. Seconds, median (min to max) over {rounds} rounds.", "",
        "| | seconds | ratio | goal |", "|---|---|---|---|",
        f"| minimal reader: `json.loads` of {SWEEPS} record JSONs and their rows | "
        f"{med['read']:.2f} ({rng['read']}) | 1.00x | |",
        f"| index, cold (`--rebuild`): digest, read, points, floors, SQLite, order | "
        f"{med['index']:.2f} ({rng['index']}) | {ratio['index']:.2f}x | <= 2x |",
        f"| index, nothing changed: {SWEEPS} digests, nothing read, order | "
        f"{med['unchanged']:.2f} ({rng['unchanged']}) | {ratio['unchanged']:.2f}x | |",
        f"| index, one sweep changed: digests, one read and replaced, order | "
        f"{med['one']:.2f} ({rng['one']}) | {ratio['one']:.2f}x | |",
        f"| reading every series from the index | {med['series']:.2f} ({rng['series']}) | "
        "1.00x | |",
        f"| change detection of every series (read, E-divisive, filters) | "
        f"{med['detect']:.2f} ({rng['detect']}) | {med['detect'] / med['series']:.1f}x | |",
        f"| detection per {points // count}-point series | {per_series:.3f} | | <= 1 s |", "",
        f"Reading one sweep's attempts from the store into its record (`gather_stored`: "
        f"sha256 of every file, the record builder) took {gather_s:.2f} s for the seed's "
        f"{cells} cells; `history --rebuild` pays that per sweep, as `record --from-store` "
        "does.", "",
        f"The site of that index (`publish`, records left out): written in "
        f"{shown['publish_s']:.1f} s; `data/index.js` {shown['index_kb']:.0f} KiB (100 "
        f"overviews of at most 100 bucket means each); a series file at most "
        f"{shown['series_kb']:.0f} KiB, loaded only when its page opens. In Debian's "
        f"Chromium the index showed its 100 rows {shown['index_load_s']:.2f} s after "
        f"navigation and a 1,000-point series plotted {shown['series_load_s']:.2f} s after "
        "the click.", ""]
    OUT.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
