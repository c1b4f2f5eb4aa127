"""A GPU's state before and after a measured run, read from NVML's values or nvidia-smi's CSV,
and what in it says the GPU was not idle.

Busy is: another compute process, utilisation over GPU_BUSY_BEFORE_RUN_PERCENT or a
clock-event (throttle) reason other than "GPU idle" or "application clocks setting" before the
run, or clocks or
temperature outside the range the group started in: the readings before and after its first
measured run, widened by CLOCK_TOLERANCE and TEMPERATURE_RISE_C. An idle GPU's SM clock
falls between runs and rises in them, so that range holds both; a later run outside it ran on
a GPU that changed.
"""

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from jobs.strict import Lean, Strict

# Just before a run, utilisation flags only above this. NVML's utilisation is the share of its
# last sample period (up to 1 s) with a kernel running, so a run that starts right after the
# group's previous one still sees that run's tail: 7 % on the H200, where another process's
# matmuls read 99 %. A lighter neighbour shows as a compute process or in clocks and heat.
GPU_BUSY_BEFORE_RUN_PERCENT = 30.0
# Clocks may sit this fraction outside the group's starting range before a run is flagged.
CLOCK_TOLERANCE = 0.10
# A GPU this much hotter (°C) than the hottest reading of the group's first run is flagged.
TEMPERATURE_RISE_C = 5.0
# What nvidia-smi is asked, in this order (`--format=csv`; the header is checked).
SMI_FIELDS = ("index", "uuid", "name", "utilization.gpu", "clocks.sm", "clocks.mem",
              "clocks.applications.graphics", "clocks.applications.memory", "temperature.gpu",
              "clocks_throttle_reasons.active", "persistence_mode")
SMI_QUERY = ",".join(SMI_FIELDS)
SMI_APPS_QUERY = "gpu_uuid,pid"
# NVML's clock-event reason bits (nvmlClocksEventReason*), by the names the record prints.
REASONS = {0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap",
           0x8: "hw_slowdown", 0x10: "sync_boost", 0x20: "sw_thermal_slowdown",
           0x40: "hw_thermal_slowdown", 0x80: "hw_power_brake_slowdown",
           0x100: "display_clock_setting"}
# Reasons that say nothing about other work: an idle GPU, or clocks someone set on purpose.
QUIET_REASONS = frozenset({"gpu_idle", "applications_clocks_setting"})


class GpuState(Strict):
    index: int
    uuid: str | None = None
    name: str | None = None
    utilization_pct: float | None = None
    sm_mhz: float | None = None
    mem_mhz: float | None = None
    app_sm_mhz: float | None = None
    app_mem_mhz: float | None = None
    temperature_c: float | None = None
    reasons: list[str] = []
    persistence: bool | None = None
    processes: list[int] = []


class GpuReading(Lean):
    """Every GPU of the host at one moment, and where the values came from."""

    source: Literal["nvml", "nvidia-smi"]
    gpus: list[GpuState]


def from_nvml(devices: Sequence[Mapping[str, Any]]) -> GpuReading:
    """The reading from NVML's raw values (workers/gpu_reader.py gathers them)."""
    return GpuReading(source="nvml", gpus=[GpuState(
        index=d["index"], uuid=d.get("uuid"), name=d.get("name"),
        utilization_pct=_num(d.get("utilization_gpu")), sm_mhz=_num(d.get("clock_sm")),
        mem_mhz=_num(d.get("clock_mem")), app_sm_mhz=_num(d.get("app_clock_sm")),
        app_mem_mhz=_num(d.get("app_clock_mem")), temperature_c=_num(d.get("temperature")),
        reasons=_reasons(d.get("clocks_event_reasons")),
        persistence=None if d.get("persistence_mode") is None else bool(d["persistence_mode"]),
        processes=sorted(d.get("compute_processes") or [])) for d in devices])


