"""benchfleet submit SWEEP.yaml: queue a sweep's cells and print its id and cell table."""

from pathlib import Path

import click
from rich.console import Console

from jobs.record.attempts import CellState
from runner.status import show
from runner.submit import submit
from workers.shared.settings import load_settings


@click.command()
@click.argument("sweep", type=click.Path(path_type=Path))
@click.option("--all", "everything", is_flag=True, help="list every cell, however many")
@click.option("--again", is_flag=True, help="measure it again, even though a sweep with the "
              "same spec and commits is in Redis")
def command(sweep: Path, everything: bool, again: bool) -> int:
    """Expand a sweep into cells and queue them; the last line printed is the sweep id. A
    sweep identical to one in Redis (same spec, same commits) is refused without --again."""
    sweep_id, cells = submit(sweep, load_settings(), again)
    queued = CellState(status="queued")
    console = Console()
    show(console, cells, {c.id: queued for c in cells},
         f"sweep {sweep_id}: {len(cells)} cells queued", everything)
    console.print(sweep_id, highlight=False)
    return 0
