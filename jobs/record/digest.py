"""What a record keeps of one attempt, taken as the attempt is read: its attempt model, four
times its JSON in memory, is dropped at once (a 100,000-cell record held 1.7 GB of them).

A measurement is made here with an empty list of flags: whether it overlapped another run is
known only once every run of the sweep has been read (`judged` fills it).
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from jobs.profiles.attribution import attribute
from jobs.record.attempt_log import Tried
from jobs.record.attempts import AttemptResult, CellState, HostFacts
from jobs.record.builds import build_time
from jobs.record.fidelity import HostRun, RunIndex, flags, host_runs
from jobs.record.parts import BuildTime, GroupProfile, Measurement
from jobs.record.run_flags import RunConditions
from jobs.spec.cells import Cell
from jobs.spec.sweep import Sweep


@dataclass(frozen=True, slots=True)  # one per attempt read: no dict of its own
class Digest:
    cell_id: str  # the cell it was read for (its folder), which its result.json also names
    tried: Tried
    used: bool
    host: HostFacts
    runs: list[HostRun]
    failure: str | None  # the failure's reason, as a missing cell states it ("" is one)
    measurement: Measurement | None  # flags empty until judged
    profile: GroupProfile | None
    commit: str | None
    protocol: int
    mlx_pin: str | None
    toolchain: str | None
    build: BuildTime | None


@dataclass
class Shared:
    """What the digests of one record share, so that it holds each once: one HostFacts per
    distinct host (each attempt names its own copy), a reused build only where no attempt
    before it named that build (`build_times` lists no other), and one object for each equal
    text (a command's arguments and environment, its worker, commit and JIT cache repeat from
    cell to cell, and each attempt read made its own copies of those longer than 64
    characters; pydantic reuses one object for a shorter string it parses)."""

    texts: dict[str, str] = field(default_factory=dict)
    hosts: dict[HostFacts, HostFacts] = field(default_factory=dict)
    builds: set[tuple[str, str, str]] = field(default_factory=set)
    argvs: dict[tuple[str, ...], list[str]] = field(default_factory=dict)
    envs: dict[tuple[tuple[str, str], ...], dict[str, str]] = field(default_factory=dict)
    notes: dict[tuple[str, ...], list[str]] = field(default_factory=dict)

    def text(self, text: str) -> str:
        return self.texts.setdefault(text, text)

    def maybe(self, text: str | None) -> str | None:
        return None if text is None else self.text(text)

    def command(self, m: Measurement) -> Measurement:
        """The measurement holding one list of arguments, one environment and one list of
        notes with every measurement whose are equal (an arm's repeat from cell to cell):
        validating copies each, some 300 bytes a measurement. Set in its slots, as it is
        made: no part of the record changes them (its flags, judged later, stay its own)."""
        object.__setattr__(m, "argv", self.argvs.setdefault(tuple(m.argv), m.argv))
        object.__setattr__(m, "env", self.envs.setdefault(tuple(m.env.items()), m.env))
        object.__setattr__(m, "notes", self.notes.setdefault(tuple(m.notes), m.notes))
        return m

    def build(self, backend: str, result: AttemptResult) -> BuildTime | None:
        """The attempt's build, unless it reused one an attempt before it named."""
        if result.build is None or result.commit is None:
            return None
        key = (result.commit, backend, result.worker)
        if result.build.cached and key in self.builds:
            return None  # looked up before the build is made: most cells reuse one
        self.builds.add(key)
        return build_time(backend, result)


def digest(sweep: Sweep, cell: Cell, result: AttemptResult, used: bool, done: bool,
           shared: Shared | None = None) -> Digest:
    """`used`: the attempt the cell's state names; `done`: that state is done, so its reading
    is a measurement or a profile. `shared`: what the record's digests share (`Digests`)."""
    if shared is None:
        shared = Shared()
    # One string for the id, not one per model that names it.
    cell_id = cell.id if result.cell_id == cell.id else result.cell_id
    runs = host_runs(result, cell_id)
    counted = used and done
    return Digest(
        cell_id=cell.id,
        tried=Tried(cell_id=cell_id, attempt=result.attempt, worker=result.worker,
                    hostname=result.host.hostname, started=result.started,
                    ended=result.ended,
                    failure=(f"{result.failure.kind}: {result.failure.reason}"
                             if result.failure else None)),
        used=used, host=shared.hosts.setdefault(result.host, result.host), runs=runs,
        failure=result.failure.reason if result.failure else None,
        measurement=_unjudged(cell, result, runs, shared) if counted else None,
        profile=_profile(sweep, cell, result) if counted else None,
        commit=result.commit, protocol=result.protocol,
        # The same on every attempt of a host (a toolchain is some 130 characters).
        mlx_pin=shared.maybe(result.target.get("mlx_pin")),
        toolchain=shared.maybe(result.target.get("toolchain")),
        build=shared.build(cell.backend, result))


def judged(m: Measurement, mine: HostRun, runs: RunIndex) -> Measurement:
    """The measurement with its flags: its conditions, and every run it may have shared its
    host with (`mine` is its own).

    Its list of flags, empty until now, is filled in place: a copy with them would hold the
    measurement twice, once here and once in the record, and a measurement's 37 values take
    328 bytes in their slots, with more in its strings, lists and gate reading. So the record
    made from digests owns their measurements: a second record judged from the same digests
    writes into the first's (the same flags from the same runs; judging from other runs needs
    digests of its own).
    """
    m.flags[:] = flags(mine, m.gate, runs, conditions(m))
    return m


def conditions(m: Measurement) -> RunConditions:
    """The readings around a measured run that its own flags are judged on."""
    return RunConditions(load1_before=m.load1_before, load1_after=m.load1_after,
                         wall_s=m.wall_s, gpu_before=m.gpu_before, gpu_after=m.gpu_after,
                         gpu_start=m.gpu_start, other_sweep=m.other_sweep)


def _unjudged(cell: Cell, result: AttemptResult, runs: list[HostRun], shared: Shared
              ) -> Measurement | None:
    run = result.measured
    reading = result.reading
    if (run is None or reading is None or result.commit is None
            or not any(r.role == "measure" for r in runs)):
        return None
    return shared.command(Measurement(
        cell_id=cell.id, arm=cell.arm, repeat=cell.repeat, order=cell.order,
        worker=shared.text(result.worker), hostname=result.host.hostname,
        commit=shared.text(result.commit),  # not None: checked above
        attempt=result.attempt, started=run.started, ended=run.ended,
        decode_tps=reading.decode_tps, prefill_tps=reading.prefill_tps,
        decode_ms=reading.decode_ms, prefill_ms=reading.prefill_ms,
        prompt_tokens=reading.prompt_tokens, generated_tokens=reading.generated_tokens,
        peak_gb=reading.peak_gb, load1_before=run.load1_before, load1_after=run.load1_after,
        exit_code=run.exit_code, argv=[shared.text(a) for a in run.argv],
        env={shared.text(k): shared.text(v) for k, v in run.env.items()},
        adaptive=cell.adaptive, build_cached=result.build.cached if result.build else None,
        jit_cache=shared.maybe(result.target.get("jit_cache")),
        gate=result.gate,
        host_lease=run.host_lease, flags=[],
        wall_s=run.wall_s, gpu_before=run.gpu_before, gpu_after=run.gpu_after,
        gpu_start=result.gpu_start, gpu_clocks=result.gpu_clocks, other_sweep=run.other_sweep,
        asked_prompt_tokens=result.asked.get("prompt_tokens"),
        asked_tokens=result.asked.get("max_tokens"), notes=reading.notes))


def _profile(sweep: Sweep, cell: Cell, result: AttemptResult) -> GroupProfile | None:
    p = result.profile
    if p is None:
        return None
    family = sweep.family(cell.model)
    return GroupProfile(cell_id=result.cell_id, attempt=result.attempt, worker=result.worker,
                        hostname=result.host.hostname, tool=p.tool, tokens=p.tokens,
                        attribution=attribute(p, sweep.phases, family), paths=p.paths,
                        first_call_path=p.first_call_path, arch=p.arch, notes=p.notes)


class Digests:
    """The digests of a sweep's attempts, as they are read, holding no more than the record
    needs (`Shared`)."""

    def __init__(self, sweep: Sweep, cells: Sequence[Cell],
                 states: Mapping[str, CellState]) -> None:
        self.items: list[Digest] = []
        self._sweep, self._cells, self._states = sweep, {c.id: c for c in cells}, states
        self._shared = Shared()

    def take(self, cell_id: str, result: AttemptResult, used: bool) -> None:
        """An attempt read for `cell_id`; `used`: the one its cell's state names."""
        state = self._states.get(cell_id)
        done = used and state is not None and state.status == "done"
        self.items.append(digest(self._sweep, self._cells[cell_id], result, used, done,
                                 self._shared))
