"""What each of the record's figures shows, picked out without matplotlib.

The record's process picks it before it forks a child to draw the figure (runner/records.py):
a figure with nothing to show costs no child, and the child touches only the groups it
draws. A child that walked all 10,000 groups of a 100,000-cell record to find them copied
some 80 MiB of the parent's pages, for their reference counts alone.
"""

from dataclasses import dataclass

from jobs.record.model import Record
from jobs.record.parts import Group

# More panels than a reader can look at in one figure cost time and say nothing: the figure
# shows the first ones, names how many it leaves to the tables, and stays this size.
MAX_PANELS = 12
# The phases figure is one panel of bars, two groups to a panel's width.
MAX_BARS = MAX_PANELS * 2


@dataclass(frozen=True)
class Shown:
    figure: str  # "decode" or "prefill" (tok/s per arm), or "phases"
    sweep_name: str
    groups: list[Group]  # those it draws: the first of the groups it has anything for
    of: int  # how many groups it has anything for
    several_commits: bool  # whether the record's groups are of more than one commit


def shown(record: Record, figure: str) -> Shown | None:
    """What `figure` draws of `record`; None when it has nothing to draw."""
    if figure == "phases":
        having = [g for g in record.groups if g.profile and g.profile.attribution.timed]
    else:
        having = [g for g in record.groups if any(getattr(r, f"{figure}_tps") for r in g.rows)]
    if not having:
        return None
    return Shown(figure=figure, sweep_name=record.sweep_name,
                 groups=having[:MAX_BARS if figure == "phases" else MAX_PANELS],
                 of=len(having), several_commits=len({g.commit for g in record.groups}) > 1)
