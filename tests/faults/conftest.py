"""Each fault test adds one row (fault, outcome, recovery time) to the matrix; with
BENCHFLEET_FAULT_REPORT set, the rows are written there (tests/faults/report.py renders them
into docs/faults.md)."""

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

ROWS: list[dict[str, object]] = []


@pytest.fixture
def matrix() -> Iterator[list[dict[str, object]]]:
    rows: list[dict[str, object]] = []
    yield rows
    ROWS.extend(rows)
    target = os.environ.get("BENCHFLEET_FAULT_REPORT")
    if target and rows:
        path = Path(target)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
