"""benchfleet record [SWEEP] -o DIR: combine every cell's artifacts into one record."""

from pathlib import Path

import click
from rich.console import Console

from runner.records import gather, write
from workers.fleet.artifacts import open_store
from workers.fleet.settings import load_settings
from workers.fleet.state import Store


@click.command()
@click.argument("sweep", required=False)
@click.option("-o", "--out", type=click.Path(path_type=Path), default=Path("records"),
              show_default=True, help="output directory")
def command(sweep: str | None, out: Path) -> int:
    """Write a sweep's record (Markdown, JSON, PNG); SWEEP defaults to the newest."""
    settings = load_settings()
    store = Store.connect(settings.redis_url)
    sweep_id = store.resolve(sweep)
    written = write(gather(store, open_store(settings.artifacts, settings), sweep_id), out)
    r = written.record
    console = Console()
    console.print(f"{r.cells_measured} of {r.cells_expected} cells measured, "
                  f"{len(r.missing)} failed or missing")
    check = r.check
    for problem in check.problems if check else []:
        console.print(f"check FAIL {problem}", highlight=False, soft_wrap=True, markup=False)
    console.print(f"benchfleet check: {'passes' if check and check.ok else 'fails'}")
    for path in (written.markdown, written.json, *written.plots):
        console.print(str(path), highlight=False, soft_wrap=True)
    console.print(f"raw data: {written.data}/", highlight=False, soft_wrap=True)
    return 0 if check and check.ok else 1
