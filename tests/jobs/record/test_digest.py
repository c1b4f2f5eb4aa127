"""What a record keeps of each attempt as it reads it: enough for the same record, no more."""

from jobs.parsers.readings import Failure
from jobs.record.attempts import AttemptResult, BuildInfo, CellState
from jobs.record.builds import build_times
from jobs.record.digest import Digests, digest
from jobs.record.model import build_record, record_from
from jobs.spec.cells import Cell
from jobs.spec.sweep import Sweep
from tests.support.records import result


def built(cell: Cell, decode: float, cached: bool) -> AttemptResult:
    r = result(cell, decode)
    return r.model_copy(update={"build": BuildInfo(recipe="b", ok=True, cached=cached,
                                                   wall_s=1.0, built_at="then")})


def test_one_host_and_one_entry_per_build_are_kept(small: tuple[Sweep, list[Cell]]) -> None:
    sweep, cells = small
    results = [built(c, 20.0 + i, cached=i > 0) for i, c in enumerate(cells)]
    kept = Digests(sweep, cells, {})
    for cell, r in zip(cells, results, strict=True):
        # each attempt's host facts are its own object, equal to the others'
        kept.take(cell.id, r.model_copy(update={"host": r.host.model_copy()}), True)
    assert len({id(d.host) for d in kept.items}) == 1
    assert [d.build is not None for d in kept.items] == [True] + [False] * (len(cells) - 1)
    every = [digest(sweep, c, r, True, True).build for c, r in zip(cells, results, strict=True)]
    assert build_times(d.build for d in kept.items) == build_times(every)


def test_the_record_from_digests_is_the_record_from_the_attempts(
        small: tuple[Sweep, list[Cell]]) -> None:
    sweep, cells = small
    results = {c.id: built(c, 20.0 + i, cached=i % 2 == 1) for i, c in enumerate(cells)}
    states = {c.id: CellState(status="done", attempt=1) for c in cells}
    kept = Digests(sweep, cells, states)
    for c in cells:
        kept.take(c.id, results[c.id], True)
    flagged: dict[tuple[str, int], list[str]] = {}
    streamed = record_from("s1", sweep, cells, states, kept.items, {}, "now", None, flagged)
    assert streamed == build_record("s1", sweep, cells, states, results, {}, "now")
    assert set(flagged) == {(c.id, 1) for c in cells}
    assert all(m.flags == flagged[(m.cell_id, 1)] for g in streamed.groups
               for m in g.measurements)


def test_an_attempt_naming_another_cell_measures_neither(small: tuple[Sweep, list[Cell]]
                                                         ) -> None:
    sweep, cells = small
    y, x = cells[0], cells[1]  # x read after y: its digest must not take y's place
    results = {c.id: result(c, 20.0) for c in cells}
    results[x.id] = result(y, 99.0)  # x's folder holds a result.json that names y
    states = {c.id: CellState(status="done", attempt=1) for c in cells}
    r = build_record("s1", sweep, cells, states, results, {}, "now")
    measured = {m.cell_id: m for g in r.groups for m in g.measurements}
    assert x.id not in measured and x.id in {m.cell_id for m in r.missing}
    assert measured[y.id].decode_tps == 20.0


def test_a_failure_with_an_empty_reason_is_still_the_reason(small: tuple[Sweep, list[Cell]]
                                                            ) -> None:
    sweep, cells = small
    failed = result(cells[0], None, failure=Failure(kind="error", reason=""))
    states = {cells[0].id: CellState(status="failed", attempt=1, reason="from the state")}
    r = build_record("s1", sweep, cells[:1], states, {cells[0].id: failed}, {}, "now")
    assert [m.reason for m in r.missing] == [""]


def test_the_record_holds_each_measurement_once_and_judging_again_gives_the_same(
        small: tuple[Sweep, list[Cell]]) -> None:
    sweep, cells = small
    states = {c.id: CellState(status="done", attempt=1) for c in cells}
    kept = Digests(sweep, cells, states)
    for i, c in enumerate(cells):
        kept.take(c.id, result(c, 20.0 + i, lease=i % 2 == 0), True)  # half flagged
    first = record_from("s1", sweep, cells, states, kept.items, {}, "now")
    held = [m for g in first.groups for m in g.measurements]
    assert any(m.flags for m in held), "the sample must have flags to judge"
    # one object per measurement: the digest's, judged (a copy held each twice)
    assert sorted(map(id, held)) == sorted(id(d.measurement) for d in kept.items)
    # The second record judges the same objects again: compared as text, not as objects that
    # are now the second record's too.
    text = first.model_dump_json()
    assert record_from("s1", sweep, cells, states, kept.items, {}, "now").model_dump_json() \
        == text


def test_equal_texts_of_the_measurements_are_one_object(small: tuple[Sweep, list[Cell]]
                                                        ) -> None:
    """Each attempt read brings its own copies of its command's arguments and environment, its
    worker and commit, where they are longer than pydantic shares by itself (64 characters): the
    record keeps one of each (a 100,000-cell record holds them all)."""
    sweep, cells = small
    states = {c.id: CellState(status="done", attempt=1) for c in cells}
    kept = Digests(sweep, cells, states)
    long = "/work/builds/target-9c867593d2/bd785748a44e8132c656e7037c119b33af5f3b2f/cpu/out"
    for i, c in enumerate(cells):
        r = result(c, 20.0 + i)
        runs = [run.model_copy(update={"argv": [f"{long}/bench", "-m", f"{long}/model"],
                                       "env": {"MLXCEL_A_LONG_SETTING_NAME": long}})
                for run in r.runs]
        r = r.model_copy(update={"runs": runs, "worker": f"{long}/worker"})
        kept.take(c.id, AttemptResult.model_validate_json(r.model_dump_json()), True)  # as read
    ms = [d.measurement for d in kept.items if d.measurement]
    assert len(ms) == len(cells) > 1
    first, *others = ms
    for m in others:
        assert all(mine is theirs for mine, theirs in zip(m.argv, first.argv, strict=True))
        assert m.worker is first.worker and m.commit is first.commit
        (name, value), = m.env.items()
        assert value is first.env[name] and name is next(iter(first.env))
    assert all(d.tried.cell_id is c.id for d, c in zip(kept.items, cells, strict=True))
