"""Every Redis connection benchfleet makes, from BENCHFLEET_REDIS_URL: one Redis server
(`redis://`, `rediss://`, `unix://`), or the primary that Redis Sentinel names (`sentinel://`).

The Sentinel form is `sentinel://[:PASSWORD@]HOST:PORT[,HOST:PORT...]/SERVICE[/DB]`: the
sentinels, the service (master) name they watch, and the database. The password is the
primary's (and its replicas'); the sentinels themselves are asked without one.
"""

import logging
import time
import weakref
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

import redis
from redis.connection import parse_url
from redis.sentinel import Sentinel, SentinelConnectionPool

if TYPE_CHECKING:
    from tenacity import Retrying

log = logging.getLogger(__name__)

SENTINEL = "sentinel"
SENTINEL_PORT = 26379
FORM = "sentinel://[:PASSWORD@]HOST:PORT[,HOST:PORT...]/SERVICE[/DB]"
# How long a write that matters waits for a replica to hold it (docs/settings.md, Sentinel).
REPLICA_WAIT_MS = 2000
# How long writes go unconfirmed once no replica confirmed one in time.
ALONE_S = 30
# Redis may be away for a while (a restart, a failover, a network cut): keep trying this long.
REDIS_PATIENCE_S = 120.0
# A sentinel that does not answer in this long is passed over for the next one.
SENTINEL_TIMEOUT_S = 2.0
_SENTINEL_KWARGS = {"socket_timeout": SENTINEL_TIMEOUT_S,
                    "socket_connect_timeout": SENTINEL_TIMEOUT_S}


# The pools whose primary had no replica to confirm a write, until when (time.monotonic()).
_alone: "weakref.WeakKeyDictionary[SentinelConnectionPool, float]" = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class SentinelUrl:
    sentinels: list[tuple[str, int]]
    service: str
    db: int
    username: str | None
    password: str | None


def is_sentinel(url: str) -> bool:
    return url.startswith(f"{SENTINEL}:")


def parse_sentinel(url: str) -> SentinelUrl:
    """The parts of a sentinel:// URL; ValueError with what to write instead."""
    if ";" in url:
        raise ValueError(f"separate the sentinels with commas, not `;`: {FORM}")
    parts = urlsplit(url)
    if parts.query or parts.fragment:
        raise ValueError(f"a sentinel:// URL takes no options after `?`; use {FORM}")
    path = [p for p in parts.path.split("/") if p]
    if not 1 <= len(path) <= 2:
        raise ValueError(f"name the service the sentinels watch (and the database): {FORM}")
    if len(path) == 2 and not path[1].isdigit():
        raise ValueError(f"the database {path[1]!r} is not a number; use {FORM}")
    hosts = parts.netloc.rpartition("@")[2]
    sentinels = [_host_port(word.strip()) for word in hosts.split(",")]
    return SentinelUrl(sentinels, unquote(path[0]), int(path[1]) if len(path) == 2 else 0,
                       unquote(parts.username) if parts.username else None,
                       unquote(parts.password) if parts.password else None)


def _host_port(word: str) -> tuple[str, int]:
    if word.startswith("["):  # an IPv6 address: [::1]:26379
        host, _, rest = word[1:].partition("]")
        port = rest.removeprefix(":")
    else:
        host, _, port = word.partition(":")
    if not host:
        raise ValueError(f"a sentinel without a host in it; use {FORM}")
    if port and not port.isdigit():
        raise ValueError(f"sentinel {word!r} has a port that is not a number; use {FORM}")
    return host, int(port or SENTINEL_PORT)


def _sentinels(parsed: SentinelUrl) -> Sentinel:
    return Sentinel(parsed.sentinels, sentinel_kwargs=_SENTINEL_KWARGS)


def redis_retrying() -> "Retrying":
    """Retries of a Redis call while Redis is away, for up to REDIS_PATIENCE_S: a fresh copy
    each time (loops of it nest, and each keeps its own count), its strategies made once."""
    return _retrying().copy()


