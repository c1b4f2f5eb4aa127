"""benchfleet demo: the whole path on this machine, ending in a real record."""

from pathlib import Path

import click
from rich.console import Console

from runner.demo.run import run_demo


@click.command()
@click.option("--dir", "where", type=click.Path(path_type=Path), default=Path("benchfleet-demo"),
              show_default=True, help="where the demo keeps its runs")
def command(where: Path) -> int:
    """Private Redis + two local workers + the bundled demo sweep, ending in a record."""
    console = Console()
    written = run_demo(where.resolve(), console)
    r = written.record
    console.print(f"\n{r.cells_measured} of {r.cells_expected} cells measured. Record:")
    for path in (written.markdown, written.json, *written.plots):
        console.print(f"  {path}", highlight=False, soft_wrap=True)
    return 0 if not r.missing else 1
