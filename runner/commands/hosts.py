"""benchfleet hosts [--json]: the live workers, what their hosts offer, what each runs."""

import json

import click
from rich.console import Console

from runner.fleet_view import blocks, gather, table
from workers.shared.settings import load_settings
from workers.shared.state import Store

# Refusals shown under the table (remote control commands, forged messages), newest first.
RECENT_REFUSALS = 5
# Narrower than this, the table's nine columns fold their words; each worker is a block.
TABLE_COLUMNS = 120


@click.command()
@click.option("--json", "as_json", is_flag=True, help="print the workers as JSON")
def command(as_json: bool) -> int:
    """List live workers: host, backend, chip, memory, OS, toolchains, checkpoints, tags,
    the cell each runs, and when each was last seen."""
    store = Store.connect(load_settings().redis_url)
    views = gather(store)
    if as_json:
        click.echo(json.dumps([v.model_dump(mode="json") for v in views], indent=1))
        return 0
    console = Console()
    console.print(table(views) if console.width >= TABLE_COLUMNS else blocks(views))
    for refused in store.refused()[:RECENT_REFUSALS]:
        where = f"sweep {refused['sweep_id']}, cell {refused['cell']}: " \
            if refused.get("sweep_id") else ""
        console.print(f"{refused.get('kind', 'refused')} by {refused['worker']} at "
                      f"{refused['at']}: {where}{refused['why']}", highlight=False,
                      soft_wrap=True)
    return 0
