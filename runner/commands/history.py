"""benchfleet history: every series the artifact store holds, by testbed, model, arm and
metric, in the target's first-parent order, with the steps in it."""

import json
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from jobs.errors import UserError
from jobs.trends.imports import FORMATS
from jobs.trends.timeline import Series
from runner.trends.imports import import_file, read_import
from runner.trends.index import build, connect
from runner.trends.query import read_thresholds, series
from workers.shared.settings import load_settings
from workers.shared.stores import open_store


@click.command()
@click.option("--rebuild", is_flag=True, help="read the whole store into a new index, not "
              "only the sweeps that changed")
@click.option("--branch", default="HEAD", show_default=True,
              help="the target's branch whose first-parent line orders the series")
@click.option("--testbed", help="only this testbed (an id `history` shows)")
@click.option("--model", help="only this model")
@click.option("--arm", help="only this arm")
@click.option("--metric", type=click.Choice(["decode_tps", "prefill_tps"]))
@click.option("--json", "as_json", is_flag=True, help="print the series as JSON")
@click.option("--import", "imported", type=click.Path(path_type=Path, dir_okay=False),
              help="keep this file's results in the store's history")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=FORMATS[0],
              show_default=True, help="the imported file's format")
@click.option("--stderr", "stderr", type=click.Path(path_type=Path, dir_okay=False),
              help="a bench-decode run's stderr, beside its stdout given to --import")
@click.option("--commit", help="the target commit the imported results were measured at")
@click.option("--repo", help="the target repository whose history places --commit")
def command(rebuild: bool, branch: str, testbed: str | None, model: str | None,
            arm: str | None, metric: str | None, as_json: bool, imported: Path | None,
            fmt: str, stderr: Path | None, commit: str | None, repo: str | None) -> int:
    """Show history from the artifact store (BENCHFLEET_ARTIFACTS), indexed in
    BENCHFLEET_HISTORY_DB: the index reads again the sweeps whose attempts changed since its
    last build. Exit 0; 2 when the store or an imported file cannot be read."""
    settings = load_settings()
    store = open_store(settings.artifacts, settings)
    if imported:
        if not commit:
            raise UserError("--import needs --commit: the target commit the results are from")
        import_file(store, read_import(imported, stderr, format=fmt, commit=commit,
                                       testbed=testbed, model=model, arm=arm or "baseline",
                                       repo=repo))
    thresholds = read_thresholds(settings.history_thresholds)
    problems = build(store, settings.history_db, branch, rebuild)
    with connect(settings.history_db) as conn:
        found = series(conn, thresholds, testbed=testbed, model=model, arm=arm,
                       metric=metric)
        beds = conn.execute("SELECT * FROM testbeds ORDER BY id, hostname").fetchall()
    problems += thresholds.unknown({b["id"] for b in beds})
    if as_json:
        click.echo(json.dumps({"testbeds": [dict(b) | {"fields": json.loads(b["fields"])}
                                            for b in beds],
                               "series": [s.model_dump(mode="json") for s in found],
                               "problems": problems}, indent=1))
        return 0
    _show(Console(), beds, found, problems)
    return 0


def _show(console: Console, beds: list[object], found: list[Series], problems: list[str]
          ) -> None:
    t = Table(title="testbeds")
    for column in ("testbed", "host", "fields"):
        t.add_column(column, overflow="fold")
    for b in beds:
        fields = json.loads(b["fields"])  # type: ignore[index]
        t.add_row(b["id"], b["hostname"],  # type: ignore[index]
                  "; ".join(f"{k} {v}" for k, v in fields.items()))
    console.print(t)
    for s in found:
        console.print(_series_table(s))
        for commit, step in s.steps:
            state = "candidate" if step.kept else "dropped: " + "; ".join(step.dropped_by)
            console.print(f"  step at {commit[:12]}: {step.before:.2f} -> {step.after:.2f} "
                          f"({step.change:+.1%}, p {step.pvalue:.2g}, {step.multiple:.1f}x "
                          f"the spread, steppiness {step.steppiness:.2f}): {state}",
                          highlight=False, soft_wrap=True)
    for sentence in problems:
        console.print(f"note: {sentence}", highlight=False, soft_wrap=True)


def _series_table(s: Series) -> Table:
    t = Table(title=f"{s.testbed} · {s.model} · {s.arm} · {s.metric}")
    for column in ("commit", "n", "mean", "min to max", "flags", "sweep", "check"):
        t.add_column(column)
    for p in s.points:
        where = p.commit[:12] + ("" if p.position is not None else " (not on the branch)")
        check = {True: "passes", False: "fails", None: ""}[p.check_ok]
        t.add_row(where, str(p.n), f"{p.mean:.2f}", f"{p.min:.2f} to {p.max:.2f}",
                  ", ".join(p.flags) + (" (not used)" if p.flags else ""), p.sweep_id, check)
    return t
