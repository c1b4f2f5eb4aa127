"""benchfleet cancel SWEEP [CELL...]: drop queued cells, kill running ones."""

import click
from rich.console import Console

from runner.control import cancel, pick
from workers.shared.settings import load_settings
from workers.shared.state import Store


@click.command()
@click.argument("sweep")
@click.argument("cells", nargs=-1)
def command(sweep: str, cells: tuple[str, ...]) -> int:
    """Cancel a sweep's cells (all of them without CELL): queued ones end at once, running
    ones have their command's process group killed by their worker."""
    store = Store.connect(load_settings().redis_url, writing=True)
    sweep_id = store.resolve(sweep)
    _, all_cells, _ = store.sweep(sweep_id)
    chosen = pick(all_cells, list(cells), store, sweep_id, False) if cells else all_cells
    outcome = cancel(store, sweep_id, chosen)
    console = Console()
    if cells:
        for cell_id, why in outcome.skipped.items():
            console.print(f"not cancelled: {cell_id}: {why}", highlight=False, soft_wrap=True)
    console.print(f"{sweep_id}: {len(outcome.done)} cells cancelled "
                  f"({len(outcome.skipped)} had already ended)", highlight=False)
    return 0
