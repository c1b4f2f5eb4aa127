"""Record samples shared by the rooms' tests: attempt results of a small sweep, the record
made from them with its evidence, and an adaptive record. Real statistics, made-up timings."""

import hashlib
from collections.abc import Mapping

import pytest

from jobs.parsers.readings import BenchReading, Failure
from jobs.record.attempts import AttemptResult, CellState, Gate, HostFacts, Run
from jobs.record.model import Record, build_record
from jobs.record.parts import Evidence
from jobs.spec.cells import Cell, expand
from jobs.spec.specfile import load
from jobs.spec.sweep import Sweep
from tests.support.samples import SWEEP

HOST = HostFacts(hostname="gb10-a", os="Ubuntu 24.04", kernel="6.11", arch="aarch64",
                 cpu="Cortex-X925", chip="NVIDIA GB10 sm_121", cores=20, memory_gb=119.7,
                 gpu="NVIDIA GB10 sm_121", python="3.12.3")
SHA = "81ba1c6a" * 5


IDLE = Gate(at="2026-11-30T09:59:00+00:00", idle=True, waited_s=0.0, threshold=0.6,
            load1=[0.2, 0.2], max_wait_s=600.0)


def stamp(seconds: int) -> str:
    return f"2026-11-30T10:{seconds // 60:02d}:{seconds % 60:02d}+00:00"


def result(cell: Cell, decode: float | None, load1: float = 0.2,
           failure: Failure | None = None, gate: Gate | None = IDLE,
           lease: bool = True) -> AttemptResult:
    """One attempt of `cell` that measured `decode`; cells run one after another, 10 s apart."""
    start = cell.order * 10
    run = Run(role="measure", argv=["bench", "-m", cell.model], env=cell.run.env, cwd="/t",
              exit_code=0,
              timed_out=False, wall_s=3.0, started=stamp(start), ended=stamp(start + 3),
              load1_before=load1, load1_after=load1 + 0.1, stdout="measure.stdout.txt",
              stderr="measure.stderr.txt", host_lease=lease)
    reading = (BenchReading(prompt_tokens=512, generated_tokens=128, prefill_tps=decode * 10,
                            decode_tps=decode, prefill_ms=51200 / decode,
                            decode_ms=128000 / decode, peak_gb=19.0) if decode else None)
    return AttemptResult(sweep_id="s1", cell_id=cell.id, attempt=1, worker="gb10-a", host=HOST,
                         requested_commit=cell.commit, commit=SHA, started=run.started,
                         ended=run.ended, runs=[run], reading=reading, failure=failure,
                         gate=gate)


def with_evidence(record: Record, results: Mapping[str, AttemptResult]) -> Record:
    """The record with the sha256 of each result's JSON, as `benchfleet record` adds it."""
    def sha(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()
    return record.model_copy(update={"evidence": [
        Evidence(cell_id=r.cell_id, attempt=r.attempt, used=True,
                 result_sha256=sha(r.model_dump_json(indent=1)), manifest_sha256=sha(r.cell_id))
        for r in results.values()]})


# One commit, one backend, one model: one group of three arms.
ONE_GROUP_SWEEP = (SWEEP.replace("[main, v2]", "main")
                   .replace("  metal: {build: tinymoe-build}\n", "")
                   .replace("[tinymoe-a3, tinymoe-b5]", "[tinymoe-a3]")
                   .replace("models: [tinymoe-b5]", "models: [tinymoe-a3]"))


@pytest.fixture
def small() -> tuple[Sweep, list[Cell]]:
    sweep = load(Sweep, ONE_GROUP_SWEEP, "s.yaml")[0]
    return sweep, expand(sweep)


def adaptive_record(decode: dict[str, list[float]], extra: str = "adaptive: {max_n: 6}\n",
                    run_all: bool = False) -> Record:
    """A record of one group whose worker skipped what the rule did not need (or ran all)."""
    from jobs.statistics.adaptive import cell_needed

    sweep = load(Sweep, ONE_GROUP_SWEEP.replace("n: 3", "n: 3\n" + extra.rstrip()), "s.yaml")[0]
    cells = expand(sweep)
    results: dict[str, AttemptResult] = {}
    states = {}
    for cell in cells:
        readings = {k: r.reading for k, r in results.items() if r.reading}
        if run_all or cell_needed(cell, cells, readings):
            results[cell.id] = result(cell, decode[cell.arm][cell.repeat - 1])
            states[cell.id] = CellState(status="done", attempt=1)
        else:
            states[cell.id] = CellState(status="done", reason="skipped: not needed")
    return with_evidence(build_record("s1", sweep, cells, states, results, {}, "now"), results)


FASTER = {"gather": [20.0, 21.0, 22.0, 21.5, 20.5, 21.2],
          "fused": [30.0, 33.0, 36.0, 31.0, 32.0, 34.0],
          "long": [19.0, 23.0, 21.0, 20.0, 22.0, 21.0]}


TWO_ARMS = ONE_GROUP_SWEEP.replace("""  - name: long
    recipe: tinymoe-bench-decode
    params: {prompt_tokens: 1024}
    models: [tinymoe-a3]
""", "")


def record(decode: dict[str, list[float]], commits: str = "main", failed: str | None = None,
           aa: bool = False, sweep_id: str = "s1") -> Record:
    """A record of one group per commit, measuring `decode[arm]` (per commit: `arm@commit`)."""
    n = len(next(iter(decode.values())))
    text = TWO_ARMS.replace("commits: main", f"commits: {commits}").replace("n: 3", f"n: {n}")
    sweep = load(Sweep, text + ("aa: true\n" if aa else ""), "s.yaml")[0]
    cells = expand(sweep)
    results: dict[str, AttemptResult] = {}
    states = {}
    for cell in cells:
        values = decode.get(f"{cell.arm}@{cell.commit}", decode.get(cell.arm))
        if cell.arm == failed or values is None:
            results[cell.id] = result(cell, None, failure=Failure(
                kind="build", reason="build failed: SyntaxError"))
            states[cell.id] = CellState(status="failed", attempt=1)
        else:
            results[cell.id] = result(cell, values[cell.repeat - 1])
            states[cell.id] = CellState(status="done", attempt=1)
    return build_record(sweep_id, sweep, cells, states, results, {}, "now")


OLD = {"gather": [100.0, 101.0, 102.0, 100.5, 101.5], "fused": [150.0, 151.0, 152.0, 150.5, 151.5]}
