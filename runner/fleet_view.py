"""The fleet as `benchfleet hosts` shows it: each live worker, what its host offers, what it
runs, and when it was last seen. Everything comes from the workers' lease records."""

import json
from datetime import UTC, datetime

from pydantic import ValidationError
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from jobs.record.attempts import Phase
from jobs.record.capabilities import Capabilities
from jobs.strict import Strict
from jobs.trends.fingerprint import host_testbed
from workers.shared.clock import epoch
from workers.shared.leases import live_expiries, live_workers
from workers.shared.state import Store


class WorkerView(Strict):
    name: str
    host: str
    backend: str
    pid: str
    tags: list[str]
    capabilities: Capabilities | None
    sweep_id: str | None  # the message it holds, if any
    holding: list[str]
    running: str | None  # the cell of that message it runs now
    phase: Phase | None  # what it does with that cell (workers/shared/notes.py)
    reason: str | None  # why that cell waits, if it does (the idle gate's wait)
    seen: str
    seen_s_ago: float | None
    lease_s_left: float


def gather(store: Store) -> list[WorkerView]:
    now = epoch()
    seconds, micros = store.r.time()
    server_now = seconds + micros / 1e6  # leases run on Redis's clock, whatever this one says
    expiry = live_expiries(store.r)
    views = []
    for name, fields in sorted(live_workers(store.r).items()):
        holding = _json(fields.get("holding"), {})
        sweep_id, cells = holding.get("sweep_id"), list(holding.get("cells", []))
        running, state = None, None
        if sweep_id and cells:
            states = store.states_of(sweep_id, cells)
            running, state = next(((c, s) for c, s in states.items()
                                   if s.status == "running" and s.worker == name), (None, None))
        views.append(WorkerView(
            name=name, host=fields.get("host", ""), backend=fields.get("backend", ""),
            pid=fields.get("pid", ""), tags=list(_json(fields.get("tags"), [])),
            capabilities=_capabilities(fields.get("probe")), sweep_id=sweep_id,
            holding=cells, running=running, phase=state.phase if state else None,
            reason=state.reason if state else None, seen=fields.get("seen", ""),
            seen_s_ago=_ago(fields.get("seen", ""), now),
            lease_s_left=round(expiry.get(name, server_now) - server_now, 1)))
    return views


def table(views: list[WorkerView]) -> Table:
    t = Table(title=_title(views))
    for column in ("worker", "host", "backend", "machine", "toolchains", "checkpoints", "tags",
                   "running", "seen"):
        t.add_column(column, overflow="fold")
    for v in views:
        t.add_row(v.name, v.host, v.backend, *_machine(v.capabilities), _tags(v), _running(v),
                  _seen(v))
    return t


def blocks(views: list[WorkerView]) -> Group:
    """The same facts for a narrow terminal: a block per worker, a labelled line per fact,
    where nine columns would fold every word into a letter or two per line."""
    parts: list[RenderableType] = [Text(_title(views), style="bold")]
    for v in views:
        facts = Table.grid(padding=(0, 1))
        facts.add_column(no_wrap=True)
        facts.add_column(overflow="fold")
        machine, tools, checkpoints = _machine(v.capabilities)
        for label, value in (("running", _running(v)), ("seen", _seen(v)), ("machine", machine),
                             ("toolchains", tools), ("checkpoints", checkpoints),
                             ("tags", _tags(v))):
            facts.add_row(f"{label}:", value)
        parts += [Text(f"{v.name}: {v.backend} on {v.host}", style="bold"),
                  Padding(facts, (0, 0, 0, 2))]
    return Group(*parts)


def _title(views: list[WorkerView]) -> str:
    return f"{len(views)} live worker{'s' if len(views) != 1 else ''}"


def _tags(v: WorkerView) -> str:
    return ", ".join(t for t in v.tags if not t.startswith("model:"))  # shown as checkpoints


def _machine(caps: Capabilities | None) -> tuple[str, str, str]:
    """(machine, toolchains, checkpoints) as the table shows them."""
    if caps is None:
        return "(no probe yet)", "", ""
    h = caps.host
    machine = (f"{h.chip}, {h.memory_gb:.0f} GB, {h.os} {h.arch}, Python {h.python}; found "
               f"{'+'.join(caps.backends)}; testbed {host_testbed(h).id}")
    tools = ", ".join(f"{k} {_short(version)}" for k, version in caps.toolchains.items())
    return machine, tools or "none", ", ".join(caps.checkpoints) or "none"


def _running(v: WorkerView) -> str:
    if not v.sweep_id:
        return "idle"
    now = f"{v.running} ({len(v.holding)} cells held)" if v.running else \
        f"{len(v.holding)} cells held, between cells"
    doing = f"; {v.phase}" if v.running and v.phase else ""
    return f"{v.sweep_id}: {now}{doing}" + (f": {v.reason}" if v.running and v.reason else "")


def _seen(v: WorkerView) -> str:
    ago = "?" if v.seen_s_ago is None else f"{v.seen_s_ago:.0f} s ago"
    return f"{ago} (lease {v.lease_s_left:.0f} s left)"


def _short(version: str) -> str:
    """`cargo 1.79.0 (...)` -> `1.79.0`; the first word with a digit."""
    return next((w.strip(",") for w in version.split() if any(c.isdigit() for c in w)), version)


def _capabilities(raw: str | None) -> Capabilities | None:
    try:
        return Capabilities.model_validate_json(raw) if raw else None
    except ValidationError:
        return None


def _json(raw: str | None, default: object) -> dict | list:  # type: ignore[type-arg]
    try:
        value = json.loads(raw) if raw else default
    except ValueError:
        return default  # type: ignore[return-value]
    return value if isinstance(value, dict | list) else default  # type: ignore[return-value]


def _ago(iso: str, now: float) -> float | None:
    try:
        return round(now - datetime.fromisoformat(iso).astimezone(UTC).timestamp(), 1)
    except ValueError:
        return None
