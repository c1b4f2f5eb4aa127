"""Gather a sweep's artifacts into its record, check it, and write DIR/<slug>.md, .json, .png."""

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from jobs.attempts import AttemptResult
from jobs.check import check_record
from jobs.errors import UserError
from jobs.markdown import render
from jobs.record import Check, Record, build_record
from workers.fleet.artifacts import ArtifactStore, CorruptArtifact
from workers.fleet.state import Store


@dataclass(frozen=True)
class Written:
    record: Record
    markdown: Path
    json: Path
    plots: list[Path]


def gather(store: Store, artifacts: ArtifactStore, sweep_id: str) -> Record:
    """The sweep's record, with the checker's verdict on it inside."""
    sweep, cells, data = store.sweep(sweep_id)
    states = store.states(sweep_id)
    results: dict[str, AttemptResult] = {}
    unreadable: dict[str, str] = {}
    for cell in cells:
        attempts = artifacts.attempts(sweep_id, cell.id)
        state = states.get(cell.id)
        attempt = state.attempt if state and state.attempt in attempts else max(attempts, default=0)
        if not attempt:
            continue
        try:
            files = artifacts.read(sweep_id, cell.id, attempt)
            results[cell.id] = AttemptResult.model_validate_json(files["result.json"].read_text())
        except (CorruptArtifact, KeyError, ValidationError) as error:
            unreadable[cell.id] = str(error).splitlines()[0]
    created = datetime.now(UTC).isoformat(timespec="seconds")
    record = build_record(sweep_id, sweep, cells, states, results, unreadable, created,
                          json.loads(data.get("resolved", "{}")))
    problems = check_record(record)
    return record.model_copy(update={"check": Check(ok=not problems, problems=problems)})


def write(record: Record, out: Path) -> Written:
    # Imported here, not at the top: the worker process imports the CLI, and matplotlib
    # brings numpy, whose BLAS starts a thread pool in whatever process imports it.
    from jobs.plot import decode_png, phases_png

    if out.exists() and not out.is_dir():
        raise UserError(f"{out} is a file; give -o a directory for the record")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"cannot create {out} ({error.strerror}); give -o a writable "
                        "directory") from None
    plots = {"decode tok/s per arm": (out / f"{record.sweep_id}.png", decode_png(record))}
    phases = phases_png(record)
    if phases:
        plots["per-token kernel time by phase"] = (out / f"{record.sweep_id}-phases.png", phases)
    for path, data in plots.values():
        _atomic(path, data)
    json_path, md_path = out / f"{record.sweep_id}.json", out / f"{record.sweep_id}.md"
    _atomic(json_path, record.model_dump_json(indent=1).encode())
    _atomic(md_path, render(record, {k: p.name for k, (p, _) in plots.items()}).encode())
    return Written(record, md_path, json_path, [p for p, _ in plots.values()])


def load(path: Path) -> Record:
    try:
        return Record.model_validate_json(path.read_text())
    except OSError as error:
        raise UserError(f"cannot read record {path} ({error.strerror})") from None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise UserError(f"{path} is not a benchfleet record: {where}: {first['msg']} "
                        f"({error.error_count()} problems)") from None


def _atomic(path: Path, data: bytes) -> None:
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_bytes(data)
    os.replace(temp, path)
