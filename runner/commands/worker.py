"""benchfleet worker --backend NAME [--name HOST]: serve one backend's cells on this host."""

import click

from workers.shared.settings import load_settings


@click.command()
@click.option("--backend", required=True, help="the backend this host runs, e.g. cuda")
@click.option("--name", help="this worker's name, unique in the fleet (default: the hostname)")
@click.option("--loglevel", default="INFO", show_default=True)
def command(backend: str, name: str | None, loglevel: str) -> int:
    """Run a Celery worker for one backend on this host."""
    from workers.service import default_name, serve

    settings = load_settings()
    serve(settings, backend, name or default_name(), loglevel)
    return 0