def from_smi(gpus_csv: str, apps_csv: str = "") -> GpuReading:
    """The reading from `nvidia-smi --query-gpu=SMI_QUERY --format=csv` and the compute
    processes of `--query-compute-apps=gpu_uuid,pid --format=csv` (values with units)."""
    rows = _csv(gpus_csv)
    if not rows or len(rows[0]) != len(SMI_FIELDS):
        raise ValueError(f"nvidia-smi gave {len(rows[0]) if rows else 0} columns, not the "
                         f"{len(SMI_FIELDS)} asked for")
    apps: dict[str, list[int]] = {}
    for uuid, pid, *_ in _csv(apps_csv)[1:]:
        apps.setdefault(uuid, []).append(int(pid))
    states = []
    for row in rows[1:]:
        v = dict(zip(SMI_FIELDS, row, strict=True))
        reasons = v["clocks_throttle_reasons.active"]
        states.append(GpuState(
            index=int(v["index"]), uuid=v["uuid"], name=v["name"],
            utilization_pct=_num(v["utilization.gpu"]), sm_mhz=_num(v["clocks.sm"]),
            mem_mhz=_num(v["clocks.mem"]), app_sm_mhz=_num(v["clocks.applications.graphics"]),
            app_mem_mhz=_num(v["clocks.applications.memory"]),
            temperature_c=_num(v["temperature.gpu"]),
            reasons=_reasons(int(reasons, 16) if reasons.startswith("0x") else None),
            persistence={"Enabled": True, "Disabled": False}.get(v["persistence_mode"]),
            processes=sorted(apps.get(v["uuid"], []))))
    return GpuReading(source="nvidia-smi", gpus=states)


def busy(reading: GpuReading, when: str, after: bool = False) -> list[str]:
    """Why the GPUs were not idle at one reading ("before the run", "after the run").

    Just after a run, utilisation (an average over NVML's last sample period) and the
    clock-event reasons still describe the run's own last moments, so there only other
    compute processes count; its clocks and temperature are judged by `out_of_range`.
    """
    found = []
    for g in reading.gpus:
        if g.processes:
            found.append(f"GPU {g.index} {when}: compute processes {g.processes}")
        if after:
            continue
        if g.utilization_pct is not None and g.utilization_pct > GPU_BUSY_BEFORE_RUN_PERCENT:
            found.append(f"GPU {g.index} {when}: utilisation {g.utilization_pct:g} %")
        loud = [r for r in g.reasons if r not in QUIET_REASONS]
        if loud:
            found.append(f"GPU {g.index} {when}: clocks held back by {', '.join(loud)}")
    return found


def out_of_range(reading: GpuReading, start: Sequence[GpuReading], when: str) -> list[str]:
    """Clocks or temperature outside the range of the group's first run (`start`)."""
    found = []
    for g in reading.gpus:
        ref = [s for r in start for s in r.gpus if s.index == g.index]
        for what, value, unit in (("SM clock", g.sm_mhz, "MHz"), ("memory clock", g.mem_mhz,
                                                                 "MHz")):
            seen = [v for s in ref if (v := getattr(s, _FIELD[what])) is not None]
            if value is None or not seen:
                continue
            low, high = min(seen) * (1 - CLOCK_TOLERANCE), max(seen) * (1 + CLOCK_TOLERANCE)
            if not low <= value <= high:
                found.append(f"GPU {g.index} {when}: {what} {value:g} {unit}, outside the "
                             f"{min(seen):g} to {max(seen):g} {unit} the group started in")
        temps = [s.temperature_c for s in ref if s.temperature_c is not None]
        if g.temperature_c is not None and temps and \
                g.temperature_c > max(temps) + TEMPERATURE_RISE_C:
            found.append(f"GPU {g.index} {when}: {g.temperature_c:g} °C, above the "
                         f"{max(temps):g} °C the group started at")
        apps = {(s.app_sm_mhz, s.app_mem_mhz) for s in ref}
        if apps and (g.app_sm_mhz, g.app_mem_mhz) not in apps:
            found.append(f"GPU {g.index} {when}: application clocks {g.app_sm_mhz}/"
                         f"{g.app_mem_mhz} MHz differ from the group's start")
    return found


_FIELD = {"SM clock": "sm_mhz", "memory clock": "mem_mhz"}


def _reasons(mask: int | None) -> list[str]:
    if mask is None:
        return []
    named = [name for bit, name in REASONS.items() if mask & bit]
    rest = mask & ~sum(REASONS)
    return named + ([f"0x{rest:x}"] if rest else [])


def _num(value: object) -> float | None:
    """A number from NVML (int) or nvidia-smi ("345 MHz", "[N/A]", "[Not Supported]")."""
    if value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    head = str(value).strip().split(" ")[0]
    try:
        return float(head)
    except ValueError:
        return None


def _csv(text: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.split(",")] for line in text.strip().splitlines()
            if line.strip()]
