"""The house's one rule about arrows: jobs/ imports neither the edges nor their libraries."""

import ast
from pathlib import Path

JOBS = Path(__file__).parents[2] / "jobs"
FORBIDDEN = {"runner", "workers", "redis", "celery", "kombu", "subprocess", "socket",
             "paramiko", "fabric", "time", "datetime"}


def imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_jobs_imports_no_edge() -> None:
    files = sorted(JOBS.rglob("*.py"))
    assert len(files) > 10
    offenders = {str(p.relative_to(JOBS)): imported(p) & FORBIDDEN for p in files}
    assert {k: v for k, v in offenders.items() if v} == {}
