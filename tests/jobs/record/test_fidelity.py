"""A clean host or a loud record: busy hosts, missing leases and overlapping runs are flagged,
and a record that hides them fails its check."""

import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.record import check, fidelity
from jobs.record.attempts import AttemptResult, CellState, Gate
from jobs.record.check import check_record
from jobs.record.fidelity import HostRun, flags
from jobs.record.model import Record, build_record
from jobs.spec.cells import Cell, expand
from jobs.spec.specfile import load
from jobs.spec.sweep import Sweep
from jobs.strict import replaced
from jobs.views.markdown import render
from tests.support.records import ONE_GROUP_SWEEP, result, stamp, with_evidence
from workers.shared import clock

BUSY = Gate(at="2026-11-30T09:59:00+00:00", idle=False, waited_s=600.0, threshold=0.6,
            load1=[3.9, 4.2], max_wait_s=600.0, reason="load1 4.2 >= 0.6 after 600 s")


def run(start: str, end: str, worker: str = "w1", cell: str = "a", role: str = "measure",
        lease: bool = True) -> HostRun:
    return HostRun(hostname="gb10-a", worker=worker, cell_id=cell, attempt=1, role=role,
                   started=start, ended=end, host_lease=lease)


def test_gate_and_lease_flags() -> None:
    me = run(stamp(0), stamp(5), lease=False)
    assert flags(me, BUSY, [me]) == ["host not idle", "no host lease"]
    assert flags(me, None, [me])[0] == "idle gate not recorded"


@pytest.mark.parametrize(("other", "expected"), [
    (run(stamp(4), stamp(9), "w2", "b"), "overlaps measure of b (attempt 1, w2)"),
    (run(stamp(5), stamp(9), "w2", "b", "build"),
     "may overlap build of b (attempt 1, w2): times in whole seconds"),
    (run(stamp(5), stamp(9), "w1", "b"), None),  # one worker runs one command at a time
    (run(stamp(6), stamp(9), "w2", "b"), None),
    (run("2026-11-30T11:00:04.5+01:00", stamp(9), "w1", "b"),
     "overlaps measure of b (attempt 1, w1)"),
    (run("yesterday", stamp(9), "w2", "b"), "may overlap measure of b (attempt 1, w2): its "
     "times are unreadable"),
])
def test_overlaps_on_one_host(other: HostRun, expected: str | None) -> None:
    me = run(stamp(0), stamp(5))
    assert flags(me, None, [me, other])[1:] == ([expected] if expected else [])


def test_sub_second_times_are_read_exactly() -> None:
    me = run("2026-11-30T10:00:00.000+00:00", "2026-11-30T10:00:05.000+00:00")
    after = run("2026-11-30T10:00:05.010+00:00", "2026-11-30T10:00:09.000+00:00", "w2", "b")
    inside = run("2026-11-30T10:00:04.990+00:00", "2026-11-30T10:00:09.000+00:00", "w2", "b")
    assert flags(me, None, [after]) == ["idle gate not recorded"]
    assert flags(me, None, [inside])[1].startswith("overlaps measure of b")


def two_workers(cells: list[Cell]) -> dict[str, AttemptResult]:
    """The demo's old way: a second worker of the same host measures `fused` while the first
    is still measuring the cell before it."""
    results = {}
    for c in cells:
        r = result(c, 20.0 + c.repeat, gate=BUSY if c.repeat == 2 else None, lease=False)
        if c.arm == "fused":
            start = (c.order - 1) * 10 + 1
            run = r.runs[0].model_copy(update={"started": stamp(start),
                                               "ended": stamp(start + 3)})
            r = r.model_copy(update={"worker": "gb10-b", "runs": [run]})
        results[c.id] = r
    return results


@pytest.fixture
def record() -> Record:
    sweep = load(Sweep, ONE_GROUP_SWEEP, "s.yaml")[0]
    cells = expand(sweep)
    results = two_workers(cells)
    states = {c.id: CellState(status="done", attempt=1) for c in cells}
    return with_evidence(build_record("s1", sweep, cells, states, results, {}, "now"), results)


