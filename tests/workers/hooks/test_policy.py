"""Policy: a signed cell outside this worker's allow-list, or needing a tag it lacks, ends
failed with the reason before anything of it runs."""

from pathlib import Path

import pytest

from jobs.strict import replaced
from tests.support.cells import Submitted
from workers.hooks import Rejected
from workers.hooks.policy import Policy
from workers.in_flight import Attempt, SignedCell
from workers.offer import Offering


def _policy(allowed: list[str], tmp_path: Path, tags: list[str] | None = None) -> Policy:
    return Policy(allowed, Offering("w1", "cpu", "h1", tags or [], tmp_path))


def test_a_repository_in_the_allow_list_runs(submitted: Submitted, tmp_path: Path) -> None:
    _policy(["/srv/git/*"], tmp_path).after_take(submitted.attempt())


def test_a_repository_outside_it_is_rejected_with_the_fix(submitted: Submitted,
                                                          tmp_path: Path) -> None:
    with pytest.raises(Rejected) as rejected:
        _policy(["/elsewhere/*"], tmp_path).after_take(submitted.attempt())
    assert rejected.value.failure.kind == "refused"
    assert "not in worker w1's allow-list (BENCHFLEET_ALLOWED_REPOS)" in str(rejected.value)


def test_an_empty_allow_list_builds_nothing(submitted: Submitted, tmp_path: Path) -> None:
    with pytest.raises(Rejected, match="builds no repository"):
        _policy([], tmp_path).after_take(submitted.attempt())


def test_a_tag_the_cell_requires_and_the_worker_lacks(submitted: Submitted,
                                                      tmp_path: Path) -> None:
    attempt = submitted.attempt()
    needy = replaced(attempt.cell, requires=["gpu=gb10"])
    item = SignedCell(attempt.item.signed, attempt.envelope.model_copy(update={"cell": needy}))
    with pytest.raises(Rejected, match="lacks tag gpu=gb10"):
        _policy(["/srv/git/*"], tmp_path).after_take(Attempt(attempt.group, item, 1))
    _policy(["/srv/git/*"], tmp_path, ["gpu=gb10"]).after_take(Attempt(attempt.group, item, 1))
