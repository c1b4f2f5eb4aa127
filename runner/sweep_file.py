"""A sweep's file beside its artifacts (`<sweep>/sweep.json`): its spec, cells and signed
envelopes as submitted, from which a record is rebuilt and a lost Redis restored. Apart from
records.py, whose record models and views `submit` does not need at start-up."""

from pydantic import ValidationError

from jobs.errors import UserError
from jobs.record.states import FINAL, CellState
from jobs.spec.cells import Cell
from jobs.spec.sweep import Sweep
from jobs.strict import Strict
from workers.shared.stores import ArtifactStore, get_json, put_json
from workers.shared.sweep_json import json_bytes

SWEEP_FILE = "sweep.json"  # beside a sweep's artifacts: its spec and cells, as submitted
SWEEP_FILE_PROTOCOL = 1


class SweepFile(Strict):
    protocol: int
    sweep_id: str
    created: str
    source: str
    sweep: Sweep
    cells: list[Cell]
    # The commit names the sweep asked for and the shas submit resolved them to, the spec's
    # hash, and each cell's signed envelope (cell -> [envelope, signature]): with these the
    # coordinator can queue again what never ran after Redis lost everything.
    resolved: dict[str, str] = {}
    spec_hash: str = ""
    envelopes: dict[str, list[str]] = {}


def write_sweep_file(store: ArtifactStore, content: SweepFile,
                     dumped: list[dict[str, object]] | None = None) -> None:
    """The sweep's spec and cells beside its artifacts, so a record can be rebuilt offline;
    `dumped`: its cells already as JSON data (then `content.cells` is not read)."""
    data = content.model_dump(mode="json", exclude={"cells"} if dumped is not None else None)
    put_json(store, f"{content.sweep_id}/{SWEEP_FILE}",
             json_bytes(data if dumped is None else {**data, "cells": dumped}))


def read_sweep_file(store: ArtifactStore, sweep_id: str, envelopes: bool = True) -> SweepFile:
    """`envelopes`: keep the cells' signed envelopes (only a restore queues them again; a
    record does not need their 0.8 KB a cell)."""
    where = f"{sweep_id}/{SWEEP_FILE}"
    try:
        data = store.get_bytes(where)
    except OSError as error:
        raise UserError(f"cannot read {where} in the artifact store ({error})") from None
    if data is None:
        raise UserError(f"the artifact store has no {where}: is it the store that sweep "
                        f"{sweep_id} wrote to?")
    try:  # from the bytes: no tree of dicts first, and short strings read once (pydantic's cache)
        # less a BOM a hand edit may add, which json.loads took
        content = SweepFile.model_validate_json(data.removeprefix(b"\xef\xbb\xbf"))
    except ValidationError as error:
        raise UserError(f"{where} is not a sweep file: {error.errors()[0]['msg']}") from None
    if not envelopes:
        content = content.model_copy(update={"envelopes": {}})
    if content.protocol != SWEEP_FILE_PROTOCOL or content.sweep_id != sweep_id:
        raise UserError(f"{where} is for sweep {content.sweep_id} (protocol {content.protocol}), "
                        f"not sweep {sweep_id} (protocol {SWEEP_FILE_PROTOCOL})")
    return content


def stored_states(artifacts: ArtifactStore, sweep_id: str, cells: list[Cell]
                  ) -> dict[str, CellState]:
    """Cell states as the artifact store knows them: accepted attempts, else not measured."""
    states = {}
    for cell in cells:
        marker = get_json(artifacts, f"{sweep_id}/{cell.id}/accepted.json")
        if isinstance(marker, dict) and marker.get("status") in FINAL:
            states[cell.id] = CellState(status=marker["status"], attempt=marker["attempt"])
        else:
            states[cell.id] = CellState(status="queued", reason="no accepted attempt in the "
                                        "artifact store")
    return states
