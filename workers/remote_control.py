"""Celery remote control, read-only. Anyone who can write to Redis can broadcast a control
command, so a worker answers only inspection (ping, stats, active_queues, registered) and
refuses the rest — shutdown, pool_restart, rate_limit, autoscale, add_consumer, revoke... —
with a reply that says so, a warning in its log and an entry in the refused log that
`benchfleet hosts` shows. The stats reply leaves out the broker's password.

The solo pool answers between cells only: a `ping` sent during a cell is answered when the
cell's command ends (docs/trust.md).
"""

import logging
from typing import Any
from urllib.parse import unquote, urlsplit

import redis
from celery import Celery
from kombu.pidbox import Node

from workers.shared.clock import now
from workers.shared.redis_client import connect
from workers.shared.state import Store

log = logging.getLogger(__name__)
READ_ONLY = frozenset({"ping", "stats", "active_queues", "registered"})
MASK = "***"


class ReadOnlyNode(Node):  # type: ignore[misc]
    def handle(self, method: str, arguments: dict[str, Any] | None = None) -> Any:
        if method not in READ_ONLY:
            return self._refuse(method)
        reply = super().handle(method, arguments)
        return _masked(reply, _secrets(self.state.app)) if method == "stats" else reply

    def _refuse(self, method: str) -> dict[str, str]:
        why = (f"remote control command {method[:60]!r} refused: benchfleet workers answer "
               f"only {', '.join(sorted(READ_ONLY))}")
        log.warning("%s", why)
        try:
            client = connect(self.state.app.conf.benchfleet_redis_url,
                             socket_timeout=5, socket_connect_timeout=5)
            Store(client).refuse({"at": now(), "worker": str(self.hostname), "sweep_id": "",
                                  "cell": "", "why": why, "task_id": ""})
            client.close()
        except redis.RedisError as error:
            log.warning("could not record the refusal in Redis: %s", error)
        return {"error": why}


def restrict(app: Celery) -> None:
    """Make the app's workers read-only to remote control (before the worker starts)."""
    app.control.mailbox.node_cls = ReadOnlyNode


def _secrets(app: Celery) -> list[str]:
    parts = urlsplit(str(app.conf.benchfleet_redis_url))
    return [s for s in (parts.password, unquote(parts.password or "")) if s]


def _masked(value: Any, secrets: list[str]) -> Any:
    """`value` with every password field and every occurrence of a secret masked."""
    if isinstance(value, dict):
        return {k: MASK if k == "password" and v else _masked(v, secrets)
                for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_masked(v, secrets) for v in value]
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, MASK)
    return value
