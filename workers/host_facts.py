"""Facts about the host a measurement ran on, and its load."""

import os
import platform
import shutil
import socket
import subprocess
import sys
from functools import cache
from pathlib import Path

from jobs.record.attempts import HostFacts

# A GPU above this utilisation counts as busy for the idle gate.
GPU_BUSY_PERCENT = 5


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


_GPU_FIELDS = ("utilization.gpu", "clocks.sm", "clocks.mem", "temperature.gpu",
               "clocks_throttle_reasons.active", "memory.used")


def gpu_state() -> dict[str, str]:
    """Utilisation, clocks, temperature, throttle reasons and compute processes, from
    nvidia-smi; empty where there is no NVIDIA GPU."""
    if not _has_nvidia_smi():
        return {}
    values = _command(["nvidia-smi", f"--query-gpu={','.join(_GPU_FIELDS)}",
                       "--format=csv,noheader,nounits"]).splitlines()
    state = dict(zip(_GPU_FIELDS, (v.strip() for v in values[0].split(",")), strict=False)) \
        if values else {}
    apps = _command(["nvidia-smi", "--query-compute-apps=pid,process_name",
                     "--format=csv,noheader"])
    state["compute_processes"] = "; ".join(line.strip() for line in apps.splitlines()
                                           if line.strip())
    return state


def busy_gpu(state: dict[str, str]) -> str:
    """Why the GPU is not idle ('' when it is): compute processes, or utilisation."""
    if state.get("compute_processes"):
        return f"compute processes {state['compute_processes']}"
    util = state.get("utilization.gpu", "0")
    return f"utilisation {util} %" if util.isdigit() and int(util) > GPU_BUSY_PERCENT else ""


def thermal_state() -> str | None:
    """macOS: `pmset -g therm` (thermal and CPU speed limits); None elsewhere."""
    if sys.platform != "darwin":
        return None
    return " ".join(_command(["pmset", "-g", "therm"]).split()) or None


@cache
def _has_nvidia_smi() -> bool:
    return shutil.which("nvidia-smi") is not None


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
