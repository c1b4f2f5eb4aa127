"""`history`, `regressions` and `publish` on bad input: one sentence and exit 2, or a note
under the tables; never a traceback."""

import json
import os
import subprocess
import sys
from pathlib import Path

from runner.demo.target_repo import make_target_repo

SAMPLES = Path(__file__).parents[1] / "samples"
CSV_OK = SAMPLES / "pylm_m3ultra_2026-11-30_measure_single_qwen3-30b-a3b-4bit.csv"


def run(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BENCHFLEET_ARTIFACTS": str(tmp / "store"),
           "BENCHFLEET_HISTORY_DB": str(tmp / "history.sqlite"), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "runner.cli", *args], capture_output=True,
                          text=True, env=env, timeout=60)


def test_an_import_needs_its_commit(tmp_path: Path) -> None:
    done = run(tmp_path, "history", "--import", str(CSV_OK))
    assert done.returncode == 2
    assert done.stderr.strip() == ("benchfleet: --import needs --commit: the target commit "
                                   "the results are from")


def test_a_commit_not_on_the_branch_keeps_its_point_and_says_so(tmp_path: Path) -> None:
    repo = tmp_path / "target"
    shas = make_target_repo(repo)
    gone = "0" * 40
    for commit in (shas[0], gone):
        done = run(tmp_path, "history", "--import", str(CSV_OK), "--commit", commit,
                   "--repo", str(repo), "--arm", "mlx-lm", "--json")
        assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    decode = next(s for s in found["series"] if s["metric"] == "decode_tps")
    assert [(p["commit"], p["position"] is None) for p in decode["points"]] == [
        (shas[0], False), (gone, True)]
    assert any("no longer on the target's first-parent history" in s
               for s in found["problems"])


def test_a_sweep_without_its_sweep_file_is_left_out_with_a_sentence(tmp_path: Path) -> None:
    (tmp_path / "store" / "torn-sweep" / "cell-1" / "attempt-1").mkdir(parents=True)
    done = run(tmp_path, "history", "--rebuild")
    assert done.returncode == 0, done.stderr
    assert "sweep torn-sweep left out: the artifact store has no torn-sweep/sweep.json" in \
        " ".join(done.stdout.split())


def test_regressions_since_an_unknown_commit_is_a_sentence(tmp_path: Path) -> None:
    done = run(tmp_path, "regressions", "--since", "feedface")
    assert done.returncode == 2
    assert "history holds no commit on the branch matching 'feedface'" in done.stderr
    assert "Traceback" not in done.stderr


def test_no_candidates_is_exit_0_and_says_so(tmp_path: Path) -> None:
    done = run(tmp_path, "regressions")
    assert (done.returncode, done.stdout.strip()) == (0, "no regression candidates")


def test_publish_to_an_unwritable_place_is_a_sentence(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    done = run(tmp_path, "publish", "-o", str(blocker / "site"))
    assert done.returncode == 2
    assert "give -o a writable directory" in done.stderr


def test_an_unreadable_thresholds_file_is_a_sentence(tmp_path: Path) -> None:
    gone = tmp_path / "thresholds.yaml"
    for command in ("history", "regressions"):
        done = subprocess.run([sys.executable, "-m", "runner.cli", command], capture_output=True,
                              text=True, timeout=60,
                              env={**os.environ, "BENCHFLEET_ARTIFACTS": str(tmp_path / "store"),
                                   "BENCHFLEET_HISTORY_DB": str(tmp_path / "history.sqlite"),
                                   "BENCHFLEET_HISTORY_THRESHOLDS": str(gone)})
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip() == (
            f"benchfleet: cannot read the thresholds file {gone} (No such file or directory); "
            "fix BENCHFLEET_HISTORY_THRESHOLDS or unset it for the defaults")
