"""benchfleet init PRESET --commit SHA [--repo URL] [-o FILE]: write a sweep from a preset."""

from pathlib import Path

import click
from rich.console import Console

from jobs.errors import UserError
from runner import presets
from runner.submit import read_sweep
from workers.shared.settings import load_settings

MLXCEL = "https://github.com/lablup/mlxcel.git"


@click.command()
@click.argument("preset")
@click.option("--commit", required=True, help="the target commit to measure")
@click.option("--repo", default=MLXCEL, show_default=True, help="the target repository")
@click.option("-o", "--out", type=click.Path(path_type=Path), help="the sweep file "
              "(default PRESET.yaml)")
@click.option("--force", is_flag=True, help="overwrite an existing file")
def command(preset: str, commit: str, repo: str, out: Path | None, force: bool) -> int:
    """Write a sweep file from a shipped preset (`benchfleet presets` lists them)."""
    out = out or Path(f"{preset}.yaml")
    if out.exists() and not force:
        raise UserError(f"{out} exists; pass --force to overwrite it or -o another file")
    text = presets.render(preset, commit, repo)
    try:
        out.write_text(text)
    except OSError as error:
        raise UserError(f"cannot write {out} ({error.strerror}); pick a writable path "
                        "with -o") from None
    sweep = read_sweep(out, load_settings())  # the preset must pass the same checks as any
    Console().print(f"wrote {out}: {len(sweep.models)} models, {len(sweep.arms)} arms, "
                    f"backends {', '.join(sweep.backends)}; submit it with "
                    f"`benchfleet submit {out}`", highlight=False, soft_wrap=True)
    return 0
