"""Rules a worker keeps whoever signed the cell: it builds only repositories in its allow-list
(an empty list builds nothing), and an env value an arm sets for a `path_env` name stays
inside the cell's {out}. A cell that breaks one ends failed with the reason, nothing of it
having run."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.spec.cells import Cell
from jobs.strict import replaced
from runner.demo.target_repo import make_target_repo
from tests.support.fleet import until_live, wait
from tests.trust.conftest import Fleet, files_under, trust_fleet
from workers.shared.stores.local import LocalStore

DOT = "MLXCEL_EXPORT_DECODE_DOT"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    with trust_fleet(tmp_path_factory.mktemp("policy"), [("cpu", "guard")]) as fleet:
        closed = fleet.settings.model_copy(update={"allowed_repos": []})
        fleet.workers.start("locked", "closed", settings=closed)
        until_live(fleet.settings, "closed")
        yield fleet


def _ended(fleet: Fleet, sweep_id: str) -> tuple[Cell, str, str]:
    wait(fleet.store, sweep_id)
    _, cells, _ = fleet.store.sweep(sweep_id)
    state = fleet.store.state(sweep_id, cells[0].id)
    assert state is not None
    return cells[0], state.status, state.reason or ""


def _mirrors(fleet: Fleet) -> set[str]:
    return files_under(fleet.settings.workspace / "mirrors") \
        if (fleet.settings.workspace / "mirrors").exists() else set()


def test_a_repository_outside_the_allow_list_is_never_cloned(fleet: Fleet) -> None:
    other = fleet.root / "elsewhere" / "other"
    make_target_repo(other)
    cell, status, reason = _ended(fleet, fleet.submit(fleet.sweep_file("outside", repo=other)))
    assert status == "failed"
    assert reason == (f"repository {other} is not in worker guard's allow-list "
                      "(BENCHFLEET_ALLOWED_REPOS); add it there and rerun")
    assert not any("other-" in m for m in _mirrors(fleet)), "the repository was not cloned"


def test_an_empty_allow_list_builds_nothing(fleet: Fleet) -> None:
    sweep_id = fleet.submit(fleet.sweep_file("closed", backend="locked"))
    _, status, reason = _ended(fleet, sweep_id)
    assert status == "failed"
    assert reason.startswith("worker closed builds no repository: its BENCHFLEET_ALLOWED_REPOS "
                             "is empty")
    log = (fleet.root / "logs" / "worker-closed-locked.log").read_text()
    assert "BENCHFLEET_ALLOWED_REPOS is empty: worker closed builds no repository" in log
    status_out = fleet.cli("status", sweep_id).stdout
    assert "builds no repository" in status_out


def test_git_transports_that_run_commands_are_refused(fleet: Fleet) -> None:
    pwned = fleet.root / "pwned-ext"
    cell = fleet.plant("ext", lambda c: replaced(
        c, repo=f"ext::sh -c touch% {pwned}"))
    sweep_id = next(s for s in fleet.store.sweep_ids() if s.startswith("ext-"))
    _, status, reason = _ended(fleet, sweep_id)
    assert status == "failed" and "is not a plain git URL or absolute path" in reason, reason
    assert not pwned.exists()
    assert cell.id in fleet.store.states(sweep_id)


@pytest.mark.parametrize("value", ["../../../../../escape.dot", "/tmp/benchfleet-escape.dot"])
def test_a_path_env_value_outside_out_is_refused_at_submit_and_on_the_worker(
        fleet: Fleet, value: str) -> None:
    arm_env = {"MLXCEL_FUSED_MOE": "0", DOT: value}
    refused = fleet.cli("submit", str(fleet.sweep_file("dot-escape", env=arm_env)))
    assert refused.returncode == 2
    assert "names a path outside the cell's {out}" in refused.stderr

    def escape(c: Cell) -> Cell:
        return replaced(c, run=c.run.model_copy(update={"env": arm_env}))

    fleet.plant("dot-escape", escape)
    sweep_id = next(s for s in fleet.store.sweep_ids() if s.startswith("dot-escape-"))
    _, status, reason = _ended(fleet, sweep_id)
    assert status == "failed"
    assert f"env {DOT}={value!r} names a path outside the cell's {{out}}" in reason, reason
    assert not Path("/tmp/benchfleet-escape.dot").exists()
    assert not [p for p in fleet.root.parent.rglob("escape.dot")]


def test_a_path_env_value_inside_out_lands_in_the_attempt(fleet: Fleet) -> None:
    arm_env = {"MLXCEL_FUSED_MOE": "0", DOT: "decode.dot"}
    sweep_id = fleet.submit(fleet.sweep_file("dot-inside", env=arm_env))
    cell, status, reason = _ended(fleet, sweep_id)
    assert status == "done", reason
    files = LocalStore(Path(fleet.settings.artifacts)).read(sweep_id, cell.id, 1)
    assert "out/decode.dot" in files
    assert "->" in files["out/decode.dot"].read_text()
