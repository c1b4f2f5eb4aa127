"""The signed envelope a cell travels in: (protocol, sweep id, generation, spec hash, cell).

The coordinator signs one envelope per cell and generation; anyone may re-publish its exact
bytes (a reaper re-queuing a lost cell), and a worker runs only what verifies against the
coordinator's public key. The bytes are canonical JSON, so signer and verifier agree on them.
"""

import hashlib
import json

from pydantic import ValidationError, model_validator

from jobs.spec.cells import Cell, dumped_cell
from jobs.spec.confine import commit_problem, name_problem
from jobs.spec.sweep import Sweep
from jobs.strict import Strict

PROTOCOL = 1  # the task-message and attempt format this code speaks


class Envelope(Strict):
    protocol: int
    sweep_id: str
    generation: int
    spec_hash: str
    cell: Cell
    # Set by `rerun --rebuild`: build the commit again even where a good build is kept.
    rebuild: bool = False

    @model_validator(mode="after")
    def _confined(self) -> "Envelope":
        # The worker makes paths of these (artifacts, MODELS_DIR/<model>) and hands the commit
        # to git: each must be one plain component, whoever signed it.
        cell = self.cell
        for problem in (name_problem(self.sweep_id, "sweep id"), name_problem(cell.id, "cell id"),
                        name_problem(cell.model, "model name"), commit_problem(cell.commit)):
            if problem:
                raise ValueError(problem)
        return self


class BadEnvelope(Exception):
    """Bytes that are not an envelope this code speaks; the message says why."""


def spec_hash(sweep: Sweep) -> str:
    return hashlib.sha256(canonical(sweep.model_dump(mode="json"))).hexdigest()


def canonical(data: object) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def encode(sweep_id: str, generation: int, spec: str, cell: Cell, rebuild: bool = False,
           dumped: dict[str, object] | None = None) -> bytes:
    """The envelope's bytes; `dumped`: the cell already as JSON data (submit dumps each cell
    once for the envelope, Redis and the sweep file)."""
    return canonical({"protocol": PROTOCOL, "sweep_id": sweep_id, "generation": generation,
                      "spec_hash": spec,
                      "cell": dumped_cell(cell) if dumped is None else dumped,
                      "rebuild": rebuild})


def decode(data: bytes) -> Envelope:
    """The envelope in `data`, once its signature has been verified."""
    try:
        raw = json.loads(data)
    except ValueError as error:
        raise BadEnvelope(f"not JSON ({error})") from None
    if not isinstance(raw, dict):
        raise BadEnvelope("not a JSON object")
    if raw.get("protocol") != PROTOCOL:
        raise BadEnvelope(f"protocol version {raw.get('protocol')!r}; this worker speaks "
                          f"{PROTOCOL}")
    try:
        return Envelope.model_validate(raw)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        message = str(first["msg"]).removeprefix("Value error, ")
        raise BadEnvelope(f"{where}: {message}" if where else message) from None
