"""The README's main command: `benchfleet demo` ends in a record with real figures."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def test_demo_writes_a_record_for_both_arms_and_backends(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHFLEET_")}
    done = subprocess.run([sys.executable, "-m", "runner.cli", "demo", "--dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    paths = re.findall(r"^\s+(/\S+\.json)$", done.stdout, re.M)
    assert len(paths) == 1
    record = json.loads(Path(paths[0]).read_text())
    assert record["cells_measured"] == record["cells_expected"] == 12
    rows = {(g["backend"], r["arm"]): r for g in record["groups"] for r in g["rows"]}
    assert sorted(rows) == [("cuda", "fused"), ("cuda", "gather"), ("metal", "fused"),
                            ("metal", "gather")]
    assert all(r["n"] == 3 and r["decode_tps"]["min"] > 0 for r in rows.values())
    assert rows[("cuda", "fused")]["decode_vs_baseline"] is not None
    # Every process the demo started is gone: no redis-server or worker left on its port.
    leftover = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True)
    assert leftover.stdout == ""


def ignore_sigint() -> None:
    # As a shell without job control (CI) starts a background process.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_stops_everything_the_demo_started(tmp_path: Path, sig: signal.Signals) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHFLEET_")}
    demo = subprocess.Popen([sys.executable, "-m", "runner.cli", "demo", "--dir", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            preexec_fn=ignore_sigint)
    assert demo.stdout is not None
    for line in demo.stdout:  # until the sweep is queued and the workers are at it
        if line.startswith("submitted sweep"):
            break
    demo.send_signal(sig)
    rest = demo.stdout.read()
    assert demo.wait(timeout=120) == 130, rest
    assert "interrupted; stopped what it had started" in rest
    leftover = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True)
    assert leftover.stdout == ""


def test_missing_redis_server_says_what_to_install(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(shutil.which("git") or "/usr/bin/git")
    env = {**os.environ, "PATH": str(bin_dir)}
    done = subprocess.run([sys.executable, "-m", "runner.cli", "demo", "--dir",
                           str(tmp_path / "demo")], capture_output=True, text=True, env=env,
                          timeout=60)
    assert done.returncode == 2 and not (tmp_path / "demo").exists()
    assert done.stderr.startswith("benchfleet: redis-server is not on PATH; install it with "
                                  "`sudo apt-get install redis-server` (Debian/Ubuntu)")
