"""benchfleet rerun SWEEP CELL... | --failed [--rebuild]: queue exactly those cells again."""

import click
from rich.console import Console

from jobs.errors import UserError
from runner.control import pick, rerun
from runner.status import cut_short
from workers.shared.settings import load_settings
from workers.shared.signing import signer
from workers.shared.state import Store


@click.command()
@click.argument("sweep")
@click.argument("cells", nargs=-1)
@click.option("--failed", is_flag=True, help="every cell that ended failed, timed out or "
              "cancelled")
@click.option("--rebuild", is_flag=True, help="build the commit again, even where a good "
              "build is kept")
def command(sweep: str, cells: tuple[str, ...], failed: bool, rebuild: bool) -> int:
    """Queue cells of a final sweep again as a new generation; the record keeps every
    attempt and uses the latest successful one."""
    if not cells and not failed:
        raise UserError("name the cells to rerun (ids from `benchfleet status`) or pass --failed")
    settings = load_settings()
    store = Store.connect(settings.redis_url, writing=True)
    sweep_id = store.resolve(sweep)
    _, all_cells, _ = store.sweep(sweep_id)
    chosen = pick(all_cells, list(cells), store, sweep_id, failed)
    outcome = rerun(store, signer(settings.signing_key), sweep_id, chosen, rebuild)
    console = Console()
    for cell_id, why in outcome.skipped.items():
        console.print(f"not rerun: {cell_id}: {why}", highlight=False, soft_wrap=True)
    n = len(outcome.done)
    console.print(f"{sweep_id}: {n} cell{'' if n == 1 else 's'} queued again"
                  f"{' (rebuild)' if rebuild else ''}", highlight=False)
    unpublished = store.unpublished(sweep_id)
    for line in cut_short(sweep_id, unpublished, all_cells,
                          store.statuses(sweep_id) if unpublished else {}):
        console.print(line, highlight=False, soft_wrap=True)  # what rerun cannot queue
    return 0 if not outcome.skipped else 1
