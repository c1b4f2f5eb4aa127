"""bisect and compare end to end: a regression planted several commits deep, a commit that
fails to build, one real worker, its own Redis; every figure is read back from the artifacts."""

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from runner.demo.local_fleet import LocalFleet, settings_env
from runner.demo.redis_server import RedisServer
from runner.demo.target_repo import DEMO_MODELS, make_models
from tests.support.fleet import fleet_settings, submit, sweep_file, until_live, wait
from tests.targets.bisect_target import BROKEN, PLANTED, History, make_history
from workers.shared.settings import Settings
from workers.shared.state import Store
from workers.shared.stores.local import LocalStore

pytestmark = pytest.mark.integration
DECODE = re.compile(r"^  Decode:\s+[0-9.]+ ms \(([0-9.]+) tok/s\)$", re.M)
BISECT_DEADLINE_S = 420  # 19 measurements and 6 builds take about two minutes here
# The planted commit makes decode about 8x slower; identical runs here drift by up to 2.5x
# under the other loads of this shared host, so "worse" must mean "more than 2x slower".
FACTOR = "2"


@dataclass(frozen=True)
class Lab:
    root: Path
    history: History
    settings: Settings
    store: Store


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    root = tmp_path_factory.mktemp("bisect")
    history = make_history(root / "tinymoe")
    with RedisServer(root / "redis") as server:
        settings = fleet_settings(root, server.url)
        make_models(settings.models_dir, DEMO_MODELS)
        fleet = LocalFleet(settings, root / "logs")
        fleet.start("cpu", "bisect-cpu")
        until_live(settings, "bisect-cpu")
        try:
            yield Lab(root, history, settings, Store.connect(server.url))
        finally:
            fleet.stop()


def spec(history: History, commits: list[str], n: int = 3) -> dict[str, object]:
    return {"name": "bisect-e2e", "target": {"repo": str(history.repo), "commits": commits},
            "models": ["tinymoe-a3"], "backends": {"cpu": {"build": "tinymoe-build"}},
            "arms": [{"name": "fused", "recipe": "tinymoe-bench-decode", "baseline": True,
                      "params": {"prompt_tokens": 32, "max_tokens": 64, "warmup_tokens": 4}}],
            "n": n, "warmup": 0}  # each run its own process: a warm-up warms nothing here


def benchfleet(lab: Lab, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runner.cli", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=lab.root,
                          env={**os.environ, **settings_env(lab.settings), "COLUMNS": "200"})


@pytest.fixture(scope="module")
def bisected(lab: Lab) -> dict[str, object]:
    path = sweep_file(lab.root, spec(lab.history, [lab.history.commits[0], "main"]))
    start = time.monotonic()
    done = benchfleet(lab, "bisect", str(path), "--factor", FACTOR, "-o", "out",
                      timeout=BISECT_DEADLINE_S)
    print(f"bisect took {time.monotonic() - start:.0f} s\n{done.stdout}")
    assert done.returncode == 0, done.stdout + done.stderr
    found = json.loads(next((lab.root / "out").glob("*.json")).read_text())
    assert isinstance(found, dict)
    return found


def test_bisect_finds_the_planted_commit_with_the_fewest_measurements(
        lab: Lab, bisected: dict[str, object]) -> None:
    r = bisected
    commits = lab.history.commits
    assert r["outcome"] == "found" and r["culprit"] == commits[PLANTED]
    assert r["last_good"] == commits[PLANTED - 1]
    # Good and bad at 5 each, then 3 commits between at 3 each: 19, against 28 for a scan
    # of every buildable commit. The broken middle cost a build, no measurement.
    assert (r["measured"], r["linear_scan"], r["commits_tried"]) == (19, 28, 6)
    measured = [m["commit"] for m in r["measurements"]]  # type: ignore[attr-defined]
    assert {c: measured.count(c) for c in measured} == {
        commits[0]: 5, commits[-1]: 5, commits[3]: 3, commits[PLANTED]: 3,
        commits[PLANTED - 1]: 3}
    failures = r["failures"]
    assert isinstance(failures, dict) and list(failures) == [commits[BROKEN]]
    assert all("build" in why for why in failures[commits[BROKEN]])
    asked = [[q["commit"] for q in rnd["requests"]] for rnd in r["rounds"]]  # type: ignore[attr-defined]
    assert asked == [[commits[0], commits[-1]], [commits[BROKEN]], [commits[3]],
                     [commits[PLANTED]], [commits[PLANTED - 1]]]
    verdicts = {j["index"]: j["verdict"] for j in r["judgements"]}  # type: ignore[attr-defined]
    assert (verdicts[3], verdicts[BROKEN], verdicts[5], verdicts[PLANTED]) == (
        "good", "untestable", "good", "bad")
    md = next((lab.root / "out").glob("*.md")).read_text()
    assert f"**First bad commit: `{commits[PLANTED][:12]}` decode: check the router" in md


