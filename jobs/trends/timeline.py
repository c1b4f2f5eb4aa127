"""A series as `history` shows it and the site draws it: its points in the target's order,
the steps in its used points, and the regression candidates among them."""

from jobs.strict import Strict
from jobs.trends.changes import Step, Thresholds, find_steps
from jobs.trends.regressions import Candidate


class SeriesPoint(Strict):
    commit: str
    position: int | None  # on the first-parent line; None: the commit is not on it
    sweep_id: str
    created: str
    n: int
    mean: float
    min: float
    max: float
    flags: list[str]
    check_ok: bool | None
    mlx_pin: str | None
    used: bool  # in the fit: placed, and from no flagged run


class Series(Strict):
    testbed: str
    model: str
    arm: str
    metric: str
    points: list[SeriesPoint]
    # Every step the fit found, kept or dropped, by the first commit after it.
    steps: list[tuple[str, Step]]


def with_steps(key: tuple[str, str, str, str], points: list[SeriesPoint],
               thresholds: Thresholds) -> Series:
    used = [p for p in points if p.used]
    steps = find_steps([p.mean for p in used], thresholds, [p.commit for p in used])
    return Series(testbed=key[0], model=key[1], arm=key[2], metric=key[3], points=points,
                  steps=[(used[s.index].commit, s) for s in steps])


def candidates(s: Series, since: int | None = None) -> list[Candidate]:
    """The kept steps that made the series slower (every metric here is higher-better),
    after the `since` position when one is given."""
    used = [p for p in s.points if p.used]
    found = []
    for _, step in s.steps:
        after, before = used[step.index], used[step.index - 1]
        if not step.kept or step.change >= 0 or after.position is None \
                or before.position is None:
            continue
        if since is not None and after.position <= since:
            continue
        found.append(Candidate(testbed=s.testbed, model=s.model, arm=s.arm, metric=s.metric,
                               commit=after.commit, before=before.commit,
                               commits_spanned=after.position - before.position,
                               sweep=after.sweep_id, step=step))
    return found
