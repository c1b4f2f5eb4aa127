"""benchfleet worker --backend NAME [--name HOST]: serve one backend's cells on this host."""

import argparse

from rich.console import Console

from workers.service import default_name, serve
from workers.settings import Settings


def add(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("worker", help="run a Celery worker for one backend on this host")
    p.add_argument("--backend", required=True, help="the backend this host runs, e.g. cuda")
    p.add_argument("--name", default=default_name(),
                   help="this worker's name, unique in the fleet (default: the hostname)")
    p.add_argument("--loglevel", default="INFO")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    serve(settings, args.backend, args.name, args.loglevel)
    return 0
