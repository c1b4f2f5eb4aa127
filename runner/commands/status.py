"""benchfleet status [SWEEP] [--watch]: per-cell state; --watch follows it to the end."""

import click
from rich.console import Console

from jobs.attempts import FINAL
from runner.status import summary, table, watch
from workers.fleet.settings import load_settings
from workers.fleet.state import Store


@click.command()
@click.argument("sweep", required=False)
@click.option("--watch", "follow", is_flag=True, help="follow until every cell has ended")
def command(sweep: str | None, follow: bool) -> int:
    """Show a sweep's cells (the newest sweep by default); SWEEP is an id or a unique prefix."""
    store = Store.connect(load_settings().redis_url)
    sweep_id = store.resolve(sweep)
    _, cells, _ = store.sweep(sweep_id)
    console = Console()
    if follow:
        watch(store, sweep_id, cells, console)
    states = store.states(sweep_id)
    console.print(table(cells, states, f"{sweep_id}: {summary(states)}"))
    ended = all(s.status in FINAL for s in states.values())
    failed = any(s.status == "failed" for s in states.values())
    return 1 if failed else (0 if ended else 3)
