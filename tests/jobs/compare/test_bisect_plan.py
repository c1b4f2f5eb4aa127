"""The bisect state machine: what it measures, what it decides, and when it stops."""

import random
from collections.abc import Callable

import pytest

from jobs.compare.bisect_plan import (
    Evidence,
    Plan,
    Rule,
    linear_scan,
    make_rule,
    partner_n,
    plan,
)
from jobs.compare.bisect_record import BisectRecord, Measured, Round, render

COMMITS = [f"{i:02d}" * 20 for i in range(9)]  # good is 0, bad is 8
FAST, SLOW = 1000.0, 500.0  # decode tok/s before and after the planted commit


def host(culprit: int, broken: set[int], seed: int = 7, spread: float = 0.03
         ) -> Callable[[int], float | None]:
    """A stand-in for one measurement at commit i: None when it does not build."""
    rng = random.Random(seed)

    def measure(i: int) -> float | None:
        if i in broken:
            return None
        level = SLOW if i >= culprit else FAST
        return level * (1 + rng.uniform(-spread, spread))
    return measure


def walk(rule: Rule, measure: Callable[[int], float | None], commits: list[str] = COMMITS,
         rounds: int = 30) -> tuple[Plan, int, list[Plan]]:
    """Run the plan to its end as the coordinator does; returns it, the measurements made
    and every step."""
    evidence: dict[str, Evidence] = {}
    made, steps = 0, []
    for _ in range(rounds):
        step = plan(commits, evidence, rule)
        steps.append(step)
        if step.outcome != "measure":
            return step, made, steps
        for q in step.requests:
            e = evidence.setdefault(q.commit, Evidence())
            for _ in range(q.repeats):
                value = measure(commits.index(q.commit))
                if value is None:
                    e.failures.append("failed: build failed: SyntaxError")
                else:
                    e.values.append(value)
                    made += 1
    raise AssertionError(f"no answer after {rounds} rounds")


def test_endpoints_get_enough_repeats_for_three_to_decide() -> None:
    assert partner_n(3, 10) == 5 and partner_n(4, 10) == 4 and partner_n(2, 10) == 8
    assert make_rule("decode tok/s", 1.1, 3, 10, 1).endpoint_repeats == 5
    assert partner_n(3, 4) == 4  # the cap wins; the rule then adds repeats where needed


def test_finds_the_planted_commit_past_a_broken_one_with_fewest_measurements() -> None:
    rule = make_rule("decode tok/s", 1.5, 3, 10, 1)
    answer, made, steps = walk(rule, host(culprit=6, broken={4}))
    assert answer.outcome == "found" and answer.culprit == COMMITS[6]
    assert answer.last_good == COMMITS[5]
    asked = [[q.commit for q in s.requests] for s in steps[:-1]]
    # The endpoints once; the middle (4) fails to build and is skipped, as asv's find does.
    assert asked == [[COMMITS[0], COMMITS[8]], [COMMITS[4]], [COMMITS[3]], [COMMITS[6]],
                     [COMMITS[5]]]
    assert made == 5 + 5 + 3 * 3
    evidence = {COMMITS[4]: Evidence(failures=["build failed"])}
    assert linear_scan(COMMITS, evidence, rule) == 10 + 6 * 3 == 28
    verdicts = {j.index: j.verdict for j in answer.judgements}
    assert verdicts == {0: "good", 1: "unmeasured", 2: "unmeasured", 3: "good",
                        4: "untestable", 5: "good", 6: "bad", 7: "unmeasured", 8: "bad"}
    assert "is the first bad commit" in answer.reason and "worse beyond the factor" in answer.reason


@pytest.mark.parametrize("culprit", range(1, 9))
@pytest.mark.parametrize("broken", [set(), {2}, {5}, {3, 4}])
def test_every_planted_position_is_found_or_narrowed_to_it(culprit: int, broken: set[int]
                                                           ) -> None:
    rule = make_rule("decode tok/s", 1.5, 3, 10, 1)
    answer, made, _ = walk(rule, host(culprit, broken - {culprit}, seed=culprit))
    skipped_before = {b for b in broken if b < culprit and all(
        i in broken for i in range(b, culprit))}
    if skipped_before:
        assert answer.outcome == "narrowed"
        assert answer.candidates == [COMMITS[i] for i in sorted(skipped_before)] + [
            COMMITS[culprit]]
    else:
        assert answer.outcome == "found" and answer.culprit == COMMITS[culprit]
    assert made <= 10 + 3 * 3  # log2(7) rounds up to 3 commits between, at most


def test_several_commits_a_round_measure_more_in_fewer_rounds() -> None:
    rule = make_rule("decode tok/s", 1.5, 3, 10, 3)
    answer, made, steps = walk(rule, host(culprit=6, broken=set()))
    assert answer.culprit == COMMITS[6]
    assert [q.commit for q in steps[1].requests] == [COMMITS[i] for i in (2, 4, 6)]
    assert len(steps) - 1 < 5 and made > 19


