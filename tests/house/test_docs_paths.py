"""The docs cite only files that are in the repository: every path under one of its top-level
folders named in the README or a page of docs/ exists (mlxcel's own paths are named as such)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A path stops at a placeholder (`test_<name>.py`, `history-*.png`): those are patterns.
PATH = re.compile(r"(?<![\w./-])((?:jobs|runner|workers|tests|deploy|docs)/[\w./-]*[\w/])"
                  r"(?![\w<*{-])")
# A path in another project's tree, introduced by its owner's name just before it.
ELSEWHERE = re.compile(r"(mlxcel's|mlxcel|MLX's|mlx)\s+`?$")


def _pages() -> list[Path]:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
    # A committed record's own pages name the GPU machine's paths as they were there.
    return [p for p in pages if "records" not in p.relative_to(ROOT).parts[1:-1]]


def _missing(page: Path) -> list[str]:
    text = page.read_text()
    cited = (m for m in PATH.finditer(text) if not ELSEWHERE.search(text[:m.start()][-20:]))
    return sorted({m.group(1) for m in cited if not (ROOT / m.group(1)).exists()})


def test_every_cited_path_exists() -> None:
    missing = {str(p.relative_to(ROOT)): _missing(p) for p in _pages()}
    assert {page: paths for page, paths in missing.items() if paths} == {}


def test_the_check_finds_a_missing_path(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("see `jobs/no_such_module.py` and mlxcel's `docs/benchmark_results/`\n")
    assert _missing(page) == ["jobs/no_such_module.py"]


def test_the_docs_index_lists_every_page() -> None:
    index = (ROOT / "docs" / "README.md").read_text()
    pages = [p.name for p in sorted((ROOT / "docs").glob("*.md")) if p.name != "README.md"]
    assert [p for p in pages if f"]({p})" not in index] == []
