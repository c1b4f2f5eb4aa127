"""The survival runs' section of docs/faults.md: a scenario run again replaces its own row and
keeps the others; the rest of the page stays as it was."""

from pathlib import Path

from tests.faults.survive_doc import HEADING, Row, write_rows

ORDER = ["first", "second", "third"]


def _row(name: str, wall_s: float, problems: list[str] | None = None) -> Row:
    return Row(name=name, what=f"the {name} fault", cells=2000, done_first=2000,
               problems=problems or [], wall_s=wall_s, recovery="–", notes="",
               day="2026-12-03", load1=1.0)


def _rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| `")]


def test_a_scenario_run_again_replaces_its_row_only(tmp_path: Path) -> None:
    doc = tmp_path / "faults.md"
    doc.write_text("# The fault matrix\n\nThe matrix.\n")
    write_rows([_row("second", 10)], "survive --cells 2000", ORDER, doc)
    write_rows([_row("first", 20), _row("third", 30)], "survive --cells 100", ORDER, doc)
    write_rows([_row("second", 40, ["c1 stuck running (worker w1)"])], "survive", ORDER, doc)
    text = doc.read_text()
    assert text.startswith("# The fault matrix\n\nThe matrix.\n\n" + HEADING + "\n")
    assert text.count(HEADING) == 1
    rows = _rows(text)
    assert [r.split("`")[1] for r in rows] == ORDER
    assert "| 40 |" in rows[1] and "**FAILED**" in rows[1] and "c1 stuck running" in rows[1]
    assert "`survive --cells 100`" in rows[0] and "| 20 |" in rows[0]


def test_the_sections_after_it_stay_and_a_gone_scenario_loses_its_row(tmp_path: Path) -> None:
    doc = tmp_path / "faults.md"
    doc.write_text("# Faults\n")
    write_rows([_row("old-name", 5), _row("first", 6)], "survive", ["old-name", "first"], doc)
    doc.write_text(doc.read_text() + "\n## Later\n\nKept.\n")
    write_rows([_row("third", 7)], "survive", ORDER, doc)
    text = doc.read_text()
    assert [r.split("`")[1] for r in _rows(text)] == ["first", "third"]
    assert text.endswith("\n\n## Later\n\nKept.\n") and text.count("## Later") == 1
