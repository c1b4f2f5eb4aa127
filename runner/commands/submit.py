"""benchfleet submit SWEEP.yaml: queue a sweep's cells and print its id and cell table;
`submit --resume SWEEP_ID` finishes a submit that was cut short."""

from pathlib import Path

import click
from rich.console import Console

from jobs.errors import UserError
from jobs.record.states import CellState
from runner.collector import paused_collector
from runner.status import show
from runner.submit import submit
from workers.shared.settings import load_settings
from workers.shared.state import Store
from workers.shared.stores import open_store


@click.command()
@click.argument("sweep", type=click.Path(path_type=Path), required=False)
@click.option("--all", "everything", is_flag=True, help="list every cell, however many")
@click.option("--again", is_flag=True, help="measure it again, even though a sweep with the "
              "same spec and commits is in Redis")
@click.option("--resume", "resume_id", metavar="SWEEP_ID", help="queue what a submit cut "
              "short had not queued yet, each cell once")
@click.option("--wait-for-worker", is_flag=True, help="queue it even though no live worker "
              "serves some of its cells yet (a backend, host, tag or model): they wait for one")
def command(sweep: Path | None, everything: bool, again: bool, resume_id: str | None,
            wait_for_worker: bool) -> int:
    """Expand a sweep into cells and queue them; the last line printed is the sweep id. A
    sweep identical to one in Redis (same spec, same commits) is refused without --again; one
    that no live worker can run (all or some of it) without --wait-for-worker."""
    if (sweep is None) == (resume_id is None):
        raise UserError("name a sweep file to submit, or `--resume SWEEP_ID` to finish a "
                        "submit that was cut short, not both")
    if resume_id is not None:
        return _resume(resume_id)
    assert sweep is not None
    console = Console()
    with paused_collector():  # no cycles among its cells' objects to free
        sweep_id, cells = submit(sweep, load_settings(), again,
                                 _warn if wait_for_worker else _refuse, started=_started)
    queued = CellState(status="queued")
    show(console, cells, {c.id: queued for c in cells},
         f"sweep {sweep_id}: {len(cells)} cells queued", everything)
    console.print(sweep_id, highlight=False)
    return 0


def _started(sweep_id: str, cells: int) -> None:
    # On stderr before anything is stored: a submit killed from here on names what finishes it.
    click.echo(f"sweep {sweep_id}: storing and queuing {cells} cells (if this is cut short, "
               f"`benchfleet submit --resume {sweep_id}` finishes it)", err=True)


def _resume(sweep_id: str) -> int:
    from runner.resume import resume  # with the restore it may need: only --resume pays for it

    settings = load_settings()
    done = resume(Store.connect(settings.redis_url, writing=True),
                  open_store(settings.artifacts, settings), sweep_id)
    put_back = "put back from the artifact store; " if done.restored else ""
    Console().print(f"sweep {sweep_id}: {put_back}{done.queued} cells queued now, "
                    f"{done.already} queued before or ended", highlight=False)
    return 0


def _refuse(reasons: list[str]) -> None:
    raise UserError(f"{'; '.join(reasons)}, so its cells would wait in their queue; start "
                    "that worker (`benchfleet hosts` lists the live ones), or pass "
                    "--wait-for-worker to queue the sweep anyway")


def _warn(reasons: list[str]) -> None:
    click.echo(f"benchfleet: warning: {'; '.join(reasons)}; queued anyway (--wait-for-worker): "
               "those cells wait until such a worker starts", err=True)
