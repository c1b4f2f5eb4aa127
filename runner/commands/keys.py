"""benchfleet keys generate DIR: the coordinator's Ed25519 key pair for signing cells."""

from pathlib import Path

import click
from rich.console import Console

from jobs.errors import UserError
from workers.shared.signing import generate


@click.group()
def command() -> None:
    """The coordinator's signing keys."""


@command.command("generate")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--force", is_flag=True, help="replace an existing key pair")
def generate_keys(directory: Path, force: bool) -> int:
    """Write DIR/coordinator.pem (private, mode 600: set BENCHFLEET_SIGNING_KEY to it on the
    coordinator) and DIR/coordinator.pub (give it to every worker as BENCHFLEET_VERIFY_KEY)."""
    private, public = directory / "coordinator.pem", directory / "coordinator.pub"
    if private.exists() and not force:
        raise UserError(f"{private} exists; pass --force to replace it (workers holding the old "
                        "public key will then refuse new cells)")
    try:
        generate(private, public)
    except OSError as error:
        raise UserError(f"cannot write keys into {directory} ({error.strerror})") from None
    Console().print(f"wrote {private} (BENCHFLEET_SIGNING_KEY, coordinator only) and {public} "
                    "(BENCHFLEET_VERIFY_KEY, every worker)", highlight=False, soft_wrap=True)
    return 0