@cache
def _retrying() -> "Retrying":
    # tenacity imported on first use: `status` and `submit` never retry this way, and tenacity
    # imports tornado wherever tornado is installed (flower brings it), 50 ms and more.
    from tenacity import (
        Retrying,
        retry_if_exception_type,
        stop_after_delay,
        wait_exponential_jitter,
    )

    return Retrying(retry=retry_if_exception_type((redis.ConnectionError, redis.TimeoutError)),
                    stop=stop_after_delay(REDIS_PATIENCE_S),
                    wait=wait_exponential_jitter(initial=0.5, max=10), reraise=True)


def connect(url: str, **options: Any) -> redis.Redis:
    """A client of the Redis `url` names; through Sentinel, one that follows the primary
    across failovers (each new connection asks the sentinels where it is)."""
    if not is_sentinel(url):
        return redis.Redis.from_url(url, **options)
    parsed = parse_sentinel(url)
    return _sentinels(parsed).master_for(parsed.service, db=parsed.db, username=parsed.username,
                                         password=parsed.password, **options)


def address(url: str) -> dict[str, Any]:
    """Where to open a socket of our own now (host, port, password...), as redis-py's
    parse_url says it; through Sentinel, the primary's address asked of the sentinels."""
    if not is_sentinel(url):
        return dict(parse_url(url))
    parsed = parse_sentinel(url)
    host, port = _sentinels(parsed).discover_master(parsed.service)
    return {"host": host, "port": port, "db": parsed.db, "username": parsed.username,
            "password": parsed.password}


def broker(url: str) -> tuple[str, dict[str, Any]]:
    """Celery's broker URL and the transport options it needs for `url` (kombu's own
    Sentinel form: `sentinel://...;sentinel://...` and the service as `master_name`)."""
    if not is_sentinel(url):
        return url, {}
    parsed = parse_sentinel(url)
    auth = urlsplit(url).netloc.rpartition("@")[0]
    urls = [f"{SENTINEL}://{auth + '@' if auth else ''}{_netloc(host, port)}/{parsed.db}"
            for host, port in parsed.sentinels]
    return ";".join(urls), {"master_name": parsed.service, "sentinel_kwargs": _SENTINEL_KWARGS}


def _netloc(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def where(client: redis.Redis) -> str:
    """The server a client talks to, for a message: HOST:PORT, a socket's path, or the
    Sentinel service and the primary it names now."""
    pool = client.connection_pool
    if isinstance(pool, SentinelConnectionPool):
        try:
            host, port = pool.get_master_address()
        except redis.ConnectionError:
            return f"Sentinel service {pool.service_name} (no primary found)"
        return f"{host}:{port} (the primary of Sentinel service {pool.service_name})"
    kwargs = pool.connection_kwargs
    return str(kwargs["path"]) if "path" in kwargs else f"{kwargs['host']}:{kwargs['port']}"


def replicated(client: redis.Redis) -> None:
    """Through Sentinel, wait until a replica holds what this client wrote, so that a failover
    loses none of it. Redis's WAIT counts this connection's writes; the pool hands a
    single-threaded caller the connection it used last, the one that wrote. With no replica
    to confirm (the primary alone after a failover), waiting would cost every write its
    timeout: the caller is warned and goes on unconfirmed for ALONE_S before asking again."""
    pool = client.connection_pool
    if not isinstance(pool, SentinelConnectionPool) or time.monotonic() < _alone.get(pool, 0):
        return
    if int(client.execute_command("WAIT", 1, REPLICA_WAIT_MS)) >= 1:
        return
    _alone[pool] = time.monotonic() + ALONE_S
    log.warning("no replica of Sentinel service %s confirmed a write within %d ms: writes go "
                "on unconfirmed for %d s, and a failover meanwhile could lose them",
                pool.service_name, REPLICA_WAIT_MS, ALONE_S)
