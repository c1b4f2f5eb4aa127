"""Models a record holds per cell share what pydantic would keep once per instance: the set
of fields they were given, and a cell's steps. Sharing must change no value, no equality and
no JSON."""

import dataclasses
import sys

import pytest
from pydantic import TypeAdapter, ValidationError

from jobs.record.fidelity import HostRun
from jobs.record.parts import BuildTime, Evidence
from jobs.record.states import CellState
from jobs.spec.cells import Cell, Step, expand
from jobs.spec.specfile import load
from jobs.spec.sweep import Sweep
from jobs.strict import Lean, assembled, dumped, dumped_json, parsed, replaced
from tests.support.records import OLD, record
from tests.support.samples import EVERY_KIND_SWEEP, SWEEP

_CELL = TypeAdapter(Cell)


def _run(cell: str, role: str = "measure") -> HostRun:
    return HostRun(hostname="h", worker="w", cell_id=cell, attempt=1, role=role,
                   started="2026-12-04T10:00:00+00:00", ended="2026-12-04T10:00:03+00:00",
                   host_lease=True)


def test_a_record_s_parts_by_the_cell_hold_their_values_in_slots_not_a_dict() -> None:
    # A measurement took 912 bytes as a model (832 of them its dict), a host run 352.
    made = record(OLD)
    measurements = [m for g in made.groups for m in g.measurements]
    cells = expand(load(Sweep, SWEEP, "s.yaml")[0])
    evidence = Evidence(cell_id="c1", attempt=1, used=True, result_sha256="a" * 64,
                        manifest_sha256="b" * 64)
    parts = (_run("c1"), *measurements, evidence, *made.host_runs, *cells,
             CellState(status="queued"), *(m.gate for m in measurements if m.gate))
    assert {type(p).__name__ for p in parts} >= {"HostRun", "Measurement", "Evidence", "Cell",
                                                  "CellState", "Gate"}
    for part in parts:
        assert not hasattr(part, "__dict__"), type(part).__name__
    assert sys.getsizeof(_run("c1")) < 120 and sys.getsizeof(measurements[0]) < 400


def test_a_replaced_part_changes_only_the_values_given_and_is_validated() -> None:
    a = _run("c1")
    b = replaced(a, role="build")
    assert (b.role, a.role) == ("build", "measure")
    assert dumped(b) == {**dumped(a), "role": "build"}
    with pytest.raises(ValidationError):
        replaced(a, attempt="first")
    with pytest.raises(ValidationError):
        HostRun(**{**dataclasses.asdict(a), "colour": "blue"})


def test_instances_given_other_fields_keep_their_own_set() -> None:
    given = Step(recipe="r")
    full = Step(recipe="r", params={}, env={})
    assert given.model_fields_set == {"recipe"}
    assert full.model_fields_set == {"recipe", "params", "env"}
    assert given == full


def test_cells_read_back_hold_one_object_per_distinct_step() -> None:
    cells = expand(load(Sweep, SWEEP, "s.yaml")[0])
    read = [parsed(Cell, dumped_json(c)) for c in cells]
    assert read == cells
    steps = [s for c in read for s in (c.build, c.run)]
    distinct = {s.model_dump_json() for s in steps}
    assert len({id(s) for s in steps}) == len(distinct) < len(steps) // 4


def test_expanded_cells_equal_the_same_cells_validated_and_share_their_steps() -> None:
    # expand assembles each cell from the sweep's validated values without validating it
    # again: nothing may differ from a cell validated from the same values.
    cells = expand(load(Sweep, EVERY_KIND_SWEEP, "s.yaml")[0])
    kinds = {(c.kind, c.adaptive, c.aa, c.host, tuple(c.requires)) for c in cells}
    assert {k[0] for k in kinds} == {"bench", "profile"} and len(kinds) >= 6
    for cell in cells:
        twin = _CELL.validate_python(dataclasses.asdict(cell))
        assert twin == cell and dumped_json(twin) == dumped_json(cell)
        assert [type(getattr(cell, f.name)) for f in dataclasses.fields(cell)] == \
            [type(getattr(twin, f.name)) for f in dataclasses.fields(twin)]
    steps = [s for c in cells for s in (c.build, c.run)]
    assert len({id(s) for s in steps}) == len({s.model_dump_json() for s in steps})


def test_an_assembled_part_needs_every_field() -> None:
    a = _run("c1")
    values = {f.name: getattr(a, f.name) for f in dataclasses.fields(a)}
    assert assembled(HostRun, **values) == a
    with pytest.raises(TypeError, match="role"):
        assembled(HostRun, **{k: v for k, v in values.items() if k != "role"})
    with pytest.raises(TypeError, match="colour"):
        assembled(HostRun, **values, colour="blue")


def test_steps_share_only_when_equal_in_value_and_type() -> None:
    def cell(step: Step) -> Cell:
        base = expand(load(Sweep, SWEEP, "s.yaml")[0])[0]
        return replaced(base, run=step)

    one = _CELL.validate_python(dumped(cell(Step(recipe="r", params={"x": 1}))))
    true = _CELL.validate_python(dumped(cell(Step(recipe="r", params={"x": True}))))
    env = _CELL.validate_python(dumped(cell(Step(recipe="r", params={"x": 1}, env={"A": "1"}))))
    zero = _CELL.validate_python(dumped(cell(Step(recipe="r", params={"x": 0.0}))))
    minus = _CELL.validate_python(dumped(cell(Step(recipe="r", params={"x": -0.0}))))
    assert one.run.params["x"] is not True and true.run.params["x"] is True
    assert one.run is not env.run and env.run.env == {"A": "1"}
    assert str(minus.run.params["x"]) == "-0.0" and str(zero.run.params["x"]) == "0.0"


class _Probe(Lean):  # field names no other model has: its sets are registered here first
    probe_a: str
    probe_b: int = 0


def test_a_set_given_to_model_construct_stays_the_callers() -> None:
    given = {"probe_a"}
    made = _Probe.model_construct(_fields_set=given, probe_a="x")
    given.add("probe_b")
    assert made.model_fields_set == {"probe_a"}
    assert _Probe(probe_a="y").model_fields_set == {"probe_a"}


def test_a_record_s_groups_rows_and_builds_share_their_sets_of_fields() -> None:
    # A group is made per commit, backend and model of a large sweep, a row per arm of it
    # (copied with its comparisons), a build per commit: 33 MB of sets at 100,000 cells.
    r = record(OLD, commits="[main, v2]")
    rows = [row for g in r.groups for row in g.rows]
    compared = [row for row in rows if not row.baseline]
    assert compared and all(row.decode_comparison for row in compared)
    assert len({id(row.__pydantic_fields_set__) for row in compared}) == 1
    assert len({id(g.__pydantic_fields_set__) for g in r.groups}) == 1 < len(r.groups)
    builds = [BuildTime(commit=c, backend="cuda", worker="w", recipe="r", wall_s=1.0,
                        built_at=None, command=[["make"]]) for c in ("a", "b")]
    assert builds[0].__pydantic_fields_set__ is builds[1].__pydantic_fields_set__
