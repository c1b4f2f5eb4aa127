"""The decode timeline of a two-run profile: the traces and the runs' own decode times.

Optional parts of a profile: a recipe that keeps the traces (`long_cuda_gpu_trace.csv`,
`short_cuda_gpu_trace.csv` under {out}) gets busy time; its profiled steps' decode times give
the profiled wall; steps `plain-long` and `plain-short` (the same command, unprofiled) give the
unprofiled wall at the same token positions. What is missing is said in a note.
"""

from jobs.parsers import bench_decode
from jobs.parsers.gpu_trace import FILES, BadTrace, intervals
from jobs.parsers.readings import BenchReading, ProfileInput
from jobs.parsers.timeline import (
    DecodeTimeline,
    per_token_wall_us,
    run_timeline,
    token_split,
)

PLAIN_STEPS = {"long": "plain-long", "short": "plain-short"}


def read(run: ProfileInput, long_tokens: int, short_tokens: int, decode_kernels: set[str]
         ) -> tuple[DecodeTimeline | None, list[str]]:
    """The timeline of the decode table's kernels (those whose launches grew with the tokens):
    load and prefill work, left out of the table, stays out of the busy time too, so run-to-run
    noise in it cannot move the per-token figures."""
    if not all(f in run.files for f in FILES.values()):
        return None, ["no kernel trace (cuda_gpu_trace) was kept: busy and idle time per token "
                      "cannot be read, only kernel sums"]
    try:
        runs = [[i for i in intervals(run.files[FILES[s]]) if i.name in decode_kernels]
                for s in ("long", "short")]
    except BadTrace as error:
        return None, [f"kernel trace unreadable: {error}"]
    if not runs[0] or not runs[1]:
        return None, ["the kernel trace has no timed kernels (a kernel log without start "
                      "times, or no kernels): busy and idle time per token are not known"]
    tokens = long_tokens - short_tokens
    split = token_split(run_timeline(runs[0]), run_timeline(runs[1]), tokens)
    notes = []
    profiled = _wall(run, ("long", "short"), tokens)
    if profiled is None:
        notes.append("the profiled runs printed no decode time: no idle time per token")
    unprofiled = _wall(run, (PLAIN_STEPS["long"], PLAIN_STEPS["short"]), tokens)
    if unprofiled is None:
        notes.append("no unprofiled runs at the profile's token counts (steps plain-long, "
                     "plain-short): the profiler's overhead is not known")
    return DecodeTimeline(short_tokens=short_tokens, long_tokens=long_tokens, split=split,
                          profiled_wall_us=profiled, unprofiled_wall_us=unprofiled), notes


def _wall(run: ProfileInput, steps: tuple[str, str], tokens: int) -> float | None:
    readings = [bench_decode.parse(run.steps[s]) if s in run.steps else None for s in steps]
    ms = [r.decode_ms for r in readings if isinstance(r, BenchReading)]
    if len(ms) != 2 or None in ms:
        return None
    return per_token_wall_us(ms[0], ms[1], tokens)  # type: ignore[arg-type]
