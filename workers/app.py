"""The Celery app: one cell at a time, acknowledged only when it has finished."""

from celery import Celery

from workers.fleet.settings import Settings

# How long Redis waits for an unacknowledged cell before handing it out again; longer than any
# cell (cold mlxcel builds take ~25 min).
VISIBILITY_TIMEOUT_S = 12 * 3600


def create_app(settings: Settings) -> Celery:
    app = Celery("benchfleet", broker=settings.redis_url)
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,  # results live in the artifact store and the cell states
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        worker_concurrency=1,
        worker_hijack_root_logger=False,
        broker_connection_retry_on_startup=True,
        broker_transport_options={"visibility_timeout": VISIBILITY_TIMEOUT_S},
    )
    return app
