"""The idle gate: before a group's first measured command, and again after a gap, wait until
the host is idle — load1 below a threshold read twice, no busy GPU — for at most a set time.
Past it the run goes ahead and the attempt carries `idle: false`: the record says "host not
idle". Not before every run of a group: a group's runs follow each other closely, and the
gate's wait would otherwise dominate dispatch.

The gate waits without the host lease, so another worker of the host measures meanwhile (a
gate that held it would stall its neighbours for as long as the host stays busy). It has two
halves around the host lease (workers/service.py): outside it the wait; inside it, once the
lease is taken, one more reading, since the host may have turned busy while this worker
waited for the lease. Busy again: the lease is let go and the wait goes on, within its cap.

A gate that waits says so: the cell's state carries why at every reading (`status`, `hosts`),
and the worker's log says it when the wait starts, at most once a minute, and when it ends.
"""

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from jobs.record.attempts import AttemptResult, Gate
from workers import descendants
from workers.execute import Command
from workers.hooks import Hook, Proceed, Runs
from workers.host_facts import busy_gpu, gpu_state, load1, thermal_state
from workers.in_flight import Attempt, Group
from workers.shared.clock import now
from workers.shared.notes import Notes

GATED = ("warmup", "measure", "profile")
# A waiting gate logs at most this often (the cell's state follows every reading).
LOG_EVERY_S = 60.0
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GateConfig:
    threshold: float
    max_wait_s: float
    gap_s: float
    # Between the two readings (the kernel updates load1 every 5 s) and between tries.
    interval_s: float = 5.0


class HostTurnedBusy(Exception):
    """Under the host lease the host was busy again: the lease goes, the wait goes on."""


class IdleGate(Hook):
    """Its state is the message's: the last gate passed and when its last command ended.
    `under_lease` is its inner half, placed just inside the host lease."""

    def __init__(self, config: GateConfig, notes: Notes | None = None) -> None:
        self.config, self.notes = config, notes
        self.gate: Gate | None = None
        self.last_command_end: float | None = None  # monotonic: the gap is measured from it
        self.wait: Wait | None = None  # a wait whose idle host is to be read again
        self.under_lease = UnderLease(self)

    def before_group(self, group: Group) -> Group:
        self.gate, self.last_command_end = None, None
        return group

    def around_command(self, attempt: Attempt, command: Command, proceed: Proceed) -> Runs:
        gap = (self.last_command_end is None
               or time.monotonic() - self.last_command_end > self.config.gap_s)
        try:
            if command.role in GATED and (self.gate is None or gap):
                return self._gated(attempt, proceed)
            return proceed()
        finally:
            self.last_command_end = time.monotonic()

    def _gated(self, attempt: Attempt, proceed: Proceed) -> Runs:
        voice = Voice(attempt, self.notes)
        wait = Wait(self.config, voice.busy)
        while True:
            with descendants.resting():  # another worker's command may be measured meanwhile
                self.gate = wait.until_idle()
            voice.ended(self.gate)
            self.wait = wait if self.gate.idle else None
            try:
                return proceed()
            except HostTurnedBusy as busy:
                voice.busy_again(str(busy))  # the host lease was let go on the way out
            finally:
                self.wait = None

    def recheck(self) -> None:
        """Under the host lease: the host is still idle, or the wait is over; else raise."""
        wait, self.wait = self.wait, None
        if wait is not None:
            self.gate = wait.again()

    def before_store(self, attempt: Attempt, result: AttemptResult) -> AttemptResult:
        """The attempt carries the gate its message passed last (the record reads it)."""
        return result.model_copy(update={"gate": self.gate})


class UnderLease(Hook):
    """The gate's inner half: the reading under the host lease."""

    def __init__(self, gate: IdleGate) -> None:
        self.gate = gate

    def around_command(self, attempt: Attempt, command: Command, proceed: Proceed) -> Runs:
        self.gate.recheck()
        return proceed()


