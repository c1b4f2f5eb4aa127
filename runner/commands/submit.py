"""benchfleet submit SWEEP.yaml: queue a sweep's cells and print its id and cell table."""

from pathlib import Path

import click
from rich.console import Console

from jobs.errors import UserError
from jobs.record.attempts import CellState
from runner.status import show
from runner.submit import submit
from workers.shared.settings import load_settings


@click.command()
@click.argument("sweep", type=click.Path(path_type=Path))
@click.option("--all", "everything", is_flag=True, help="list every cell, however many")
@click.option("--again", is_flag=True, help="measure it again, even though a sweep with the "
              "same spec and commits is in Redis")
@click.option("--wait-for-worker", is_flag=True, help="queue it even though no live worker "
              "serves some of its cells yet (a backend, host, tag or model): they wait for one")
def command(sweep: Path, everything: bool, again: bool, wait_for_worker: bool) -> int:
    """Expand a sweep into cells and queue them; the last line printed is the sweep id. A
    sweep identical to one in Redis (same spec, same commits) is refused without --again; one
    that no live worker can run (all or some of it) without --wait-for-worker."""
    sweep_id, cells = submit(sweep, load_settings(), again,
                             _warn if wait_for_worker else _refuse)
    queued = CellState(status="queued")
    console = Console()
    show(console, cells, {c.id: queued for c in cells},
         f"sweep {sweep_id}: {len(cells)} cells queued", everything)
    console.print(sweep_id, highlight=False)
    return 0


def _refuse(reasons: list[str]) -> None:
    raise UserError(f"{'; '.join(reasons)}, so its cells would wait in their queue; start "
                    "that worker (`benchfleet hosts` lists the live ones), or pass "
                    "--wait-for-worker to queue the sweep anyway")


def _warn(reasons: list[str]) -> None:
    click.echo(f"benchfleet: warning: {'; '.join(reasons)}; queued anyway (--wait-for-worker): "
               "those cells wait until such a worker starts", err=True)
