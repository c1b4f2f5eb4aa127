"""The record as Markdown, laid out like mlxcel's docs/benchmark_results pages."""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import chain

from jobs.parsers.readings import PathCounts
from jobs.record.model import Record
from jobs.record.parts import Group, Measurement
from jobs.statistics.headline import ALPHA, Comparison, compact_text
from jobs.statistics.spans import Ratio, Span, ratio_text, span_text
from jobs.studies.moe_decode_gap.sections import answer_text
from jobs.views.timeline import timeline_rows


def render(record: Record, plots: dict[str, str] | None = None, data: str | None = None) -> str:
    """`plots` maps a plot's title to its file; `data` is the raw-data folder, relative."""
    return "".join(pieces(record, plots, data))


def pieces(record: Record, plots: dict[str, str] | None = None, data: str | None = None
           ) -> Iterator[str]:
    """`render`'s text, section by section and group by group, as it is written: a record
    of 100,000 cells is not also held as one Markdown string, nor its longest sections as
    one string each (`_Lines`)."""
    first = True
    for part in _parts(record, plots or {}, data):
        if part:
            if not first:
                yield "\n"
            yield from _text(part)
            first = False


@dataclass(frozen=True)
class _Lines:
    """A section with a line per cell or attempt, its lines made as they are written (and
    so read once): made as one string, then copied, the measurements' table raised a
    100,000-cell record's process by 167 MiB, to its peak. Its text is
    `"\n".join(lines) + "\n"`."""

    lines: Iterator[str]


_LINES_PER_PIECE = 1000


def _text(part: "str | _Lines") -> Iterator[str]:
    if isinstance(part, str):
        yield part
        return
    batch: list[str] = []
    made = 0
    for line in part.lines:
        batch.append(line)
        made += 1
        if len(batch) == _LINES_PER_PIECE:
            yield "\n".join(batch) + "\n"
            batch = []
    if batch or not made:
        yield "\n".join(batch) + "\n"


def _parts(record: Record, plots: dict[str, str], data: str | None
           ) -> Iterator["str | _Lines"]:
    yield from (_check(record), _opening(record, data), _metadata(record))
    if record.answer:
        yield answer_text(record.answer)
    yield from (_method(record), _idleness(record))
    names = {sha: name for name, shas in record.commits.items() for sha in shas}
    for g in record.groups:
        yield _group(g, names) + (_profile(g) if g.profile else "")
    yield from (_plots(record, plots), _missing(record), _skipped(record), _history(record),
                notes_section(record), _measurements(record), _hosts(record))


def _check(r: Record) -> str:
    if r.check is None or r.check.ok:
        return ""
    lines = [f"> **This record fails `benchfleet check`** ({len(r.check.problems)} problems):"]
    lines += [f"> - {p}" for p in r.check.problems]
    return "\n".join(lines) + "\n"


def _metadata(r: Record) -> str:
    rows = ["## Metadata\n", "| item | value |", "|---|---|",
            f"| date | {r.meta.date} |", f"| n per arm | {_n(r)} (warm-up {r.warmup} per cell) |"]
    if r.issue is not None:
        rows.append(f"| issue | {_issue(r.issue)} |")
    for h in r.hosts.values():
        rows.append(f"| host {h.hostname} | {h.chip}; {h.os}; {h.arch}; {h.cores} cores |")
    for host, tools in r.meta.toolchains.items():
        rows.append(f"| toolchain on {host} | {_cell(tools)} |")
    for requested, shas in r.commits.items():
        rows.append(f"| tree commit `{requested}` | {', '.join(f'`{s}`' for s in shas) or '–'} |")
    for sha, pin in r.meta.mlx_pins.items():
        rows.append(f"| MLX pin at `{sha[:12]}` | `{pin[:8]}` |")
    for b in r.meta.builds:
        commands = "; ".join(f"`{' '.join(c)}`" for c in b.command)
        took = f"{b.wall_s:.1f} s" if b.wall_s is not None else "–"
        took += f" (reused from its cache entry, built {b.built_at})" if b.cached else ""
        rows.append(f"| build {b.backend} `{b.commit[:12]}` on {b.worker} | {took}: {commands} |")
    for arm, env in r.meta.env.items():
        text = " ".join(f"{k}={v}" for k, v in sorted(env.items())) or "(none)"
        rows.append(f"| env of `{arm}` | `{text}` |")
    if len(r.meta.protocols) > 1:
        rows.append(f"| attempt protocols | {', '.join(map(str, r.meta.protocols))}: **mixed** |")
    return "\n".join(rows) + "\n"


