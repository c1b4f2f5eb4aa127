"""benchfleet status [SWEEP] [--watch]: per-cell state; --watch follows it to the end.

Status also does the coordinator's share of keeping nothing lost: it re-queues the cells of
workers whose lease expired and of messages that vanished, and says which queued cells no
live worker can take.
"""

import gc
import json
from collections import Counter

import click
from rich.console import Console

from jobs.record.states import FINAL, CellState
from jobs.spec.routing import Route, why_waiting
from jobs.strict import dumped
from runner.collector import paused_collector
from runner.status import counts_text, cut_short, in_full, show
from workers.shared.leases import live_offers
from workers.shared.recovery import recover
from workers.shared.settings import load_settings
from workers.shared.state import CellRow, Store

# What `--json` gives in full: every cell not done, queued or skipped.
QUIET = ("done", "queued", "skipped")


@click.command()
@click.argument("sweep", required=False)
@click.option("--watch", "follow", is_flag=True, help="follow until every cell has ended")
@click.option("--all", "everything", is_flag=True, help="list every cell, however many")
@click.option("--json", "as_json", is_flag=True, help="counts, failed cells, waiting and "
              "refusals as JSON, for scripts")
@paused_collector()  # no cycles among its cells' objects to free
def command(sweep: str | None, follow: bool, everything: bool, as_json: bool) -> int:
    """Show a sweep's cells (the newest sweep by default); SWEEP is an id or a unique prefix."""
    settings = load_settings()
    store = Store.connect(settings.redis_url)
    sweep_id = store.resolve(sweep)
    cells = store.rows(sweep_id)  # not the cells in full: only what is counted and shown
    console = Console()
    recovered = recover(store, settings.max_attempts, settings.lost_after_s)
    if recovered.requeued or recovered.failed or recovered.lost_messages:
        console.print(f"re-queued {recovered.requeued} cells of workers whose lease expired "
                      f"({recovered.failed} failed after their last attempt) and "
                      f"{recovered.lost_messages} lost messages", highlight=False)
    if follow:
        from runner.watch import watch  # rich's live display: only a watch pays its import

        gc.enable()  # it may follow a sweep for hours: its garbage is collected as it goes

        for line in _cut_short(store, sweep_id):
            console.print(line, highlight=False, soft_wrap=True)  # they end only after --resume
        watch(store, sweep_id, cells, console)
    statuses = store.statuses(sweep_id)
    # Whole states only of the cells shown in full: parsing every one is most of the cost.
    states = store.states_of(sweep_id, [c for c, s in statuses.items() if s not in QUIET]
                             if as_json else in_full(cells, statuses, everything))
    waiting = _unserved(store, [c for c in cells if statuses[c.id] == "queued"])
    refused = [r for r in store.refused() if r.get("sweep_id") == sweep_id]
    waiting = _cut_short(store, sweep_id, statuses) + waiting
    if as_json:
        print(json.dumps(_as_json(sweep_id, cells, statuses, states, waiting, refused),
                         indent=1))
    else:
        title = f"{sweep_id}: {counts_text(Counter(statuses.values()))}"
        show(console, cells, states, title, everything, statuses)
        for line in waiting:
            console.print(line, highlight=False, soft_wrap=True)
        for r in refused:
            console.print(f"{r.get('kind', 'refused')} by {r['worker']} at {r['at']}: cell "
                          f"{r['cell']}: {r['why']}", highlight=False, soft_wrap=True)
    ended = all(s in FINAL for s in statuses.values())
    failed = any(s in FINAL - {"done", "skipped"} for s in statuses.values())
    # Not finished outranks failed: a sweep with a cell still running has no answer yet.
    return 3 if not ended else (1 if failed else 0)


def _cut_short(store: Store, sweep_id: str, statuses: dict[str, str] | None = None
               ) -> list[str]:
    """The cut-short line; only such a sweep has its cells read in full (for their groups)."""
    groups = store.unpublished(sweep_id)
    if not groups:
        return []
    return cut_short(sweep_id, groups, store.sweep(sweep_id)[1],
                     statuses if statuses is not None else store.statuses(sweep_id))


def _as_json(sweep_id: str, cells: list[CellRow], statuses: dict[str, str],
             states: dict[str, CellState], waiting: list[str], refused: list[dict[str, str]]
             ) -> dict[str, object]:
    by_group: Counter[str] = Counter(f"{c.backend}/{c.model}/{statuses[c.id]}" for c in cells)
    return {"sweep_id": sweep_id, "cells": len(cells),
            "states": dict(Counter(statuses.values())),
            "by_backend_model_state": dict(sorted(by_group.items())),
            "not_done": {c.id: dumped(states[c.id], exclude_none=True) for c in cells
                         if c.id in states},
            "waiting": waiting, "refused": refused}


def _unserved(store: Store, queued: list[CellRow]) -> list[str]:
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
