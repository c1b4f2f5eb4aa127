"""benchfleet check RECORD.json: is the record complete and consistent with itself?"""

import argparse
from pathlib import Path

from rich.console import Console

from jobs.check import check_record
from runner.records import load
from workers.settings import Settings


def add(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("check", help="verify a record JSON: figures, verdict, accounting")
    p.add_argument("record", type=Path, help="the record's .json file")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    problems = check_record(load(args.record))
    for problem in problems:
        console.print(f"FAIL {problem}", highlight=False, soft_wrap=True, markup=False)
    console.print(f"{args.record}: {'passes' if not problems else f'{len(problems)} problems'}",
                  highlight=False, soft_wrap=True)
    return 1 if problems else 0
