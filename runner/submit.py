"""Submit a sweep: validate it against the catalogue, store it, queue one task per cell."""

import re
import secrets
from datetime import UTC, datetime
from pathlib import Path

from jobs.cells import Cell, expand
from jobs.errors import SpecError, UserError
from jobs.specfile import load, located
from jobs.sweep import Sweep, catalogue_problems
from workers.app import create_app
from workers.fleet.catalogue import load_catalogue
from workers.fleet.queues import TASK, backend_queue
from workers.fleet.settings import Settings
from workers.fleet.state import Store

_REMOTE = re.compile(r"^([a-z+]+://|[^/]+@[^/:]+:)")


def read_sweep(path: Path, settings: Settings) -> Sweep:
    """The sweep in `path`, checked against the coordinator's catalogue."""
    try:
        text = path.read_text()
    except OSError as error:
        raise UserError(f"cannot read sweep file {path} ({error.strerror})") from None
    sweep, root = load(Sweep, text, str(path))
    problems = catalogue_problems(sweep, load_catalogue(settings.catalogue))
    repo = sweep.target.repo
    if not _REMOTE.match(repo):
        local = (path.parent / repo).resolve()
        if not local.is_dir():
            problems.append((("target", "repo"), f"{repo} is neither a URL nor a directory "
                             f"(looked for {local})"))
        repo = str(local)
    if problems:
        raise SpecError(located(str(path), root, problems))
    return sweep.model_copy(update={"target": sweep.target.model_copy(update={"repo": repo})})


def submit(path: Path, settings: Settings) -> tuple[str, list[Cell]]:
    sweep = read_sweep(path, settings)
    cells = expand(sweep)
    sweep_id = f"{sweep.name}-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
    Store.connect(settings.redis_url).save_sweep(sweep_id, sweep, cells, str(path.resolve()))
    app = create_app(settings)
    with app.producer_or_acquire() as producer:
        for cell in cells:
            app.send_task(TASK, args=[sweep_id, cell.model_dump(mode="json")],
                          queue=backend_queue(cell.backend), producer=producer)
    return sweep_id, cells
