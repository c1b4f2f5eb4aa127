"""Facts about the host a measurement ran on, and its load."""

import os
import platform
import shutil
import socket
import subprocess
import sys
from functools import cache
from pathlib import Path

from jobs.attempts import HostFacts


@cache
def facts() -> HostFacts:
    """Probed once per worker process: none of it changes while the worker runs."""
    cpu = _cpu_name()
    gpu = _gpu_name()
    return HostFacts(
        hostname=socket.gethostname(), os=_os_name(), kernel=platform.release(),
        arch=platform.machine(), cpu=cpu, chip=gpu or cpu, cores=os.cpu_count() or 0,
        memory_gb=_memory_gb(), gpu=gpu, python=platform.python_version())


def load1() -> float:
    return os.getloadavg()[0]


def _os_name() -> str:
    if sys.platform == "darwin":
        return f"macOS {platform.mac_ver()[0]}"
    try:
        release = dict(line.split("=", 1) for line in
                       Path("/etc/os-release").read_text().splitlines() if "=" in line)
        return release.get("PRETTY_NAME", "Linux").strip('"')
    except OSError:
        return platform.system()


def _cpu_name() -> str:
    if sys.platform == "darwin":
        return _command(["sysctl", "-n", "machdep.cpu.brand_string"]) or platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "Model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _gpu_name() -> str | None:
    if not shutil.which("nvidia-smi"):
        return None
    name = _command(["nvidia-smi", "--query-gpu=name,compute_cap", "--format=csv,noheader"])
    return name.splitlines()[0].replace(", ", " sm_").replace(".", "") if name else None


def _memory_gb() -> float:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30)
    except (ValueError, OSError):
        return 0.0


def _command(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
