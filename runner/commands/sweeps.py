"""benchfleet sweeps: every sweep in Redis, newest first, with its cell counts."""

import click
from rich.console import Console
from rich.table import Table

from runner.status import summary
from workers.shared.settings import load_settings
from workers.shared.state import Store


@click.command()
@click.option("-n", "--limit", default=20, show_default=True, help="how many to list")
def command(limit: int) -> int:
    """List the sweeps in Redis, newest first."""
    store = Store.connect(load_settings().redis_url)
    table = Table(title="sweeps")
    for column in ("sweep", "created", "cells", "states"):
        table.add_column(column, overflow="fold")
    for sweep_id in store.sweep_ids()[:limit]:
        _, cells, data = store.sweep(sweep_id)
        table.add_row(sweep_id, data.get("created", ""), str(len(cells)),
                      summary(store.states(sweep_id)))
    Console().print(table)
    return 0