def test_every_bisect_figure_is_a_measurement_in_the_store(lab: Lab,
                                                           bisected: dict[str, object]) -> None:
    store = LocalStore(lab.settings.artifacts)
    cached: dict[str, list[bool]] = {}
    for m in bisected["measurements"]:  # type: ignore[attr-defined]
        files = store.read(m["sweep_id"], m["cell_id"], m["attempt"])  # sha256-checked
        assert [float(v) for v in DECODE.findall(files["measure.stdout.txt"].read_text())] == [
            m["value"]]
        cached.setdefault(m["commit"], []).append(m["build_cached"])
    # One build per commit: its first cell built it, every later cell found it built.
    assert all(flags[0] is False and all(flags[1:]) for flags in cached.values())


def test_compare_gates_on_the_regression_and_passes_an_aa_pair(
        lab: Lab, bisected: dict[str, object]) -> None:
    good, bad = lab.history.commits[0], lab.history.commits[-1]
    first = bisected["rounds"][0]["sweeps"][0]  # type: ignore[index]
    worse = benchfleet(lab, "compare", first, "--commits", good[:10], bad[:10], "--factor",
                       FACTOR)
    assert worse.returncode == 1, worse.stdout + worse.stderr
    assert "| **worse** | cpu | tinymoe-a3 | fused | decode tok/s |" in worse.stdout
    assert "the gate fails" in worse.stdout and "** (exit 1)." in worse.stdout

    again = submit(lab.settings, sweep_file(lab.root, {**spec(lab.history, [good], 5),
                                                               "name": "aa-again"}))
    wait(lab.store, again)
    # Identical code, measured a minute apart: at the factor this host's noise calls for, the
    # gate must not fire (at 1.1 it can here: identical runs drift far more under the other loads).
    # Its word may still be "better" when the host's load fell between the two sweeps (their
    # runs are not interleaved), but never "worse" beyond the factor.
    same = benchfleet(lab, "compare", first, again, "--commits", good[:10], good[:10],
                      "--factor", FACTOR, "--json")
    assert same.returncode == 0, same.stdout + same.stderr
    result = json.loads(same.stdout)
    decode = next(r for r in result["rows"] if r["metric"] == "decode tok/s")
    assert result["gate"] == "pass" and decode["change"] != "worse", decode
    print(f"A/A: {decode['comparison']['ratio']} {decode['comparison']['answer']}")


def test_a_second_bisect_reuses_every_cell_measured(lab: Lab,
                                                    bisected: dict[str, object]) -> None:
    rounds = [s for rnd in bisected["rounds"] for s in rnd["sweeps"]]  # type: ignore[attr-defined]
    path = sweep_file(lab.root, spec(lab.history, [lab.history.commits[0], "main"]))
    reuse = [arg for sweep_id in rounds for arg in ("--reuse", sweep_id)]
    done = benchfleet(lab, "bisect", str(path), "--factor", FACTOR, "-o", "again", *reuse)
    assert done.returncode == 0, done.stdout + done.stderr
    again = json.loads(next((lab.root / "again").glob("*.json")).read_text())
    assert again["culprit"] == bisected["culprit"] and again["measured"] == 0
    assert again["rounds"] == [] and len(again["measurements"]) == 19


def test_repeats_are_added_where_a_comparison_is_not_yet_known(lab: Lab) -> None:
    # Capped at 4, good and bad get 4 each: 3 values against 4 whose ranges are apart give
    # p = 0.057, not yet different, so such a commit gets a fourth repeat, and no more.
    path = sweep_file(lab.root, spec(lab.history, [lab.history.commits[0], "main"]))
    start = time.monotonic()
    done = benchfleet(lab, "bisect", str(path), "--factor", FACTOR, "--max-n", "4", "-o",
                      "capped", timeout=BISECT_DEADLINE_S)
    print(f"bisect --max-n 4 took {time.monotonic() - start:.0f} s\n{done.stdout}")
    assert done.returncode == 0, done.stdout + done.stderr
    r = json.loads(next((lab.root / "capped").glob("*.json")).read_text())
    planted = lab.history.planted
    assert r["culprit"] == planted and r["rule"]["endpoint_repeats"] == 4
    n = {j["commit"]: j["n"] for j in r["judgements"]}
    assert n[lab.history.commits[0]] == n[lab.history.commits[-1]] == n[planted] == 4
    topped = [rnd for rnd in r["rounds"] if "more let the rank test decide"
              in rnd["reason"]]
    assert [q["commit"] for rnd in topped for q in rnd["requests"]].count(planted) == 1
    assert all(q["repeats"] == 1 for rnd in topped for q in rnd["requests"])
    assert all(m["build_cached"] for m in r["measurements"])  # the first bisect built them
