"""GPU state around each measured run: read before and after it, the "before" reading taken one
sensor period after the previous command, and the clocks locked for the group and reset after.

`nvidia-smi` here is a stand-in on PATH that answers with the H200's recorded CSV
(tests/samples/gpu/) and logs its arguments; NVML does not load on this machine, so the worker
takes its `nvidia-smi` path, as on a host without `nvidia-ml-py`.
"""

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.record.attempts import Run
from tests.support.cells import Submitted, python_command
from workers.gpu_reader import nvml_values
from workers.hooks.gpu_watch import GpuWatch

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "gpu"
SETTLE_S = 0.4

pytestmark = pytest.mark.skipif(nvml_values() is not None,
                                reason="this host has NVML: the stand-in nvidia-smi is not read")


@pytest.fixture
def smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A stand-in nvidia-smi serving the idle H200 sample; returns its argument log."""
    bin_dir, log = tmp_path / "bin", tmp_path / "smi.log"
    bin_dir.mkdir()
    script = bin_dir / "nvidia-smi"
    script.write_text(f"""#!/bin/sh
echo "$@" >> {log}
case "$1" in
  --query-gpu=*) cat {SAMPLES / 'idle.smi.csv'} ;;
  --query-compute-apps=*) cat {SAMPLES / 'idle.apps.csv'} ;;
esac
""")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    yield log


def _run(ended_at: list[float]) -> tuple[Run, ...]:
    ended_at.append(time.monotonic())
    return (Run(role="measure", argv=["bench"], env={}, cwd="/", exit_code=0, timed_out=False,
                wall_s=0.0, started="", ended="", load1_before=0.0, load1_after=0.0,
                stdout="", stderr=""),)


def _calls(log: Path, flag: str) -> list[str]:
    return [line for line in log.read_text().splitlines() if line.startswith(flag)]


def test_each_run_is_read_before_and_after_and_the_next_waits_for_the_sensor(
        smi: Path, submitted: Submitted, tmp_path: Path) -> None:
    hook = GpuWatch(settle_s=SETTLE_S)
    attempt = submitted.attempt()
    hook.before_group(attempt.group)
    command = python_command(tmp_path, "")
    ended: list[float] = []
    first = hook.around_command(attempt, command, lambda: _run(ended))[-1]
    started = time.monotonic()
    second = hook.around_command(attempt, command, lambda: _run(ended))[-1]
    assert first.gpu_before is not None and first.gpu_after is not None
    assert second.gpu_before is not None and second.gpu_before.gpus[0].name == "NVIDIA H200"
    # The second run starts one settle period after the first ended, not at once.
    assert ended[1] - ended[0] >= SETTLE_S
    assert time.monotonic() - started < SETTLE_S + 5.0


def test_a_new_group_does_not_wait_for_the_previous_groups_command(
        smi: Path, submitted: Submitted, tmp_path: Path) -> None:
    hook = GpuWatch(settle_s=30.0)
    attempt = submitted.attempt()
    hook.around_command(attempt, python_command(tmp_path, ""), lambda: _run([]))
    hook.before_group(submitted.group("task-2"))
    started = time.monotonic()
    hook.around_command(attempt, python_command(tmp_path, ""), lambda: _run([]))
    assert time.monotonic() - started < 15.0  # no 30 s wait: the gate covers a new group


def test_the_clocks_are_locked_for_the_group_and_reset_after_it(
        smi: Path, submitted: Submitted, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("`nvidia-smi -lgc` is only tried as root")
    hook = GpuWatch(lock_clocks="1980,1980", settle_s=0.0)
    attempt = submitted.attempt()
    hook.before_group(attempt.group)
    for _ in range(3):
        hook.around_command(attempt, python_command(tmp_path, ""), lambda: _run([]))
    assert _calls(smi, "-lgc") == ["-lgc 1980,1980"]  # once for the group, not per run
    assert _calls(smi, "-rgc") == []
    hook.after_group(attempt.group)
    assert _calls(smi, "-rgc") == ["-rgc"]
    assert hook.clocks == "locked at 1980,1980 MHz"


def test_a_refused_lock_is_recorded_and_nothing_is_reset(
        smi: Path, submitted: Submitted, tmp_path: Path) -> None:
    smi.parent.joinpath("bin", "nvidia-smi").write_text(
        "#!/bin/sh\necho 'Insufficient Permissions'; exit 4\n")
    hook = GpuWatch(lock_clocks="1980,1980", settle_s=0.0)
    attempt = submitted.attempt()
    hook.before_group(attempt.group)
    hook.around_command(attempt, python_command(tmp_path, ""), lambda: _run([]))
    hook.after_group(attempt.group)
    assert hook.clocks is not None and hook.clocks.startswith("not locked at 1980,1980 MHz")