class Voice:
    """What a waiting gate says about the cell it holds back: the cell's state at every
    reading, the log when the wait starts, at most every LOG_EVERY_S, and when it ends. A
    host idle at once says nothing."""

    def __init__(self, attempt: Attempt, notes: Notes | None) -> None:
        self.attempt, self.notes = attempt, notes
        self.logged: float | None = None  # monotonic: when the wait last logged
        self._note(None)

    def busy(self, waiting: str) -> None:
        self._note(waiting)
        if self.logged is None or time.monotonic() - self.logged >= LOG_EVERY_S:
            self._log("%s", waiting)

    def busy_again(self, waiting: str) -> None:
        self._note(waiting)
        self._log("busy again once it held the host lease; let it go, %s", waiting)

    def ended(self, gate: Gate) -> None:
        if self.logged is None:
            return
        if gate.idle:
            self._log("the host is idle after waiting %s", span(gate.waited_s))
        else:
            self._log("measuring on a busy host (the record marks it): %s", gate.reason)
        self.logged = None

    def _note(self, waiting: str | None) -> None:
        if self.notes is not None:
            a = self.attempt
            self.notes.note(a.sweep_id, a.cell.id, a.number, "gating", waiting)

    def _log(self, text: str, *args: object) -> None:
        log.info("cell %s: " + text, self.attempt.cell.id, *args)
        self.logged = time.monotonic()


class Wait:
    """One gate's wait, over every try: its readings, and the time it has spent waiting (the
    cap counts that, not the time spent queued for the host lease between tries). `heard`
    hears why it waits, at every busy reading."""

    def __init__(self, config: GateConfig, heard: Callable[[str], None] = lambda why: None
                 ) -> None:
        self.config, self.heard = config, heard
        self.at = now()
        self.readings: list[float] = []
        self.waited_s = 0.0
        self.gpu: dict[str, str] = {}

    def until_idle(self) -> Gate:
        """Block until the host is idle or the wait runs out; every reading is kept."""
        started = time.monotonic()
        why = self._busy_until_idle(started)
        self.waited_s += time.monotonic() - started
        return self._gate(why)

    def _busy_until_idle(self, started: float) -> str | None:
        """None once the host reads idle twice; why not, when the cap is reached first."""
        while True:
            if self._idle():
                time.sleep(self.config.interval_s)  # the second reading, one update later
                if self._idle():
                    return None
            spent = self.waited_s + time.monotonic() - started
            if spent >= self.config.max_wait_s:
                return self._busy(spent)
            self.heard(self.waiting(spent))
            time.sleep(min(self.config.interval_s, self.config.max_wait_s - spent))

    def again(self) -> Gate:
        """One reading under the host lease: idle, or past the cap, gives the gate; busy with
        time left raises HostTurnedBusy."""
        if self._idle():
            return self._gate(None)
        if self.waited_s < self.config.max_wait_s:
            raise HostTurnedBusy(self.waiting(self.waited_s))
        return self._gate(self._busy(self.waited_s) + " (read under the host lease)")

    def waiting(self, spent: float) -> str:
        """The cell's reason while it waits: what is busy, for how long, and the cap."""
        load, threshold = self.readings[-1], self.config.threshold
        busy = [f"load1 {load:.2f} > {threshold:g}"] if load >= threshold else []
        if busy_gpu(self.gpu):
            busy.append(f"GPU busy: {busy_gpu(self.gpu)}")
        return (f"waiting for an idle host: {', '.join(busy)} for {span(spent)} "
                f"(max {span(self.config.max_wait_s)})")

    def _idle(self) -> bool:
        reading, self.gpu = load1(), gpu_state()
        self.readings.append(reading)
        return reading < self.config.threshold and not busy_gpu(self.gpu)

    def _busy(self, spent: float) -> str:
        gpu = busy_gpu(self.gpu)
        return (f"load1 {self.readings[-1]:.2f} (threshold {self.config.threshold:g})"
                + (f", GPU busy: {gpu}" if gpu else "") + f" after waiting {spent:.0f} s")

    def _gate(self, reason: str | None) -> Gate:
        return Gate(at=self.at, idle=reason is None, waited_s=round(self.waited_s, 3),
                    threshold=self.config.threshold, load1=list(self.readings),
                    max_wait_s=self.config.max_wait_s, gpu=self.gpu, thermal=thermal_state(),
                    reason=reason)


def span(seconds: float) -> str:
    """A wait as people say it: seconds up to two minutes, then minutes."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"
