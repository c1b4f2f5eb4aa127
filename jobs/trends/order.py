"""What history says of points whose commit the target's first-parent line no longer holds."""

from collections.abc import Sequence


def lost_sentence(lost: Sequence[str]) -> str | None:
    """`lost`: the commit of each point not on the line. A commit no longer in the repository
    (rebased away, a fork's) keeps its point, apart: its place between the others is unknown."""
    if not lost:
        return None
    commits = sorted({c[:12] for c in lost})
    return (f"{len(lost)} point(s) at commit(s) {', '.join(commits[:5])}"
            f"{' and more' if len(commits) > 5 else ''} no longer on the target's first-parent "
            "history: kept and shown, but not placed in the series nor used to find steps")
