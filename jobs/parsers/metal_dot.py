"""Metal: per-op counts of one decode token from `MLXCEL_EXPORT_DECODE_DOT`.

Steps: `trace` (xctrace's Metal System Trace, kept as an artifact; its timings are not read
here) and `dot` (a bench run that writes the decode graph to `decode.dot`). The DOT is MLX's
own `export_to_dot` (mlx/graph_utils.cpp): every statement in braces, an op is
`{ 93864173323136 [label ="GatherQMM", shape=rectangle]; }` (a numeric id; the label is the
primitive's name, which may hold a space: `Scatter Sum`), an array is `{ rank=source; "A"; }`
or `{ "B"; }`, and edges join them. Each op node is one primitive of the token's graph.
"""

import re
from collections import Counter

from jobs.parsers import mlxcel_lines
from jobs.parsers.exits import failed_exit
from jobs.parsers.readings import Failure, KernelStat, ProfileInput, ProfileParsed, ProfileReading

DOT_FILE = "decode.dot"
_NODE = re.compile(r'^\s*\{?\s*(?P<id>[0-9]+|"(?:[^"\\]|\\.)*"|[A-Za-z_]\w*)\s*'
                   r'\[(?P<attrs>[^\]]*)\]\s*;?\s*\}?\s*$')
_LABEL = re.compile(r'\blabel\s*=\s*"(?P<label>(?:[^"\\]|\\.)*)"')
_RECTANGLE = re.compile(r"\bshape\s*=\s*\"?rectangle\b")


def parse(run: ProfileInput) -> ProfileParsed:
    for step in ("trace", "dot"):
        if step not in run.steps:
            return Failure(kind="unparseable", reason=f"profile lacks step {step}")
        failure = failed_exit(run.steps[step])
        if failure:
            return failure.model_copy(update={"reason": f"step {step}: {failure.reason}"})
    if DOT_FILE not in run.files:
        return Failure(kind="unparseable", reason=f"the dot step wrote no {DOT_FILE} (does this "
                       "commit read MLXCEL_EXPORT_DECODE_DOT?)")
    counts = op_counts(run.files[DOT_FILE])
    if not counts:
        return Failure(kind="unparseable", reason=f"{DOT_FILE} has no op nodes "
                       "(nodes with a label and shape=rectangle, as mx.export_to_dot writes)")
    text = run.steps["dot"].stdout + "\n" + run.steps["dot"].stderr
    return ProfileReading(
        tool="metal-dot", tokens=[1],
        kernels=[KernelStat(name=n, launches_per_token=c, us_per_token=None)
                 for n, c in sorted(counts.items())],
        paths=mlxcel_lines.path_counts(text),
        first_call_path=mlxcel_lines.first_call_path(text),
        notes=["Metal per-op time is not read: the Metal System Trace is kept as an artifact "
               "(trace not read)"])


def op_counts(dot: str) -> Counter[str]:
    """Primitive name -> how many op nodes of the graph carry it (each node id counted once)."""
    ops: dict[str, str] = {}
    for line in dot.splitlines():
        node = _NODE.match(line)
        if not node or not _RECTANGLE.search(node.group("attrs")):
            continue
        label = _LABEL.search(node.group("attrs"))
        if label and label.group("label").strip():
            ops.setdefault(node.group("id"), label.group("label").strip())
    return Counter(ops.values())
