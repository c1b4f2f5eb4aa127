"""`benchfleet worker`: a Celery worker serving one backend's queue, one message at a time.

The solo pool runs a message's cells in the worker's own process, so while a benchmark runs
the worker does nothing else: no heartbeat, gossip or mingle, no prefetched work, and its
lease is renewed only between steps. While idle, a timer in Celery's event loop (which does
not run during a cell) ticks the lease hook: it renews the lease and re-queues the cells of
workers that died (workers/hooks/lease.py).
"""

import logging
import os
import socket
import uuid
from pathlib import Path

import redis
from celery import Celery, bootsteps

from jobs.errors import UserError
from jobs.spec.backends import backend_warning
from workers import deathwatch, descendants, orphans
from workers.app import create_app
from workers.frame_room import roomy
from workers.hooks import Chain, Hook
from workers.hooks.adaptive import Adaptive
from workers.hooks.cancel import Cancel
from workers.hooks.events import CellEvents
from workers.hooks.gpu_watch import GpuWatch
from workers.hooks.host_lease import HostLease
from workers.hooks.idle_gate import GateConfig, IdleGate
from workers.hooks.keeper import KeepMoveQuick
from workers.hooks.lease import CellLease
from workers.hooks.phase import Phases
from workers.hooks.policy import Policy
from workers.hooks.retries import Retries
from workers.hooks.route import Route
from workers.hooks.shutdown import Shutdown
from workers.hooks.signature import SignatureCheck
from workers.host_facts import facts
from workers.message_guard import guard_step
from workers.offer import Offering, offer_step
from workers.shared import processes, redis_keys
from workers.shared.catalogue import load_catalogue
from workers.shared.eviction import refuse_evicting
from workers.shared.leases import IDLE_RENEW_S, Lease, NameTaken
from workers.shared.notes import Notes
from workers.shared.queues import TASK
from workers.shared.redis_client import connect
from workers.shared.settings import Settings
from workers.shared.signing import verifier
from workers.shared.state import Store
from workers.shared.stores import open_store
from workers.staging import Staging
from workers.task import Context, run_group
from workers.workspace import Workspace

log = logging.getLogger(__name__)


def default_name() -> str:
    return socket.gethostname().split(".")[0]


def serve(settings: Settings, backend: str, name: str, loglevel: str = "INFO") -> None:
    app = create_app(settings)
    hostname = f"{name}.{backend}@{socket.gethostname()}"
    ctx = start(settings, backend, name, CellEvents(app, hostname) if settings.events else None)
    register(app, ctx)
    assert ctx.offering is not None
    queues = sorted(ctx.offering.wanted(ctx.state.r))
    ctx.offering.consuming = set(queues)
    # Task events (-E) for Flower and `celery events`: sent at cell start and end only; the
    # worker's event heartbeat runs in the event loop, which is idle only between cells.
    events = ["--task-events"] if settings.events else []
    try:
        # Celery's loop and every cell under it in one roomy frame (workers/frame_room.py)
        roomy(app.worker_main, ["worker", "--pool", "solo", "--concurrency", "1",
                                "--prefetch-multiplier", "1", "--hostname", hostname,
                                "--queues", ",".join(queues),
                                "--without-gossip", "--without-mingle", "--without-heartbeat",
                                *events, "--loglevel", loglevel])
    finally:
        ctx.staging.discard()
        ctx.lease.lease.end()
        deathwatch.stop()
        descendants.close()


