"""Load the two sides of `benchfleet compare`: a sweep in Redis (its record made from the
artifact store, as `benchfleet record` makes it) or a record JSON file."""

from collections.abc import Callable
from pathlib import Path

from jobs.compare.sweeps import SideBySide, commit_of, side_by_side
from jobs.errors import UserError
from jobs.record.model import Record
from runner import records
from workers.shared.settings import load_settings
from workers.shared.state import Store
from workers.shared.stores import open_store


def compare(old: str, new: str | None, commits: tuple[str, str] | None, factor: float,
            warn: Callable[[str], None]) -> SideBySide:
    """`old` against `new`, or two commits of `old` when `new` is None."""
    if new is None and commits is None:
        raise UserError("give two sweeps (ids, prefixes or record JSON files), or one and "
                        "--commits OLD NEW for two commits of it")
    a = _load(old, warn)
    b = _load(new, warn) if new else a
    name_a, name_b = commits or (None, None)
    return side_by_side(a, commit_of(a, name_a), b, commit_of(b, name_b), factor)


def _load(source: str, warn: Callable[[str], None]) -> Record:
    path = Path(source)
    if path.suffix == ".json" or path.is_file():
        record = records.load(path)
    else:
        settings = load_settings()
        store = Store.connect(settings.redis_url)
        record = records.gather(store, open_store(settings.artifacts, settings),
                                store.resolve(source))
    if record.check and not record.check.ok:
        warn(f"the record of {record.sweep_id} fails `benchfleet check` "
             f"({len(record.check.problems)} problems, the first: {record.check.problems[0]}); "
             "its figures are compared as they are")
    return record
