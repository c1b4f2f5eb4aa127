"""The record's JSON written in pieces is the JSON of the whole, byte for byte."""

from pathlib import Path

import pytest

from jobs.record.attempt_log import AttemptEntry
from jobs.record.model import Record
from jobs.views.record_json import json_pieces
from tests.support.records import OLD, record

H200 = (Path(__file__).parents[3] / "docs" / "records" / "h200-moe-decode" / "run-4"
        / "h200-moe-decode-20261202-063530-8e13.json")


def _whole(r: Record) -> bytes:
    return Record.__pydantic_serializer__.to_json(r, indent=1)


def _with_history(r: Record) -> Record:  # a list of one element, and text that needs escaping
    entry = AttemptEntry(cell_id="c1", attempt=2, worker="w", hostname="h",
                         started="2026-12-01T00:00:00+00:00", ended="",
                         outcome='failed: "quoted"\nline', used=False)
    return r.model_copy(update={"history": [entry]})


@pytest.mark.parametrize("made", [
    pytest.param(lambda: Record.model_validate_json(H200.read_bytes()), id="h200-run-4"),
    pytest.param(lambda: record(OLD, failed="fused"), id="a-failed-arm"),
    pytest.param(lambda: _with_history(record(OLD)), id="history"),
    pytest.param(lambda: record(OLD).model_copy(update={"groups": [], "host_runs": []}),
                 id="empty-lists"),
])
def test_the_pieces_are_the_whole_byte_for_byte(made: object) -> None:
    r = made()  # type: ignore[operator]
    assert b"".join(json_pieces(r)) == _whole(r)
    assert Record.model_validate_json(b"".join(json_pieces(r))) == r

    assert b"".join(json_pieces(r)).count(b"\n") == _whole(r).count(b"\n")


def test_the_samples_fill_every_list_that_is_written_in_pieces() -> None:
    h200, failed, history = (Record.model_validate_json(H200.read_bytes()),
                             record(OLD, failed="fused"), _with_history(record(OLD)))
    assert h200.groups and h200.host_runs and h200.evidence
    assert failed.missing and history.history
