"""GPU state before and after a measured run: NVML where it loads, else nvidia-smi's CSV.

Only reads; what the values mean is jobs/record/gpu_state.py's. Called between commands, never
during one: nothing wakes the worker while a measured command runs.
"""

import shutil
import subprocess
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jobs.record.gpu_state import GpuReading

_SMI_TIMEOUT_S = 10


def read_gpus() -> "GpuReading | None":
    """The state of every NVIDIA GPU, or None on a host without one."""
    # Imported here: tests/gpu/record_gpu_state.py records NVML's raw values with this module
    # on a device Python that has no pydantic.
    from jobs.record.gpu_state import SMI_APPS_QUERY, SMI_QUERY, from_nvml, from_smi

    raw = nvml_values()
    if raw is not None:
        return from_nvml(raw)
    if shutil.which("nvidia-smi") is None:
        return None
    gpus = _smi([f"--query-gpu={SMI_QUERY}", "--format=csv"])
    apps = _smi([f"--query-compute-apps={SMI_APPS_QUERY}", "--format=csv"])
    return from_smi(gpus, apps) if gpus else None


def nvml_values() -> list[dict[str, Any]] | None:
    """NVML's raw values per GPU, as recorded in tests/samples/gpu/; None without NVML."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return None
    try:
        return [_device(pynvml, i) for i in range(pynvml.nvmlDeviceGetCount())]
    finally:
        pynvml.nvmlShutdown()


def _device(nv: Any, index: int) -> dict[str, Any]:
    h = nv.nvmlDeviceGetHandleByIndex(index)

    def value(call: str, *args: object) -> Any:
        # A field this GPU does not support (application clocks on some boards) is None.
        try:
            return getattr(nv, call)(h, *args)
        except nv.NVMLError:
            return None

    util = value("nvmlDeviceGetUtilizationRates")
    procs = value("nvmlDeviceGetComputeRunningProcesses") or []
    return {
        "index": index, "uuid": value("nvmlDeviceGetUUID"), "name": value("nvmlDeviceGetName"),
        "utilization_gpu": util.gpu if util is not None else None,
        "clock_sm": value("nvmlDeviceGetClockInfo", nv.NVML_CLOCK_SM),
        "clock_mem": value("nvmlDeviceGetClockInfo", nv.NVML_CLOCK_MEM),
        "app_clock_sm": value("nvmlDeviceGetApplicationsClock", nv.NVML_CLOCK_SM),
        "app_clock_mem": value("nvmlDeviceGetApplicationsClock", nv.NVML_CLOCK_MEM),
        "temperature": value("nvmlDeviceGetTemperature", nv.NVML_TEMPERATURE_GPU),
        "clocks_event_reasons": value("nvmlDeviceGetCurrentClocksEventReasons"),
        "persistence_mode": value("nvmlDeviceGetPersistenceMode"),
        "compute_processes": [p.pid for p in procs],
    }


def _smi(args: list[str]) -> str:
    """Its CSV, or '' when it failed (no driver, no permission): then there is no reading."""
    try:
        done = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True,
                              timeout=_SMI_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout if done.returncode == 0 else ""
