"""`benchfleet worker`: a Celery worker serving one backend's queue, one cell at a time.

The solo pool runs the cell in the worker's own process, so while a benchmark runs the
worker does nothing else: no heartbeat, gossip or mingle threads, no prefetched work.
"""

import logging
import socket

from celery import Celery

from jobs.cells import Cell
from workers.app import create_app
from workers.fleet.artifacts import open_store
from workers.fleet.catalogue import load_catalogue
from workers.fleet.queues import TASK, backend_queue, host_queue
from workers.fleet.settings import Settings
from workers.fleet.state import Store
from workers.task import Context, run_cell
from workers.workspace import Workspace

log = logging.getLogger(__name__)


def default_name() -> str:
    return socket.gethostname().split(".")[0]


def serve(settings: Settings, backend: str, name: str, loglevel: str = "INFO") -> None:
    ctx = Context(name=name, backend=backend, models_dir=settings.models_dir,
                  catalogue=load_catalogue(settings.catalogue),
                  workspace=Workspace(settings.workspace),
                  artifacts=open_store(settings.artifacts),
                  state=Store.connect(settings.redis_url))
    app = create_app(settings)
    register(app, ctx)
    app.worker_main(["worker", "--pool", "solo", "--concurrency", "1",
                     "--prefetch-multiplier", "1", "--hostname", f"{name}.{backend}@%h",
                     "--queues", f"{backend_queue(backend)},{host_queue(name, backend)}",
                     "--without-gossip", "--without-mingle", "--without-heartbeat",
                     "--loglevel", loglevel])


def register(app: Celery, ctx: Context) -> None:
    @app.task(name=TASK)
    def run_cell_task(sweep_id: str, cell: dict[str, object]) -> str:
        parsed = Cell.model_validate(cell)
        # The first worker to take a cell of a group runs the whole group.
        owner = ctx.state.pin(sweep_id, parsed.group, ctx.name)
        if owner != ctx.name:
            app.send_task(TASK, args=[sweep_id, cell], queue=host_queue(owner, ctx.backend))
            log.info("cell %s belongs to %s's group; forwarded", parsed.id, owner)
            return f"forwarded to {owner}"
        return run_cell(ctx, sweep_id, parsed)
