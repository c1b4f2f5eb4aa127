"""benchfleet presets: the shipped sweep presets."""

import click
from rich.console import Console

from runner import presets


@click.command()
def command() -> int:
    """List the shipped sweep presets."""
    console = Console()
    for name in presets.names():
        console.print(f"{name}: {presets.describe(name)}", highlight=False, soft_wrap=True)
    return 0
