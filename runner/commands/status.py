"""benchfleet status [SWEEP] [--watch]: per-cell state; --watch follows it to the end."""

import argparse

from rich.console import Console

from jobs.attempts import FINAL
from runner.status import summary, table, watch
from workers.settings import Settings
from workers.state import Store


def add(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("status", help="show a sweep's cells (the newest sweep by default)")
    p.add_argument("sweep", nargs="?", help="sweep id or a unique prefix of it")
    p.add_argument("--watch", action="store_true", help="follow until every cell has ended")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    store = Store.connect(settings.redis_url)
    sweep_id = store.resolve(args.sweep)
    _, cells, _ = store.sweep(sweep_id)
    if args.watch:
        watch(store, sweep_id, cells, console)
    states = store.states(sweep_id)
    console.print(table(cells, states, f"{sweep_id}: {summary(states)}"))
    ended = all(s.status in FINAL for s in states.values())
    failed = any(s.status == "failed" for s in states.values())
    # 0: all done; 1: some cell failed; 3: still running (without --watch).
    return 1 if failed else (0 if ended else 3)
