"""The keeper starts once a cell is taken and admitted, not for a cell another hook rejects,
and a cell's end leaves none (workers/hooks/keeper.py)."""

import pytest

from jobs.parsers.readings import Failure
from jobs.record.attempts import AttemptResult
from tests.support.cells import Submitted
from tests.workers.hooks.test_chain import Taker
from workers import descendants
from workers.hooks import Chain, Hook, Rejected
from workers.hooks.keeper import KeepMoveQuick
from workers.host_facts import facts
from workers.in_flight import Attempt
from workers.shared.clock import now


class Rejects(Hook):
    def after_take(self, attempt: Attempt) -> None:
        raise Rejected(Failure(kind="policy", reason="not here"))


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    heard: list[str] = []
    monkeypatch.setattr(descendants, "warm", lambda: heard.append("warm"))
    monkeypatch.setattr(descendants, "rest", lambda: heard.append("rest"))
    return heard


def test_an_admitted_cell_starts_the_keeper_and_its_end_rests_it(
        submitted: Submitted, calls: list[str]) -> None:
    chain = Chain([Taker("t", []), KeepMoveQuick()])
    attempt, failure = chain.admit(submitted.arrival())
    assert failure is None and calls == ["warm"]
    result = AttemptResult(sweep_id=submitted.sweep_id, cell_id=attempt.cell.id, attempt=1,
                           worker="w1", host=facts(), requested_commit=attempt.cell.commit,
                           commit=attempt.cell.commit, started=now(), ended=now())
    chain.after_cell(attempt, result)
    assert calls == ["warm", "rest"]


def test_a_rejected_cell_starts_no_keeper(submitted: Submitted, calls: list[str]) -> None:
    _, failure = Chain([Taker("t", []), Rejects(), KeepMoveQuick()]).admit(
        submitted.arrival())
    assert failure is not None and calls == []