def test_the_record_marks_every_measurement_it_should(record: Record) -> None:
    ms = {m.order: m for m in record.groups[0].measurements}
    assert all("no host lease" in m.flags for m in ms.values())
    assert sum("host not idle" in m.flags for m in ms.values()) == 3
    # fused (orders 1, 3, 8) ran beside the cell before it (orders 0, 2, 7); no other did.
    overlapping = {o for o, m in ms.items() if any("overlap" in f for f in m.flags)}
    assert overlapping == {0, 1, 2, 3, 7, 8}
    assert ms[1].flags[-1] == f"overlaps measure of {ms[0].cell_id} (attempt 1, gb10-a)"
    text = render(record)
    assert "| gb10-a | 9 | 3 | 6 | 9 | 6 |" in text
    assert "9 of 9 measurements carry a flag" in text
    assert check_record(record) == []


def test_a_record_that_hides_a_flag_fails_its_check(record: Record) -> None:
    group = record.groups[0]
    cleaned = [replaced(m, flags=[]) if m.order == 1 else m
               for m in group.measurements]
    hidden = record.model_copy(update={"groups": [group.model_copy(
        update={"measurements": cleaned})]})
    problems = "\n".join(check_record(hidden))
    assert "flags [] but its gate, host lease and the host's runs give ['idle gate not " \
           "recorded', 'no host lease', 'overlaps measure of" in problems
    assert "flagged measurements stated" in problems
    gone = record.model_copy(update={"host_runs": record.host_runs[1:]})
    assert "its measured run is not among the host's runs" in "\n".join(check_record(gone))


def counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[str]:
    """The times fidelity's reader `name` is given, from now on."""
    given: list[str] = []
    reader = getattr(fidelity, name)

    def counted(text: str) -> tuple[float, float] | None:
        given.append(text)
        result: tuple[float, float] | None = reader(text)
        return result

    monkeypatch.setattr(fidelity, name, counted)
    return given


def test_each_run_s_times_are_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # A record of 100,000 runs must not parse a time again per neighbour it is compared with
    # (nor lose a bounded cache of parsed times): each run's pair of times once, per index.
    parsed = counting(monkeypatch, "_instant")
    runs = [run(stamp(k), stamp(k + 2), f"w{k % 2}", f"c{k}") for k in range(0, 120, 1)]
    index = fidelity.RunIndex(runs)
    found = [flags(r, None, index) for r in runs]
    assert all(any("overlap" in text for text in fs) for fs in found)
    assert len(parsed) == 2 * len(runs)


