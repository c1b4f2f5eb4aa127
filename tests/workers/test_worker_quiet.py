"""A worker process carries nothing that could run beside a benchmark: one thread."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.demo.local_fleet import settings_env
from workers.shared.settings import Settings

pytestmark = pytest.mark.integration


def test_worker_process_has_a_single_thread(settings: Settings, tmp_path: Path) -> None:
    # Import everything `benchfleet worker` imports, then count this process's threads.
    code = ("import threading, runner.cli, workers.service, workers.task; "
            "from pathlib import Path; "
            "print(len(list(Path('/proc/self/task').iterdir())))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **settings_env(settings)}, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"
