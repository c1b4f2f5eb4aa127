"""History from real sweeps on the stand-in target, through a real worker: a planted step
(about 8x slower decode) at a known commit, a commit that fails to build, a run on a host the
idle gate found busy, a run slowed by CPU hogs the gate was not told of (a spike); then
confirmation measures the step again and a planted false one."""

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import pytest

from jobs.trends.changes import Step
from jobs.trends.regressions import Candidate
from runner.demo.local_fleet import LocalFleet, settings_env
from runner.demo.redis_server import RedisServer
from runner.demo.target_repo import DEMO_MODELS, make_models
from runner.trends.confirm import confirm
from runner.trends.handoff import bisect_step
from tests.support.fleet import fleet_settings, submit, sweep_file, until_live, wait
from tests.support.load import favoured, hogs
from tests.targets.bisect_target import BROKEN, PLANTED, History, make_history
from tests.trends.browser import browse
from workers.shared.settings import Settings
from workers.shared.state import Store

pytestmark = pytest.mark.integration
SWEEP_DEADLINE_S = 300  # 8 commits (and 8 builds the first time): about a minute here
BUSY_AT = 2  # the commit measured again on a host the gate calls busy
SPIKE_AT = 3  # the commit measured again beside CPU hogs, unflagged: one slow run
QUIET = 1000.0  # an idle threshold no load reaches: this shared host is never idle


@dataclass(frozen=True)
class Lab:
    root: Path
    history: History
    settings: Settings
    env: dict[str, str]
    spike: str  # the sweep measured beside the hogs


def _measure(settings: Settings, root: Path, name: str, history: History,
             commits: list[str], hogged: bool = False) -> str:
    fleet = LocalFleet(settings, root / f"logs-{name}")
    worker = fleet.start("cpu", f"history-{name}")
    try:
        until_live(settings, f"history-{name}")
        if not hogged:
            favoured(worker.pid)  # other tests' load must not make steps or noise here
        with hogs([worker.pid]) if hogged else nullcontext():
            sweep_id = submit(settings, sweep_file(root, spec(history, commits, n=1)))
            wait(Store.connect(settings.redis_url), sweep_id, SWEEP_DEADLINE_S)
    finally:
        fleet.stop()
    return sweep_id


def spec(history: History, commits: list[str], n: int) -> dict[str, object]:
    """Short decodes: the planted check still makes each several times slower."""
    return {"name": "history-e2e", "target": {"repo": str(history.repo), "commits": commits},
            "models": ["tinymoe-a3"], "backends": {"cpu": {"build": "tinymoe-build"}},
            "arms": [{"name": "fused", "recipe": "tinymoe-bench-decode", "baseline": True,
                      "params": {"prompt_tokens": 16, "max_tokens": 32, "warmup_tokens": 2}}],
            "n": n, "warmup": 0}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    root = tmp_path_factory.mktemp("history")
    history = make_history(root / "tinymoe")
    commits = history.commits
    with RedisServer(root / "redis") as server:
        quiet = fleet_settings(root, server.url, idle_load1=QUIET)
        make_models(quiet.models_dir, DEMO_MODELS)
        # Forward, then backward: the host's load drifts over minutes, and a drift in commit
        # order would look like a trend.
        _measure(quiet, root, "forward", history, commits)
        _measure(quiet, root, "backward", history, commits[::-1])
        busy = quiet.model_copy(update={"idle_load1": 0.0})
        _measure(busy, root, "busy", history, [commits[BUSY_AT]])
        spike = _measure(quiet, root, "spike", history, [commits[SPIKE_AT]], hogged=True)
        fleet = LocalFleet(quiet, root / "logs")
        favoured(fleet.start("cpu", "history-confirm").pid)  # its A/A arm sets the floor
        env = {**os.environ, **settings_env(quiet), "COLUMNS": "200",
               "BENCHFLEET_HISTORY_DB": str(root / "history.sqlite")}
        try:
            yield Lab(root, history, quiet, env, spike)
        finally:
            fleet.stop()


