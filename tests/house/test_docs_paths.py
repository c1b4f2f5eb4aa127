"""The docs cite only files that are in the repository: every path under one of its top-level
folders named in the README or a page of docs/ exists (mlxcel's own paths are named as such);
every relative link and `../` path resolves to a file inside the repository, and no page names
a note kept beside it (DECISIONS.md, a `../shared/` file, this machine's /work) that a reader
of the repository cannot open."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A path stops at a placeholder (`test_<name>.py`, `history-*.png`): those are patterns.
PATH = re.compile(r"(?<![\w./-])((?:jobs|runner|workers|tests|deploy|docs)/[\w./-]*[\w/])"
                  r"(?![\w<*{-])")
# A path in another project's tree, introduced by its owner's name just before it.
ELSEWHERE = re.compile(r"(mlxcel's|mlxcel|MLX's|mlx)\s+`?$")
# A Markdown link's target, and a file path that climbs out of the page's folder (a value in
# an example, `repo: ../mlxcel`, names no file).
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
CLIMB = re.compile(r"(?<![\w./])((?:\.\./)+[\w./-]*\.(?:md|py|sh|toml|txt))\b")
# A note named as such (DECISIONS.md, MLXCEL-FACTS.md) must be one the repository holds.
NOTE = re.compile(r"(?<![\w./-])([A-Z][A-Z0-9_-]+\.md)\b")
LOCAL = re.compile(r"(?<![\w.])(/work/[\w./-]*)")


def _pages() -> list[Path]:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
    # A committed record's own pages name the GPU machine's paths as they were there.
    return [p for p in pages if "records" not in p.relative_to(ROOT).parts[1:-1]]


def _missing(page: Path) -> list[str]:
    text = page.read_text()
    cited = (m for m in PATH.finditer(text) if not ELSEWHERE.search(text[:m.start()][-20:]))
    return sorted({m.group(1) for m in cited if not (ROOT / m.group(1)).exists()})


def _outside(folder: Path, text: str) -> list[str]:
    """What a page in `folder` holding `text` cites that a clone of the repository lacks."""
    found = set()
    for target in [*LINK.findall(text), *CLIMB.findall(text)]:
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        where = (folder / target).resolve()
        if not where.is_relative_to(ROOT) or not where.exists():
            found.add(target)
    names = {p.name for p in ROOT.rglob("*.md") if ".venv" not in p.parts}
    found |= {note for note in NOTE.findall(text) if note not in names}
    return sorted(found | set(LOCAL.findall(text)))


def test_every_cited_path_exists() -> None:
    missing = {str(p.relative_to(ROOT)): _missing(p) for p in _pages()}
    assert {page: paths for page, paths in missing.items() if paths} == {}


def test_the_check_finds_a_missing_path(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("see `jobs/no_such_module.py` and mlxcel's `docs/benchmark_results/`\n")
    assert _missing(page) == ["jobs/no_such_module.py"]


def test_no_page_cites_a_file_outside_the_repository() -> None:
    outside = {str(p.relative_to(ROOT)): _outside(p.parent, p.read_text()) for p in _pages()}
    assert {page: cited for page, cited in outside.items() if cited} == {}


def test_the_check_finds_what_lies_outside() -> None:
    text = ("as DECISIONS.md says, and `../shared/MLXCEL-FACTS.md`, [x](no-such.md), "
            "[y](../README.md), [z](https://example.org/A.md), /work/shared/STYLE.md\n")
    assert _outside(ROOT / "docs", text) == [
        "../shared/MLXCEL-FACTS.md", "/work/shared/STYLE.md", "DECISIONS.md", "no-such.md"]


def test_the_docs_index_lists_every_page() -> None:
    index = (ROOT / "docs" / "README.md").read_text()
    pages = [p.name for p in sorted((ROOT / "docs").glob("*.md")) if p.name != "README.md"]
    assert [p for p in pages if f"]({p})" not in index] == []
