"""Imported files live in the artifact store beside the sweeps (`history-imports/`), so the
index can be rebuilt from the store alone."""

import hashlib
from pathlib import Path

from pydantic import ValidationError

from jobs.errors import UserError
from jobs.trends.imports import Imported, imported_points
from jobs.trends.series import Point
from workers.shared.stores import ArtifactStore, get_json, put_json

IMPORTS = "history-imports"
_LIST = f"{IMPORTS}/index.json"


def import_file(store: ArtifactStore, item: Imported) -> list[Point]:
    """Parse first (a file that gives no point is the user's to fix), then keep it."""
    points, problems = imported_points(item)
    if not points:
        raise UserError(problems[0] if problems else f"{item.file}: no rows to import")
    name = hashlib.sha256(item.model_dump_json().encode()).hexdigest()[:16]
    put_json(store, f"{IMPORTS}/{name}.json", item.model_dump(mode="json"))
    names = imported_names(store)
    if name not in names:
        put_json(store, _LIST, [*names, name])
    return points


def read_import(path: Path, stderr: Path | None, **labels: str | None) -> Imported:
    try:
        text = path.read_text()
        err = stderr.read_text() if stderr else ""
    except OSError as error:
        raise UserError(f"cannot read {error.filename} ({error.strerror})") from None
    return Imported(file=path.name, text=text, stderr=err, **labels)  # type: ignore[arg-type]


def stored_imports(store: ArtifactStore) -> tuple[list[Point], list[str], set[str]]:
    """The points of every imported file, what could not be read, and the repositories that
    place their commits."""
    points, problems, repos = [], [], set()
    for name in imported_names(store):
        raw = get_json(store, f"{IMPORTS}/{name}.json")
        try:
            item = Imported.model_validate(raw)
        except ValidationError:
            problems.append(f"{IMPORTS}/{name}.json in the store is not an imported file")
            continue
        found, why = imported_points(item)
        points += found
        problems += why
        repos |= {item.repo} if item.repo else set()
    return points, problems, repos


def imported_names(store: ArtifactStore) -> list[str]:
    listed = get_json(store, _LIST)
    return [str(n) for n in listed] if isinstance(listed, list) else []
