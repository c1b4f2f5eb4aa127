"""Attacks by anyone who can write to Redis, each written straight into a worker's queue: an
unsigned, a foreign-signed, a tampered and a replayed message, and cells whose ids, model or
commit would lead the worker outside its directories. None of them runs; each is reported."""

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from jobs.spec.cells import Cell
from jobs.strict import replaced
from tests.support.fleet import wait
from tests.trust.conftest import Fleet, envelope, files_under, trust_fleet
from workers.shared.messages import Signed
from workers.shared.queues import backend_queue
from workers.shared.signing import signer


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    with trust_fleet(tmp_path_factory.mktemp("forged"), [("cpu", "guard")]) as fleet:
        yield fleet


def _waiting_cell(fleet: Fleet, name: str) -> tuple[str, Cell, Signed]:
    """A real sweep for a backend no worker serves: its cell waits, with its real envelope."""
    sweep_id = fleet.submit(fleet.sweep_file(name, backend="rocm"), "--wait-for-worker")
    _, cells, _ = fleet.store.sweep(sweep_id)
    return sweep_id, cells[0], fleet.store.envelopes(sweep_id, [cells[0].id])[0]


def test_unsigned_foreign_and_tampered_messages_never_run(fleet: Fleet) -> None:
    sweep_id, cell, real = _waiting_cell(fleet, "forged")
    status = fleet.cli("status", sweep_id)
    assert status.returncode == 3
    assert "1 queued cell wait: no live worker serves backend rocm" in status.stdout
    on_cpu = envelope(sweep_id, replaced(cell, backend="cpu"))
    foreign = base64.b64encode(Ed25519PrivateKey.generate().sign(on_cpu)).decode()
    tampered = real.envelope.replace('"backend":"rocm"', '"backend":"cpu"')
    assert tampered != real.envelope
    for item in (Signed(on_cpu.decode(), ""), Signed(on_cpu.decode(), foreign),
                 Signed(tampered, real.signature)):
        fleet.forge(sweep_id, backend_queue("cpu"), [item])

    refused = fleet.reported(lambda r: r["sweep_id"] == sweep_id, count=3)
    assert {r["why"] for r in refused} == {
        "the signature does not verify against this worker's coordinator key"}
    assert all(r["worker"] == "guard" and r["cell"] == cell.id for r in refused)
    assert fleet.store.state(sweep_id, cell.id).status == "queued"  # type: ignore[union-attr]
    assert fleet.attempts(sweep_id) == {}, "no attempt was started"
    assert not (fleet.settings.workspace / "mirrors").exists(), "nothing was checked out"
    assert not (Path(fleet.settings.artifacts) / sweep_id / cell.id).exists()
    status = fleet.cli("status", sweep_id)
    lines = [line for line in status.stdout.splitlines() if line.startswith("refused by guard")]
    assert len(lines) == 3 and all(f"cell {cell.id}: the signature does not verify" in line
                                   for line in lines), status.stdout


def test_replays_of_a_final_cell_and_of_an_old_generation_are_dropped(fleet: Fleet) -> None:
    sweep_id = fleet.submit(fleet.sweep_file("replayed"))
    wait(fleet.store, sweep_id)
    _, cells, _ = fleet.store.sweep(sweep_id)
    cell = cells[0]
    first = fleet.store.envelopes(sweep_id, [cell.id])[0]
    assert fleet.store.state(sweep_id, cell.id).status == "done"  # type: ignore[union-attr]

    fleet.forge(sweep_id, backend_queue("cpu"), [first])
    done = fleet.reported(lambda r: r["sweep_id"] == sweep_id)
    assert done[0]["kind"] == "dropped"
    # The store's accepted marker answers first (the truth for dedup), Redis's state after.
    assert done[0]["why"] in ("the cell is already done (a duplicate or a replay)",
                              "the artifact store already holds attempt 1 of generation 0, "
                              "done (a replay)")
    assert fleet.attempts(sweep_id) == {cell.id: "1"}

    rerun = fleet.cli("rerun", sweep_id, cell.id)
    assert rerun.returncode == 0, rerun.stderr
    wait(fleet.store, sweep_id)
    assert fleet.store.state(sweep_id, cell.id).generation == 1  # type: ignore[union-attr]
    fleet.forge(sweep_id, backend_queue("cpu"), [first])
    old = fleet.reported(lambda r: r["sweep_id"] == sweep_id and "older" in r["why"])
    assert old[0]["why"] == "generation 0 is older than the cell's 1 (a replay)"
    assert fleet.attempts(sweep_id) == {cell.id: "2"}, "the replay started no attempt"
    status = fleet.cli("status", sweep_id).stdout
    assert "dropped by guard" in status and "(a replay)" in status


@pytest.mark.parametrize(("field", "value", "why"), [
    ("sweep_id", "../../escape", "sweep id '../../escape' is not a plain name"),
    ("id", "../../../escape", "cell id '../../../escape' is not a plain name"),
    ("model", "../../../../etc", "model name '../../../../etc' is not a plain name"),
    ("commit", "--upload-pack=touch {root}/pwned", "is not a 40-hex sha")])
def test_signed_cells_naming_paths_are_refused(fleet: Fleet, field: str, value: str,
                                               why: str) -> None:
    """Signed with the coordinator's own key (a coordinator that skipped its checks): the
    worker still refuses, before the cell's ids or model become paths or git arguments."""
    sweep_id, cell, _ = _waiting_cell(fleet, f"paths-{field}")
    value = value.format(root=fleet.root)
    cell = replaced(cell, backend="cpu")
    if field == "sweep_id":
        sweep_id = value
    else:
        cell = replaced(cell, **{field: value})
    data = envelope(sweep_id, cell)
    workspace = files_under(fleet.settings.workspace)
    fleet.forge(sweep_id, backend_queue("cpu"),
                [Signed(data.decode(), signer(fleet.settings.signing_key).sign(data))])
    refused = fleet.reported(lambda r: r["sweep_id"] == sweep_id and why in r["why"])
    assert refused[0]["worker"] == "guard"
    store = Path(fleet.settings.artifacts)
    assert not (store.parent.parent / "escape").exists()
    assert not (store / value).exists() and not (fleet.root / "pwned").exists()
    assert files_under(fleet.settings.workspace) == workspace, "nothing checked out or built"
    hosts = fleet.cli("hosts").stdout
    assert "refused by guard" in hosts and why in hosts.replace("\n", "")
