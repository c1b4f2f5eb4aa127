"""Adaptive repeats: the coordinator signed a group's repeats up to the sweep's cap; before an
extra repeat runs, this asks the sweep's own rule (jobs/statistics/adaptive.py) whether any comparison of
the group is still "not yet known". When none is, the cell ends `skipped` without running."""

import logging

from jobs.parsers.readings import BenchReading
from jobs.record.attempts import AttemptResult
from jobs.spec.cells import Cell
from jobs.spec.envelope import BadEnvelope, decode
from jobs.statistics.adaptive import cell_needed
from workers.hooks import Dropped, Hook
from workers.in_flight import Group, Job
from workers.shared.signing import BadSignature, Verifier
from workers.shared.state import Store
from workers.shared.stores import ArtifactStore, CorruptArtifact

log = logging.getLogger(__name__)


class Adaptive(Hook):
    def __init__(self, verifier: Verifier, store: Store, artifacts: ArtifactStore) -> None:
        self.verifier, self.store, self.artifacts = verifier, store, artifacts
        self.readings: dict[str, BenchReading] = {}
        self.cells: dict[str, list[Cell]] = {}  # task id -> the group's verified cells

    def before_cell(self, job: Job) -> None:
        cell = job.cell
        if not cell.adaptive:
            return
        cells = self._cells(job.group)
        if cell_needed(cell, cells, self._readings(job, cells)):
            return
        why = (f"not needed: every comparison of its group was decided before repeat "
               f"{cell.repeat}")
        if self.store.skip(job.sweep_id, cell.id, why):
            raise Dropped(why)

    def after_cell(self, job: Job, result: AttemptResult) -> None:
        if result.reading is not None:
            self.readings[job.cell.id] = result.reading

    def _cells(self, group: Group) -> list[Cell]:
        """The group's cells, each from an envelope that verifies (the rule reads them)."""
        if group.task_id not in self.cells:
            cells = []
            for item in group.items:
                try:
                    self.verifier.verify(item.envelope.encode(), item.signature)
                    cells.append(decode(item.envelope.encode()).cell)
                except (BadSignature, BadEnvelope):
                    continue  # the signature hook refuses it when its turn comes
            self.cells = {group.task_id: cells}
        return self.cells[group.task_id]

    def _readings(self, job: Job, cells: list[Cell]) -> dict[str, BenchReading]:
        """Readings of the group's measured cells: this worker's, else the accepted attempt
        in the artifact store (a group split by a lost worker)."""
        found = {c.id: self.readings[c.id] for c in cells if c.id in self.readings}
        states = self.store.states_of(job.sweep_id, [c.id for c in cells if c.id not in found])
        for cell in cells:
            state = states.get(cell.id)
            if cell.id in found or state is None or state.status != "done":
                continue
            try:
                files = self.artifacts.read(job.sweep_id, cell.id, state.attempt)
                result = AttemptResult.model_validate_json(files["result.json"].read_text())
            except (CorruptArtifact, KeyError, OSError, ValueError) as error:
                log.warning("adaptive rule: cannot read %s: %s", cell.id, error)
                continue
            if result.reading:
                found[cell.id] = result.reading
        return found