def _profile(g: Group) -> str:
    p = g.profile
    assert p is not None
    a = p.attribution
    tokens = " and ".join(map(str, p.tokens))
    how = {"nsys-delta": f"two-run nsys delta ({tokens} generated tokens)",
           "cupti-delta": f"two-run CUPTI delta through PyTorch's profiler ({tokens} generated "
                          "tokens; cupti-kernsum, where nsys is not there)"}.get(
        p.tool, "op counts of one decode token's graph (DOT); no per-op time")
    rules = f"phase rules of family `{a.family}`" if a.family else "the default phase rules"
    rows = [f"\n### Kernels per decode token: {g.backend} · {g.model}\n",
            f"Profile cell `{p.cell_id}` (attempt {p.attempt}, {p.worker} on {p.hostname}), "
            f"{how}, {rules}. Profiled runs are never used for throughput.\n",
            "| phase | kernels | launches/token | µs/token | % of kernel time "
            "| busy µs/token | % of busy time | % of profiled wall |",
            "|---|---|---|---|---|---|---|---|"]
    rows += [f"| {ph.phase} | {ph.kernels} | {ph.launches_per_token:.1f} | {_num(ph.us_per_token)} "
             f"| {_pct(ph.share)} | {_num(ph.busy_us_per_token)} | {_pct(ph.busy_share)} "
             f"| {_pct(ph.wall_share)} |" for ph in a.phases]
    if a.total_us_per_token is not None:
        rows.append(f"| **kernels** | {len(a.kernels)} | "
                    f"{sum(k.launches_per_token for k in a.kernels):.1f} "
                    f"| {a.total_us_per_token:.1f} | 100% | – | – | – |")
    rows += timeline_rows(a)
    if a.idle:
        i = a.idle
        rows += [f"\nUnprofiled token wall: {i.wall_us_per_token:.1f} µs ({i.source}); minus "
                 f"the profiled kernel sum: {i.idle_us_per_token:.1f} µs, shown as it is (a "
                 "kernel sum is not busy time and the wall is of other token positions, so "
                 "this difference is not idle time; the timeline above is)."]
    rows += ["", "| kernel | phase | launches/token | µs/token | share |", "|---|---|---|---|---|"]
    rows += [f"| `{_cell(k.name)}` | {k.phase} | {k.launches_per_token:.2f} "
             f"| {_num(k.us_per_token)} | {_pct(k.share)} |" for k in a.kernels]
    if p.paths:
        rows.append(_moe_calls(p.paths))
    if p.first_call_path:
        rows.append(f"\n`[mlxcel arch]` first quantized matmul call: `{p.first_call_path}`"
                    f"{' on ' + p.arch if p.arch else ''}. That call is usually prefill: it does "
                    "not say which kernel decode takes; the delta above does.")
    rows += [f"\n- {_cell(n)}" for n in [*a.notes, *p.notes]]
    return "\n".join(rows) + "\n"


