"""Validity rules in `check`: the asked tokens generated, one prompt length per group, the
parser's notes in the record, cached builds with their provenance, the build steps in order,
and a re-parsed reading compared with what the attempt says."""

import json

from jobs.parsers import bench_decode
from jobs.parsers.readings import BenchReading, Failure, RunOutput
from jobs.record.attempts import AttemptResult, BuildInfo, CellState, Run
from jobs.record.check import check_record
from jobs.record.model import Record, build_record
from jobs.record.validity import asked_tokens, reparsed_problems
from jobs.spec.cells import Cell
from jobs.spec.recipes import Catalogue
from jobs.spec.sweep import Sweep
from jobs.views.markdown import render
from tests.support.records import result, stamp, with_evidence
from tests.support.samples import SAMPLES

ASKED = {"prompt_tokens": 512, "max_tokens": 128}


def record_of(sweep: Sweep, cells: list[Cell], change: dict[str, dict[str, object]]
              | None = None) -> Record:
    """The group's record; `change` edits the reading of the named cells."""
    results = {}
    for c in cells:
        r = result(c, 20.0 + c.repeat).model_copy(update={"asked": ASKED})
        if c.id in (change or {}):
            assert r.reading is not None
            r = r.model_copy(update={"reading": r.reading.model_copy(update=change[c.id])})  # type: ignore[index]
        results[c.id] = r
    return with_evidence(build_record("s1", sweep, cells, {c.id: CellState(status="done")
                                                           for c in cells}, results, {}, "now"),
                         results)


def test_asked_tokens_come_from_the_cell_else_the_recipe(catalogue: Catalogue) -> None:
    recipe = catalogue.get("mlxcel-bench-decode")
    assert asked_tokens(recipe, {}) == {"prompt_tokens": 512, "max_tokens": 128}
    assert asked_tokens(recipe, {"max_tokens": 64}) == {"prompt_tokens": 512, "max_tokens": 64}
    # The baseline driver has no prompt length to ask for: only the generated count.
    assert asked_tokens(catalogue.get("bench-mlxlm"), {}) == {"max_tokens": 128}


def test_a_run_that_generated_fewer_tokens_than_asked_fails_check_naming_it(
        small: tuple[Sweep, list[Cell]]) -> None:
    sweep, cells = small
    assert check_record(record_of(sweep, cells)) == []
    short = cells[1]
    problems = check_record(record_of(sweep, cells, {short.id: {"generated_tokens": 100}}))
    assert problems == [f"{short.id} (cuda · tinymoe-a3 / {short.arm} r{short.repeat}): asked "
                        "for 128 generated tokens but generated 100, so its decode rate is not "
                        "over the asked shape"]


def test_arms_that_ran_different_prompt_lengths_fail_check(
        small: tuple[Sweep, list[Cell]]) -> None:
    sweep, cells = small
    other = next(c for c in cells if not c.baseline)
    problems = check_record(record_of(sweep, cells, {other.id: {"prompt_tokens": 300}}))
    assert problems == [f"{other.id} (cuda · tinymoe-a3 / {other.arm} r{other.repeat}): ran a "
                        "300-token prompt where the group's baseline ran 512; arms compared "
                        "must run the same prompt length"]


def shortened() -> BenchReading:
    """The real CUDA sample, on a model whose context is shorter than the asked prompt."""
    stdout = (SAMPLES / "bench_decode_cuda.stdout").read_text()
    stdout = stdout.replace("target=512 tokens -> using 512 tokens (max_context=Some(131072)",
                            "target=512 tokens -> using 384 tokens (max_context=Some(512)")
    stdout = stdout.replace("Prompt tokens:    512", "Prompt tokens:    384")
    reading = bench_decode.parse(RunOutput(stdout=stdout, stderr="", exit_code=0))
    assert isinstance(reading, BenchReading)
    return reading


