"""benchfleet check RECORD.json [--artifacts DIR]: is the record complete, consistent with
itself and, given the artifact store, with the evidence it was made from?"""

from pathlib import Path

import click
from rich.console import Console

from jobs.errors import UserError
from jobs.record.check import check_record
from runner.records import check_artifacts, load


@click.command()
@click.argument("record", type=click.Path(path_type=Path))
@click.option("--artifacts", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="the artifact store the record was made from: re-read every attempt, "
              "verify its sha256 and recompute every figure")
def command(record: Path, artifacts: Path | None) -> int:
    """Verify a record JSON: figures, verdict, accounting, flags (and the artifacts)."""
    loaded = load(record)
    problems = check_record(loaded)
    if artifacts is not None:
        if not artifacts.is_dir():
            raise UserError(f"--artifacts {artifacts} is not a directory; give the artifact "
                            "store the record was made from (BENCHFLEET_ARTIFACTS)")
        problems += check_artifacts(loaded, artifacts)
    console = Console()
    for problem in problems:
        console.print(f"FAIL {problem}", highlight=False, soft_wrap=True, markup=False)
    against = f" against {artifacts}" if artifacts is not None else ""
    console.print(f"{record}{against}: {'passes' if not problems else f'{len(problems)} problems'}",
                  highlight=False, soft_wrap=True)
    return 1 if problems else 0
