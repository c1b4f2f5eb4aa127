"""`benchfleet demo`: private Redis, two local workers, the stand-in target, a real record."""

import secrets
import signal
from datetime import datetime
from pathlib import Path
from types import FrameType

from rich.console import Console

from jobs.errors import UserError
from runner.demo.local_fleet import LocalFleet
from runner.demo.redis_server import RedisServer
from runner.demo.target_repo import lay_out_demo
from runner.records import Written, gather, write
from runner.status import summary, table
from runner.submit import submit
from runner.watch import watch
from workers.shared.settings import Settings
from workers.shared.signing import generate
from workers.shared.state import Store
from workers.shared.stores import open_store

# Both demo "backends" share this machine: the host lease runs one command at a time, and the
# idle gate waits at most this long before a group (the record says when the host was busy).
DEMO_IDLE_WAIT_S = 15.0
BACKENDS = ("cuda", "metal")


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def demo_settings(work: Path, redis_url: str, target: Path) -> Settings:
    """The demo's own Redis, keys, store and workspace under `work`. Not its own host lease:
    the default one is this host's, so two demos at once (or a demo beside a fleet) take turns
    measuring instead of overlapping."""
    keys = work / "keys"
    return Settings(redis_url=redis_url, artifacts=work / "artifacts",
                    workspace=work / "workspace", models_dir=work / "models",
                    signing_key=keys / "coordinator.pem", verify_key=keys / "coordinator.pub",
                    allowed_repos=[str(target)], idle_max_wait_s=DEMO_IDLE_WAIT_S,
                    idle_interval_s=2.0)


def run_demo(root: Path, console: Console) -> Written:
    RedisServer.binary()  # say what to install before making anything
    # Ctrl-C and SIGTERM unwind through the `finally`s below, which stop every process the demo
    # started; set explicitly because a shell without job control starts us with SIGINT ignored.
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    # Two demos started in the same second get their own directories.
    work = root / f"{datetime.now():run-%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
    try:
        work.mkdir(parents=True)
    except OSError as error:
        raise UserError(f"cannot create the demo directory {work} ({error.strerror}); pass "
                        "--dir with a writable directory") from None
    console.print(f"demo directory: {work}", soft_wrap=True)
    demo = lay_out_demo(work / "target", work / "models", work / "demo-sweep.yaml", BACKENDS)
    console.print(f"stand-in target: {demo.target} (commits "
                  f"{', '.join(s[:10] for s in demo.shas)})", soft_wrap=True)
    with RedisServer(work / "redis") as server:
        generate(work / "keys" / "coordinator.pem", work / "keys" / "coordinator.pub")
        settings = demo_settings(work, server.url, demo.target)
        console.print(f"private redis-server on {server.url}")
        fleet = LocalFleet(settings, work / "logs")
        try:
            for backend in BACKENDS:
                fleet.start(backend, f"demo-{backend}")
            sweep_id, cells = submit(demo.sweep, settings)
            console.print(f"submitted sweep {sweep_id}: {len(cells)} cells")
            store = Store.connect(settings.redis_url)
            watch(store, sweep_id, cells, console)
            states = store.states(sweep_id)
            console.print(table(cells, states, f"{sweep_id}: {summary(states)}"))
            record = gather(store, open_store(settings.artifacts, settings), sweep_id)
            return write(record, work / "record")
        finally:
            fleet.stop()