def _moe_calls(c: PathCounts) -> str:
    calls = c.decode_fused + c.decode_gather
    per = (f", {c.decode_calls_per_token:g} per decode token"
           if c.decode_calls_per_token is not None else "")
    split = (f" Per decode call: gate {c.decode_gate_ms / calls:.2f} ms, expert "
             f"{c.decode_expert_ms / calls:.2f} ms, combine {c.decode_combine_ms / calls:.2f} ms "
             "(the hook synchronises after each phase: attribution, never throughput)."
             if calls else "")
    return (f"\nMoE calls by path (`[QWEN3_MOE_SPARSE]` lines): decode {c.decode_gather} "
            f"gather_qmm, {c.decode_fused} fused{per}; prefill {c.prefill_gather} gather_qmm, "
            f"{c.prefill_fused} fused.{split}")


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _opening(r: Record, data: str | None) -> str:
    """One paragraph with what a reader needs before any figure, as mlxcel's records open."""
    issue = f"Issue {_issue(r.issue)}. " if r.issue is not None else ""
    hosts = "; ".join(f"{h.hostname} ({h.chip}, {h.os})" for h in r.hosts.values()) or "none"
    pins = ", ".join(sorted({f"`{p[:8]}`" for p in r.meta.mlx_pins.values()})) or "not recorded"
    commits = "; ".join(f"`{k}` → {', '.join(f'`{s[:12]}`' for s in v) or 'not resolved'}"
                        for k, v in r.commits.items())
    tools = "; ".join(f"{h}: " + "; ".join(p for p in t.split("; ") if p.strip())
                      for h, t in r.meta.toolchains.items()) or "not recorded"
    env = "; ".join(f"`{arm}`: `{' '.join(f'{k}={v}' for k, v in sorted(e.items()))}`"
                    for arm, e in r.meta.env.items() if e) or "none beyond the recipes'"
    raw = f" Raw data: [`{data}/`]({data}/)." if data else ""
    return (f"# {r.sweep_name}: benchmark record\n\n"
            f"{issue}Sweep `{r.sweep_id}`, made {r.created}. Hosts: {hosts}. MLX pin {pins}. "
            f"Build: {_builds(r)}. Toolchain: {tools}. Tree commit {commits} of `{r.repo}`. "
            f"Env: {env}. Cache state: {_cache(r)}. n = {_n(r)} per arm, {r.warmup} warm-up "
            f"run(s) before each measurement, discarded. Baseline arm: `{r.baseline}`"
            f"{f'; A/A arm: `{r.aa_arm}`' if r.aa_arm else ''}. {r.cells_measured} of "
            f"{r.cells_expected} cells measured"
            f"{f', {len(r.skipped)} adaptive repeats not needed' if r.skipped else ''}.{raw}\n")


def _builds(r: Record) -> str:
    # Per backend in the recipe's order (the build before the copies that keep its binary).
    steps: dict[str, dict[str, None]] = {}
    for b in r.meta.builds:
        steps.setdefault(b.backend, {}).update(dict.fromkeys(" ".join(c) for c in b.command))
    recipes = ", ".join(f"{b}: `{recipe}`" for b, recipe in r.build_recipes.items())
    if not any(steps.values()):
        return f"recipes {recipes} (no build command recorded)"
    ordered = "; ".join(f"{backend}: " + ", then ".join(f"`{c}`" for c in commands)
                        for backend, commands in steps.items() if commands)
    return f"{ordered} (recipes {recipes})"


def _cache(r: Record) -> str:
    ms = [m for g in r.groups for m in g.measurements]
    cold = [f"{b.backend} `{b.commit[:12]}` built cold on {b.worker} in "
            f"{b.wall_s:.1f} s" if b.wall_s is not None else f"{b.backend} built cold"
            for b in r.meta.builds if not b.cached]
    cold += [f"{b.backend} `{b.commit[:12]}` reused on {b.worker} as built at {b.built_at}"
             + (f" in {b.wall_s:.1f} s" if b.wall_s is not None else "")
             for b in r.meta.builds if b.cached]
    cached = sum(1 for m in ms if m.build_cached)
    jit = sorted({m.jit_cache for m in ms if m.jit_cache})
    parts = cold + [f"build cached for {cached} of {len(ms)} measurements"]
    parts.append(f"JIT cache before the runs: {'; '.join(jit)}" if jit
                 else "JIT cache state not recorded")
    return ", ".join(parts)


def _method(r: Record) -> str:
    adaptive = (f" With adaptive repeats, a group gets another repeat of every arm while any "
                f"comparison is undecided with its ranges apart (more repeats may decide "
                f"it), up to {r.adaptive_max_n} per arm; the "
                "record says when the cap stopped them." if r.adaptive_max_n else
                f" This sweep has no adaptive repeats: at n = {r.n} against {r.n} the smallest "
                f"two-sided rank-test p is {r.smallest_p:.3g}"
                + (", so no arm can be called different." if (r.smallest_p or 0) > ALPHA
                   else "."))
    aa = (f" The A/A arm `{r.aa_arm}` runs the baseline again; the largest change its range "
          "allows against the baseline is the noise floor." if r.aa_arm else "")
    return ("## Method\n\n"
            "Each cell is one measurement: a fresh process running the arm's bench recipe, "
            "after its warm-up runs. Within a (commit, backend, model) group, repeat r runs "
            "the arms rotated by r, on one host. Figures are `mean (min to max)` over the "
            "measured cells; `vs baseline` is the ratio of means, with the widest ratio the "
            "two ranges allow, then the answer. An arm **differs** from the baseline only when "
            "its range and the baseline's are apart, the rank test (Mann-Whitney U and "
            "Kolmogorov-Smirnov, two-sided, the smaller p; different at p ≤ 0.05) says "
            "different, and the change exceeds the A/A noise floor where one was measured: "
            "it is then **faster** or **slower**. It is **same** only where the ranges "
            "overlap and the rank test's p is above its same-threshold (the p a shift of one "
            "interquartile range would stay below in 99 % of samples of these sizes); **not "
            "yet known** where the ranges are apart but too few values were measured for the "
            "rank test to say different; anything else is **not significant** (`~` in the "
            "arm tables, as asv prints it). "
            f"See docs/statistics.md.{aa}{adaptive}\n")


