"""`benchfleet publish -o SITE`: a static site that works offline, from disk or any web
server. Its data are scripts beside the pages (a page opened from disk cannot fetch JSON); the
index carries only downsampled overviews, and each series is a file of its own that its page
loads when opened. Records are the store's, laid out by the record's own Markdown view."""

import html
import json
import shutil
from collections.abc import Callable
from pathlib import Path

from jobs.errors import UserError
from jobs.trends.regressions import listed
from jobs.trends.site import SiteIndex, overview, series_id
from jobs.trends.thresholds import ThresholdsFile
from jobs.trends.timeline import Series, candidates
from jobs.views.markdown import render
from runner.records import gather_stored
from runner.trends.index import connect
from runner.trends.query import series
from runner.trends.verdicts import verdicts
from workers.shared.stores import ArtifactStore

ASSETS = Path(__file__).parent / "assets"
_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<link rel="stylesheet" href="{root}site.css"></head>
<body><nav><a href="{root}index.html">testbeds and series</a> ·
<a href="{root}regressions.html">regressions</a></nav>
<h1>{title}</h1><div id="main">{body}</div>
<script src="{root}site.js"></script>{scripts}
</body></html>
"""


def publish(store: ArtifactStore, db: Path, thresholds: ThresholdsFile, out: Path,
            say: Callable[[str], None]) -> int:
    """Write the site; returns how many series it holds."""
    with connect(db) as conn:
        found = series(conn, thresholds)
        beds = {r["id"]: json.loads(r["fields"]) for r in conn.execute("SELECT * FROM testbeds")}
        notes = [r[0] for r in conn.execute("SELECT sentence FROM problems")]
    rows = listed([c for s in found for c in candidates(s)], verdicts(store))
    index = SiteIndex(testbeds=beds, series=[overview(s) for s in found], regressions=rows,
                      notes=notes)
    _folder(out)
    for name in ("site.js", "site.css"):
        shutil.copyfile(ASSETS / name, out / name)
    _script(out / "data" / "index.js", "window.BF_INDEX", index.model_dump_json())
    for s in found:
        _script(out / "data" / "series" / f"{series_id(s)}.js", "bfSeries", s.model_dump_json(),
                call=True)
    _pages(out)
    _records(store, found, out / "records", say)
    return len(found)


def _pages(out: Path) -> None:
    index = '\n<script src="data/index.js"></script><script>showIndex(window.BF_INDEX)</script>'
    regressions = ('\n<script src="data/index.js"></script>'
                   '<script>showRegressions(window.BF_INDEX)</script>')
    for name, title, scripts in (("index", "benchfleet history", index),
                                 ("regressions", "Regressions", regressions),
                                 ("series", "Series", "<script>loadSeries()</script>")):
        (out / f"{name}.html").write_text(_PAGE.format(title=title, root="", body="",
                                                       scripts=scripts))


def _records(store: ArtifactStore, found: list[Series], out: Path,
             say: Callable[[str], None]) -> None:
    """Each sweep's record, made from the store as `record --from-store` makes it."""
    out.mkdir(parents=True, exist_ok=True)
    sweeps = sorted({p.sweep_id for s in found for p in s.points
                     if not p.sweep_id.startswith("import:")})
    for sweep_id in sweeps:
        try:
            record = gather_stored(store, sweep_id)
        except UserError as error:
            say(f"record {sweep_id} left out of the site: {error}")
            continue
        (out / f"{sweep_id}.json").write_text(record.model_dump_json(indent=1))
        check = "passes" if record.check and record.check.ok else "fails"
        body = (f'<p>check {check} · <a href="{html.escape(sweep_id)}.json">JSON</a></p>'
                f"<pre>{html.escape(render(record))}</pre>")
        (out / f"{sweep_id}.html").write_text(_PAGE.format(
            title=f"Record {html.escape(sweep_id)}", root="../", body=body, scripts=""))


def _script(path: Path, name: str, data: str, call: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{name}({data});\n" if call else f"{name} = {data};\n")


def _folder(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"cannot create {out} ({error.strerror}); give -o a writable "
                        "directory") from None
