"""Refuse what the coordinator did not sign: a worker runs a cell only from an envelope whose
Ed25519 signature verifies against the coordinator's public key (workers/shared/signing.py)."""

import logging

from jobs.spec.envelope import BadEnvelope, decode
from workers.hooks import Hook, Refused
from workers.in_flight import Job
from workers.shared.clock import now
from workers.shared.signing import BadSignature, Verifier
from workers.shared.state import Store

log = logging.getLogger(__name__)


class SignatureCheck(Hook):
    def __init__(self, verifier: Verifier, store: Store, worker: str) -> None:
        self.verifier, self.store, self.worker = verifier, store, worker

    def before_cell(self, job: Job) -> None:
        data = job.signed.envelope.encode()
        try:
            self.verifier.verify(data, job.signed.signature)
            envelope = decode(data)
        except (BadSignature, BadEnvelope) as error:
            self._refuse(job, str(error))
        if envelope.sweep_id != job.sweep_id:
            self._refuse(job, f"an envelope of sweep {envelope.sweep_id} in a message for "
                         f"sweep {job.sweep_id}")
        job.envelope = envelope

    def _refuse(self, job: Job, why: str) -> None:
        claimed = job.signed.claimed_cell()
        log.warning("refused a message for sweep %s, cell %s: %s", job.sweep_id, claimed, why)
        self.store.refuse({"at": now(), "worker": self.worker, "sweep_id": job.sweep_id,
                           "cell": claimed, "why": why, "task_id": job.group.task_id})
        raise Refused(why)