def _idleness(r: Record) -> str:
    rows = ["## Host idleness\n", "| host | measurements | host not idle | gate not recorded "
            "| no host lease | overlapping runs | gate wait s (min to max) "
            "| load1 before (min to max) | load1 after (min to max) |",
            "|---|---|---|---|---|---|---|---|---|"]
    ms = [m for g in r.groups for m in g.measurements]
    for host in sorted({m.hostname for m in ms}):
        mine = [m for m in ms if m.hostname == host]
        waits = Span.of([m.gate.waited_s for m in mine if m.gate])
        rows.append(f"| {host} | {len(mine)} | {_count(mine, 'host not idle')} "
                    f"| {_count(mine, 'idle gate not recorded')} "
                    f"| {_count(mine, 'no host lease')} | {_count(mine, 'overlap')} "
                    f"| {span_text(waits, 1)} "
                    f"| {span_text(Span.of([m.load1_before for m in mine]))} "
                    f"| {span_text(Span.of([m.load1_after for m in mine]))} |")
    rows += _gpu_lines(ms)
    rows.append(f"\n{r.host_sentence}")
    return "\n".join(rows) + "\n"


def _gpu_lines(ms: list[Measurement]) -> list[str]:
    """Per host and GPU: persistence mode, application clocks and the clock lock, as read
    before its runs, with the SM clock and temperature seen around them."""
    lines = []
    for host in sorted({m.hostname for m in ms if m.gpu_before}):
        mine = [m for m in ms if m.hostname == host]
        seen = [g for m in mine for r in (m.gpu_before, m.gpu_after) if r for g in r.gpus]
        for index in sorted({g.index for g in seen}):
            gs = [g for g in seen if g.index == index]
            persistence = {"on" if g.persistence else "off" for g in gs
                           if g.persistence is not None}
            apps = {f"{g.app_sm_mhz:g}/{g.app_mem_mhz:g} MHz" for g in gs
                    if g.app_sm_mhz is not None and g.app_mem_mhz is not None}
            clocks = {m.gpu_clocks for m in mine if m.gpu_clocks} or {"not locked (not asked)"}
            lines.append(f"\n{host} GPU {index} ({gs[0].name}): persistence "
                         f"{', '.join(sorted(persistence)) or 'unknown'}, application clocks "
                         f"{', '.join(sorted(apps)) or 'unknown'}, clocks "
                         f"{'; '.join(sorted(clocks))}; around its runs SM clock "
                         f"{_extent([g.sm_mhz for g in gs])} MHz, temperature "
                         f"{_extent([g.temperature_c for g in gs])} °C.")
    return lines


def _extent(values: list[float | None]) -> str:
    known = [v for v in values if v is not None]
    return f"{min(known):g} to {max(known):g}" if known else "unknown"


def _count(ms: list[Measurement], phrase: str) -> int:
    return sum(1 for m in ms if any(phrase in f for f in m.flags))


