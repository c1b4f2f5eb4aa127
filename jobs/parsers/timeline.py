"""Busy and idle time from a kernel timeline: the maths, on plain intervals.

A sum of kernel durations is not busy time: kernels on several streams overlap, and a kernel
that waits inside its launch counts its waiting. Busy time is the union of the kernel intervals;
each instant of it is shared evenly among the kernels running then, so the kernels' busy shares
add up to the busy time exactly. A kernel's overlap is the time it ran beside another kernel.
Per decode token, everything is the long run's figure minus the short run's, over the tokens
between them (load, warm-up and prefill are the same in both runs and cancel).
"""

from collections.abc import Iterable
from dataclasses import dataclass

from jobs.strict import Strict

# A kernel that ran beside others for at least this share of its own time is listed as waiting:
# it was resident while other work made progress (a spin, or a wait inside its launch).
WAITING_SHARE = 0.5


@dataclass(frozen=True)
class Interval:
    start_ns: int
    duration_ns: int
    stream: str
    name: str


class KernelTime(Strict):
    """One kernel name over one run: its summed time, its busy share and its overlap."""

    kernel_ns: int
    busy_ns: float
    overlap_ns: int


class RunTimeline(Strict):
    busy_ns: int  # the union of every kernel interval
    kernel_ns: int  # the sum of every kernel's duration
    streams: int
    kernels: dict[str, KernelTime]


def union_ns(intervals: Iterable[Interval]) -> int:
    """The length of the union of the intervals (merged where they touch or overlap)."""
    spans = sorted((i.start_ns, i.start_ns + i.duration_ns) for i in intervals)
    total, end = 0, None
    start = 0
    for s, e in spans:
        if end is None or s > end:
            total += (end - start) if end is not None else 0
            start, end = s, e
        else:
            end = max(end, e)
    return total + ((end - start) if end is not None else 0)


def run_timeline(intervals: list[Interval]) -> RunTimeline:
    """Busy, kernel sum and per-name shares of one run, by a sweep over the interval ends."""
    events = sorted([(i.start_ns, 1, n) for n, i in enumerate(intervals)]
                    + [(i.start_ns + i.duration_ns, 0, n) for n, i in enumerate(intervals)])
    busy = {i.name: 0.0 for i in intervals}
    overlap = {i.name: 0 for i in intervals}
    active: set[int] = set()
    last = events[0][0] if events else 0
    for time, opens, n in events:  # ends (0) sort before starts (1) at one instant
        if active and time > last:
            for a in active:
                busy[intervals[a].name] += (time - last) / len(active)
                if len(active) > 1:
                    overlap[intervals[a].name] += time - last
        last = time
        (active.add if opens else active.discard)(n)
    summed: dict[str, int] = {}
    for i in intervals:
        summed[i.name] = summed.get(i.name, 0) + i.duration_ns
    return RunTimeline(busy_ns=union_ns(intervals), kernel_ns=sum(summed.values()),
                       streams=len({i.stream for i in intervals}),
                       kernels={n: KernelTime(kernel_ns=summed[n], busy_ns=busy[n],
                                              overlap_ns=overlap[n]) for n in summed})


class KernelSplit(Strict):
    """One kernel's per-token figures from the two-run difference."""

    name: str
    kernel_us: float
    busy_us: float
    overlap_us: float


class TokenSplit(Strict):
    """Per decode token, over the tokens between the short and the long run."""

    busy_us: float
    kernel_us: float
    overlap_us: float  # kernel sum minus busy: time counted twice or more by the sum
    streams: int
    kernels: list[KernelSplit]
    # Kernels that ran beside others for WAITING_SHARE of their own time, most overlap first.
    waiting: list[str] = []


