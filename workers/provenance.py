"""Facts read from the target tree at the cell's commit, such as the MLX pin."""

import re
import subprocess
from pathlib import Path

from jobs.spec.recipes import Probe


def read_facts(probes: dict[str, list[Probe]], tree: Path) -> dict[str, str]:
    """Each fact from the first probe that yields it; 'unknown' when none does."""
    return {name: next((v for p in options if (v := _probe(p, tree))), "unknown")
            for name, options in probes.items()}


def _probe(probe: Probe, tree: Path) -> str | None:
    if probe.command:
        try:
            done = subprocess.run(probe.command, cwd=tree, capture_output=True, text=True,
                                  timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        lines = done.stdout.strip().splitlines()
        return lines[0].strip() if done.returncode == 0 and lines else None
    if probe.file and probe.pattern:
        try:
            match = re.search(probe.pattern, (tree / probe.file).read_text(errors="replace"))
        except OSError:
            return None
        return match.group(1) if match else None
    return None