def test_the_parsers_notes_reach_the_record_json_and_markdown(
        small: tuple[Sweep, list[Cell]]) -> None:
    sweep, cells = small
    note = "prompt asked for 512 tokens, ran 384 (max_context=Some(512))"
    assert shortened().notes == [note]
    cell = cells[0]
    record = record_of(sweep, cells, {cell.id: {"notes": shortened().notes}})
    m = next(m for g in record.groups for m in g.measurements if m.cell_id == cell.id)
    assert m.notes == [note]
    data = json.loads(record.model_dump_json())
    assert [x["notes"] for g in data["groups"] for x in g["measurements"]
            if x["cell_id"] == cell.id] == [[note]]
    markdown = render(record)
    assert "## Parser notes" in markdown
    assert f"| `{cell.id}` | cuda | tinymoe-a3 | {cell.arm} | {cell.repeat} | {note} |" in markdown


def built(cell: Cell, cached: bool) -> AttemptResult:
    """An attempt on the CUDA build recipe's two steps, built cold or reused from the cache."""
    logs = "/ws/builds/x/logs/" if cached else "build/"
    steps = [Run(role="build", argv=argv, env={}, cwd="/t", exit_code=0, timed_out=False,
                 wall_s=wall, started=stamp(0), ended=stamp(1), load1_before=0.1,
                 load1_after=0.1, stdout=f"{logs}{name}.stdout.txt",
                 stderr=f"{logs}{name}.stderr.txt", host_lease=True)
             for name, argv, wall in (("make", ["make", "release-cuda"], 1500.0),
                                      ("keep", ["cp", "/c/target/release/mlxcel-bench-decode",
                                                "/b/"], 0.5))]
    r = result(cell, 20.0 + cell.repeat)
    return r.model_copy(update={
        "runs": [*steps, *r.runs], "target": {"mlx_pin": "81ba1c6a" * 5},
        "build": BuildInfo(recipe="mlxcel-build-cuda", ok=True, cached=cached, wall_s=1500.5,
                           built_at="2026-11-29T08:00:00+00:00")})


def test_cached_builds_keep_their_provenance_and_the_steps_their_order(
        small: tuple[Sweep, list[Cell]]) -> None:
    sweep, cells = small
    results = {c.id: built(c, cached=True) for c in cells}
    record = build_record("s1", sweep, cells, {c.id: CellState(status="done") for c in cells},
                          results, {}, "now")
    [b] = record.meta.builds
    assert b.cached and b.wall_s == 1500.5 and b.built_at == "2026-11-29T08:00:00+00:00"
    assert b.command == [["make", "release-cuda"],
                         ["cp", "/c/target/release/mlxcel-bench-decode", "/b/"]]
    assert b.logs[0] == "/ws/builds/x/logs/make.stdout.txt"
    opening = render(record).split("\n\n")[1]
    make, cp = opening.index("`make release-cuda`"), opening.index("`cp /c/target")
    assert make < cp, opening  # the recipe's order, not the alphabet's
    assert "reused on gb10-a as built at 2026-11-29T08:00:00+00:00 in 1500.5 s" in opening
    # One cell built it cold: that build is listed, once, and not as cached.
    results[cells[0].id] = built(cells[0], cached=False)
    record = build_record("s1", sweep, cells, {c.id: CellState(status="done") for c in cells},
                          results, {}, "now")
    [b] = record.meta.builds
    assert not b.cached and b.logs[0] == "build/make.stdout.txt"


def test_a_reading_parsed_again_is_compared_field_by_field() -> None:
    reading = shortened()
    same = reparsed_problems("c1 attempt 1", "mlxcel-bench-decode", reading,
                             reading.model_dump_json(), reading, None)
    assert same == []
    doubled = reading.model_copy(update={"decode_tps": reading.decode_tps * 2})
    problems = reparsed_problems("c1 attempt 1", "mlxcel-bench-decode", reading,
                                 doubled.model_dump_json(), doubled, None)
    assert problems == [
        f"c1 attempt 1: its raw output, parsed again with mlxcel-bench-decode, differs from its "
        f"{name}: decode_tps: raw 31.34, stated 62.68" for name in ("parsed.json", "result.json")]
    failed = reparsed_problems("c1 attempt 1", "mlxcel-bench-decode",
                               Failure(kind="unparseable", reason="no block"), None, reading,
                               None)
    assert failed == ["c1 attempt 1: its raw output, parsed again with mlxcel-bench-decode, "
                      "gives no reading (no block), though the attempt has one"]
