"""The Celery app. `celery -A workers.app ...` finds it here, configured from the settings.

Acknowledged as soon as a worker takes a message: liveness is the worker's lease in Redis
(workers/shared/leases.py), not Redis's visibility timeout, and a message lost with its worker
is re-queued from the envelopes the coordinator stored (workers/shared/recovery.py).
"""

from celery import Celery

from workers.remote_control import restrict
from workers.shared.redis_client import broker
from workers.shared.settings import Settings, load_settings


def create_app(settings: Settings) -> Celery:
    broker_url, sentinel = broker(settings.redis_url)
    app = Celery("benchfleet", broker=broker_url, set_as_current=False)
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,  # results live in the artifact store and the cell states
        task_acks_late=False,
        worker_prefetch_multiplier=1,
        worker_concurrency=1,
        worker_hijack_root_logger=False,
        broker_connection_retry_on_startup=True,
        broker_transport_options={"socket_timeout": 15, "socket_connect_timeout": 10,
                                  **sentinel},
        benchfleet_redis_url=settings.redis_url,  # ours, for a client beside the broker's
    )
    restrict(app)  # remote control answers inspection only (workers/remote_control.py)
    return app


# The module-level app `celery -A workers.app` finds: the same settings as `benchfleet worker`.
app = create_app(load_settings())
