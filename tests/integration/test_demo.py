"""The README's main command: `benchfleet demo` ends in a record with real figures."""

import json
import os
import re
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
