"""Gather a sweep's artifacts into its record, check it, and write it out; check a record
against the artifacts it was made from.

`write` lays the record out as mlxcel's docs/benchmark_results pages are: `<out>/<id>.md`,
`.json` and plots beside it, the raw data under `<out>/data/<id>/`.
"""

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from pydantic import ValidationError

from jobs.errors import UserError
from jobs.record.attempts import AttemptResult, CellState
from jobs.record.check import check_record, differences
from jobs.record.digest import Digests
from jobs.record.model import SCHEMA, Check, Record, build_record, record_from
from jobs.record.parts import Evidence
from jobs.record.rawdata import parts as raw_parts
from jobs.spec.cells import Cell
from jobs.spec.sweep import Sweep
from jobs.views.markdown import pieces as markdown_pieces
from jobs.views.record_json import json_pieces
from jobs.views.shown import Shown, shown
from runner.collector import give_back_freed
from runner.forked import Forked, Primed
from runner.read_ahead import Got, read_results
from runner.reparse import raw_problems
from runner.sweep_file import SWEEP_FILE as SWEEP_FILE  # re-exported, as before
from runner.sweep_file import SWEEP_FILE_PROTOCOL as SWEEP_FILE_PROTOCOL
from runner.sweep_file import SweepFile as SweepFile
from runner.sweep_file import read_sweep_file as read_sweep_file
from runner.sweep_file import stored_states as stored_states
from runner.sweep_file import write_sweep_file as write_sweep_file
from workers.shared.state import Store
from workers.shared.stores import (
    ArtifactStore,
    CorruptArtifact,
    open_store,
)


@dataclass(frozen=True)
class Written:
    record: Record
    markdown: Path
    json: Path
    plots: list[Path]
    data: Path


@dataclass
class _Read:
    """The attempts read for one record, and what could not be read."""

    results: dict[str, AttemptResult]
    earlier: list[AttemptResult]
    evidence: list[Evidence]
    unreadable: dict[str, str]


# The child that draws a record's figures: given what each shows (and whether to draw them
# side by side), it answers each's PNG.
Drawer = Primed[tuple[dict[str, Shown], bool], dict[str, bytes | None]]
# Up to this many cells a record waits for its figures, so they are drawn side by side, each
# but the last in a child of its own; a larger record's own work after they are given (its
# check and its writing: 11 s at 100,000 cells, against some 2 s for two figures) outlasts
# them drawn one after the other, by the one child, without the other's pages at the
# record's peak.
SIDE_BY_SIDE_UP_TO = 20_000


def gather(store: Store, artifacts: ArtifactStore, sweep_id: str,
           drawer: Drawer | None = None) -> Record:
    """The sweep's record from Redis's states and the store's attempts, checked; `drawer`
    (`figure_drawer`) is given what the figures show as soon as the record is built, so that
    they are drawn while it is checked."""
    sweep, cells, data = store.sweep(sweep_id)
    give_back_freed()  # the cells' JSON, parsed and dropped
    resolved = json.loads(data.get("resolved", "{}"))
    # A sweep older than the file; only asked whether it is there: at 100,000 cells the
    # file is 150 MB, and parsing it took 3 s and 600 MB.
    if not artifacts.exists(f"{sweep_id}/{SWEEP_FILE}"):
        write_sweep_file(artifacts, SweepFile(
            protocol=SWEEP_FILE_PROTOCOL, sweep_id=sweep_id, created=data.get("created", ""),
            source=data.get("source", ""), sweep=sweep, cells=cells, resolved=resolved))
    return _assemble(artifacts, sweep_id, sweep, cells, store.states(sweep_id), resolved,
                     drawer)


def gather_stored(artifacts: ArtifactStore, sweep_id: str, drawer: Drawer | None = None
                  ) -> Record:
    """The sweep's record from the artifact store alone (Redis lost, or never reachable):
    its spec from sweep.json, each cell's outcome from the attempt the store marks accepted."""
    stored = read_sweep_file(artifacts, sweep_id, envelopes=False)
    give_back_freed()  # the sweep file's JSON, parsed and dropped
    return _assemble(artifacts, sweep_id, stored.sweep, stored.cells,
                     stored_states(artifacts, sweep_id, stored.cells), stored.resolved, drawer)


