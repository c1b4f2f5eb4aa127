"""A coordinator killed at each step of `submit` (SIGKILL after sweep.json, after the save in
Redis, mid-publish), then one `submit --resume`: 2,000 cells each queued exactly once (the
bookkeeping, no workers), and a small sweep measured end to end, each cell once at attempt 1.
A store that cannot take sweep.json is one sentence, with nothing left in Redis."""

import base64
import contextlib
import json
import re
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from runner.demo.target_repo import git
from tests.faults.harness import Lab, lab, small_tmpfs
from tests.support.cut_submit import STEPS, cut
from tests.support.fleet import cli, sweep_file
from workers.shared.queues import backend_queue
from workers.shared.redis_keys import PENDING

pytestmark = pytest.mark.integration


def _two_commits(lab_: Lab) -> list[str]:
    """Two commits the bench runs on (two groups per backend): main and an empty commit."""
    git(lab_.repo, "commit", "--quiet", "--allow-empty", "-m", "the same code, another sha")
    return [lab_.shas[1], git(lab_.repo, "rev-parse", "HEAD")]


def _spec(lab_: Lab, commits: list[str], name: str, backends: list[str], arms: int, n: int
          ) -> dict[str, object]:
    return {"name": name, "target": {"repo": str(lab_.repo), "commits": commits},
            "models": ["tinymoe-a3"], "backends": {b: {"build": "tinymoe-build"} for b in backends},
            "arms": [{"name": f"arm{i}", "recipe": "bench", "baseline": i == 0}
                     for i in range(arms)], "n": n, "warmup": 0}


def _resumed(lab_: Lab, sweep_id: str) -> tuple[str, float]:
    start = time.monotonic()
    done = cli(lab_.settings, "submit", "--resume", sweep_id)
    assert done.returncode == 0, done.stderr
    return done.stdout, time.monotonic() - start


def _queued_cells(lab_: Lab, sweep_id: str, queues: list[str]) -> Counter[str]:
    """How many queued messages carry each cell of the sweep."""
    carried: Counter[str] = Counter()
    for queue in queues:
        for raw in lab_.store.r.lrange(queue, 0, -1):
            (sweep, items), _, _ = json.loads(base64.b64decode(json.loads(raw)["body"]))
            if sweep == sweep_id:
                carried.update(json.loads(e)["cell"]["id"] for e, _ in items)
    return carried


def test_a_submit_killed_at_each_step_resumes_2000_cells_each_queued_once(
        tmp_path: Path, matrix: list[dict]) -> None:
    backends = ["cut-a", "cut-b"]  # no worker serves them: the messages stay in their queues
    queues = [backend_queue(b) for b in backends]
    with lab(tmp_path) as lab_:
        commits = _two_commits(lab_)
        for step in STEPS:
            # 2 commits x 2 backends = 4 groups, of 5 arms x 100 repeats each
            path = sweep_file(tmp_path, _spec(lab_, commits, f"big-{step}", backends, 5, 100))
            sweep_id = cut(lab_.settings, step, path)
            if step != "after-sweep-file":  # in Redis: status says what finishes it
                status = cli(lab_.settings, "status", sweep_id)
                assert status.returncode == 3
                missing = 1000 if step == "mid-publish" else 2000
                assert (f"saved, {missing:,} of 2,000 cells not yet published (its submit was "
                        f"cut short): run `benchfleet submit --resume {sweep_id}`"
                        ) in status.stdout, status.stdout
            if step == "after-save":  # nothing failed: rerun names what to run instead
                rerun = cli(lab_.settings, "rerun", sweep_id, "--failed")
                assert f"run `benchfleet submit --resume {sweep_id}`" in rerun.stdout
            said, took = _resumed(lab_, sweep_id)
            assert f"{2000 - (step == 'mid-publish') * 1000} cells queued now" in said, said
            again, _ = _resumed(lab_, sweep_id)  # a second resume queues nothing
            assert "0 cells queued now, 2000 queued before or ended" in again, again

            _, cells, _ = lab_.store.sweep(sweep_id)
            assert len(cells) == 2000
            assert _queued_cells(lab_, sweep_id, queues) == Counter(c.id for c in cells)
            pending = [m for m in map(json.loads, lab_.store.r.hvals(PENDING))
                       if m["sweep_id"] == sweep_id]
            assert len(pending) == 4 and not lab_.store.unpublished(sweep_id)
            states = lab_.store.states(sweep_id).values()
            assert {(s.status, s.attempt or 0) for s in states} == {("queued", 0)}
            matrix.append({"fault": f"the coordinator killed {step.replace('-', ' ')} of a "
                           "2,000-cell submit", "outcome": "`submit --resume` queued the "
                           "missing groups; every cell in exactly one message",
                           "recovery_s": round(took, 1)})


def test_a_cut_submit_resumed_measures_every_cell_once(tmp_path: Path,
                                                       matrix: list[dict]) -> None:
    with lab(tmp_path) as lab_:
        lab_.fleet.start("cpu", "w1")  # the fleet keeps serving while the coordinator dies
        ids, commits = [], _two_commits(lab_)
        for step in STEPS:  # 3 sweeps of 2 commits x 2 arms: 12 cells in all
            path = sweep_file(tmp_path, _spec(lab_, commits, f"small-{step}", ["cpu"], 2, 1))
            ids.append(sweep_id := cut(lab_.settings, step, path))
            _resumed(lab_, sweep_id)
        for sweep_id in ids:
            lab_.wait(sweep_id)
            accepted = lab_.verify(sweep_id)
            states = lab_.store.states(sweep_id)
            assert len(states) == 4 and {s.status for s in states.values()} == {"done"}
            assert set(accepted.values()) == {1} and len(accepted) == 4  # once, attempt 1
        matrix.append({"fault": "the coordinator killed at each step of a 12-cell submit, a "
                       "worker live", "outcome": "after `submit --resume`, every cell "
                       "measured once, at attempt 1", "recovery_s": None})


def test_a_store_that_cannot_take_sweep_json_leaves_nothing_in_redis(
        tmp_path: Path, matrix: list[dict]) -> None:
    with small_tmpfs(tmp_path / "small") as store, lab(tmp_path, artifacts=store) as lab_:
        path = sweep_file(tmp_path, _spec(lab_, list(lab_.shas), "full", ["cpu"], 2, 2))
        with contextlib.suppress(OSError):  # ENOSPC: full, as this test wants
            (store / "filler").write_bytes(b"\0" * 65536)
        for why in ("No space left on device", "Read-only file system"):
            done = cli(lab_.settings, "submit", "--wait-for-worker", str(path))
            assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
            assert re.fullmatch(  # after the warning that no worker is live
                rf"benchfleet: warning: .*\nsweep \S+: storing and queuing 8 cells .*\n"
                rf"benchfleet: cannot write "
                rf"\S+/sweep.json to the artifact store {store} \({why}\); free space "
                r"there or set BENCHFLEET_ARTIFACTS to a writable store, then submit "
                r"again \(nothing was saved or queued\)\n", done.stderr), done.stderr
            assert lab_.store.sweep_ids() == [] and lab_.store.r.dbsize() == 0
            subprocess.run(["mount", "-o", "remount,ro", str(store)], check=True)
    matrix.append({"fault": "the artifact store cannot take sweep.json at submit (a full "
                   "64 KiB tmpfs, then read-only)", "outcome": "one sentence naming the store "
                   "and ENOSPC or EROFS, exit 2; nothing in Redis, nothing queued",
                   "recovery_s": None})
