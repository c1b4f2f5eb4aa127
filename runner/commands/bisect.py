"""benchfleet bisect SWEEP.yaml --good G --bad B: the first commit at which one arm's decode
(or prefill) tok/s got worse beyond a factor, measured through the fleet, with the evidence
as a record."""

from pathlib import Path

import click
from rich.console import Console

from jobs.compare.bisect_plan import Metric, make_rule
from jobs.compare.bisect_record import BisectRecord, render
from jobs.errors import UserError
from runner.bisect.first_parents import first_parents
from runner.bisect.rounds import Bisect, endpoints, subject
from runner.submit import read_sweep
from workers.shared.settings import load_settings

_METRICS: dict[str, Metric] = {"decode": "decode tok/s", "prefill": "prefill tok/s"}
DEFAULT_MAX_N = 10  # when the sweep has no adaptive cap of its own


@click.command()
@click.argument("sweep", type=click.Path(path_type=Path))
@click.option("--good", help="a commit where the metric is as it should be (default: the "
              "sweep's first commit)")
@click.option("--bad", help="a later commit where it got worse (default: the sweep's second)")
@click.option("--metric", type=click.Choice(list(_METRICS)), default="decode",
              show_default=True, help="decode or prefill tok/s of the arm (higher is better)")
@click.option("--arm", help="the arm whose metric is bisected (default: the sweep's only one)")
@click.option("--backend", help="default: the sweep's only backend")
@click.option("--model", help="default: the sweep's only model")
@click.option("--factor", type=click.FloatRange(min=1, min_open=True), default=1.1,
              show_default=True, help="bad means slower than good by more than this factor")
@click.option("--repeats", type=click.IntRange(1, 100), help="repeats per commit between "
              "(default: the sweep's n); good and bad get enough more for these to decide")
@click.option("--max-n", type=click.IntRange(2, 100), help="most repeats per commit (default: "
              f"the sweep's adaptive.max_n, else {DEFAULT_MAX_N})")
@click.option("--parallel", type=click.IntRange(1, 32), default=1, show_default=True,
              help="commits measured per round (Pinpoint-style; 1 measures fewest)")
@click.option("--reuse", multiple=True, metavar="SWEEP", help="take this earlier sweep's "
              "measurements of the same cells (repeatable)")
@click.option("-o", "--out", type=click.Path(path_type=Path), default=Path("records"),
              show_default=True, help="where the bisect record goes")
def command(sweep: Path, good: str | None, bad: str | None, metric: str, arm: str | None,
            backend: str | None, model: str | None, factor: float, repeats: int | None,
            max_n: int | None, parallel: int, reuse: tuple[str, ...], out: Path) -> int:
    """Bisect the first-parent history from GOOD to BAD; exit 0 when the first bad commit is
    found, 1 when the bisect ends without one (no regression, undecided, ambiguous)."""
    settings = load_settings()
    base = read_sweep(sweep, settings)
    what = subject(base, backend, model, arm)
    names = endpoints(base.target.repo, good, bad, base)
    shas = list(names.values())
    if len(set(shas)) != 2:
        raise UserError(f"good and bad are the same commit ({shas[0][:12]}); bisect needs a "
                        "good commit and a later bad one")
    history = first_parents(base.target.repo, shas[0], shas[1])
    cap = max_n or (base.adaptive.max_n if base.adaptive else DEFAULT_MAX_N)
    rule = make_rule(_METRICS[metric], factor, repeats or base.n, cap, parallel)
    console = Console()
    console.print(f"bisecting {rule.metric} of {what.arm.name} on {what.backend} · {what.model}"
                  f": {len(history) - 2} commits between {shas[0][:12]} and {shas[1][:12]}",
                  highlight=False, soft_wrap=True)
    job = Bisect(settings=settings, base=base, source=str(sweep.resolve()), subject=what,
                 rule=rule, commits=[sha for sha, _ in history], subjects=dict(history),
                 names=names, say=lambda line: console.print(line, highlight=False,
                                                             soft_wrap=True, markup=False))
    job.reuse(list(reuse))
    record = job.run()
    written = _write(record, out)
    console.print(f"{record.outcome}: {record.reason}", highlight=False, soft_wrap=True,
                  markup=False)
    console.print(f"{record.measured} measurements (a linear scan: {record.linear_scan})",
                  highlight=False)
    for path in written:
        console.print(str(path), highlight=False, soft_wrap=True)
    return 0 if record.outcome == "found" else 1


def _write(record: BisectRecord, out: Path) -> list[Path]:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"cannot create {out} ({error.strerror}); give -o a writable "
                        "directory") from None
    md, js = out / f"{record.bisect_id}.md", out / f"{record.bisect_id}.json"
    js.write_text(record.model_dump_json(indent=1))
    md.write_text(render(record))
    return [md, js]
