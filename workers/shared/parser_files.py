"""What a parser may read of a run: the head and tail of its logs, and the text files under the
cell's {out}. One rule for the worker, which parses after each run, and for `check --artifacts`,
which parses the same files again."""

import os
from pathlib import Path

SUFFIXES = (".dot", ".csv", ".txt", ".json")
# A kernel trace (cuda_gpu_trace) lists every launch: about 6 MB for 96 tokens on the H200.
LIMIT_BYTES = 64 << 20


def text_files(out: Path) -> dict[str, str]:
    """Text files under `out` a parser may read, by path relative to `out`."""
    return {str(p.relative_to(out)): p.read_text(errors="replace") for p in sorted(out.rglob("*"))
            if p.is_file() and p.suffix in SUFFIXES and p.stat().st_size < LIMIT_BYTES}

# A parser reads at most this much of a log: its head and its tail, where mlxcel's results
# are. A command that prints gigabytes keeps the worker's memory bounded.
HEAD_BYTES, TAIL_BYTES = 1 << 20, 7 << 20


def read_bounded(path: Path) -> str:
    with path.open("rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size <= HEAD_BYTES + TAIL_BYTES:
            return f.read().decode(errors="replace")
        head = f.read(HEAD_BYTES)
        f.seek(size - TAIL_BYTES)
        tail = f.read()
    cut = f"\n[benchfleet: {size - HEAD_BYTES - TAIL_BYTES} bytes of output left out here]\n"
    return head.decode(errors="replace") + cut + tail.decode(errors="replace")
