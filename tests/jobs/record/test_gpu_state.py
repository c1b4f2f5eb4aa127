"""The GPU-state path on real readings: an H200 idle, under another process's matmuls, and
just after (tests/samples/gpu/, recorded with tests/gpu/record_gpu_state.py). Both sources,
NVML's values and nvidia-smi's CSV, read alike and flag the same run."""

import json
import shutil

import pytest

from jobs.record.attempts import CellState, Gate
from jobs.record.check import check_record
from jobs.record.gpu_state import GpuReading, busy, from_nvml, from_smi, out_of_range
from jobs.record.model import build_record
from jobs.record.run_flags import RunConditions, run_flags
from jobs.spec.cells import expand
from jobs.spec.specfile import load
from jobs.spec.sweep import Sweep
from jobs.strict import replaced
from jobs.views.markdown import render
from tests.support.records import ONE_GROUP_SWEEP, result, with_evidence
from tests.support.samples import SAMPLES

GPU_SAMPLES = SAMPLES / "gpu"
GATE = Gate(at="2026-12-01T21:00:00+00:00", idle=True, waited_s=0.0, threshold=4.0,
            load1=[0.3, 0.3], max_wait_s=600.0)


def smi(moment: str) -> GpuReading:
    return from_smi((GPU_SAMPLES / f"{moment}.smi.csv").read_text(),
                    (GPU_SAMPLES / f"{moment}.apps.csv").read_text())


def nvml(moment: str) -> GpuReading:
    return from_nvml(json.loads((GPU_SAMPLES / f"{moment}.nvml.json").read_text()))


READERS = [pytest.param(smi, id="nvidia-smi"), pytest.param(nvml, id="nvml")]


@pytest.mark.parametrize("read", READERS)
def test_an_idle_h200_reads_idle_with_its_persistence_and_application_clocks(read) -> None:  # type: ignore[no-untyped-def]
    (gpu,) = read("idle").gpus
    assert (gpu.name, gpu.persistence, gpu.app_sm_mhz, gpu.app_mem_mhz) == (
        "NVIDIA H200", True, 1980.0, 3201.0)
    assert gpu.reasons == ["gpu_idle"] and gpu.processes == [] and gpu.sm_mhz == 345.0
    assert busy(read("idle"), "before the run") == []


@pytest.mark.parametrize("read", READERS)
def test_another_process_on_the_gpu_flags_the_run(read) -> None:  # type: ignore[no-untyped-def]
    start = [read("idle"), read("after")]
    conditions = RunConditions(load1_before=0.3, load1_after=0.4, wall_s=10.0,
                               gpu_before=read("busy"), gpu_after=read("after"),
                               gpu_start=start)
    found = run_flags(conditions, GATE)
    assert found[:3] == ["host not idle: GPU 0 before the run: compute processes [618]",
                         "host not idle: GPU 0 before the run: utilisation 99 %",
                         "host not idle: GPU 0 before the run: clocks held back by "
                         "sw_power_cap"]
    hottest = max(r.gpus[0].temperature_c or 0 for r in start)  # 42 °C by nvidia-smi, 41 NVML
    assert found[3:] == [f"host not idle: GPU 0 before the run: 58 °C, above the {hottest:g} °C "
                         "the group started at"]


@pytest.mark.parametrize("read", READERS)
def test_just_after_a_run_only_other_processes_and_the_range_count(read) -> None:  # type: ignore[no-untyped-def]
    """Utilisation and clock-event reasons read after a run still describe its last moments;
    the busy reading as an after-reading flags only its process and its temperature."""
    after = busy(read("busy"), "after the run", after=True)
    assert after == ["GPU 0 after the run: compute processes [618]"]
    quiet = RunConditions(load1_before=0.3, load1_after=0.4, wall_s=10.0,
                          gpu_before=read("idle"), gpu_after=read("after"),
                          gpu_start=[read("idle"), read("after")])
    assert run_flags(quiet, GATE) == []


