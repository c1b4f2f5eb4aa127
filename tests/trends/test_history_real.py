"""History from real sweeps on the stand-in target, through a real worker: a planted step
(about 8x slower decode) at a known commit, a commit that fails to build, a run on a host the
idle gate found busy; then confirmation measures the step again and a planted false one."""

import json
import os
import subprocess
import sys
from collections.abc import Iterator
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
from tests.targets.bisect_target import BROKEN, PLANTED, History, make_history
from tests.trends.browser import browse
from workers.shared.settings import Settings
from workers.shared.state import Store

pytestmark = pytest.mark.integration
SWEEP_DEADLINE_S = 300  # 8 commits (and 8 builds the first time): about a minute here
BUSY_AT = 2  # the commit measured again on a host the gate calls busy
QUIET = 1000.0  # an idle threshold no load reaches: this shared host is never idle


@dataclass(frozen=True)
class Lab:
    root: Path
    history: History
    settings: Settings
    env: dict[str, str]


def _measure(settings: Settings, root: Path, name: str, history: History,
             commits: list[str]) -> None:
    fleet = LocalFleet(settings, root / f"logs-{name}")
    fleet.start("cpu", f"history-{name}")
    try:
        until_live(settings, f"history-{name}")
        sweep_id = submit(settings, sweep_file(root, spec(history, commits, n=1)))
        wait(Store.connect(settings.redis_url), sweep_id, SWEEP_DEADLINE_S)
    finally:
        fleet.stop()


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
        fleet = LocalFleet(quiet, root / "logs")
        fleet.start("cpu", "history-confirm")
        env = {**os.environ, **settings_env(quiet), "COLUMNS": "200",
               "BENCHFLEET_HISTORY_DB": str(root / "history.sqlite")}
        try:
            yield Lab(root, history, quiet, env)
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
    assert placed == sorted(built * 2 + [commits[BUSY_AT]], key=commits.index)
    busy = [p for p in series["points"] if p["flags"]]
    assert [p["commit"] for p in busy] == [commits[BUSY_AT]]
    assert busy[0]["used"] is False and "host not idle" in busy[0]["flags"]
    kept = [(commit, step) for commit, step in series["steps"] if step["kept"]]
    seen = [(round(p["mean"], 1), p["flags"]) for p in series["points"]]
    assert [c for c, _ in kept] == [commits[PLANTED]], (seen, series["steps"])
    assert kept[0][1]["change"] < -0.5  # the planted check makes decode several times slower
    # Commits 0-3 and 5, twice each: the busy point is not in the fit.
    assert (kept[0][1]["segment_before"], kept[0][1]["segment_after"]) == (10, 6)
    assert any("does not compile" in s or "build" in s for s in found["problems"])
    [bed] = found["testbeds"]
    assert "chip" in bed["fields"] and "hostname" not in bed["fields"]


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
    assert again.returncode == 1 and "confirmed: " in again.stdout


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
    # 8 commits twice, one thrice (the busy run), and the confirmation sweeps' points since.
    assert visited["plotted"] == len(shown) >= 17
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
    assert confirm(lab.settings, wide, print).state == "confirmed"
    written = bisect_step(lab.settings, wide, lab.root / "bisects", print)
    found = json.loads(written.with_suffix(".json").read_text())
    assert (found["outcome"], found["culprit"]) == ("found", commits[PLANTED])
