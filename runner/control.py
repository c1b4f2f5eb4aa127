"""Rerun and cancel: the coordinator's say over cells already submitted.

A rerun starts a new generation of a final cell: a fresh envelope, signed here, and the cell
queued again (on the host that ran its group before, while that host is live, so a rerun
keeps same-host pairing when it can; the record flags when it could not). A cancel ends
queued cells at once and tells the worker running a cell to kill its command.
"""

from dataclasses import dataclass

from jobs.errors import UserError
from jobs.record.states import FINAL, CellState
from jobs.spec.cells import Cell
from runner.submit import group_messages, sign_all
from runner.sweep_file import read_sweep_file, stored_states
from workers.shared import cancels
from workers.shared.leases import live_workers
from workers.shared.messages import Signed, publish
from workers.shared.queues import host_queue
from workers.shared.signing import Signer
from workers.shared.state import Store
from workers.shared.stores import ArtifactStore


@dataclass(frozen=True)
class Outcome:
    done: list[str]
    skipped: dict[str, str]  # cell -> why not


def pick(cells: list[Cell], names: list[str], store: Store, sweep_id: str,
         failed: bool) -> list[Cell]:
    """The cells named (ids or unique prefixes), or with --failed every cell that did not end
    done; an unknown name is the user's to fix."""
    if failed:
        states = store.states(sweep_id)
        return [c for c in cells if states[c.id].status in FINAL - {"done", "skipped"}]
    picked = []
    for name in names:
        matches = [c for c in cells if c.id == name] or [c for c in cells
                                                          if c.id.startswith(name)]
        if len(matches) != 1:
            raise UserError(f"{name!r} matches {len(matches)} cells of sweep {sweep_id}; give "
                            "a cell id from `benchfleet status`")
        picked.append(matches[0])
    return picked


def rerun(store: Store, key: Signer, sweep_id: str, cells: list[Cell], rebuild: bool
          ) -> Outcome:
    states = store.states(sweep_id)
    _, _, data = store.sweep(sweep_id)
    ok, skipped = [], {}
    by_generation: dict[int, list[Cell]] = {}
    for cell in cells:
        by_generation.setdefault(states[cell.id].generation + 1, []).append(cell)
    signed_all = {}
    for generation, members in by_generation.items():
        signed = sign_all(key, sweep_id, generation, data["spec_hash"], members, rebuild)
        for cell in members:
            why = store.rerun(sweep_id, cell.id, generation, signed[cell.id])
            if why:
                skipped[cell.id] = why
            else:
                ok.append(cell)
                signed_all[cell.id] = signed[cell.id]
    publish(store.r, group_messages(sweep_id, ok, signed_all, _previous_hosts(store, states, ok)))
    return Outcome([c.id for c in ok], skipped)


def cancel(store: Store, sweep_id: str, cells: list[Cell]) -> Outcome:
    ok, skipped = [], {}
    running: dict[str, dict[str, int]] = {}  # worker -> the generation of each cell it runs
    for cell in cells:
        code, detail, generation = store.cancel(sweep_id, cell.id)
        if code == 0:
            skipped[cell.id] = f"it is already {detail}"
            continue
        ok.append(cell.id)
        if code == 2:
            running.setdefault(detail, {})[cell.id] = generation
    if running:
        cancels.tell(store.r, sweep_id, running)
    return Outcome(ok, skipped)


def _previous_hosts(store: Store, states: dict[str, CellState], cells: list[Cell]
                    ) -> dict[str, str]:
    """group -> the queue of the live worker that ran the group before."""
    live = live_workers(store.r)
    queues = {}
    for cell in cells:
        worker = states[cell.id].worker
        if worker and worker in live:
            queues[cell.group] = host_queue(worker, cell.backend)
    return queues



def restore(store: Store, artifacts: ArtifactStore, sweep_id: str) -> Outcome:
    """Put back a sweep Redis has lost, from the artifact store, and queue what never ran:
    every cell without an accepted attempt, in the envelope the coordinator signed at submit."""
    if sweep_id in store.sweep_ids():
        if store.unpublished(sweep_id):
            raise UserError(f"sweep {sweep_id} is in Redis, but its submit was cut short "
                            f"before queuing every cell; `benchfleet submit --resume "
                            f"{sweep_id}` queues the rest")
        raise UserError(f"sweep {sweep_id} is in Redis; `benchfleet rerun` queues its cells "
                        "again")
    stored = read_sweep_file(artifacts, sweep_id)
    if set(stored.envelopes) != {c.id for c in stored.cells}:
        raise UserError(f"{sweep_id}'s sweep.json has no signed envelopes (a sweep from an "
                        "older benchfleet); submit it again")
    states = stored_states(artifacts, sweep_id, stored.cells)
    used = {c.id: max(artifacts.attempts(sweep_id, c.id), default=0) for c in stored.cells}
    signed = {c: Signed(e, s) for c, (e, s) in stored.envelopes.items()}
    todo = [c for c in stored.cells if states[c.id].status == "queued"]
    messages = group_messages(sweep_id, todo, signed)
    store.save_sweep(sweep_id, stored.sweep, stored.cells, stored.source, stored.spec_hash,
                     signed, stored.resolved, states, {c: n for c, n in used.items() if n},
                     unpublished=[m.group for m in messages])
    store.queue_once(sweep_id, messages)  # cut short too, `submit --resume` finishes it
    # By status, not `c not in todo`: comparing cells one by one took 26 s at 2,000 cells.
    return Outcome([c.id for c in todo], {c.id: f"it is {states[c.id].status}"
                                          for c in stored.cells
                                          if states[c.id].status != "queued"})
