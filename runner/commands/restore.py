"""benchfleet restore SWEEP_ID: after Redis lost a sweep, put it back from the artifact store
and queue every cell that has no accepted attempt."""

import click
from rich.console import Console

from runner.control import restore
from workers.shared.settings import load_settings
from workers.shared.state import Store
from workers.shared.stores import open_store


@click.command()
@click.argument("sweep_id")
def command(sweep_id: str) -> int:
    """Put a sweep Redis has lost back from the artifact store; queue what never ran."""
    settings = load_settings()
    outcome = restore(Store.connect(settings.redis_url, writing=True),
                      open_store(settings.artifacts, settings), sweep_id)
    Console().print(f"{sweep_id}: restored from the artifact store; {len(outcome.done)} cells "
                    f"queued again, {len(outcome.skipped)} already ended", highlight=False)
    return 0
