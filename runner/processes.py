"""Ending a child process we started: politely, then for certain."""

import subprocess


def stop(proc: "subprocess.Popen[bytes] | subprocess.Popen[str] | None",
         grace_s: float = 10.0) -> None:
    """SIGTERM, up to `grace_s` for it to exit, then SIGKILL; reaped either way."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