def _assemble(artifacts: ArtifactStore, sweep_id: str, sweep: Sweep, cells: list[Cell],
              states: dict[str, CellState], resolved: dict[str, str],
              drawer: Drawer | None) -> Record:
    chosen, others = {}, []
    for cell in cells:  # every attempt listed once: the chosen one, and the others
        attempts = artifacts.attempts(sweep_id, cell.id)
        state = states.get(cell.id)
        chosen[cell.id] = (state.attempt if state and state.attempt in attempts
                           else max(attempts, default=0))
        others += [(cell.id, a) for a in attempts if a != chosen[cell.id]]
    digests = Digests(sweep, cells, states)  # each attempt kept as the record needs it
    read = _read(artifacts, sweep_id, cells, chosen, others, digests.take)
    created = datetime.now(UTC).isoformat(timespec="seconds")
    flagged: dict[tuple[str, int], list[str]] = {}  # computed once, for the checker too
    record = record_from(sweep_id, sweep, cells, states, digests.items, read.unreadable,
                         created, resolved, flagged)
    record = record.model_copy(update={"evidence": read.evidence})
    if drawer is not None:  # the check changes no figure
        drawer.give(drawn(record))
    problems = check_record(record, flagged)
    return record.model_copy(update={"check": Check(ok=not problems, problems=problems)})


def check_artifacts(record: Record, where: Path | str) -> list[str]:
    """Rebuild the record from the artifact store and say where the two differ.

    Every attempt the record read is read again and its sha256 compared; every figure is then
    recomputed from those attempts and the sweep file stored beside them.
    """
    store = open_store(where)
    try:
        stored = read_sweep_file(store, record.sweep_id, envelopes=False)
    except UserError as error:
        return [str(error)]
    problems = _unread_attempts(store, record, stored.cells)
    chosen = {e.cell_id: e.attempt for e in record.evidence if e.used}
    read = _read(store, record.sweep_id, stored.cells, chosen,
                 [(e.cell_id, e.attempt) for e in record.evidence if not e.used])
    stated = {(e.cell_id, e.attempt): e for e in record.evidence}
    for e in read.evidence:
        if stated.get((e.cell_id, e.attempt)) != e:
            problems.append(f"{e.cell_id} attempt {e.attempt}: its result.json or manifest is "
                            "not the one the record read (sha256 differs)")
    problems += [f"{cell}: {why}" for cell, why in read.unreadable.items()
                 if (cell, chosen.get(cell)) in stated]
    states = recorded_states(record, read.results)
    rebuilt = build_record(record.sweep_id, stored.sweep, stored.cells, states, read.results,
                           read.unreadable, record.created, read.earlier, stored.resolved)
    rebuilt = rebuilt.model_copy(update={"evidence": read.evidence})
    return problems + raw_problems(store, record, read.results) + differences(record, rebuilt)


def write(record: Record, out: Path, drawer: Drawer | None = None) -> Written:
    """Write the record to `out`; its figures drawn by `drawer` (started by `figure_drawer`
    before the record was gathered, and given this record's figures there, or here), else by
    one started here."""
    if out.exists() and not out.is_dir():
        raise UserError(f"{out} is a file; give -o a directory for the record")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"cannot create {out} ({error.strerror}); give -o a writable "
                        "directory") from None
    # The figures are drawn in children while this process writes the data and the JSON; the
    # Markdown, which links the figures that were made, comes last. Every file is written
    # beside its place and all are moved in once all are made: a figure, the data or the
    # JSON that fails leaves the record before it whole.
    data = out / "data" / record.sweep_id
    json_path, md_path = out / f"{record.sweep_id}.json", out / f"{record.sweep_id}.md"
    with _Staged() as staged, contextlib.ExitStack() as children:
        if drawer is None:
            drawer = children.enter_context(figure_drawer())
        if not drawer.given:
            drawer.give(drawn(record))
        data.mkdir(parents=True, exist_ok=True)
        for name, pieces in raw_parts(record).items():
            staged.write(data / name, pieces)
        staged.write(json_path, json_pieces(record))
        plots = {}
        for title, png in drawer.result().items():
            if png:
                plots[title] = out / _FIGURES[title][0].format(record.sweep_id)
                staged.write(plots[title], png)
        links = {title: path.name for title, path in plots.items()}
        staged.write(md_path, markdown_pieces(record, links, data.relative_to(out).as_posix()))
        staged.commit()
    return Written(record, md_path, json_path, list(plots.values()), data)


