"""Record real GPU-state samples on the lent NVIDIA machine for tests/samples/gpu/.

Three moments: the idle GPU, the GPU while another process runs matmuls on it (torch, from
the device image), and the GPU just after that process ended. At each, nvidia-smi's CSV (the
worker's fallback query, and the compute processes) and NVML's raw values as
workers/gpu_reader.py gathers them. Run on the device:
    PYTHONPATH=.:DIR_WITH_PYNVML python3 tests/gpu/record_gpu_state.py "$OUT"
"""

import json
import subprocess
import sys
import time
from pathlib import Path

from workers.gpu_reader import nvml_values

# The same query as jobs/record/gpu_state.py's SMI_QUERY (that module needs pydantic; this one not).
SMI_QUERY = ("index,uuid,name,utilization.gpu,clocks.sm,clocks.mem,"
             "clocks.applications.graphics,clocks.applications.memory,temperature.gpu,"
             "clocks_throttle_reasons.active,persistence_mode")
LOAD = """
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
print("ready", flush=True)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    for _ in range(20):
        b = a @ a
    torch.cuda.synchronize()
"""


def snapshot(out: Path, name: str) -> None:
    for suffix, args in (("smi.csv", [f"--query-gpu={SMI_QUERY}", "--format=csv"]),
                         ("apps.csv", ["--query-compute-apps=gpu_uuid,pid", "--format=csv"])):
        done = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True)
        (out / f"{name}.{suffix}").write_text(done.stdout + done.stderr)
    (out / f"{name}.nvml.json").write_text(json.dumps(nvml_values(), indent=1) + "\n")


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    snapshot(out, "idle")
    load = subprocess.Popen([sys.executable, "-c", LOAD, "25"], stdout=subprocess.PIPE,
                            text=True)
    assert load.stdout is not None and load.stdout.readline().strip() == "ready"
    time.sleep(8)  # not standing in for work: the matmuls run meanwhile; sample mid-load
    snapshot(out, "busy")
    load.wait()
    snapshot(out, "after")
    done = subprocess.run(["nvidia-smi", "-q", "-d", "PERFORMANCE,CLOCK,TEMPERATURE"],
                          capture_output=True, text=True)
    (out / "after.q.txt").write_text(done.stdout)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
