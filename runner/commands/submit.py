"""benchfleet submit SWEEP.yaml: queue a sweep's cells and print its id and cell table."""

import argparse
from pathlib import Path

from rich.console import Console

from jobs.attempts import CellState
from runner.status import table
from runner.submit import submit
from workers.settings import Settings


def add(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("submit", help="expand a sweep into cells and queue them")
    p.add_argument("sweep", type=Path, help="the sweep YAML file")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    sweep_id, cells = submit(args.sweep, settings)
    states = {c.id: CellState(status="queued") for c in cells}
    console.print(table(cells, states, f"sweep {sweep_id}: {len(cells)} cells queued"))
    console.print(sweep_id, highlight=False)
    return 0
