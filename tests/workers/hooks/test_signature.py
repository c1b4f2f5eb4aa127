"""The signature hook verifies each envelope of a message once; only those that verify run."""

from dataclasses import replace

from tests.support.cells import Submitted
from workers.hooks.signature import SignatureCheck
from workers.in_flight import Group
from workers.shared.messages import Signed


def _message(submitted: Submitted, items: list[Signed], sweep_id: str | None = None) -> Group:
    return Group(sweep_id or submitted.sweep_id, "task-1", tuple(items))


def test_cells_that_verify_are_the_groups_cells_in_order(submitted: Submitted) -> None:
    hook = SignatureCheck(submitted.verify, submitted.store, "w1")
    items = [submitted.signed[c.id] for c in submitted.cells]
    group = hook.before_group(_message(submitted, items))
    assert [c.cell.id for c in group.cells] == [c.id for c in submitted.cells]
    assert submitted.store.refused() == []


def test_a_tampered_envelope_is_refused_and_reported(submitted: Submitted) -> None:
    hook = SignatureCheck(submitted.verify, submitted.store, "w1")
    good, other = (submitted.signed[c.id] for c in submitted.cells[:2])
    forged = replace(other, envelope=other.envelope.replace('"repeat":', '"repeat": '))
    group = hook.before_group(_message(submitted, [forged, good]))
    assert [c.signed for c in group.cells] == [good]
    (refused,) = submitted.store.refused()
    assert refused["cell"] == submitted.cells[1].id and "does not verify" in refused["why"]
    assert refused["worker"] == "w1" and refused["task_id"] == "task-1"


def test_an_envelope_of_another_sweep_is_refused(submitted: Submitted) -> None:
    hook = SignatureCheck(submitted.verify, submitted.store, "w1")
    group = hook.before_group(_message(submitted, [submitted.signed[submitted.cells[0].id]],
                                       sweep_id="elsewhere"))
    assert group.cells == ()
    assert "an envelope of sweep hooks-1" in submitted.store.refused()[0]["why"]


def test_a_signature_that_is_not_base64_is_refused(submitted: Submitted) -> None:
    hook = SignatureCheck(submitted.verify, submitted.store, "w1")
    item = replace(submitted.signed[submitted.cells[0].id], signature="not base64!")
    assert hook.before_group(_message(submitted, [item])).cells == ()
    assert len(submitted.store.refused()) == 1
