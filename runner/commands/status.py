"""benchfleet status [SWEEP] [--watch]: per-cell state; --watch follows it to the end.

Status also does the coordinator's share of keeping nothing lost: it re-queues the cells of
workers whose lease expired and of messages that vanished, and says which queued cells no
live worker can take.
"""

from collections import Counter

import click
from rich.console import Console

from jobs.attempts import FINAL
from jobs.cells import Cell
from jobs.routing import Route, why_waiting
from runner.status import summary, table, watch
from workers.fleet.leases import live_offers
from workers.fleet.recovery import recover
from workers.fleet.settings import load_settings
from workers.fleet.state import Store


@click.command()
@click.argument("sweep", required=False)
@click.option("--watch", "follow", is_flag=True, help="follow until every cell has ended")
def command(sweep: str | None, follow: bool) -> int:
    """Show a sweep's cells (the newest sweep by default); SWEEP is an id or a unique prefix."""
    settings = load_settings()
    store = Store.connect(settings.redis_url)
    sweep_id = store.resolve(sweep)
    _, cells, _ = store.sweep(sweep_id)
    console = Console()
    recovered = recover(store, settings.max_attempts, settings.lost_after_s)
    if recovered.requeued or recovered.failed or recovered.lost_messages:
        console.print(f"re-queued {recovered.requeued} cells of workers whose lease expired "
                      f"({recovered.failed} failed after their last attempt) and "
                      f"{recovered.lost_messages} lost messages", highlight=False)
    if follow:
        watch(store, sweep_id, cells, console)
    states = store.states(sweep_id)
    console.print(table(cells, states, f"{sweep_id}: {summary(states)}"))
    for line in _unserved(store, [c for c in cells if states[c.id].status == "queued"]):
        console.print(line, highlight=False, soft_wrap=True)
    for refused in [r for r in store.refused() if r.get("sweep_id") == sweep_id]:
        console.print(f"{refused.get('kind', 'refused')} by {refused['worker']} at "
                      f"{refused['at']}: cell {refused['cell']}: {refused['why']}",
                      highlight=False, soft_wrap=True)
    ended = all(s.status in FINAL for s in states.values())
    failed = any(s.status in FINAL - {"done", "skipped"} for s in states.values())
    return 1 if failed else (0 if ended else 3)


def _unserved(store: Store, queued: list[Cell]) -> list[str]:
    """Why queued cells wait, one line per reason: no live worker can take them."""
    offers = live_offers(store.r)
    routes = Counter((c.backend, c.host, tuple(c.requires)) for c in queued)
    waiting: Counter[str] = Counter()
    for (backend, host, requires), n in routes.items():
        why = why_waiting(Route(backend=backend, host=host, requires=list(requires)), offers)
        waiting[why or ""] += n
    del waiting[""]
    return [f"{n} queued cell{'s' if n > 1 else ''} wait: {why}"
            for why, n in sorted(waiting.items())]
