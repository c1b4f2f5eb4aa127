"""Routing end to end: cells pinned to a host, cells that require capability tags (a
checkpoint's tag appears when the checkpoint does), a message that reached the wrong worker
passed on, and `status` saying why cells no live worker can take wait."""

import time
from collections.abc import Iterator

import pytest

from jobs.strict import replaced
from runner.demo.target_repo import DEMO_MODELS, make_models
from tests.support.fleet import until_live, wait
from tests.trust.conftest import DEADLINE_S, Fleet, trust_fleet
from workers.shared.queues import host_queue

LATE = "tinymoe-late"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """gb10-a (cuda, gpu=gb10) and gb10-b (cuda, no GPU tag, its own MODELS_DIR)."""
    root = tmp_path_factory.mktemp("routing")
    with trust_fleet(root, []) as fleet:
        a = fleet.settings.model_copy(update={"tags": ["gpu=gb10"], "host": "gb10-a"})
        make_models(root / "models-b", DEMO_MODELS)
        b = fleet.settings.model_copy(update={"host": "gb10-b", "models_dir": root / "models-b"})
        fleet.workers.start("cuda", "gb10-a", settings=a)
        fleet.workers.start("cuda", "gb10-b", settings=b)
        until_live(fleet.settings, "gb10-a", "gb10-b")
        yield fleet


def _workers(fleet: Fleet, sweep_id: str) -> set[str | None]:
    wait(fleet.store, sweep_id)
    states = fleet.store.states(sweep_id).values()
    assert {s.status for s in states} == {"done"}, states
    return {s.worker for s in states}


def test_a_pinned_group_runs_on_its_host(fleet: Fleet) -> None:
    sweep_id = fleet.submit(fleet.sweep_file(
        "pinned", backends={"cuda": {"build": "tinymoe-build", "host": "gb10-b"}}, n=2))
    assert _workers(fleet, sweep_id) == {"gb10-b"}


def test_cells_requiring_tags_run_where_they_are_offered(fleet: Fleet) -> None:
    backends = {"cuda": {"build": "tinymoe-build", "requires": ["gpu=gb10", "model:{model}"]}}
    sweep_id = fleet.submit(fleet.sweep_file("tagged", backends=backends, n=2))
    assert _workers(fleet, sweep_id) == {"gb10-a"}


def test_cells_no_live_worker_can_take_wait_and_status_says_why(fleet: Fleet) -> None:
    for name, backend, spec, why in [
            ("rocm", "rocm", {}, "no live worker serves backend rocm"),
            ("nohost", "cuda", {"host": "gb10-z"},
             "no live worker on host gb10-z serves backend cuda"),
            ("h200", "cuda", {"requires": ["gpu=h200"]},
             "no live worker of backend cuda has tag gpu=h200")]:
        sweep_id = fleet.submit(fleet.sweep_file(
            name, backends={backend: {"build": "tinymoe-build", **spec}}), "--wait-for-worker")
        status = fleet.cli("status", sweep_id)
        assert status.returncode == 3, status.stdout
        assert f"1 queued cell wait: {why}" in status.stdout, status.stdout


def test_a_checkpoint_that_appears_becomes_a_tag_and_its_cells_run(fleet: Fleet) -> None:
    backends = {"cuda": {"build": "tinymoe-build", "requires": ["model:{model}"]}}
    sweep_id = fleet.submit(fleet.sweep_file("late", backends=backends, models=[LATE]),
                            "--wait-for-worker")
    status = fleet.cli("status", sweep_id).stdout
    assert f"no live worker of backend cuda has tag model:{LATE}" in status
    make_models(fleet.settings.models_dir, {LATE: DEMO_MODELS["tinymoe-a3"]})
    assert _workers(fleet, sweep_id) == {"gb10-a"}, "gb10-b's MODELS_DIR lacks it"
    deadline = time.monotonic() + DEADLINE_S
    while LATE not in fleet.cli("hosts").stdout:
        assert time.monotonic() < deadline


def test_a_message_on_the_wrong_workers_queue_is_passed_on(fleet: Fleet) -> None:
    cell = fleet.plant("passed", lambda c: replaced(c, host="gb10-b"),
                       backend="cuda", queue=host_queue("gb10-a", "cuda"))
    sweep_id = next(s for s in fleet.store.sweep_ids() if s.startswith("passed-"))
    assert _workers(fleet, sweep_id) == {"gb10-b"}
    log = (fleet.root / "logs" / "worker-gb10-a-cuda.log").read_text()
    assert (f"passed 1 cells of sweep {sweep_id} on to benchfleet.host.gb10-b.cuda: worker "
            "gb10-a does not fit them") in log
    assert cell.host == "gb10-b"


def test_a_pinned_host_that_lacks_a_required_tag_fails_the_cell_with_the_reason(
        fleet: Fleet) -> None:
    backends = {"cuda": {"build": "tinymoe-build", "host": "gb10-b", "requires": ["gpu=gb10"]}}
    # Submit says no live worker fits it; queued anyway, the worker's own check is shown.
    sweep_id = fleet.submit(fleet.sweep_file("lacking", backends=backends), "--wait-for-worker")
    wait(fleet.store, sweep_id)
    (state,) = fleet.store.states(sweep_id).values()
    assert state.status == "failed" and state.worker == "gb10-b"
    assert state.reason == "worker gb10-b lacks tag gpu=gb10, which the cell requires"


def test_a_sweep_no_live_worker_serves_is_refused_at_submit_unless_asked_to_wait(
        fleet: Fleet) -> None:
    # mlxcel-bench-decode needs its checkpoint in the worker's MODELS_DIR (needs_model): a
    # model no live cuda worker holds would fail on the worker, so submit says so first.
    needs_model = {"backends": {"cuda": {"build": "mlxcel-build-cuda"}}, "models": ["absent-7b"],
                   "arms": [{"name": "a", "recipe": "mlxcel-bench-decode", "baseline": True}]}
    for name, extra, why in [
            ("unserved-rocm", {"backends": {"rocm": {"build": "tinymoe-build"}}},
             "no live worker serves backend rocm"),
            ("unserved-model", needs_model,
             "no live worker of backend cuda offers model absent-7b (none has it in its "
             "MODELS_DIR)")]:
        path = fleet.sweep_file(name, **extra)
        refused = fleet.cli("submit", str(path))
        assert refused.returncode == 2, refused.stdout
        assert refused.stderr == (
            f"benchfleet: {why}, so its cells would wait in their queue; start that worker "
            "(`benchfleet hosts` lists the live ones), or pass --wait-for-worker to queue the "
            "sweep anyway\n")
        assert not [s for s in fleet.store.sweep_ids() if s.startswith(f"{name}-")]
        assert not list(fleet.settings.artifacts.glob(f"{name}-*"))  # nothing saved anywhere
        queued = fleet.cli("submit", "--wait-for-worker", str(path))
        assert queued.returncode == 0, queued.stderr
        warned, *_ = queued.stderr.splitlines()  # then the line naming its --resume
        assert warned == (f"benchfleet: warning: {why}; queued anyway (--wait-for-worker): "
                          "those cells wait until such a worker starts")
        assert queued.stdout.strip().splitlines()[-1] in fleet.store.sweep_ids()
