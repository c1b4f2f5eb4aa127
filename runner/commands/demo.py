"""benchfleet demo: the whole path on this machine, ending in a real record."""

import argparse
from pathlib import Path

from rich.console import Console

from runner.demo import run_demo
from workers.settings import Settings


def add(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("demo", help="private Redis + two local workers + the demo sweep")
    p.add_argument("--dir", type=Path, default=Path("benchfleet-demo"),
                   help="where the demo keeps its runs (default: ./benchfleet-demo)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    written = run_demo(args.dir.resolve(), console)
    r = written.record
    console.print(f"\n{r.cells_measured} of {r.cells_expected} cells measured. Record:")
    for path in (written.markdown, written.json, *written.plots):
        console.print(f"  {path}", highlight=False, soft_wrap=True)
    return 0 if not r.missing else 1
