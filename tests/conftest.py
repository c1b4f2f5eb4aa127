"""Fixtures every room may use: the shipped catalogue here; a private Redis, the stand-in target
and a local fleet from tests/support/fleet.py; a signed sweep in a private Redis database for
unit tests from tests/support/cells.py."""

import pytest

from jobs.spec.recipes import Catalogue
from jobs.spec.specfile import load

# Fixtures every room may use: importing them here makes them known to every test module.
from tests.support.evidence import made  # noqa: F401
from tests.support.moe_lab import lab  # noqa: F401
from tests.support.preset_records import preset  # noqa: F401
from tests.support.records import small  # noqa: F401
from tests.support.samples import SHIPPED

pytest_plugins = ["tests.support.fleet", "tests.support.cells"]


@pytest.fixture
def catalogue() -> Catalogue:
    return load(Catalogue, SHIPPED.read_text(), str(SHIPPED))[0]
