"""The shipped preset can reach a verdict: its adaptive repeats go past the n at which the rank
test cannot say "different", and every extra repeat is expanded (and signed) at submit."""

from jobs.spec.cells import expand
from jobs.spec.specfile import load
from jobs.spec.sweep import Sweep
from jobs.statistics.headline import separated_answer
from runner.presets import render


def _preset() -> Sweep:
    return load(Sweep, render("moe-decode-gap", "abc1234", "/srv/mlxcel"), "p.yaml")[0]


def test_at_the_presets_n_no_comparison_can_differ_but_at_its_cap_one_can() -> None:
    sweep = _preset()
    assert sweep.adaptive is not None
    assert separated_answer(sweep.n, sweep.n) == "unknown"
    assert separated_answer(sweep.adaptive.max_n, sweep.adaptive.max_n) == "different"


def test_the_extra_repeats_are_expanded_at_submit() -> None:
    sweep = _preset()
    assert sweep.adaptive is not None
    per_arm: dict[tuple[str, str, str], list[bool]] = {}
    for cell in expand(sweep):
        if cell.kind == "bench":
            per_arm.setdefault((cell.backend, cell.model, cell.arm), []).append(cell.adaptive)
    assert per_arm
    for flags in per_arm.values():
        assert len(flags) == sweep.adaptive.max_n
        assert flags.count(False) == sweep.n  # the first n always run; the rest only if needed