# The record's figures: their titles (as the Markdown links them), file names and what each is.
_FIGURES = {"decode tok/s per arm": ("{}.png", "decode"),
            "prefill tok/s per arm": ("{}-prefill.png", "prefill"),
            "per-token time by phase": ("{}-phases.png", "phases")}


def figures(record: Record) -> dict[str, Shown]:
    """What each of the record's figures shows, by title; those with nothing to show left
    out."""
    return {title: what for title, (_, figure) in _FIGURES.items()
            if (what := shown(record, figure))}


def drawn(record: Record) -> tuple[dict[str, Shown], bool]:
    """What the figures' child is given: the figures, and whether to draw them side by side."""
    return figures(record), record.cells_expected <= SIDE_BY_SIDE_UP_TO


def figure_drawer() -> Drawer:
    """Start the child that will draw the figures: it imports matplotlib now, beside the
    reading of the attempts, where a child forked once the record is built imported it then
    and once per figure (0.25 s to 0.4 s each, against a record of about a second at 1,000
    cells; docs/benchmarks/overhead-profiles.md)."""
    return Primed(_import_plots, _draw)


def _import_plots() -> None:
    # Imported only in the drawing child, where it forks: the worker process imports the CLI,
    # and matplotlib brings numpy, whose BLAS starts a thread pool in whatever process imports
    # it; and a record's own process need not import matplotlib at all (runner/forked.py).
    import jobs.views.plots  # noqa: F401


def _draw(given: tuple[dict[str, Shown], bool]) -> dict[str, bytes | None]:
    """In the drawing child: side by side, each figure but the last in a child of its own,
    forked once the import is paid, the last one here, all at once; else one after another,
    here."""
    picked, side_by_side = given
    if not side_by_side:
        return {title: _figure(what) for title, what in picked.items()}
    titles = list(picked)
    with contextlib.ExitStack() as children:
        others = {t: children.enter_context(Forked(partial(_figure, picked[t])))
                  for t in titles[:-1]}
        last = {t: _figure(picked[t]) for t in titles[-1:]}
        return {**{t: child.result() for t, child in others.items()}, **last}


def _figure(what: Shown) -> bytes | None:
    from jobs.views.plots import png

    return png(what)


def load(path: Path) -> Record:
    try:
        raw = json.loads(path.read_text())
    except OSError as error:
        raise UserError(f"cannot read record {path} ({error.strerror})") from None
    except ValueError as error:
        raise UserError(f"{path} is not JSON ({error})") from None
    version = raw.get("schema_version") if isinstance(raw, dict) else None
    if version != SCHEMA:
        raise UserError(f"{path} has record schema version {version}; this benchfleet reads "
                        f"version {SCHEMA}: make the record again with `benchfleet record`")
    try:
        return Record.model_validate(raw)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise UserError(f"{path} is not a benchfleet record: {where}: {first['msg']} "
                        f"({error.error_count()} problems)") from None


# Given to `_read`, it is handed each attempt read (its cell, the attempt, whether its cell's
# state names it) instead of the attempt being kept.
Take = Callable[[str, AttemptResult, bool], None]


