"""benchfleet submit SWEEP.yaml: queue a sweep's cells and print its id and cell table."""

from pathlib import Path

import click
from rich.console import Console

from jobs.attempts import CellState
from runner.status import table
from runner.submit import submit
from workers.fleet.settings import load_settings


@click.command()
@click.argument("sweep", type=click.Path(path_type=Path))
def command(sweep: Path) -> int:
    """Expand a sweep into cells and queue them."""
    sweep_id, cells = submit(sweep, load_settings())
    states = {c.id: CellState(status="queued") for c in cells}
    console = Console()
    console.print(table(cells, states, f"sweep {sweep_id}: {len(cells)} cells queued"))
    console.print(sweep_id, highlight=False)
    return 0
