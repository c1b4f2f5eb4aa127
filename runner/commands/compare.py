"""benchfleet compare OLD [NEW] [--commits X Y]: two sweeps, or two commits of one, side by
side; exit 1 when something got worse beyond the factor, like `asv continuous`."""

import sys

import click

from runner.compare_sides import compare


@click.command()
@click.argument("old")
@click.argument("new", required=False)
@click.option("--commits", nargs=2, metavar="OLD NEW", default=None,
              help="compare these two commits (names the sweep asked for, or sha prefixes): "
              "of OLD's sweep, or one of each sweep")
@click.option("--factor", type=click.FloatRange(min=1, min_open=True), default=1.1,
              show_default=True, help="a change counts as worse only when new is slower than "
              "old by more than this factor and the headline rule says they differ")
@click.option("--json", "as_json", is_flag=True, help="print the comparison as JSON")
def command(old: str, new: str | None, commits: tuple[str, str] | None, factor: float,
            as_json: bool) -> int:
    """Compare OLD (the reference) with NEW per backend, model and arm on decode and prefill
    tok/s (higher is better). OLD and NEW are sweep ids, unique prefixes or record JSON
    files."""
    from jobs.compare.sweeps import render

    result = compare(old, new, commits, factor, _warn)
    click.echo(result.model_dump_json(indent=1) if as_json else render(result), nl=False)
    if as_json:
        click.echo()
    return 1 if result.gate == "fail" else 0


def _warn(sentence: str) -> None:
    print(f"benchfleet: {sentence}", file=sys.stderr)