def test_clocks_outside_the_range_the_group_started_in() -> None:
    start = [smi("idle"), smi("after")]
    slow = smi("after").model_copy(update={"gpus": [smi("after").gpus[0].model_copy(
        update={"mem_mhz": 1593.0, "app_sm_mhz": 1410.0})]})
    assert out_of_range(slow, start, "before the run") == [
        "GPU 0 before the run: memory clock 1593 MHz, outside the 3201 to 3201 MHz the group "
        "started in",
        "GPU 0 before the run: application clocks 1410.0/3201.0 MHz differ from the group's "
        "start"]
    assert out_of_range(smi("busy"), start, "before the run") == [
        "GPU 0 before the run: 58 °C, above the 42 °C the group started at"]


def test_load1_over_the_gate_threshold_before_or_after_flags_the_run() -> None:
    ok = RunConditions(load1_before=3.9, load1_after=4.1, wall_s=10.0)
    assert run_flags(ok, GATE) == []  # 4.1 is within the run's own 0.15
    busy_after = RunConditions(load1_before=2.6, load1_after=5.2, wall_s=10.0)
    assert run_flags(busy_after, GATE) == [
        "host not idle: load1 5.20 after the run, over the gate's threshold 4 (+0.15 the run's "
        "own)"]
    assert run_flags(busy_after, None) == []  # no gate, no threshold: fidelity says so itself


def test_a_csv_with_other_columns_is_refused() -> None:
    with pytest.raises(ValueError, match="columns, not the 11 asked for"):
        from_smi("index, name\n0, NVIDIA H200\n")


def test_a_record_flags_the_shared_gpu_run_names_it_and_check_recomputes_it() -> None:
    sweep = load(Sweep, ONE_GROUP_SWEEP, "s.yaml")[0]
    cells = expand(sweep)
    shared = cells[4].id
    results = {}
    for c in cells:
        r = result(c, 20.0 + c.repeat + (5.0 if c.arm == "fused" else 0.0))
        run = r.runs[0].model_copy(update={
            "gpu_before": smi("busy" if c.id == shared else "idle"), "gpu_after": smi("after")})
        results[c.id] = r.model_copy(update={"runs": [run], "gpu_start": [smi("idle"),
                                                                           smi("after")]})
    states = {c.id: CellState(status="done", attempt=1) for c in cells}
    record = with_evidence(build_record("s1", sweep, cells, states, results, {},
                                        "2026-12-01T21:00:00+00:00"), results)
    assert check_record(record) == []
    flagged = {m.cell_id: m.flags for g in record.groups for m in g.measurements if m.flags}
    assert list(flagged) == [shared]
    assert record.host_sentence.startswith(f"1 of {len(cells)} measurements carry a flag")
    assert f"{shared} (host not idle: GPU 0 before the run: compute processes [618]" in \
        record.host_sentence
    text = render(record)
    assert "GPU 0 (NVIDIA H200): persistence on, application clocks 1980/3201 MHz" in text
    # The busy reading replaced by an idle one, its flags kept: check recomputes them.
    g = record.groups[0]
    hidden = [replaced(m, gpu_before=smi("idle")) if m.cell_id == shared else m
              for m in g.measurements]
    edited = record.model_copy(update={"groups": [g.model_copy(update={"measurements": hidden})]})
    assert any(p.startswith(f"{shared}: flags ") for p in check_record(edited))


def test_the_worker_says_why_it_did_not_lock_the_clocks() -> None:
    from workers.gpu_reader import read_gpus
    from workers.hooks.gpu_watch import _lock
    from workers.shared.settings import Settings

    if shutil.which("nvidia-smi") is None:  # this machine: no NVIDIA GPU
        assert _lock("1980,1980") == "not locked at 1980,1980 MHz: no nvidia-smi on this host"
        assert read_gpus() is None
    with pytest.raises(ValueError, match="not a clock range; use MIN,MAX in MHz"):
        Settings(gpu_lock_clocks="fast")
