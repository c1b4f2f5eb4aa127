"""compare and bisect: the gate's exit codes from record files, and a user's mistake ending in
one sentence and exit 2 before anything is queued (real git repositories, no worker)."""

import json
from pathlib import Path

import pytest
import yaml

from runner.cli import main
from tests.support.records import OLD, record
from tests.targets.bisect_target import History, make_history

pytestmark = pytest.mark.integration


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_compare_record_files_exit_1_on_a_regression_0_otherwise(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, slower = tmp_path / "old.json", tmp_path / "slower.json"
    old.write_text(record(OLD).model_dump_json())
    slower.write_text(record({"gather": OLD["gather"], "fused": [v / 2 for v in OLD["fused"]]},
                             sweep_id="s2").model_dump_json())
    code, out, _ = run(capsys, "compare", str(old), str(slower))
    assert code == 1 and "| **worse** | cuda | tinymoe-a3 | fused | decode tok/s |" in out
    code, out, _ = run(capsys, "compare", str(old), str(old), "--json")
    assert code == 0 and json.loads(out)["gate"] == "pass"
    code, _, _ = run(capsys, "compare", str(old), str(slower), "--factor", "2.5")
    assert code == 0  # half the speed is not beyond a factor of 2.5


def test_compare_mistakes_are_one_sentence(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    old = tmp_path / "old.json"
    old.write_text(record(OLD).model_dump_json())
    code, _, err = run(capsys, "compare", str(old))
    assert code == 2 and err == ("benchfleet: give two sweeps (ids, prefixes or record JSON "
                                 "files), or one and --commits OLD NEW for two commits of it\n")
    code, _, err = run(capsys, "compare", str(old), "--commits", "main", "v9")
    assert code == 2 and "commit 'v9' matches 0 of the commits sweep s1 measured" in err
    code, _, err = run(capsys, "compare", str(tmp_path / "none.json"), str(old))
    assert code == 2 and err.startswith("benchfleet: cannot read record ")
    code, _, err = run(capsys, "compare", str(old), str(old), "--factor", "0.9")
    assert code == 2 and "Traceback" not in err and "0.9" in err


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    return make_history(tmp_path_factory.mktemp("errors") / "tinymoe")


def sweep(tmp: Path, history: History, arms: int = 1, commits: list[str] | None = None
          ) -> Path:
    spec = {"name": "oops", "target": {"repo": str(history.repo),
                                       "commits": commits or ["main"]},
            "models": ["tinymoe-a3"], "backends": {"cpu": {"build": "tinymoe-build"}},
            "arms": [{"name": f"arm{i}", "recipe": "tinymoe-bench-decode",
                      "baseline": i == 0} for i in range(arms)]}
    path = tmp / "oops.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_bisect_mistakes_are_one_sentence(history: History, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    good, bad = history.commits[0], history.commits[-1]
    code, _, err = run(capsys, "bisect", str(sweep(tmp_path, history, arms=2)), "--good", good,
                       "--bad", bad)
    assert code == 2 and err == ("benchfleet: the sweep has 2 arms (arm0, arm1); name the "
                                 "one to bisect with --arm\n")
    one = str(sweep(tmp_path, history))
    code, _, err = run(capsys, "bisect", one)
    assert code == 2 and "name both ends with --good and --bad" in err
    code, _, err = run(capsys, "bisect", one, "--good", bad, "--bad", good)
    assert code == 2 and f"good {bad[:12]} is not on the first-parent history of bad" in err
    code, _, err = run(capsys, "bisect", one, "--good", "main", "--bad", bad)
    assert code == 2 and "good and bad are the same commit" in err
    code, _, err = run(capsys, "bisect", one, "--good", "v0.1", "--bad", bad)
    assert code == 2 and "commit 'v0.1' is not in" in err
    code, _, err = run(capsys, "bisect", one, "--good", good, "--bad", bad, "--model", "m9")
    assert code == 2 and "the sweep has no model 'm9' (it has tinymoe-a3)" in err
