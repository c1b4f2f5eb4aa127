"""Metal: per-op counts of one decode token from `MLXCEL_EXPORT_DECODE_DOT`.

Steps: `trace` (xctrace's Metal System Trace, kept as an artifact; its timings are not read
here) and `dot` (a bench run that writes the decode graph to `decode.dot`). Op nodes are the
DOT nodes drawn as rectangles; an op's name is its label up to the first space or newline.
"""

import re
from collections import Counter

from jobs.parsers import mlxcel_lines
from jobs.parsers.exits import failed_exit
from jobs.readings import Failure, KernelStat, ProfileInput, ProfileParsed, ProfileReading

DOT_FILE = "decode.dot"
_NODE = re.compile(r'^\s*[A-Za-z0-9_]+\s*\[(?P<attrs>.*)\]\s*;?\s*$')
_LABEL = re.compile(r'label\s*=\s*"(?P<label>(?:[^"\\]|\\.)*)"')


def parse(run: ProfileInput) -> ProfileParsed:
    for step in ("trace", "dot"):
        if step not in run.steps:
            return Failure(kind="unparseable", reason=f"profile lacks step {step}")
        failure = failed_exit(run.steps[step])
        if failure:
            return failure.model_copy(update={"reason": f"step {step}: {failure.reason}"})
    if DOT_FILE not in run.files:
        return Failure(kind="unparseable", reason=f"the dot step wrote no {DOT_FILE}")
    counts = op_counts(run.files[DOT_FILE])
    if not counts:
        return Failure(kind="unparseable", reason=f"{DOT_FILE} has no op nodes "
                       "(nodes with shape=rectangle and a label)")
    stderr = run.steps["dot"].stderr
    return ProfileReading(
        tool="metal-dot", tokens=[1],
        kernels=[KernelStat(name=n, launches_per_token=c, us_per_token=None)
                 for n, c in sorted(counts.items())],
        paths=mlxcel_lines.path_counts(stderr),
        first_call_path=mlxcel_lines.first_call_path(stderr),
        notes=["Metal per-op time is not read: the Metal System Trace is kept as an artifact"])


def op_counts(dot: str) -> Counter[str]:
    counts: Counter[str] = Counter()
    for line in dot.splitlines():
        node = _NODE.match(line)
        if not node or "shape=rectangle" not in node.group("attrs").replace(" ", ""):
            continue
        label = _LABEL.search(node.group("attrs"))
        if label and label.group("label").strip():
            counts[re.split(r"\s|\\n", label.group("label").strip())[0]] += 1
    return counts
