"""A series in the order of the target's first-parent history, oldest first."""

from collections.abc import Sequence

from jobs.trends.series import Point


def in_history(points: Sequence[Point], history: Sequence[str]
               ) -> tuple[list[Point], list[Point]]:
    """(points on the history, in its order; points whose commit it lacks). Points of one
    commit keep the order their sweeps were made in. A commit no longer in the repository
    (rebased away, a fork's) keeps its point, apart: its place between the others is unknown."""
    position = {sha: i for i, sha in enumerate(history)}
    known = [p for p in points if p.commit in position]
    lost = [p for p in points if p.commit not in position]
    known.sort(key=lambda p: (position[p.commit], p.created, p.sweep_id))
    lost.sort(key=lambda p: (p.created, p.sweep_id))
    return known, lost


def lost_sentence(lost: Sequence[Point]) -> str | None:
    if not lost:
        return None
    commits = sorted({p.commit[:12] for p in lost})
    return (f"{len(lost)} point(s) at commit(s) {', '.join(commits[:5])}"
            f"{' and more' if len(commits) > 5 else ''} no longer on the target's first-parent "
            "history: kept and shown, but not placed in the series nor used to find steps")
