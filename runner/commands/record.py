"""benchfleet record SWEEP -o DIR: combine every cell's artifacts into one record."""

import argparse
from pathlib import Path

from rich.console import Console

from runner.records import gather, write
from workers.artifacts import open_store
from workers.settings import Settings
from workers.state import Store


def add(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("record", help="write a sweep's record (Markdown, JSON, PNG)")
    p.add_argument("sweep", nargs="?", help="sweep id or a unique prefix (default: newest)")
    p.add_argument("-o", "--out", type=Path, default=Path("records"), help="output directory")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    store = Store.connect(settings.redis_url)
    sweep_id = store.resolve(args.sweep)
    written = write(gather(store, open_store(settings.artifacts), sweep_id), args.out)
    r = written.record
    console.print(f"{r.cells_measured} of {r.cells_expected} cells measured, "
                  f"{len(r.missing)} failed or missing")
    check = r.check
    for problem in check.problems if check else []:
        console.print(f"check FAIL {problem}", highlight=False, soft_wrap=True, markup=False)
    console.print(f"benchfleet check: {'passes' if check and check.ok else 'fails'}")
    for path in (written.markdown, written.json, *written.plots):
        console.print(str(path), highlight=False, soft_wrap=True)
    return 0 if check and check.ok else 1
