"""Command execution: output to files, exit codes as a shell reports them, group kill on timeout."""

import os
import sys
from pathlib import Path

from jobs.record.attempts import Run
from jobs.spec.recipes import Invocation
from workers import execute
from workers.execute import Files


def run(role: execute.Role, call: Invocation, cwd: Path, files: Files, base: Path
        ) -> Run:
    return execute.run(execute.Command(role, role, call, cwd, files, base))

# A command that leaves a child behind and then outlives its timeout.
SPAWNER = ("import subprocess, sys, time\n"
           "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
           "open(sys.argv[1], 'w').write(str(child.pid))\n"
           "print('started', flush=True)\n"
           "time.sleep(600)\n")


def files(tmp: Path) -> Files:
    return Files(tmp / "out.txt", tmp / "err.txt")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes; only its parent (gone) would reap it.
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    call = Invocation(argv=[sys.executable, "-c", SPAWNER, str(pid_file)], env={}, timeout_s=2)
    result = run("measure", call, tmp_path, files(tmp_path), tmp_path)
    assert result.timed_out and result.exit_code == 124
    assert (tmp_path / "out.txt").read_text() == "started\n"
    assert not alive(int(pid_file.read_text()))


def test_exit_codes_env_and_missing_binary(tmp_path: Path) -> None:
    call = Invocation(argv=[sys.executable, "-c",
                            "import os, sys; print(os.environ['BF_X']); sys.exit(3)"],
                      env={"BF_X": "seen"}, timeout_s=30)
    result = run("measure", call, tmp_path, files(tmp_path), tmp_path)
    assert (result.exit_code, result.timed_out) == (3, False)
    assert (tmp_path / "out.txt").read_text() == "seen\n" and result.stdout == "out.txt"
    killed = run("measure", Invocation(argv=[sys.executable, "-c",
                                             "import os; os.kill(os.getpid(), 9)"],
                                       env={}, timeout_s=30), tmp_path, files(tmp_path), tmp_path)
    assert killed.exit_code == 137
    missing = run("build", Invocation(argv=["/no/such/tool"], env={}, timeout_s=5), tmp_path,
                  files(tmp_path), tmp_path)
    assert missing.exit_code == 127
    assert "cannot start /no/such/tool" in (tmp_path / "err.txt").read_text()