def benchfleet(lab: Lab, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runner.cli", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=lab.root, env=lab.env)


def test_the_planted_step_is_found_at_its_commit_and_the_busy_run_is_not_used(
        lab: Lab) -> None:
    done = benchfleet(lab, "history", "--rebuild", "--json", "--metric", "decode_tps")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    [series] = found["series"]
    commits = lab.history.commits
    placed = [p["commit"] for p in series["points"]]
    built = [c for i, c in enumerate(commits) if i != BROKEN]
    assert placed == sorted(built * 2 + [commits[BUSY_AT], commits[SPIKE_AT]],
                            key=commits.index)
    busy = [p for p in series["points"] if p["flags"]]
    assert [p["commit"] for p in busy] == [commits[BUSY_AT]]
    assert busy[0]["used"] is False and "host not idle" in busy[0]["flags"]
    # The spike is used (nothing flagged it) and is really slower than its commit's other runs.
    [spike] = [p for p in series["points"] if p["sweep_id"] == lab.spike]
    calm = [p["mean"] for p in series["points"] if p["commit"] == commits[SPIKE_AT]
            and p["sweep_id"] != lab.spike]
    assert spike["used"] and spike["mean"] < 0.5 * min(calm), (spike["mean"], calm)
    kept = [(commit, step) for commit, step in series["steps"] if step["kept"]]
    seen = [(round(p["mean"], 1), p["flags"]) for p in series["points"]]
    assert [c for c, _ in kept] == [commits[PLANTED]], (seen, series["steps"])
    assert kept[0][1]["change"] < -0.5  # the planted check makes decode several times slower
    # Commits 0-3 and 5 before it, 6-8 after (each measured twice, one place each); the busy
    # run is not in the fit.
    assert (kept[0][1]["segment_before"], kept[0][1]["segment_after"]) == (5, 3)
    assert any("does not compile" in s or "build" in s for s in found["problems"])
    [bed] = found["testbeds"]
    assert "chip" in bed["fields"] and "hostname" not in bed["fields"]


def test_a_testbed_s_own_thresholds_judge_its_steps(lab: Lab) -> None:
    """This shared 2-core host as a testbed that asks for a 95 % change: the planted step is
    still listed, dropped by that filter; an entry for a testbed history lacks is a note."""
    testbed = json.loads(benchfleet(lab, "history", "--json").stdout)["testbeds"][0]["id"]
    thresholds = lab.root / "thresholds.yaml"
    thresholds.write_text(f"testbeds:\n  {testbed}:\n    min_change: 0.95\n"
                          "  h200-typo:\n    noise_multiple: 3\n")
    env = {**lab.env, "BENCHFLEET_HISTORY_THRESHOLDS": str(thresholds)}
    done = subprocess.run([sys.executable, "-m", "runner.cli", "history", "--json", "--metric",
                           "decode_tps", "--arm", "fused"], capture_output=True, text=True,
                          timeout=120, cwd=lab.root, env=env)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    [(commit, step)] = [(c, s) for c, s in found["series"][0]["steps"]
                        if c == lab.history.commits[PLANTED]]
    assert not step["kept"] and any("under 95%" in why for why in step["dropped_by"])
    assert any("names testbed h200-typo, which no point in history has" in s
               for s in found["problems"])


def test_the_index_rebuilds_from_the_store_and_the_tables_name_the_step(lab: Lab) -> None:
    (lab.root / "history.sqlite").unlink()
    done = benchfleet(lab, "history", "--metric", "decode_tps")
    assert done.returncode == 0, done.stderr
    assert f"step at {lab.history.commits[PLANTED][:12]}" in done.stdout
    assert "candidate" in done.stdout and "(not used)" in done.stdout


def test_confirmation_confirms_the_step_and_exits_1(lab: Lab) -> None:
    done = benchfleet(lab, "regressions", "--confirm", "--json", timeout=400)
    assert done.returncode == 1, done.stdout + done.stderr
    found = json.loads(done.stdout[done.stdout.index("{"):])
    [row] = found["candidates"]
    assert (row["state"], row["candidate"]["commit"]) == ("confirmed",
                                                         lab.history.commits[PLANTED])
    assert row["verdict"]["comparison"]["answer"] == "differs"
    assert found["tally"][row["candidate"]["testbed"]]["confirmed"] == 1
    again = benchfleet(lab, "regressions")
    shown = benchfleet(lab, "history", "--metric", "decode_tps").stdout
    (lab.root / "after-confirm.txt").write_text(shown)
    assert again.returncode == 1 and "confirmed: " in again.stdout, again.stdout


def test_a_planted_false_step_is_refuted(lab: Lab) -> None:
    commits = lab.history.commits
    sweep = json.loads(benchfleet(lab, "history", "--json").stdout)["series"][0]["points"][1]
    false = Candidate(testbed="t", model="tinymoe-a3", arm="fused", metric="decode_tps",
                      commit=commits[2], before=commits[1], commits_spanned=1,
                      sweep=sweep["sweep_id"],
                      step=Step(index=2, before=220.0, after=180.0, change=-0.18, pvalue=0.001,
                                spread=5.0, multiple=8.0, steppiness=0.9, segment_before=3,
                                segment_after=3, kept=True, dropped_by=[]))
    verdict = confirm(lab.settings, false, print)
    assert verdict.state == "not confirmed", verdict.reason


def test_the_published_site_goes_from_the_index_to_a_point_to_its_record(lab: Lab) -> None:
    site = lab.root / "site"
    done = benchfleet(lab, "publish", "-o", str(site))
    assert done.returncode == 0, done.stderr
    shots = Path(os.environ.get("BENCHFLEET_SCREENSHOTS", lab.root / "shots"))
    visited = browse(site, shots, "fused", lab.history.commits[PLANTED])
    shown = json.loads(benchfleet(lab, "history", "--json", "--arm", "fused", "--metric",
                                  "decode_tps").stdout)["series"][0]["points"]
    # 8 commits twice, two thrice (the busy run, the spike), and the confirmation sweeps'
    # points since.
    assert visited["plotted"] == len(shown) >= 18
    assert visited["flagged"] == 1 and visited["step"] == 1
    assert "check passes" in visited["tooltip"] or "check fails" in visited["tooltip"]
    assert visited["record"].startswith("Record ") and visited["regressions"] == "confirmed"


def test_a_torn_attempt_is_named_and_its_point_left_out(lab: Lab) -> None:
    commits = lab.history.commits
    torn = commits[-1]
    # The forward and backward sweeps measured the last commit (cell folders start with it).
    torn_logs = list((lab.root / "artifacts").glob(f"history-e2e-2*/{torn[:12]}-*/attempt-*/"
                                                   "measure.stdout.txt"))
    assert len(torn_logs) == 2
    for log in torn_logs:
        log.write_text(log.read_text() + "torn\n")
    done = benchfleet(lab, "history", "--rebuild", "--json", "--arm", "fused", "--metric",
                      "decode_tps")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert any("does not match its sha256" in s for s in found["problems"])
    assert torn not in [p["commit"] for p in found["series"][0]["points"]]


def test_a_confirmed_step_over_two_commits_is_handed_to_bisect(lab: Lab) -> None:
    commits = lab.history.commits
    points = json.loads(benchfleet(lab, "history", "--json", "--arm", "fused", "--metric",
                                   "decode_tps").stdout)["series"][0]["points"]
    # As if commit 6 had never been measured: the step spans 5..7.
    wide = Candidate(testbed="t", model="tinymoe-a3", arm="fused", metric="decode_tps",
                     commit=commits[PLANTED + 1], before=commits[PLANTED - 1],
                     commits_spanned=2, sweep=points[0]["sweep_id"],
                     step=Step(index=10, before=130.0, after=12.0, change=-0.9, pvalue=1e-5,
                               spread=20.0, multiple=5.0, steppiness=0.7, segment_before=10,
                               segment_after=4, kept=True, dropped_by=[]))
    verdict = confirm(lab.settings, wide, print)
    assert verdict.state == "confirmed", verdict.reason
    written = bisect_step(lab.settings, wide, lab.root / "bisects", print)
    found = json.loads(written.with_suffix(".json").read_text())
    assert (found["outcome"], found["culprit"]) == ("found", commits[PLANTED])
