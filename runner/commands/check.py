"""benchfleet check RECORD.json: is the record complete and consistent with itself?"""

from pathlib import Path

import click
from rich.console import Console

from jobs.check import check_record
from runner.records import load


@click.command()
@click.argument("record", type=click.Path(path_type=Path))
def command(record: Path) -> int:
    """Verify a record JSON: figures, verdict, accounting."""
    problems = check_record(load(record))
    console = Console()
    for problem in problems:
        console.print(f"FAIL {problem}", highlight=False, soft_wrap=True, markup=False)
    console.print(f"{record}: {'passes' if not problems else f'{len(problems)} problems'}",
                  highlight=False, soft_wrap=True)
    return 1 if problems else 0
