"""Adaptive repeats: the coordinator signed a group's repeats up to the sweep's cap; before an
extra repeat runs, this asks the sweep's own rule (jobs/statistics/adaptive.py) whether any
comparison of the group is still "not yet known". When none is, the cell ends `skipped`
without running."""

import logging

from jobs.parsers.readings import BenchReading
from jobs.record.attempts import AttemptResult
from jobs.spec.cells import Cell
from jobs.statistics.adaptive import cell_needed
from workers.hooks import Dropped, Hook
from workers.in_flight import Arrival, Attempt, Group
from workers.shared.state import Store
from workers.shared.stores import ArtifactStore, CorruptArtifact

log = logging.getLogger(__name__)


class Adaptive(Hook):
    def __init__(self, store: Store, artifacts: ArtifactStore) -> None:
        self.store, self.artifacts = store, artifacts
        # This message's readings: the rule reads only its own group's, and a worker that
        # kept every cell's would grow with every cell it ever ran.
        self.readings: dict[str, BenchReading] = {}

    def before_group(self, group: Group) -> Group:
        self.readings = {}
        return group

    def before_cell(self, arrival: Arrival) -> None:
        cell = arrival.cell
        if not cell.adaptive:
            return
        # The group's cells the signature hook verified: the rule reads them.
        cells = [c.cell for c in arrival.group.cells]
        if cell_needed(cell, cells, self._readings(arrival.sweep_id, cells)):
            return
        why = (f"not needed: every comparison of its group was decided before repeat "
               f"{cell.repeat}")
        if self.store.skip(arrival.sweep_id, cell.id, why):
            raise Dropped(why)

    def after_cell(self, attempt: Attempt, result: AttemptResult) -> None:
        if result.reading is not None:
            self.readings[attempt.cell.id] = result.reading

    def _readings(self, sweep_id: str, cells: list[Cell]) -> dict[str, BenchReading]:
        """Readings of the group's measured cells: this worker's, else the accepted attempt
        in the artifact store (a group split by a lost worker)."""
        found = {c.id: self.readings[c.id] for c in cells if c.id in self.readings}
        states = self.store.states_of(sweep_id, [c.id for c in cells if c.id not in found])
        for cell in cells:
            state = states.get(cell.id)
            if cell.id in found or state is None or state.status != "done":
                continue
            try:
                files = self.artifacts.read(sweep_id, cell.id, state.attempt)
                result = AttemptResult.model_validate_json(files["result.json"].read_text())
            except (CorruptArtifact, KeyError, OSError, ValueError) as error:
                log.warning("adaptive rule: cannot read %s: %s", cell.id, error)
                continue
            if result.reading:
                found[cell.id] = result.reading
        return found
