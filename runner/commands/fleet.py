"""benchfleet fleet up|down|status: a fleet kept running on this machine (docs/own-fleet.md)."""

import json
from dataclasses import asdict
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from jobs.errors import UserError
from jobs.spec.backends import backend_warning
from runner.own_fleet.control import down, redis_url, status, up
from runner.own_fleet.home import Home, Plan, parse_worker
from workers.shared.catalogue import load_catalogue
from workers.shared.settings import load_settings, redacted


def _home() -> Home:
    return Home(load_settings().fleet_dir)


@click.group()
def command() -> None:
    """A Redis, the keys and workers on this machine, kept running for your own sweeps
    (state in BENCHFLEET_FLEET_DIR, default ~/.benchfleet/fleet)."""


@command.command("up")
@click.option("--worker", "workers", multiple=True, metavar="NAME:BACKEND",
              help="a worker serving one backend, e.g. gpu-1:cuda; repeatable")
@click.option("--allow-repo", "allowed_repos", multiple=True,
              help="a target repository (URL, path or glob) the workers may build; repeatable")
@click.option("--models-dir", type=click.Path(path_type=Path, file_okay=False),
              help="the directory of checkpoints (default: the fleet's own models/)")
@click.option("--demo-target", is_flag=True, help="also lay out the demo's stand-in target, "
              "its checkpoint and a sweep over it for these workers' backends")
@click.option("--port", type=click.IntRange(1, 65535), help="Redis's port (default: a free "
              "one, kept from then on)")
def up_command(workers: tuple[str, ...], allowed_repos: tuple[str, ...],
               models_dir: Path | None, demo_target: bool, port: int | None) -> int:
    """Start the fleet, or what of it is not running; without options, as last time."""
    home = _home()
    asked = None
    if workers or allowed_repos or models_dir or demo_target or port:
        if not workers:
            raise UserError("name the fleet's workers with --worker NAME:BACKEND (e.g. "
                            "--worker gpu-1:cuda), or run `benchfleet fleet up` alone to start "
                            "it as last time")
        repos = [*allowed_repos, *([str(home.demo / "target")] if demo_target else [])]
        asked = Plan(port=port or 0, workers=[parse_worker(w) for w in workers],
                     allowed_repos=repos, demo_target=demo_target,
                     models_dir=(models_dir or home.root / "models").expanduser().absolute())
    plan = up(home, asked)
    console = Console(highlight=False, soft_wrap=True)
    console.print(f"fleet up in {home.root}: redis-server on {redacted(redis_url(home, plan))} "
                  "(appendonly, noeviction), "
                  f"{', '.join(f'{w.name} ({w.backend})' for w in plan.workers)}")
    if not plan.allowed_repos:
        console.print("warning: no --allow-repo: the workers build no repository")
    catalogue = load_catalogue(load_settings().catalogue)
    for worker in plan.workers:
        if (unbuilt := backend_warning(worker.backend, catalogue)) is not None:
            console.print(f"warning: worker {worker.name}: {unbuilt}")
    if plan.demo_target:
        console.print(f"demo sweep: {home.demo / 'sweep.yaml'}")
    console.print(f"to submit from a shell: . {home.env_file}")
    return 0


@command.command("down")
def down_command() -> int:
    """Stop the workers (each after its cell) and Redis; sweeps, keys and artifacts stay."""
    home = _home()
    stopped = down(home)
    Console(highlight=False, soft_wrap=True).print(
        f"fleet down in {home.root}: {stopped} process{'' if stopped == 1 else 'es'} stopped"
        if stopped else f"nothing of a fleet was running in {home.root}")
    return 0


@command.command("status")
@click.option("--json", "as_json", is_flag=True, help="the processes as JSON, for scripts")
def status_command(as_json: bool) -> int:
    """What of the fleet runs; exit 0 when all of it does, 1 when not."""
    home = _home()
    processes = status(home)
    if as_json:
        click.echo(json.dumps({"dir": str(home.root),
                               "processes": [asdict(p) for p in processes]}, indent=1))
    else:
        table = Table(title=f"fleet in {home.root}")
        for column in ("process", "backend", "pid", "state"):
            table.add_column(column)
        for p in processes:
            state = ("live" if p.live else "starting") if p.pid else "not running"
            table.add_row(p.name, p.backend or "", str(p.pid or ""), state)
        Console(highlight=False).print(table)
    return 0 if all(p.pid and p.live for p in processes) else 1