def _group(g: Group, names: dict[str, str]) -> str:
    commit = (f"`{names[g.commit]}` at `{g.commit[:12]}`" if names.get(g.commit, g.commit) !=
              g.commit else f"`{g.commit[:12]}`")
    rows = [f"## {g.backend} · {g.model} · {commit}\n",
            "| arm | n | prompt tok | decode tok/s mean (min to max) | vs baseline "
            "| prefill tok/s mean (min to max) | prefill ms mean (min to max) | vs baseline "
            "| peak GB (min to max) | load1 (min to max) | flagged | host |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in g.rows:
        name = f"{row.arm} (baseline)" if row.baseline else f"{row.arm} (A/A)" if row.aa \
            else row.arm
        n = f"{row.n}" if row.n == row.expected else f"{row.n} of {row.expected}"
        tokens = ", ".join(map(str, row.prompt_tokens)) or "–"
        rows.append(f"| {name} | {n} | {tokens} | {span_text(row.decode_tps)} "
                    f"| {_vs(row.decode_vs_baseline, row.decode_comparison)} "
                    f"| {span_text(row.prefill_tps)} | {span_text(row.prefill_ms)} "
                    f"| {_vs(row.prefill_vs_baseline, row.prefill_comparison)} "
                    f"| {span_text(row.peak_gb)} | {span_text(row.load1)} | {row.flagged or '–'} "
                    f"| {', '.join(row.hosts) or '–'} |")
    order = "".join(f"\n**Order:** {note}.\n" for note in g.order)
    return "\n".join(rows) + "\n" + order + _comparisons(g) + _repeats(g)


def _vs(ratio: Ratio | None, c: Comparison | None) -> str:
    if c is None:
        return ratio_text(ratio)
    return f"{ratio_text(c.ratio)}, **{compact_text(c.word)}**"


def _comparisons(g: Group) -> str:
    found = [(row, c) for row in g.rows for c in (row.decode_comparison, row.prefill_comparison)
             if c]
    if not found:
        return ""
    rows = ["\n| arm | metric | n vs baseline | ranges | Mann-Whitney p | KS p | rank test "
            "| A/A noise floor | word | why |", "|---|---|---|---|---|---|---|---|---|---|"]
    for row, c in found:
        floor = f"±{c.noise_floor:.1%}" if c.noise_floor is not None else "–"
        same = (f"same above {c.rank.same_above:.3f}" if c.rank.same_above < 1
                else "same not reachable at these n")
        rank = f"{c.rank.answer} (different at p ≤ {c.rank.alpha:g}; {same})"
        rows.append(f"| {row.arm} | {c.metric} | {c.n} vs {c.n_baseline} "
                    f"| {'apart' if c.ranges_apart else 'overlap'} | {c.rank.mann_whitney_p:.3g} "
                    f"| {c.rank.ks_p:.3g} | {rank} | {floor} | **{c.word}** "
                    f"| {_cell(c.reason)} |")
    aa = next((c for row, c in found if row.aa and c.answer == "differs"), None)
    if aa:
        rows.append(f"\n**The A/A arm differs from the baseline** ({aa.metric}): identical code "
                    "measured apart, so this host or this order biases the measurement.")
    return "\n".join(rows) + "\n"


def _repeats(g: Group) -> str:
    if g.repeats is None:
        return ""
    ran = max([g.repeats.regular, *g.repeats.needed])
    anyway = g.repeats.ran_anyway
    extra = (f" Repeats {anyway[0]} to {anyway[-1]} were measured anyway (a worker that does "
             "not skip them) and are included above." if anyway else "")
    return (f"\nAdaptive repeats: {ran} of up to {g.repeats.max_n} per arm "
            f"({g.repeats.stopped}): {g.repeats.reason}.{extra}\n")


def _plots(r: Record, plots: dict[str, str]) -> str:
    if not plots:
        return "## Plots\n\nNo plot: nothing was measured.\n"
    lines = [f"![{k}]({v})" for k, v in plots.items()]
    untimed = [f"{g.backend} · {g.model}" for g in r.groups
               if g.profile and not g.profile.attribution.timed]
    if untimed:
        lines.append(f"\nProfiles without per-kernel time are not in a phases plot: "
                     f"{', '.join(untimed)}.")
    return "## Plots\n\n" + "\n".join(lines) + "\n"


def _missing(r: Record) -> "str | _Lines":
    if not r.missing:
        return "## Failed or missing cells\n\nNone: every cell was measured.\n"
    return _table("Failed or missing cells",
                  ["cell", "kind", "backend", "model", "arm", "repeat", "state", "reason"],
                  ([f"`{m.cell_id}`", m.kind, m.backend, m.model, m.arm, m.repeat, m.status,
                    _cell(m.reason)] for m in r.missing))


def _skipped(r: Record) -> "str | _Lines":
    if not r.skipped:
        return ""
    return _table("Adaptive repeats not needed",
                  ["cell", "backend", "model", "arm", "repeat", "reason"],
                  ([f"`{s.cell_id}`", s.backend, s.model, s.arm, s.repeat, _cell(s.reason)]
                   for s in r.skipped))


def _history(r: Record) -> "str | _Lines":
    if not r.history:
        return ""
    return _table("Attempt history (cells tried more than once)",
                  ["cell", "attempt", "worker", "host", "started", "outcome"],
                  ([f"`{e.cell_id}`", e.attempt, e.worker, e.hostname, e.started or "–",
                    _cell(e.outcome)] for e in r.history))


def _table(heading: str, columns: list[str], rows: Iterable[list[object]]) -> _Lines:
    return _Lines(chain([f"## {heading}\n", f"| {' | '.join(columns)} |",
                         "|---" * len(columns) + "|"],
                        (f"| {' | '.join(str(v) for v in row)} |" for row in rows)))


def _measurements(r: Record) -> _Lines:
    return _Lines(_measurement_lines(r))


def _measurement_lines(r: Record) -> Iterator[str]:
    yield from ["## Measurements\n", "| backend | model | arm | repeat | host | commit | attempt "
                "| decode tok/s | prefill tok/s | prefill ms | load1 before → after | started "
                "| flags |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for g in r.groups:
        yield from (f"| {g.backend} | {g.model} | {m.arm} | {m.repeat}"
                    f"{' (adaptive)' * m.adaptive} "
                    f"| {m.hostname} | `{m.commit[:12]}` | {m.attempt} | {m.decode_tps:.2f} "
                    f"| {m.prefill_tps:.2f} | {_num(m.prefill_ms)} "
                    f"| {m.load1_before:.2f} → {m.load1_after:.2f} | {m.started} "
                    f"| {_flags(m.flags)} |" for m in g.measurements)
    commands = {(g.backend, m.arm): m for g in r.groups for m in g.measurements}
    yield "\nOne measured command per backend and arm (every one is in the JSON):\n"
    for (backend, arm), m in sorted(commands.items()):
        env = " ".join(f"{k}={v}" for k, v in sorted(m.env.items()))
        yield f"- {backend} / {arm}: `{env + ' ' if env else ''}{' '.join(m.argv)}`"


def _flags(flags: list[str]) -> str:
    """The flags in short; which runs overlapped is in the JSON and data/measurements.csv."""
    certain = sum(1 for f in flags if f.startswith("overlaps "))
    maybe = sum(1 for f in flags if f.startswith("may overlap "))
    shown = [f for f in flags if "overlap" not in f]
    shown += [f"overlaps {certain} run(s)"] * bool(certain)
    shown += [f"may overlap {maybe} (whole-second times)"] * bool(maybe)
    return _cell("; ".join(shown)) or "–"


def _hosts(r: Record) -> str:
    rows = ["## Hosts\n", "| host | OS | kernel | arch | chip | cores | memory GB | GPU "
            "| Python |", "|---|---|---|---|---|---|---|---|---|"]
    rows += [f"| {h.hostname} | {h.os} | {h.kernel} | {h.arch} | {h.chip} | {h.cores} "
             f"| {h.memory_gb:.1f} | {h.gpu or '–'} | {h.python} |" for h in r.hosts.values()]
    return "\n".join(rows) + "\n"


def _n(r: Record) -> str:
    return f"{r.n}, adaptive up to {r.adaptive_max_n}" if r.adaptive_max_n else str(r.n)


def _issue(issue: str | int) -> str:
    return f"#{issue}" if isinstance(issue, int) else issue


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def notes_section(r: Record) -> str:
    """What the parsers noted about the measured runs (a shortened prompt, say), per cell."""
    rows = [f"| `{m.cell_id}` | {g.backend} | {g.model} | {m.arm} | {m.repeat} | "
            f"{note.replace('|', '/')} |" for g in r.groups for m in g.measurements
            for note in m.notes]
    if not rows:
        return ""
    head = ["## Parser notes\n", "What the parser read beside the figures, per measured run.\n",
            "| cell | backend | model | arm | repeat | note |", "|---|---|---|---|---|---|"]
    return "\n".join(head + rows) + "\n"
