"""Refuse what the coordinator did not sign: a worker runs a cell only from an envelope whose
Ed25519 signature verifies against the coordinator's public key (workers/shared/signing.py).

Every envelope of a message is verified once, when the message arrives; the group's `cells`
are those that verified, and every other hook reads them from there.
"""

import logging
from dataclasses import replace

from jobs.spec.envelope import BadEnvelope, Envelope, decode
from workers.hooks import Hook
from workers.in_flight import Group, SignedCell
from workers.shared.clock import now
from workers.shared.messages import Signed
from workers.shared.signing import BadSignature, Verifier
from workers.shared.state import Store

log = logging.getLogger(__name__)


class SignatureCheck(Hook):
    def __init__(self, verifier: Verifier, store: Store, worker: str) -> None:
        self.verifier, self.store, self.worker = verifier, store, worker

    def before_group(self, group: Group) -> Group:
        cells = []
        for item in group.items:
            why, envelope = self._verify(group, item)
            if envelope is not None:
                cells.append(SignedCell(item, envelope))
            else:
                self._refuse(group, item, why)
        return replace(group, cells=tuple(cells))

    def _verify(self, group: Group, item: Signed) -> tuple[str, Envelope | None]:
        data = item.envelope.encode()
        try:
            self.verifier.verify(data, item.signature)
            envelope = decode(data)
        except (BadSignature, BadEnvelope) as error:
            return str(error), None
        if envelope.sweep_id != group.sweep_id:
            return (f"an envelope of sweep {envelope.sweep_id} in a message for sweep "
                    f"{group.sweep_id}"), None
        return "", envelope

    def _refuse(self, group: Group, item: Signed, why: str) -> None:
        claimed = item.claimed_cell()
        log.warning("refused a message for sweep %s, cell %s: %s", group.sweep_id, claimed, why)
        self.store.refuse({"at": now(), "worker": self.worker, "sweep_id": group.sweep_id,
                           "cell": claimed, "why": why, "task_id": group.task_id})
