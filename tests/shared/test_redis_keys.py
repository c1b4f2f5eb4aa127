"""Every Redis name in one module, and the one script that spells names out agrees with it;
no Python module outside redis_keys.py spells a key."""

import ast
import re
from pathlib import Path

from workers.shared import redis_keys

LUA = Path(redis_keys.__file__).parent / "lua"
ROOT = Path(__file__).parents[2]
KEY = re.compile(r"benchfleet:([a-z]|$)")  # `benchfleet: error ...` is a message, not a key


def test_the_lease_functions_in_lease_head_lua_use_the_same_names() -> None:
    head = (LUA / "lease_head.lua").read_text()
    assert f"local WORKERS = '{redis_keys.WORKERS}'" in head
    assert f"'{redis_keys.worker('')}' .. name" in head


def test_no_other_script_spells_a_name_out() -> None:
    spelled = {p.name for p in LUA.glob("*.lua")
               if f"'{redis_keys.PREFIX}:" in p.read_text() and p.name != "lease_head.lua"}
    assert spelled == set()


def test_a_sweeps_keys_are_under_its_id_and_in_script_order() -> None:
    assert redis_keys.sweep("s1", "states") == "benchfleet:sweep:s1:states"
    assert redis_keys.cell_script_keys("s1", "attempts") == [
        "benchfleet:sweep:s1:states", "benchfleet:sweep:s1:log", "benchfleet:sweep:s1:events",
        "benchfleet:sweep:s1:attempts"]
    assert redis_keys.cancel_set("s1") == "benchfleet:sweep:s1:cancel"
    assert redis_keys.control_channel("w1") == "benchfleet:worker:w1:control"
    assert redis_keys.worker("w1") == "benchfleet:worker:w1"


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
