"""The text files under a cell's {out} that a parser may read: one rule for the worker, which
parses them after each run, and for `check --artifacts`, which parses them again."""

from pathlib import Path

SUFFIXES = (".dot", ".csv", ".txt", ".json")
LIMIT_BYTES = 4 << 20  # a parser reads tables and exports, never a trace file


def text_files(out: Path) -> dict[str, str]:
    """Text files under `out` a parser may read, by path relative to `out`."""
    return {str(p.relative_to(out)): p.read_text(errors="replace") for p in sorted(out.rglob("*"))
            if p.is_file() and p.suffix in SUFFIXES and p.stat().st_size < LIMIT_BYTES}
