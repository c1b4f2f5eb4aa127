"""benchfleet record [SWEEP] -o DIR: combine every cell's artifacts into one record."""

from pathlib import Path

import click
from rich.console import Console

from jobs.errors import UserError
from runner.collector import paused_collector
from runner.records import figure_drawer, gather, gather_stored, write
from workers.shared.settings import load_settings
from workers.shared.state import Store
from workers.shared.stores import open_store


@click.command()
@click.argument("sweep", required=False)
@click.option("-o", "--out", type=click.Path(path_type=Path), default=Path("records"),
              show_default=True, help="output directory")
@click.option("--from-store", is_flag=True, help="make it from the artifact store alone, "
              "without Redis (SWEEP is then the full sweep id)")
def command(sweep: str | None, out: Path, from_store: bool) -> int:
    """Write a sweep's record (Markdown, JSON, PNG); SWEEP defaults to the newest."""
    settings = load_settings()
    artifacts = open_store(settings.artifacts, settings)
    # The figures' child starts first: it imports matplotlib while this process reads.
    with paused_collector(), figure_drawer() as drawer:
        if from_store:
            if not sweep:
                raise UserError("--from-store needs the sweep's full id (a folder of the "
                                "store)")
            record = gather_stored(artifacts, sweep, drawer)
        else:
            store = Store.connect(settings.redis_url)
            record = gather(store, artifacts, store.resolve(sweep), drawer)
        written = write(record, out, drawer)
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
