"""The answer to a sweep's question, computed from the record's own groups."""


from jobs.record.parts import Group
from jobs.statistics.spans import Ratio
from jobs.strict import Strict
from jobs.studies.moe_decode_gap.gap import Relation, decode_gap, relation
from jobs.studies.moe_decode_gap.question import Question
from jobs.studies.moe_decode_gap.verdict import Evidence, Verdict, decide, rule_text


class FamilyVsControl(Strict):
    model: str
    family: str
    ratio: Ratio | None
    relation: Relation
    # Why, from the two headline comparisons and the ratios' (jobs/studies/moe_decode_gap/gap.py).
    reason: str = ""


class ControlComparison(Strict):
    """Is the gap general or family-specific? Judged against the control's own ratio."""

    commit: str
    backend: str
    control: str
    control_ratio: Ratio | None
    fused_off_vs_candidate: Ratio | None
    families: list[FamilyVsControl]


class Answer(Strict):
    kind: str
    rule: str
    candidate: str
    baseline: str
    verdicts: list[Verdict]
    controls: list[ControlComparison]
    not_comparable: list[list[str]]


def answer(q: Question, baseline: str, groups: list[Group]) -> Answer:
    verdicts = [decide(evidence(q, g), q) for g in groups if g.model in q.families]
    controls = [control(q, g, groups) for g in groups if g.model == q.control]
    return Answer(kind=q.kind, rule=rule_text(q), candidate=q.candidate, baseline=baseline,
                  verdicts=verdicts, controls=controls, not_comparable=q.not_comparable)


def bench_ref(g: Group) -> str:
    return f"{g.commit}/{g.backend}/{g.model}"


def evidence(q: Question, g: Group) -> Evidence:
    candidate = g.row(q.candidate)
    base = next((r for r in g.rows if r.baseline), None)
    profile = g.profile
    return Evidence(commit=g.commit, backend=g.backend, model=g.model,
                    family=q.families[g.model],
                    candidate=candidate.decode_tps if candidate else None,
                    baseline=base.decode_tps if base else None,
                    ratio=candidate.decode_vs_baseline if candidate else None,
                    attribution=profile.attribution if profile else None,
                    paths=profile.paths if profile else None,
                    profile_ref=profile.cell_id if profile else None, bench_ref=bench_ref(g),
                    gap=decode_gap(g, q.candidate))


def control(q: Question, g: Group, groups: list[Group]) -> ControlComparison:
    ratio = _ratio(g, q.candidate)
    fused_off = g.row(q.fused_off) if q.fused_off else None
    candidate = g.row(q.candidate)
    off_vs = (Ratio.of(fused_off.decode_tps, candidate.decode_tps)
              if fused_off and candidate and fused_off.decode_tps and candidate.decode_tps
              else None)
    families = [_versus(q, f, g) for f in groups if f.model in q.families
                and f.backend == g.backend and f.commit == g.commit]
    return ControlComparison(commit=g.commit, backend=g.backend, control=g.model,
                             control_ratio=ratio, fused_off_vs_candidate=off_vs,
                             families=families)


def _ratio(g: Group, arm: str) -> Ratio | None:
    row = g.row(arm)
    return row.decode_vs_baseline if row else None


def _versus(q: Question, family: Group, control: Group) -> FamilyVsControl:
    word, why = relation(family, control, q.candidate)
    return FamilyVsControl(model=family.model, family=q.families[family.model],
                           ratio=_ratio(family, q.candidate), relation=word, reason=why)
