"""The builds a record's measurements ran on, as the record's metadata lists them.

A cell that reused a build carries the cache entry's provenance (workers/workspace.py keeps
it with the build): the steps' commands, when and how long it was built, and its logs. So a
sweep whose every build was cached still says how its binary was made.
"""

from collections.abc import Iterable

from jobs.record.attempts import AttemptResult
from jobs.record.parts import BuildTime


def build_time(backend: str, r: AttemptResult) -> BuildTime | None:
    """The build one attempt ran on: built cold by it, or the cache entry it reused."""
    if r.build is None or r.commit is None:
        return None
    steps = [run for run in r.runs if run.role == "build"]
    return BuildTime(commit=r.commit, backend=backend, worker=r.worker, recipe=r.build.recipe,
                     wall_s=r.build.wall_s, built_at=r.build.built_at,
                     command=[run.argv for run in steps], cached=r.build.cached,
                     logs=[path for run in steps for path in (run.stdout, run.stderr)])


def build_times(builds: Iterable[BuildTime | None]) -> dict[tuple[str, str, str], BuildTime]:
    """One build per (commit, backend, worker), from the attempts' builds in the order they
    were read: the cold build where an attempt made it, else the cache entry a cell reused."""
    found: dict[tuple[str, str, str], BuildTime] = {}
    for b in builds:
        if b is None:
            continue
        key = (b.commit, b.backend, b.worker)
        if b.cached and key in found:
            continue  # the same build: the cold one, or a cache entry already listed
        found[key] = b
    return found
