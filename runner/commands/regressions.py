"""benchfleet regressions [--since COMMIT] [--confirm]: the steps in history that made a
series slower, with their evidence and what confirmation said; exit 1 only for confirmed ones
(as `asv continuous` does)."""

import json
from pathlib import Path

import click
from rich.console import Console

from jobs.trends.regressions import Listed, listed, tally
from jobs.trends.timeline import candidates
from runner.trends.confirm import confirm
from runner.trends.handoff import bisect_step
from runner.trends.index import build, connect
from runner.trends.query import position_of, read_thresholds, series
from runner.trends.verdicts import remember, verdicts
from workers.shared.settings import Settings, load_settings
from workers.shared.stores import open_store


@click.command()
@click.option("--since", help="only steps after this commit (a sha or prefix in history)")
@click.option("--confirm", "confirming", is_flag=True, help="measure every open candidate "
              "again (the commits either side, with an A/A arm) and remember the answer")
@click.option("--rebuild", is_flag=True, help="read the whole store into a new index, not "
              "only the sweeps that changed")
@click.option("--branch", default="HEAD", show_default=True)
@click.option("-o", "--out", type=click.Path(path_type=Path), default=Path("records"),
              show_default=True, help="where a confirmed step's bisect record goes")
@click.option("--json", "as_json", is_flag=True, help="print the candidates as JSON")
def command(since: str | None, confirming: bool, rebuild: bool, branch: str, out: Path,
            as_json: bool) -> int:
    """List regression candidates; exit 1 when one is confirmed, else 0 (2: bad input)."""
    settings = load_settings()
    thresholds = read_thresholds(settings.history_thresholds)
    store = open_store(settings.artifacts, settings)
    build(store, settings.history_db, branch, rebuild)
    with connect(settings.history_db) as conn:
        after = position_of(conn, since) if since else None
        found = [c for s in series(conn, thresholds) for c in candidates(s, after)]
    console = Console(stderr=as_json)  # progress apart from the JSON
    rows = listed(found, verdicts(store))
    if confirming:
        rows = [_confirmed(settings, r, out, console) for r in rows]
        rows = listed(found, verdicts(store))
    if as_json:
        click.echo(json.dumps({"candidates": [r.model_dump(mode="json") for r in rows],
                               "tally": tally(rows)}, indent=1))
    else:
        _show(console, rows)
    return 1 if any(r.state == "confirmed" for r in rows) else 0


def _confirmed(settings: Settings, row: Listed, out: Path, console: Console) -> Listed:
    if row.state != "candidate":
        return row
    c = row.candidate
    say = lambda line: console.print(line, highlight=False, soft_wrap=True, markup=False)  # noqa: E731
    say(f"confirming {c.testbed} · {c.model} · {c.arm} · {c.metric} at {c.commit[:12]}")
    verdict = confirm(settings, c, say)
    if verdict.state == "confirmed" and c.commits_spanned > 1:
        written = bisect_step(settings, c, out, say)
        verdict = verdict.model_copy(update={"bisect": str(written)})
    remember(open_store(settings.artifacts, settings), verdict)
    say(f"  {verdict.state}: {verdict.reason}")
    return row.model_copy(update={"state": verdict.state, "verdict": verdict})


def _show(console: Console, rows: list[Listed]) -> None:
    def say(line: str) -> None:
        console.print(line, highlight=False, soft_wrap=True, markup=False)

    if not rows:
        say("no regression candidates")
    for r in rows:
        c, s = r.candidate, r.candidate.step
        span = f"{c.before[:12]}..{c.commit[:12]}" + (
            f" ({c.commits_spanned} commits)" if c.commits_spanned > 1 else "")
        say(f"{r.state}: {c.testbed} · {c.model} · {c.arm} · {c.metric} at {span}: "
            f"{s.before:.2f} -> {s.after:.2f} ({s.change:+.1%}, p {s.pvalue:.2g}, "
            f"{s.multiple:.1f}x the spread, steppiness {s.steppiness:.2f}, "
            f"{s.segment_before}+{s.segment_after} points)")
        if r.verdict:
            say(f"  {r.verdict.reason} (sweeps {', '.join(r.verdict.sweeps)})")
            if r.verdict.bisect:
                say(f"  bisect: {r.verdict.bisect}")
    for bed, counts in tally(rows).items():
        say(f"testbed {bed}: {counts['confirmed']} confirmed, {counts['not confirmed']} not "
            f"confirmed, {counts['not settled']} not settled, {counts['candidate']} open")
