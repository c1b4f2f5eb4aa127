"""Every Redis key benchfleet writes is named in redis_keys.py, under one prefix."""

import ast
import re
from pathlib import Path

from workers.shared import redis_keys

ROOT = Path(__file__).parents[2]
KEY = re.compile(r"benchfleet:([a-z]|$)")  # `benchfleet: error ...` is a message, not a key


def test_keys_read_back_as_their_layout() -> None:
    assert redis_keys.sweep("s1") == "benchfleet:sweep:s1"
    assert redis_keys.sweep("s1", "states") == "benchfleet:sweep:s1:states"
    assert redis_keys.cancel_set("s1") == "benchfleet:sweep:s1:cancel"
    assert redis_keys.worker("w1") == "benchfleet:worker:w1"
    assert redis_keys.control_channel("w1") == "benchfleet:worker:w1:control"


def test_the_cell_scripts_keys_are_in_their_keys_order() -> None:
    assert redis_keys.cell_script_keys("s1", "attempts") == [
        "benchfleet:sweep:s1:states", "benchfleet:sweep:s1:log", "benchfleet:sweep:s1:events",
        "benchfleet:sweep:s1:attempts"]


def test_no_other_module_spells_a_key() -> None:
    """A string starting `benchfleet:` outside redis_keys.py is a key named in a second place."""
    found = []
    rooms = ("workers", "runner", "deploy")
    for path in (p for room in rooms for p in ROOT.glob(f"{room}/**/*.py")):
        if path.name == "redis_keys.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and KEY.match(node.value):
                found.append(f"{path.relative_to(ROOT)}: {node.value!r}")
    assert found == []