def test_an_index_holds_its_runs_times_as_numbers_not_objects() -> None:
    # Built while a record holds every measurement (its peak): 330 bytes a run as a tuple of
    # floats in a dict keyed by the run's times, 174 as four doubles in one array.
    def at(ms: int) -> str:
        s, m = divmod(ms, 1000)
        return f"2026-11-30T{s // 3600 % 24:02d}:{s // 60 % 60:02d}:{s % 60:02d}.{m:03d}+00:00"

    runs = [run(at(k * 1500), at(k * 1500 + 1200), "w1", f"c{k}") for k in range(20_000)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        index = fidelity.RunIndex(runs)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held / len(runs) < 250
    assert index.span(runs[7]) == index.span(replaced(runs[7]))  # one from outside, too
    assert index.near(runs[7]) == runs[6:9]


def test_the_checker_takes_the_flags_the_builder_computed(record: Record,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    sweep = load(Sweep, ONE_GROUP_SWEEP, "s.yaml")[0]
    cells = expand(sweep)
    results = two_workers(cells)
    states = {c.id: CellState(status="done", attempt=1) for c in cells}
    flagged: dict[tuple[str, int], list[str]] = {}
    built = with_evidence(build_record("s1", sweep, cells, states, results, {}, "now", (), None,
                                       flagged), results)
    assert built == record and len(flagged) == 9
    assert flagged[(cells[1].id, 1)] == built.groups[0].measurements[1].flags
    monkeypatch.setattr(check, "flags", None)  # computed once: the checker must not again
    assert check_record(built, flagged) == []
    # Without them (a record read from a file) every flag is recomputed.
    monkeypatch.undo()
    assert check_record(built) == []


def test_a_run_after_another_sweep_took_the_host_mid_group_is_flagged_and_checked() -> None:
    sweep = load(Sweep, ONE_GROUP_SWEEP, "s.yaml")[0]
    cells = expand(sweep)
    later = {c.id for c in cells if c.order >= 4}  # the other sweep measured before order 4
    results = {}
    for c in cells:
        r = result(c, 20.0 + c.repeat)
        other = "other-20261201-0900-ab12" if c.id in later else None
        results[c.id] = r.model_copy(update={
            "runs": [r.runs[0].model_copy(update={"other_sweep": other})]})
    states = {c.id: CellState(status="done", attempt=1) for c in cells}
    record = with_evidence(build_record("s1", sweep, cells, states, results, {},
                                        "2026-12-01T21:00:00+00:00"), results)
    assert check_record(record) == []
    flagged = {m.cell_id: m.flags for g in record.groups for m in g.measurements if m.flags}
    assert set(flagged) == later
    assert all(f == ["host shared with another sweep: sweep other-20261201-0900-ab12 measured "
                     "on this host during this group, before this run"] for f in flagged.values())
    assert record.host_sentence.startswith(f"{len(later)} of {len(cells)} measurements carry")
    assert "host shared with another sweep" in render(record)
    # The note removed, its flag kept: check recomputes the flags and says they differ.
    g = record.groups[0]
    hidden = [replaced(m, other_sweep=None) for m in g.measurements]
    edited = record.model_copy(update={"groups": [g.model_copy(update={"measurements": hidden})]})
    assert {p.split(":")[0] for p in check_record(edited) if ": flags " in p} == later


# A worker's times (UTC to the millisecond, or to the microsecond as `isoformat()` writes
# them) are read without the pattern: to the same bits as through it, whatever the digits, and
# anything else of that length goes through it.
_DIGIT = st.sampled_from("0123456789٣²")  # the pattern takes an Arabic-Indic 3, not a ²


@given(st.lists(_DIGIT, min_size=20, max_size=20), st.sampled_from("T T:."),
       st.sampled_from("+-"), st.sampled_from([3, 6]))
@settings(max_examples=2000, deadline=None)
def test_a_worker_s_times_are_read_as_the_pattern_reads_them(
        digits: list[str], odd: str, sign: str, places: int) -> None:
    d = "".join(digits)
    text = (f"{d[:4]}-{d[4:6]}-{d[6:8]}T{d[8:10]}:{d[10:12]}:{d[12:14]}.{d[14:14 + places]}"
            f"{sign}00:00")
    assert len(text) == 26 + places
    for candidate in (text, text.replace(":", odd, 1), text.replace(".", odd, 1)):
        try:
            expected = fidelity._parsed(candidate)
        except ValueError:  # a month of 00 or 13: both ways refuse it alike
            with pytest.raises(ValueError):
                fidelity._instant(candidate)
            continue
        assert fidelity._instant(candidate) == expected, candidate


def test_a_worker_s_times_skip_the_pattern_once_their_day_is_known(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pattern = fidelity._parsed
    parsed = counting(monkeypatch, "_parsed")
    monkeypatch.setattr(fidelity, "_DAYS", {})
    first = fidelity._instant("2026-12-05T08:12:34.123456+00:00")
    second = fidelity._instant("2026-12-05T23:59:59.999999+00:00")
    assert first == (1796458354 + 0.123456, 1e-6)
    assert second == pattern("2026-12-05T23:59:59.999999+00:00")
    assert parsed == ["2026-12-05T00:00:00"]  # the day, once; no time of it again
    stamped = clock.now()  # as a worker writes a run's start and end
    monkeypatch.setattr(fidelity, "_DAYS", {})
    parsed.clear()
    assert fidelity._instant(stamped) == pattern(stamped)
    assert parsed == [f"{stamped[:10]}T00:00:00"]  # its day, and nothing else
