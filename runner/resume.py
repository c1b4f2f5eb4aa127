"""`benchfleet submit --resume`: finish a submit cut short (killed, a dropped link) by queuing
the groups it had not queued yet, each once, in the envelopes it signed."""

from dataclasses import dataclass

from jobs.errors import UserError
from runner.control import restore
from runner.submit import group_messages
from workers.shared.messages import GroupMessage
from workers.shared.state import Store
from workers.shared.stores import ArtifactStore


@dataclass(frozen=True)
class Resumed:
    queued: int  # cells queued now
    already: int  # cells whose message was queued before, or that ended meanwhile
    restored: bool  # cut before Redis had the sweep: put back from its sweep.json


def resume(store: Store, artifacts: ArtifactStore, sweep_id: str) -> Resumed:
    if sweep_id not in store.sweep_ids():
        # Cut between sweep.json and Redis: the store holds all the submit had made.
        outcome = restore(store, artifacts, sweep_id)
        return Resumed(len(outcome.done), len(outcome.skipped), restored=True)
    groups = store.unpublished(sweep_id)
    _, cells, _ = store.sweep(sweep_id)
    states = store.states(sweep_id)
    # Only queued cells: one cancelled meanwhile, or taken from another message, is left be.
    todo = [c for c in cells if c.group in groups and states[c.id].status == "queued"]
    ids = [c.id for c in todo]
    envelopes = store.envelopes(sweep_id, ids)
    if len(envelopes) != len(ids):
        raise UserError(f"sweep {sweep_id} has cells without their signed envelope in Redis; "
                        f"`benchfleet cancel {sweep_id}` and submit it again")
    messages = group_messages(sweep_id, todo, dict(zip(ids, envelopes, strict=True)))
    ended = groups - {m.group for m in messages}
    messages += [GroupMessage(sweep_id, "", [], [], group=g) for g in sorted(ended)]
    queued = sum(len(m.cells) for m in store.queue_once(sweep_id, messages))
    return Resumed(queued, len(cells) - queued, restored=False)
