"""The record's Markdown written in pieces: the same text as before, and no piece that grows
with the sweep (a 100,000-cell record's measurements table, held as one string and copied,
was its process's peak)."""

from pathlib import Path

import pytest

from jobs.record.model import Record
from jobs.views.markdown import _Lines, _text, pieces, render
from tests.support.records import OLD, record

RUN_4 = Path(__file__).parents[3] / "docs" / "records" / "h200-moe-decode" / "run-4"
STEM = "h200-moe-decode-20261202-063530-8e13"


def test_the_committed_h200_record_renders_to_its_committed_markdown() -> None:
    r = Record.model_validate_json((RUN_4 / f"{STEM}.json").read_bytes())
    plots = {"decode tok/s per arm": f"{STEM}.png", "prefill tok/s per arm": f"{STEM}-prefill.png",
             "per-token time by phase": f"{STEM}-phases.png"}
    assert render(r, plots, f"data/{STEM}") == (RUN_4 / f"{STEM}.md").read_text()


def _many(measurements: int) -> Record:
    """A record whose one group is given `measurements` measurements, and as many missing
    cells: the two tables with a line each."""
    r = record(OLD, failed="fused")
    g = r.groups[0]
    ms = (g.measurements * (measurements // len(g.measurements) + 1))[:measurements]
    missing = (r.missing * (measurements // len(r.missing) + 1))[:measurements]
    return r.model_copy(update={"groups": [g.model_copy(update={"measurements": ms})],
                                "missing": missing})


def test_a_table_of_thousands_of_lines_is_written_a_thousand_lines_at_a_time() -> None:
    r = _many(4_500)
    written = list(pieces(r))
    assert 900 <= max(p.count("\n") for p in written) <= 1_001
    text = "".join(written)
    table = text.split("## Measurements\n", 1)[1]
    assert sum(1 for line in table.splitlines() if line.startswith("| cuda |")) == 4_500
    assert text.count("| failed | build failed") == 4_500


@pytest.mark.parametrize("count", [0, 1, 999, 1_000, 1_001, 2_000, 2_500])
def test_lines_written_in_pieces_are_the_lines_joined(count: int) -> None:
    lines = [f"| line {k} |" for k in range(count)]
    assert "".join(_text(_Lines(iter(lines)))) == "\n".join(lines) + "\n"


@pytest.mark.parametrize("measurements", [995, 1_995, 2_500])
def test_a_table_written_in_pieces_gains_no_blank_line(measurements: int) -> None:
    # Its section is 5 lines besides its rows: 995 and 1,995 rows fill its pieces exactly,
    # and the table of 1,995 and of 2,500 is cut between pieces.
    section = "".join(pieces(_many(measurements))).split("## Measurements\n", 1)[1]
    table = section.split("\n\nOne measured command", 1)[0]
    assert "\n\n" not in table.strip("\n")
    assert table.count("\n| cuda |") == measurements
