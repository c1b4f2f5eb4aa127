"""The host probe: which backends this machine has, its chip and memory, the toolchains on
PATH and the checkpoints under MODELS_DIR. Run when the worker starts and between cells,
never while a command runs (the worker's idle timer does not fire during a cell)."""

import platform
import shutil
import subprocess
import sys
from pathlib import Path

from jobs.record.capabilities import Capabilities
from workers.host_facts import facts
from workers.shared.clock import now

# The toolchains a target's builds use, each asked for its version.
TOOLCHAINS = {"cargo": ["cargo", "--version"], "rustc": ["rustc", "--version"],
              "nvcc": ["nvcc", "--version"], "xcrun": ["xcrun", "--version"],
              "cmake": ["cmake", "--version"]}
VERSION_TIMEOUT_S = 10


def probe(models_dir: Path) -> Capabilities:
    host = facts()
    return Capabilities(host=host, backends=backends(host.gpu), toolchains=toolchains(),
                        models_dir=str(models_dir), checkpoints=checkpoints(models_dir),
                        probed=now())


def backends(gpu: str | None) -> list[str]:
    found = ["cuda"] if gpu else []
    if sys.platform == "darwin" and platform.machine() == "arm64":
        found.append("metal")
    return [*found, "cpu"]


def toolchains() -> dict[str, str]:
    found = {}
    for name, argv in TOOLCHAINS.items():
        if shutil.which(argv[0]) is None:
            continue
        found[name] = _version(argv)
    return found


def checkpoints(models_dir: Path) -> list[str]:
    try:
        return sorted(p.name for p in models_dir.iterdir()
                      if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []


def _version(argv: list[str]) -> str:
    """The line that says the version (nvcc puts it on its fourth: `..., release 12.4, ...`)."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=VERSION_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as error:
        return f"present, but `{' '.join(argv)}` failed ({type(error).__name__})"
    lines = [line.strip() for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    chosen = next((line for line in lines if "release" in line), lines[0] if lines else "")
    return chosen[:160] or f"present (`{' '.join(argv)}` printed nothing)"
