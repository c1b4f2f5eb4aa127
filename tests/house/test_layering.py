"""Who may import whom, for every room of the house (docs/architecture.md draws the same map).

A room is a package of the domain (`jobs.spec`, `jobs.record`, ...), the shared edges
(`workers.shared`), the lab host (the rest of `workers`), the coordinator (`runner`) or
`deploy`. Each room lists the rooms it may import; anything else is a wrong arrow. The domain
also imports none of the edges' libraries, and no module imports itself back in a circle.
"""

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).parents[2]
PACKAGES = ("jobs", "workers", "runner", "deploy")
BASE = {"jobs.strict", "jobs.errors"}
DOMAIN = BASE | {"jobs.parsers", "jobs.spec", "jobs.statistics", "jobs.profiles", "jobs.record",
                 "jobs.studies", "jobs.views", "jobs.compare", "jobs.trends"}
MAY_IMPORT: dict[str, set[str]] = {
    "jobs.strict": set(),
    "jobs.errors": set(),
    "jobs.parsers": BASE,
    "jobs.profiles": BASE | {"jobs.parsers"},
    "jobs.spec": BASE | {"jobs.parsers", "jobs.profiles"},
    "jobs.statistics": BASE | {"jobs.spec"},
    # The record holds a study's answer; a study reads the record's groups (record.parts).
    "jobs.record": BASE | {"jobs.parsers", "jobs.profiles", "jobs.spec", "jobs.statistics",
                           "jobs.studies"},
    "jobs.studies": BASE | {"jobs.parsers", "jobs.profiles", "jobs.spec", "jobs.statistics",
                            "jobs.record"},
    "jobs.views": DOMAIN - {"jobs.compare", "jobs.trends"},
    "jobs.compare": BASE | {"jobs.spec", "jobs.statistics", "jobs.record"},
    # History across sweeps: series from records, change points, the site's data; its
    # thresholds file is read with the spec's located YAML loader.
    "jobs.trends": BASE | {"jobs.parsers", "jobs.spec", "jobs.statistics", "jobs.record"},
    # The edges both sides use: the domain (never its views) and each other.
    "workers.shared": DOMAIN - {"jobs.views", "jobs.compare", "jobs.trends"},
    # The lab host parses but never renders a record, and never imports the coordinator.
    "workers": DOMAIN - {"jobs.views", "jobs.compare", "jobs.trends"} | {"workers.shared"},
    "deploy": DOMAIN | {"workers.shared"},
    "runner": DOMAIN | {"workers.shared", "deploy"},
}
# The one lab-host module the coordinator may import: `benchfleet worker` starts a worker.
RUNNER_MAY_START = {"runner.commands.worker": {"workers.service"}}
# The sweep spec lists the questions a sweep can ask: each study's question model, nothing else
# of the study.
QUESTION = re.compile(r"jobs\.studies\.\w+\.question")
EDGE_LIBRARIES = {"redis", "celery", "kombu", "subprocess", "socket", "paramiko", "fabric",
                  "asyncssh", "time", "datetime", *PACKAGES[1:], "workers"}


def room(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "jobs":
        return ".".join(parts[:2]) if len(parts) > 1 else "jobs"
    if parts[0] == "workers":
        return "workers.shared" if parts[1:2] == ["shared"] else "workers"
    return parts[0]


def modules() -> Iterator[tuple[str, Path]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "stand_in" in path.parts:  # the demo's target is a program of its own
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            yield name.removesuffix(".__init__"), path


def imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_every_module_is_in_a_room() -> None:
    rooms = {room(name) for name, _ in modules()}
    assert rooms - set(MAY_IMPORT) <= {"jobs"}, rooms - set(MAY_IMPORT)


def test_every_room_imports_only_what_it_may() -> None:
    wrong = {}
    for name, path in modules():
        mine = room(name)
        allowed = MAY_IMPORT.get(mine, DOMAIN) | {mine} | RUNNER_MAY_START.get(name, set())
        theirs = {i for i in imports(path) if i.split(".")[0] in PACKAGES}
        bad = {i for i in theirs if room(i) not in allowed and i not in allowed
               and not (mine == "jobs.spec" and QUESTION.fullmatch(i))}
        if bad:
            wrong[name] = sorted(bad)
    assert wrong == {}


def test_the_domain_imports_no_edge_library() -> None:
    files = [(n, p) for n, p in modules() if n.startswith("jobs")]
    assert len(files) > 30
    offenders = {n: sorted({i.split(".")[0] for i in imports(p)} & EDGE_LIBRARIES)
                 for n, p in files}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_no_import_circle() -> None:
    graph = {name: {i for i in imports(path) if i.split(".")[0] in PACKAGES}
             for name, path in modules()}
    graph = {n: {i for i in deps if i in graph} for n, deps in graph.items()}
    assert _circles(graph) == []


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for dep in graph[node]:
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


# How a model or a slotted part is written out (jobs/strict.py): a format, not a figure.
_SERIALISERS = frozenset({"dumped", "dumped_json"})


def test_views_import_only_models_constants_and_formatters() -> None:
    """Views never recompute: from the domain they take models (classes), constants, the
    `*_text` formatters and the models' serialisers, never a function that computes a
    figure."""
    computing = {}
    for name, path in modules():
        if not name.startswith("jobs.views"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            module = node.module or ""
            if module.startswith("jobs.") and not module.startswith("jobs.views"):
                bad = [a.name for a in node.names if a.name[0].islower()
                       and not a.name.endswith("_text")
                       and not (module == "jobs.strict" and a.name in _SERIALISERS)]
                if bad:
                    computing[f"{name} from {node.module}"] = bad
    assert computing == {}