def token_split(long: RunTimeline, short: RunTimeline, tokens: int) -> TokenSplit:
    """The long run minus the short one, per token (tokens = the difference in tokens)."""
    def per(a: float, b: float) -> float:
        return (a - b) / tokens / 1000

    empty = KernelTime(kernel_ns=0, busy_ns=0.0, overlap_ns=0)
    kernels = [KernelSplit(name=n, kernel_us=per(k.kernel_ns, s.kernel_ns),
                           busy_us=per(k.busy_ns, s.busy_ns),
                           overlap_us=per(k.overlap_ns, s.overlap_ns))
               for n, k in sorted(long.kernels.items())
               for s in [short.kernels.get(n, empty)]]
    busy, kernel = per(long.busy_ns, short.busy_ns), per(long.kernel_ns, short.kernel_ns)
    split = TokenSplit(busy_us=busy, kernel_us=kernel, overlap_us=kernel - busy,
                       streams=max(long.streams, short.streams), kernels=kernels)
    return split.model_copy(update={"waiting": [k.name for k in waiting(split)]})


def waiting(split: TokenSplit, share: float = WAITING_SHARE) -> list[KernelSplit]:
    """Kernels that ran beside other kernels for at least `share` of their own time."""
    return sorted((k for k in split.kernels if k.kernel_us > 0 and k.overlap_us >= share
                   * k.kernel_us), key=lambda k: -k.overlap_us)


def per_token_wall_us(long_ms: float, short_ms: float, tokens: int) -> float:
    """The wall time per token between two runs' decode times (ms), in µs."""
    return (long_ms - short_ms) * 1000 / tokens


class DecodeTimeline(Strict):
    """Busy and idle per decode token over tokens short+1 to long of the measured pass.

    `profiled_wall_us` comes from the profiled runs' own decode times, `unprofiled_wall_us` from
    unprofiled runs of the same command at the same token counts, so all three figures are of
    the same token positions."""

    short_tokens: int
    long_tokens: int
    split: TokenSplit
    profiled_wall_us: float | None = None
    unprofiled_wall_us: float | None = None
    # What the window's own numbers contradict (timeline_flags): a flagged split shows its
    # kernel and busy shares, never a share of the wall or an idle time.
    flags: list[str] = []

    @property
    def idle_us(self) -> float | None:
        """Profiled wall minus busy: launch, host and synchronisation time inside the window."""
        return None if self.profiled_wall_us is None else self.profiled_wall_us - \
            self.split.busy_us

    @property
    def wall_usable(self) -> bool:
        return self.profiled_wall_us is not None and not self.flags

    @property
    def overhead(self) -> float | None:
        """The profiler's cost: profiled wall / unprofiled wall at the same token positions."""
        if self.profiled_wall_us is None or not self.unprofiled_wall_us:
            return None
        return self.profiled_wall_us / self.unprofiled_wall_us


def timeline_flags(split: TokenSplit, profiled_wall_us: float | None,
                   unprofiled_wall_us: float | None) -> list[str]:
    """Why a window's split cannot be read as shares of a token's wall, from its own numbers.

    Every per-token figure is the difference of two single runs (long minus short); a run that
    was slower or faster than its twin for reasons of its own moves them apart, and nothing here
    averages that away. So a busy time over the wall, or profiled runs faster than unprofiled
    ones, says the difference is noise-bound, not that the GPU worked more than it ran."""
    flags = []
    if profiled_wall_us is not None and split.busy_us > profiled_wall_us:
        flags.append(f"busy {split.busy_us:.1f} µs/token exceeds the profiled wall "
                     f"{profiled_wall_us:.1f} of the same tokens: the two runs' difference is "
                     "within their run-to-run noise, so no idle time or share of the wall is "
                     "given")
    if profiled_wall_us and unprofiled_wall_us and profiled_wall_us < unprofiled_wall_us:
        flags.append(f"the profiled runs were faster than the unprofiled ones at the same "
                     f"token counts ({profiled_wall_us / unprofiled_wall_us:.2f}x): the runs' "
                     "own variation exceeds the profiler's cost, so the wall is not a measure "
                     "of these tokens")
    return flags