def start(settings: Settings, backend: str, name: str, events: Hook | None = None) -> Context:
    """Everything a worker needs, its leftovers swept and its name leased (or refused)."""
    key = verifier(settings.verify_key)  # a worker without one fails before it connects
    if processes.available():
        # A command runs as the worker's user; with the worker not dumpable, the worker's
        # /proc/PID/environ and mem (the Redis password) are closed to it. Root reads them still.
        processes.prctl(processes.DUMPABLE, 0)
    workspace = settings.workspace
    left = orphans.configure(workspace / "procs" / f"{name}.pgids")
    if left:
        log.warning("killed %d process groups a previous worker %s left behind", len(left), name)
    how, ended = descendants.configure(workspace / "procs" / name)
    if ended:
        log.warning("killed %d processes a previous worker %s left in its %s", ended, name, how)
    if how == "subreaper":
        log.warning("no writable cgroup v2 here: worker %s ends what its commands leave as "
                    "their subreaper; if the worker is SIGKILLed, only its supervisor ends a "
                    "daemon its command left (docs/reliability.md)", name)
    client = connect(settings.redis_url, decode_responses=True, socket_timeout=30,
                     socket_connect_timeout=10)
    refuse_evicting(client)  # an evicting Redis would lose sweeps and queues silently
    store = Store(client)
    host = settings.host or socket.gethostname()
    lease = Lease(client, name, uuid.uuid4().hex)
    offering = Offering(name, backend, host, settings.tags, settings.models_dir)
    catalogue = load_catalogue(settings.catalogue)
    if (unbuilt := backend_warning(backend, catalogue)) is not None:
        log.warning("worker %s: %s", name, unbuilt)
    if not settings.allowed_repos:
        log.warning("BENCHFLEET_ALLOWED_REPOS is empty: worker %s builds no repository; every "
                    "cell it takes fails until the list names the targets", name)
    takeover = _predecessor_is_dead(client, name, host)
    try:  # refused now if the name is another live worker's; taken once ready (_idle_step)
        lease.check_free(takeover)
    except NameTaken as taken:
        raise UserError(str(taken)) from None
    deathwatch.start(descendants.cgroup())  # once the name is this worker's
    lease.fields = {"backend": backend, "host": host, "pid": str(os.getpid()),
                    "facts": facts().model_dump_json(), **offering.fields()}
    artifacts = open_store(settings.artifacts, settings)
    gate = GateConfig(settings.idle_load1, settings.idle_max_wait_s, settings.idle_gap_s,
                      settings.idle_interval_s)
    slack = gate.max_wait_s + settings.lease_margin_s
    cell_lease = CellLease(store, lease, artifacts, slack, settings.setup_timeout_s,
                           settings.max_attempts, settings.lost_after_s)
    cell_lease.takeover = takeover
    # Shutdown first: once the worker is stopping, no other hook sees another cell. The idle
    # gate waits outside the host lease and reads the host once more inside it.
    notes = Notes(client, name, lease.instance)
    idle = IdleGate(gate, notes)
    hooks = Chain([Shutdown(store, name), SignatureCheck(key, store, name),
                   Route(offering, store), Adaptive(store, artifacts),
                   Cancel(client, settings.redis_url, name), Retries(), cell_lease,
                   Policy(settings.allowed_repos, offering), idle,
                   HostLease(settings.host_lock, name, slack, cell_lease.cover),
                   idle.under_lease, Phases(notes),
                   GpuWatch(settings.gpu_lock_clocks, settings.gpu_settle_s),
                   *([events] if events else []), KeepMoveQuick()])
    staging = Staging(artifacts, name)
    staging.prepare()  # the first cell's folder, as every later one's (workers/staging.py)
    return Context(name=name, backend=backend, models_dir=settings.models_dir,
                   catalogue=catalogue,
                   workspace=Workspace(workspace, settings.setup_timeout_s),
                   artifacts=artifacts, staging=staging, state=store,
                   lease=cell_lease, hooks=hooks,
                   offering=offering)


def register(app: Celery, ctx: Context) -> None:
    @app.task(name=TASK, bind=True)
    def run_group_task(self, sweep_id: str, items: list[list[str]]) -> str:  # type: ignore[no-untyped-def]
        return run_group(ctx, sweep_id, self.request.id, items)

    app.steps["worker"].add(_idle_step(ctx))
    app.steps["worker"].add(_shutdown_step(ctx))
    app.steps["consumer"].add(guard_step(ctx.name, ctx.state))  # junk is refused, not fatal
    if ctx.offering is not None:
        app.steps["worker"].add(offer_step(ctx.offering, ctx.lease.lease, ctx.state.r))


def _idle_step(ctx: Context) -> type[bootsteps.StartStopStep]:
    class IdleLease(bootsteps.StartStopStep):
        """The worker's lease: taken when ready, then the lease hook's tick between cells
        (renew, and queue again what dead workers held)."""

        requires = {"celery.worker.components:Timer"}

        def start(self, worker: object) -> None:
            # The lease is taken here, once Celery is up and just before the timer renews it:
            # a slow start (many workers at once) must not expire it before its first tick.
            ctx.lease.register()
            self.tref = worker.timer.call_repeatedly(IDLE_RENEW_S, ctx.lease.between_cells)  # type: ignore[attr-defined]

        def stop(self, worker: object) -> None:
            self.tref.cancel()

    return IdleLease


def _shutdown_step(ctx: Context) -> type[bootsteps.StartStopStep]:
    shutdown = next(h for h in ctx.hooks.hooks if isinstance(h, Shutdown))

    class CellShutdown(bootsteps.StartStopStep):
        """Ctrl-C by the cell (workers/hooks/shutdown.py), in place of Celery's handlers,
        which it installed just before its steps start."""

        def start(self, worker: object) -> None:
            shutdown.install()

    return CellShutdown


def _predecessor_is_dead(client: redis.Redis, name: str, host: str) -> bool:
    """A worker restarted on its own host may take its name over at once when the process
    that held it is gone; anywhere else, the name waits for its lease to expire."""
    old = client.hgetall(redis_keys.worker(name))
    if old.get("host") != host or not old.get("pid", "").isdigit():
        return False
    return not _alive_worker(int(old["pid"]))


def _alive_worker(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if pid == os.getpid():
        return False  # the number was reused by this process: the old one is gone
    try:
        return b"worker" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # alive, and no /proc to say what it is (macOS): assume it is a worker
