"""benchfleet status [SWEEP] [--watch]: per-cell state; --watch follows it to the end.

Status also does the coordinator's share of keeping nothing lost: it re-queues the cells of
workers whose lease expired and of messages that vanished, and says which queued cells no
live worker can take.
"""

import json
from collections import Counter

import click
from rich.console import Console

from jobs.record.attempts import FINAL, CellState
from jobs.spec.cells import Cell
from jobs.spec.routing import Route, why_waiting
from runner.status import cut_short, show, summary
from runner.watch import watch
from workers.shared.leases import live_offers
from workers.shared.recovery import recover
from workers.shared.settings import load_settings
from workers.shared.state import Store


@click.command()
@click.argument("sweep", required=False)
@click.option("--watch", "follow", is_flag=True, help="follow until every cell has ended")
@click.option("--all", "everything", is_flag=True, help="list every cell, however many")
@click.option("--json", "as_json", is_flag=True, help="counts, failed cells, waiting and "
              "refusals as JSON, for scripts")
def command(sweep: str | None, follow: bool, everything: bool, as_json: bool) -> int:
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
    unpublished = store.unpublished(sweep_id)
    if follow:
        for line in cut_short(sweep_id, unpublished, cells, store.states(sweep_id)):
            console.print(line, highlight=False, soft_wrap=True)  # they end only after --resume
        watch(store, sweep_id, cells, console)
        unpublished = store.unpublished(sweep_id)
    states = store.states(sweep_id)
    waiting = _unserved(store, [c for c in cells if states[c.id].status == "queued"])
    refused = [r for r in store.refused() if r.get("sweep_id") == sweep_id]
    waiting = cut_short(sweep_id, unpublished, cells, states) + waiting
    if as_json:
        print(json.dumps(_as_json(sweep_id, cells, states, waiting, refused), indent=1))
    else:
        show(console, cells, states, f"{sweep_id}: {summary(states)}", everything)
        for line in waiting:
            console.print(line, highlight=False, soft_wrap=True)
        for r in refused:
            console.print(f"{r.get('kind', 'refused')} by {r['worker']} at {r['at']}: cell "
                          f"{r['cell']}: {r['why']}", highlight=False, soft_wrap=True)
    ended = all(s.status in FINAL for s in states.values())
    failed = any(s.status in FINAL - {"done", "skipped"} for s in states.values())
    # Not finished outranks failed: a sweep with a cell still running has no answer yet.
    return 3 if not ended else (1 if failed else 0)


def _as_json(sweep_id: str, cells: list[Cell], states: dict[str, CellState],
             waiting: list[str], refused: list[dict[str, str]]) -> dict[str, object]:
    by_group: Counter[str] = Counter(f"{c.backend}/{c.model}/{states[c.id].status}"
                                     for c in cells)
    return {"sweep_id": sweep_id, "cells": len(cells),
            "states": dict(Counter(s.status for s in states.values())),
            "by_backend_model_state": dict(sorted(by_group.items())),
            "not_done": {c.id: states[c.id].model_dump(exclude_none=True) for c in cells
                         if states[c.id].status not in ("done", "queued", "skipped")},
            "waiting": waiting, "refused": refused}


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
