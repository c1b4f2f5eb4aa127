"""Gather a sweep's artifacts into its record: DIR/<slug>.md, .json and .png."""

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from jobs.attempts import AttemptResult
from jobs.markdown import render
from jobs.plot import decode_png
from jobs.record import Record, build_record
from workers.artifacts import CorruptArtifact, LocalStore
from workers.state import Store


@dataclass(frozen=True)
class Written:
    record: Record
    markdown: Path
    json: Path
    plot: Path


def gather(store: Store, artifacts: LocalStore, sweep_id: str) -> Record:
    sweep, cells, _ = store.sweep(sweep_id)
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
    return build_record(sweep_id, sweep, cells, states, results, unreadable, created)


def write(record: Record, out: Path) -> Written:
    out.mkdir(parents=True, exist_ok=True)
    paths = Written(record, out / f"{record.slug}.md", out / f"{record.slug}.json",
                    out / f"{record.slug}.png")
    _atomic(paths.plot, decode_png(record))
    _atomic(paths.json, record.model_dump_json(indent=1).encode())
    _atomic(paths.markdown, render(record, plot_name=paths.plot.name).encode())
    return paths


def _atomic(path: Path, data: bytes) -> None:
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_bytes(data)
    os.replace(temp, path)
