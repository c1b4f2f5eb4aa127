"""benchfleet init PRESET --commit SHA [--repo URL] [-o FILE]: write a sweep from a preset."""

import argparse
from pathlib import Path

from rich.console import Console

from jobs.errors import UserError
from runner import presets
from runner.submit import read_sweep
from workers.settings import Settings

MLXCEL = "https://github.com/lablup/mlxcel.git"


def add(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("init", help="write a sweep file from a shipped preset")
    p.add_argument("preset", help="a preset name (`benchfleet presets` lists them)")
    p.add_argument("--commit", required=True, help="the target commit to measure")
    p.add_argument("--repo", default=MLXCEL, help=f"the target repository (default {MLXCEL})")
    p.add_argument("-o", "--out", type=Path, help="the sweep file (default PRESET.yaml)")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    out: Path = args.out or Path(f"{args.preset}.yaml")
    if out.exists() and not args.force:
        raise UserError(f"{out} exists; pass --force to overwrite it or -o another file")
    out.write_text(presets.render(args.preset, args.commit, args.repo))
    sweep = read_sweep(out, settings)  # the preset must pass the same checks as any sweep
    console.print(f"wrote {out}: {len(sweep.models)} models, {len(sweep.arms)} arms, "
                  f"backends {', '.join(sweep.backends)}; submit it with "
                  f"`benchfleet submit {out}`", highlight=False, soft_wrap=True)
    return 0
