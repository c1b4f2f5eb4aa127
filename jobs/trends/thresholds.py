"""Step thresholds per testbed: one file (BENCHFLEET_HISTORY_THRESHOLDS) with the defaults
every testbed takes and, per testbed, what differs. A testbed's own entry names only what it
changes; the rest comes from `default`, then from Thresholds' own defaults."""

from pydantic import Field

from jobs.spec.specfile import load
from jobs.strict import Strict
from jobs.trends.changes import Thresholds


class ThresholdsFile(Strict):
    default: Thresholds = Field(default_factory=Thresholds)
    # By testbed id, as `history` shows it (a fingerprint, or BENCHFLEET_TESTBED's name).
    testbeds: dict[str, Thresholds] = Field(default_factory=dict)

    def for_testbed(self, testbed: str, measured_floor: float | None) -> Thresholds:
        """The testbed's thresholds. Its A/A floor: the one its entry names, else the one
        measured on it (the testbed's own noise), else the default's."""
        entry = self.testbeds.get(testbed)
        named = entry.model_dump(include=entry.model_fields_set) if entry else {}
        thresholds = self.default.model_copy(update=named)
        if "noise_floor" not in named and measured_floor is not None:
            thresholds = thresholds.model_copy(update={"noise_floor": measured_floor})
        return thresholds

    def unknown(self, testbeds: set[str]) -> list[str]:
        """A sentence per entry for a testbed history has never seen: a typo, most often."""
        return [f"the thresholds file names testbed {name}, which no point in history has; "
                "`benchfleet history` lists the testbeds by id"
                for name in sorted(set(self.testbeds) - testbeds)]


def parse(text: str, source: str) -> ThresholdsFile:
    """Raises SpecError with each problem located by line and field."""
    return load(ThresholdsFile, text, source, reference="docs/history.md")[0]
