"""benchfleet publish -o SITE: the history as a static site that works offline."""

from pathlib import Path

import click
from rich.console import Console

from runner.trends.index import build
from runner.trends.publish import publish
from runner.trends.query import read_thresholds
from workers.shared.settings import load_settings
from workers.shared.stores import open_store


@click.command()
@click.option("-o", "--out", type=click.Path(path_type=Path), required=True,
              help="the site's folder (served from disk or any web server)")
@click.option("--rebuild", is_flag=True, help="read the whole store into a new index, not "
              "only the sweeps that changed")
@click.option("--branch", default="HEAD", show_default=True)
def command(out: Path, rebuild: bool, branch: str) -> int:
    """Write index, series, regressions and record pages; exit 0 (2: bad input)."""
    settings = load_settings()
    thresholds = read_thresholds(settings.history_thresholds)
    store = open_store(settings.artifacts, settings)
    build(store, settings.history_db, branch, rebuild)
    console = Console()
    say = lambda line: console.print(line, highlight=False, soft_wrap=True, markup=False)  # noqa: E731
    count = publish(store, settings.history_db, thresholds, out, say)
    say(f"{out / 'index.html'}: {count} series")
    return 0