def test_open_comparisons_get_the_fewest_repeats_that_can_decide() -> None:
    # Good and bad at 3 each cannot be told apart (p = 0.1): one more each reaches 0.029.
    rule = Rule(metric="decode tok/s", factor=1.5, repeats=2, endpoint_repeats=3, max_n=10)
    evidence = {COMMITS[0]: Evidence(values=[1000.0, 1010.0, 990.0]),
                COMMITS[-1]: Evidence(values=[500.0, 505.0, 495.0])}
    step = plan(COMMITS, evidence, rule)
    assert step.outcome == "measure"
    assert [(q.commit, q.repeats) for q in step.requests] == [(COMMITS[0], 1), (COMMITS[-1], 1)]
    assert step.reason.endswith("; 1 repeat more each let the rank test decide")
    # A commit between at 2 against 4 (p = 0.067) needs 1 more for 3 against 4 (p = 0.057)...
    # ...and another for 4 against 4: the plan asks for both at once.
    evidence[COMMITS[0]].values.append(1005.0)
    evidence[COMMITS[-1]].values.append(502.0)
    evidence[COMMITS[4]] = Evidence(values=[498.0, 501.0])
    step = plan(COMMITS, evidence, rule)
    assert [(q.commit, q.repeats) for q in step.requests] == [(COMMITS[4], 2)]
    assert "; 2 repeats more let the rank test decide" in step.reason


def test_the_cap_ends_a_comparison_it_cannot_decide() -> None:
    rule = Rule(metric="decode tok/s", factor=1.5, repeats=3, endpoint_repeats=3, max_n=3)
    evidence = {COMMITS[0]: Evidence(values=[1000.0, 1010.0, 990.0]),
                COMMITS[-1]: Evidence(values=[500.0, 505.0, 495.0])}
    step = plan(COMMITS, evidence, rule)
    assert step.outcome == "undecided" and "max_n = 3" in step.reason


def test_no_regression_within_the_factor_or_overlapping() -> None:
    rule = make_rule("decode tok/s", 1.1, 3, 10, 1)
    within = {COMMITS[0]: Evidence(values=[1000.0, 1001.0, 1002.0, 1003.0, 1004.0]),
              COMMITS[-1]: Evidence(values=[950.0, 951.0, 952.0, 953.0, 954.0])}
    step = plan(COMMITS, within, rule)
    assert step.outcome == "no regression" and "slower: not worse beyond" in step.reason
    faster = {COMMITS[0]: within[COMMITS[-1]], COMMITS[-1]: within[COMMITS[0]]}
    assert plan(COMMITS, faster, rule).outcome == "no regression"


def test_a_commit_overlapping_both_ends_is_ambiguous() -> None:
    rule = make_rule("decode tok/s", 1.5, 3, 10, 1)
    evidence = {COMMITS[0]: Evidence(values=[1000.0, 1001.0, 1002.0, 1003.0, 1004.0]),
                COMMITS[-1]: Evidence(values=[500.0, 501.0, 502.0, 503.0, 504.0]),
                COMMITS[4]: Evidence(values=[501.0, 750.0, 1002.0])}
    step = plan(COMMITS, evidence, rule)
    assert step.outcome == "ambiguous" and "overlaps bad's" in step.reason


def test_an_endpoint_that_cannot_be_measured_stops_the_bisect() -> None:
    rule = make_rule("decode tok/s", 1.5, 3, 10, 1)
    step = plan(COMMITS, {COMMITS[0]: Evidence(failures=["failed: build failed"])}, rule)
    assert step.outcome == "stopped" and "the good commit" in step.reason


def test_the_record_shows_every_commit_and_decision() -> None:
    rule = make_rule("decode tok/s", 1.5, 3, 10, 1)
    answer, made, steps = walk(rule, host(culprit=6, broken={4}))
    measured = [Measured(commit=COMMITS[0], sweep_id="s-1", cell_id="c", attempt=1, repeat=1,
                         worker="w", hostname="h", started="t", value=999.0, build_cached=False,
                         load1_before=0.1, load1_after=0.2, flags=[])]
    record = BisectRecord(
        bisect_id="b-1", created="now", repo="/r", backend="cpu", model="m", arm="fused",
        rule=rule, good=COMMITS[0], bad=COMMITS[-1], names={"main": COMMITS[0]},
        subjects={COMMITS[6]: "decode: check the fused experts"}, outcome=answer.outcome,
        culprit=answer.culprit, last_good=answer.last_good, candidates=answer.candidates,
        reason=answer.reason, judgements=answer.judgements,
        rounds=[Round(index=i + 1, reason=s.reason, requests=s.requests, sweeps=[f"s-{i}"])
                for i, s in enumerate(steps[:-1])],
        measurements=measured, failures={COMMITS[4]: ["failed: build failed"]}, measured=made,
        linear_scan=28, commits_tried=6)
    text = render(record)
    assert f"**First bad commit: `{COMMITS[6][:12]}` decode: check the fused experts.**" in text
    assert text.count("\n| ") >= 9 + 1 and "a linear scan of the range" in text
    assert "5. " in text and "6. First bad commit" in text
    assert "measured nothing in 1 cell(s): failed: build failed" in text
    assert BisectRecord.model_validate_json(record.model_dump_json()) == record


def test_the_endpoints_comparison_says_its_word() -> None:
    rule = make_rule("decode tok/s", 1.1, 3, 10, 1)
    overlap = {COMMITS[0]: Evidence(values=[1000.0, 700.0, 1300.0, 1001.0, 999.0]),
               COMMITS[-1]: Evidence(values=[900.0, 1200.0, 650.0, 1002.0, 998.0])}
    step = plan(COMMITS, overlap, rule)
    assert step.outcome == "no regression" and ", not significant: not worse" in step.reason
    twelve = [1000.0 + i for i in range(12)]
    same = {COMMITS[0]: Evidence(values=twelve),
            COMMITS[-1]: Evidence(values=[v + 0.5 for v in twelve])}
    assert ", same: not worse" in plan(COMMITS, same, make_rule("decode tok/s", 1.1, 12, 12,
                                                                    1)).reason
