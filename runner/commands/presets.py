"""benchfleet presets: the shipped sweep presets."""

import argparse

from rich.console import Console

from runner import presets
from workers.settings import Settings


def add(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("presets", help="list the shipped sweep presets")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    for name in presets.names():
        console.print(f"{name}: {presets.describe(name)}", highlight=False, soft_wrap=True)
    return 0