def _read(store: ArtifactStore, sweep_id: str, cells: list[Cell], chosen: dict[str, int],
          others: list[tuple[str, int]], take: Take | None = None) -> _Read:
    """Read the chosen attempt of each cell, and the `others` (cell, attempt) named."""
    read = _Read({}, [], [], {})
    wanted = [(c.id, chosen[c.id], True) for c in cells if chosen.get(c.id)]
    wanted += [(cell_id, attempt, False) for cell_id, attempt in others]
    # Closed however this ends: a `take` that raises stops the child reading ahead.
    with contextlib.closing(read_results(store, sweep_id, [(c, a) for c, a, _ in wanted])) as got:
        for (cell_id, attempt, used), files in zip(wanted, got, strict=True):  # each read once
            _read_one(store, cell_id, attempt, used, files, read, take)
    return read


def _read_one(store: ArtifactStore, cell_id: str, attempt: int, used: bool, files: Got,
              read: _Read, take: Take | None) -> None:
    try:
        if not isinstance(files, tuple):
            raise files
        raw, manifest = files
        if raw is None:
            raise KeyError("result.json")
        result = AttemptResult.model_validate_json(raw)
    except (CorruptArtifact, KeyError, ValidationError, OSError) as error:
        if used:  # the store's path is left out: the record must not depend on where it is
            text = str(error).splitlines()[0].replace(f"{getattr(store, 'root', '')}{os.sep}",
                                                       "")
            read.unreadable[cell_id] = text if not isinstance(error, KeyError) else (
                f"attempt {attempt} has no result.json")
        return
    read.evidence.append(Evidence(cell_id=cell_id, attempt=attempt, used=used,
                                  result_sha256=hashlib.sha256(raw).hexdigest(),
                                  manifest_sha256=hashlib.sha256(manifest).hexdigest()))
    if take is not None:
        take(cell_id, result, used)
    elif used:
        read.results[cell_id] = result
    else:
        read.earlier.append(result)


def _unread_attempts(store: ArtifactStore, record: Record, cells: list[Cell]) -> list[str]:
    """Readable attempts in the store the record never read: it is out of date, or hides them."""
    read = {(e.cell_id, e.attempt) for e in record.evidence}
    unread = [(c.id, a) for c in cells for a in store.attempts(record.sweep_id, c.id)
              if (c.id, a) not in read]
    return [f"{cell}: the store holds attempt {attempt}, which the record did not read; make "
            "the record again" for cell, attempt in unread
            if _readable(store, record.sweep_id, cell, attempt)]


def _readable(store: ArtifactStore, sweep_id: str, cell_id: str, attempt: int) -> bool:
    try:
        store.read(sweep_id, cell_id, attempt)
    except CorruptArtifact:
        return False  # the record could not read it either, and says so where it used it
    return True


def recorded_states(record: Record, results: dict[str, AttemptResult]
                    ) -> dict[str, CellState]:
    """Cell states as the record saw them: from the attempts, else as the record lists them."""
    states = {m.cell_id: CellState(status=m.status, reason=m.reason) for m in record.missing}
    for cell_id, result in results.items():
        if cell_id not in states:
            states[cell_id] = CellState(status="done" if result.failure is None else "failed")
    for s in record.skipped:
        states[s.cell_id] = CellState(status="done")
    return states


def _atomic(path: Path, data: bytes | Iterable[str | bytes]) -> None:
    """Write whole or not at all; pieces (text or bytes) are written as they come."""
    with _Staged() as staged:
        staged.write(path, data)
        staged.commit()


class _Staged:
    """Files written beside their places (hidden, named for this process) and moved into them
    together by `commit`; leaving the block without it removes them."""

    def __init__(self) -> None:
        self._moves: list[tuple[Path, Path]] = []

    def write(self, path: Path, data: bytes | Iterable[str | bytes]) -> None:
        temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        self._moves.append((temp, path))  # before writing: a half-written one is removed
        with temp.open("wb") as f:
            if isinstance(data, bytes):
                f.write(data)
                return
            for piece in data:  # made as they are written: one may fail half-way
                f.write(piece if isinstance(piece, bytes) else piece.encode())

    def commit(self) -> None:
        for temp, path in self._moves:
            os.replace(temp, path)
        self._moves = []

    def __enter__(self) -> "_Staged":
        return self

    def __exit__(self, *_: object) -> None:
        for temp, _path in self._moves:
            temp.unlink(missing_ok=True)
