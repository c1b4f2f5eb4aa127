"""A confirmed step over more than one commit goes to bisect, whose record is written beside
the verdict: the first commit after which the series is slower."""

import math
from collections.abc import Callable
from pathlib import Path

from jobs.compare.bisect_plan import Metric, make_rule
from jobs.compare.bisect_record import render
from jobs.trends.regressions import Candidate
from runner.bisect.first_parents import first_parents
from runner.bisect.rounds import Bisect, Subject
from runner.sweep_file import read_sweep_file
from runner.trends.confirm import MAX_ROUNDS, ROUND_N, confirmation_sweep
from workers.shared.settings import Settings
from workers.shared.stores import open_store

_METRICS: dict[str, Metric] = {"decode_tps": "decode tok/s", "prefill_tps": "prefill tok/s"}


def bisect_step(settings: Settings, c: Candidate, out: Path, say: Callable[[str], None]
                ) -> Path:
    stored = read_sweep_file(open_store(settings.artifacts, settings), c.sweep)
    base = confirmation_sweep(stored.sweep, stored.cells, c).model_copy(update={"aa": False})
    history = first_parents(base.target.repo, c.before, c.commit)
    # Bad means slower than the geometric middle of the step: half of it, in ratio.
    factor = max(math.sqrt(c.step.before / c.step.after), 1.001)
    rule = make_rule(_METRICS[c.metric], factor, ROUND_N, ROUND_N * MAX_ROUNDS, 1)
    arm = base.arms[0]
    job = Bisect(settings=settings, base=base, source=f"regression {c.key}",
                 subject=Subject(next(iter(base.backends)), c.model, arm), rule=rule,
                 commits=[sha for sha, _ in history], subjects=dict(history),
                 names={c.before: c.before, c.commit: c.commit}, say=say)
    record = job.run()
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{record.bisect_id}.json").write_text(record.model_dump_json(indent=1))
    written = out / f"{record.bisect_id}.md"
    written.write_text(render(record))
    say(f"  bisect: {record.outcome}: {record.reason}")
    return written
