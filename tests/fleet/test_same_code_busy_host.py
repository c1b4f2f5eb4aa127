"""The issue's case: on a loaded host, two arms running identical code. The record must call it
"not significant", "same" or "not yet known", never faster or slower, and say the host was not
idle."""

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.faults.harness import lab
from tests.support.fleet import cli, until_live

pytestmark = pytest.mark.integration
# Two processes spinning on arithmetic: a 2-core host as busy as the one in issue #6.
BURN = "import time\nend = time.monotonic() + 600\nx = 0\nwhile time.monotonic() < end: x += 1\n"


@contextmanager
def one_cpu() -> Iterator[None]:
    """This test's burners, worker and benchmarks share one CPU (children inherit the
    affinity): that CPU is as busy as the issue's host, and the tests running beside this one
    on the other CPUs are not slowed by it."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {max(before)})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def test_identical_arms_on_a_busy_host_never_differ(tmp_path: Path) -> None:
    with one_cpu():
        burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(2)]
    try:
        with one_cpu(), lab(tmp_path) as lab_:
            lab_.fleet.start("cpu", "busy")
            until_live(lab_.settings, "busy")
            spec = tmp_path / "same.yaml"
            spec.write_text(f"""\
name: same-code
target: {{repo: {lab_.repo}, commits: main}}
models: [tinymoe-a3]
backends: {{cpu: {{build: tinymoe-build}}}}
arms:
  - {{name: gather, recipe: bench, baseline: true}}
  - {{name: same, recipe: bench}}
n: 7
aa: true
warmup: 0
""")
            done = cli(lab_.settings, "submit", "--again", str(spec))  # each round measures
            assert done.returncode == 0, done.stderr
            sweep_id = done.stdout.strip().splitlines()[-1]
            lab_.wait(sweep_id)
            made = cli(lab_.settings, "record", sweep_id, "-o", str(tmp_path / "record"))
            assert "benchfleet check: passes" in made.stdout, made.stdout
    finally:
        for b in burners:
            b.kill()
    record = json.loads((tmp_path / "record" / f"{sweep_id}.json").read_text())
    (group,) = record["groups"]
    answers = {(r["arm"], c["metric"]): (c["answer"], c["word"]) for r in group["rows"]
               for c in (r["decode_comparison"], r["prefill_comparison"]) if c}
    assert set(answers) == {(a, m) for a in ("same", "gather-aa")
                            for m in ("decode tok/s", "prefill tok/s")}
    # The A/A arm has no floor but itself: identical runs land wholly apart from the baseline's
    # by chance with p = 2 / C(2n, n), 0.8 % a comparison at n = 5 (a CI run saw it) and
    # 0.06 % at the n = 7 used here.
    assert all(answer in ("overlap", "undecided") and word not in ("faster", "slower")
               for answer, word in answers.values()), answers
    assert any("host not idle" in m["flags"] for m in group["measurements"])
