"""The phase of a running cell, noted in its state for `status --watch` and `hosts`: building
while a build step runs, measuring while its warm-ups, runs and profile steps run; the idle
gate notes its own (gating, and why). Noted inside the host lease, just before the command
starts, so the phase says what the host is doing, not what the worker hopes to do next."""

from jobs.record.attempts import Phase
from workers.execute import Command
from workers.hooks import Hook, Proceed, Runs
from workers.in_flight import Attempt
from workers.shared.notes import Notes

PHASE_OF: dict[str, Phase] = {"build": "building", "warmup": "measuring",
                              "measure": "measuring", "profile": "measuring"}


class Phases(Hook):
    def __init__(self, notes: Notes) -> None:
        self.notes = notes

    def after_take(self, attempt: Attempt) -> None:
        if attempt.number > 1:  # the state still holds the phase an earlier attempt noted
            self.notes.note(attempt.sweep_id, attempt.cell.id, attempt.number, None)

    def around_command(self, attempt: Attempt, command: Command, proceed: Proceed) -> Runs:
        phase = PHASE_OF.get(command.role)
        if phase is not None:
            self.notes.note(attempt.sweep_id, attempt.cell.id, attempt.number, phase)
        return proceed()
