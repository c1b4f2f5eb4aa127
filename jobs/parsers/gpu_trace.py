"""The kernel timeline in `nsys stats --report cuda_gpu_trace --format csv`'s layout.

Columns read by name: `Start (ns)`, `Duration (ns)`, `Strm` and `Name` (nsys also prints
CorrId, grid and block sizes, registers, shared memory, bytes, device and context, which are not
needed here). Memory operations share the report, named in brackets (`[CUDA memcpy HtoD]`,
`[CUDA memset]`); they are not kernels and are left out, as the kernel summary leaves them out.
cupti-kernsum (workers/tools/cupti_kernsum.py) writes the same layout from CUPTI's events.
"""

import csv
import io

from jobs.parsers.exits import plain
from jobs.parsers.timeline import Interval

COLUMNS = ("Start (ns)", "Duration (ns)", "Name")
FILES = {"long": "long_cuda_gpu_trace.csv", "short": "short_cuda_gpu_trace.csv"}


class BadTrace(Exception):
    pass


def intervals(text: str) -> list[Interval]:
    """Every kernel launch of the report, in its order; [] for a header with no rows."""
    lines = plain(text).splitlines()
    start = next((n for n, line in enumerate(lines)
                  if all(c in next(csv.reader([line]), []) for c in COLUMNS)), None)
    if start is None:
        raise BadTrace("no cuda_gpu_trace CSV header (Start (ns), Duration (ns), Name)")
    rows = csv.reader(io.StringIO("\n".join(lines[start:])))
    header = next(rows)
    at = {c: header.index(c) for c in (*COLUMNS, "Strm") if c in header}
    found = []
    for number, row in enumerate(rows, start=start + 2):
        if not row or not "".join(row).strip():
            break
        if len(row) != len(header):
            raise BadTrace(f"trace CSV line {number} has {len(row)} fields, the header "
                           f"{len(header)}")
        name = row[at["Name"]]
        if name.startswith("[CUDA "):
            continue
        try:
            begin, length = int(row[at["Start (ns)"]]), int(row[at["Duration (ns)"]])
        except ValueError:
            raise BadTrace(f"trace CSV line {number}: Start (ns) or Duration (ns) is not a "
                           "whole number") from None
        if length < 0:
            raise BadTrace(f"trace CSV line {number}: a negative duration")
        stream = row[at["Strm"]] if "Strm" in at else ""
        found.append(Interval(start_ns=begin, duration_ns=length, stream=stream, name=name))
    return found
