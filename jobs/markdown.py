"""The record as Markdown, laid out like mlxcel's docs/benchmark_results pages."""

from jobs.answer import Answer
from jobs.attribution import Attribution
from jobs.readings import PathCounts
from jobs.record import Record
from jobs.record_parts import Group
from jobs.stats import Span, ratio_text, span_text


def render(record: Record, plots: dict[str, str] | None = None) -> str:
    parts = [_check(record), _opening(record), _metadata(record)]
    if record.answer:
        parts += [answer_section(record.answer)]
    parts += [_method(record), _idleness(record)]
    parts += [_group(g) + (_profile(g) if g.profile else "") for g in record.groups]
    if plots:
        parts.append("## Plots\n\n" + "\n".join(f"![{k}]({v})" for k, v in plots.items()) + "\n")
    parts += [_missing(record), _measurements(record), _hosts(record)]
    return "\n".join(p for p in parts if p)


def _check(r: Record) -> str:
    if r.check is None or r.check.ok:
        return ""
    lines = [f"> **This record fails `benchfleet check`** ({len(r.check.problems)} problems):"]
    lines += [f"> - {p}" for p in r.check.problems]
    return "\n".join(lines) + "\n"


def _metadata(r: Record) -> str:
    rows = ["## Metadata\n", "| item | value |", "|---|---|",
            f"| date | {r.meta.date} |", f"| n per arm | {r.n} (warm-up {r.warmup} per cell) |"]
    for h in r.hosts.values():
        rows.append(f"| host {h.hostname} | {h.chip}; {h.os}; {h.arch}; {h.cores} cores |")
    for requested, shas in r.commits.items():
        rows.append(f"| tree commit `{requested}` | {', '.join(f'`{s}`' for s in shas) or '–'} |")
    for sha, pin in r.meta.mlx_pins.items():
        rows.append(f"| MLX pin at `{sha[:12]}` | `{pin[:8]}` |")
    for b in r.meta.builds:
        commands = "; ".join(f"`{' '.join(c)}`" for c in b.command)
        took = f"{b.wall_s:.1f} s" if b.wall_s is not None else "–"
        rows.append(f"| build {b.backend} `{b.commit[:12]}` on {b.worker} | {took}: {commands} |")
    for arm, env in r.meta.env.items():
        text = " ".join(f"{k}={v}" for k, v in sorted(env.items())) or "(none)"
        rows.append(f"| env of `{arm}` | `{text}` |")
    return "\n".join(rows) + "\n"


def answer_section(a: Answer) -> str:
    rows = ["## Verdict\n", f"Rule: {a.rule}\n",
            "| backend | model | family | verdict | why | settled by | missing |",
            "|---|---|---|---|---|---|---|"]
    rows += [f"| {v.backend} | {v.model} | {v.family} | **{v.outcome}** | {_cell(v.reason)} "
             f"| {', '.join(f'`{s}`' for s in v.settled_by) or '–'} "
             f"| {_cell('; '.join(v.missing)) or '–'} |" for v in a.verdicts]
    rows += ["\n## Control\n", f"Each family's `{a.candidate}` vs `{a.baseline}` decode ratio "
             "against the control's own: a family whose range lies entirely below the "
             "control's has a family-specific gap; overlapping ranges mean the gap is general.\n",
             "| backend | control | control ratio | fused-off vs candidate | model | family "
             "| family ratio | gap is |", "|---|---|---|---|---|---|---|---|"]
    for c in a.controls:
        for f in c.families or []:
            rows.append(f"| {c.backend} | {c.control} | {ratio_text(c.control_ratio)} "
                        f"| {ratio_text(c.fused_off_vs_candidate)} | {f.model} | {f.family} "
                        f"| {ratio_text(f.ratio)} | {f.relation} |")
    for models in a.not_comparable:
        rows.append(f"\n{' and '.join(models)} are one checkpoint under non-comparable "
                    "quantization recipes: their rows are never compared with each other "
                    "(not a precision comparison).")
    return "\n".join(rows) + "\n"


def _profile(g: Group) -> str:
    p = g.profile
    assert p is not None
    a = p.attribution
    tokens = " and ".join(map(str, p.tokens))
    how = (f"two-run nsys delta ({tokens} generated tokens)" if p.tool == "nsys-delta"
           else "op counts of one decode token's graph (DOT); no per-op time")
    rules = f"phase rules of family `{a.family}`" if a.family else "the default phase rules"
    rows = [f"\n### Kernels per decode token: {g.backend} · {g.model}\n",
            f"Profile cell `{p.cell_id}` (attempt {p.attempt}, {p.worker} on {p.hostname}), "
            f"{how}, {rules}. Profiled runs are never used for throughput.\n",
            "| phase | kernels | launches/token | µs/token | % of kernel time "
            "| % of token wall |", "|---|---|---|---|---|---|"]
    rows += [f"| {ph.phase} | {ph.kernels} | {ph.launches_per_token:.1f} | {_num(ph.us_per_token)} "
             f"| {_pct(ph.share)} | {_pct(ph.wall_share)} |" for ph in a.phases]
    if a.total_us_per_token is not None:
        rows.append(f"| **kernels** | {len(a.kernels)} | "
                    f"{sum(k.launches_per_token for k in a.kernels):.1f} "
                    f"| {a.total_us_per_token:.1f} | 100% | {_pct(_ratio(a))} |")
    if a.idle:
        i = a.idle
        rows += [f"| **GPU idle** (wall − kernels) | – | – | {i.idle_us_per_token:.1f} | – "
                 f"| {i.idle_us_per_token / i.wall_us_per_token:.1%} |",
                 f"| **token wall** (unprofiled) | – | – | {i.wall_us_per_token:.1f} | – | 100% |",
                 f"\nToken wall time: {i.source}. GPU idle is that minus the profiled kernel "
                 "time: launch, host and synchronisation time, never kernel time; a negative "
                 "value is shown as it is."]
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


def _ratio(a: Attribution) -> float | None:
    if a.idle is None or a.total_us_per_token is None:
        return None
    return a.total_us_per_token / a.idle.wall_us_per_token


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _opening(r: Record) -> str:
    commits = "; ".join(f"`{k}` → {', '.join(f'`{s[:12]}`' for s in v) or 'not resolved'}"
                        for k, v in r.commits.items())
    hosts = "; ".join(f"{h.hostname} ({h.chip}, {h.os})" for h in r.hosts.values()) or "none"
    builds = ", ".join(f"{b}: `{recipe}`" for b, recipe in r.build_recipes.items())
    return (f"# {r.sweep_name}: benchmark record\n\n"
            f"Sweep `{r.sweep_id}`, made {r.created}. Target `{r.repo}` at {commits}. "
            f"Hosts: {hosts}. Build recipes: {builds}. n = {r.n} per arm, "
            f"{r.warmup} warm-up run(s) before each measurement, discarded. "
            f"Baseline arm: `{r.baseline}`. {r.cells_measured} of {r.cells_expected} cells "
            f"measured.\n")


def _method(r: Record) -> str:
    return ("## Method\n\n"
            "Each cell is one measurement: a fresh process running the arm's bench recipe, "
            "after its warm-up runs. Within a (commit, backend, model) group, repeat r runs "
            "the arms rotated by r, on one host. Figures are `mean (min to max)` over the "
            "measured cells. `vs baseline` is the ratio of means, with the widest ratio the "
            "two ranges allow; when the ranges overlap the row says **no effect**.\n")


def _idleness(r: Record) -> str:
    rows = ["## Host idleness\n", "| host | measurements | load1 before (min to max) "
            "| load1 after (min to max) |", "|---|---|---|---|"]
    ms = [m for g in r.groups for m in g.measurements]
    for host in sorted({m.hostname for m in ms}):
        mine = [m for m in ms if m.hostname == host]
        before = Span.of([m.load1_before for m in mine])
        after = Span.of([m.load1_after for m in mine])
        rows.append(f"| {host} | {len(mine)} | {span_text(before)} | {span_text(after)} |")
    return "\n".join(rows) + "\n"


def _group(g: Group) -> str:
    rows = [f"## {g.backend} · {g.model} · `{g.commit}`\n",
            "| arm | n | prompt tok | decode tok/s mean (min to max) | vs baseline "
            "| prefill tok/s mean (min to max) | vs baseline | peak GB (min to max) "
            "| load1 (min to max) | host |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for row in g.rows:
        name = f"{row.arm} (baseline)" if row.baseline else row.arm
        n = f"{row.n}" if row.n == row.expected else f"{row.n} of {row.expected}"
        tokens = ", ".join(map(str, row.prompt_tokens)) or "–"
        rows.append(f"| {name} | {n} | {tokens} | {span_text(row.decode_tps)} "
                    f"| {ratio_text(row.decode_vs_baseline)} | {span_text(row.prefill_tps)} "
                    f"| {ratio_text(row.prefill_vs_baseline)} | {span_text(row.peak_gb)} "
                    f"| {span_text(row.load1)} | {', '.join(row.hosts) or '–'} |")
    return "\n".join(rows) + "\n"


def _missing(r: Record) -> str:
    if not r.missing:
        return "## Failed or missing cells\n\nNone: every cell was measured.\n"
    rows = ["## Failed or missing cells\n", "| cell | kind | backend | model | arm | repeat "
            "| state | reason |", "|---|---|---|---|---|---|---|---|"]
    rows += [f"| `{m.cell_id}` | {m.kind} | {m.backend} | {m.model} | {m.arm} | {m.repeat} "
             f"| {m.status} | {_cell(m.reason)} |" for m in r.missing]
    return "\n".join(rows) + "\n"


def _measurements(r: Record) -> str:
    rows = ["## Measurements\n", "| backend | model | arm | repeat | host | commit | attempt "
            "| decode tok/s | prefill tok/s | load1 before → after | started |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for g in r.groups:
        rows += [f"| {g.backend} | {g.model} | {m.arm} | {m.repeat} | {m.hostname} "
                 f"| `{m.commit[:12]}` | {m.attempt} | {m.decode_tps:.2f} | {m.prefill_tps:.2f} "
                 f"| {m.load1_before:.2f} → {m.load1_after:.2f} | {m.started} |"
                 for m in g.measurements]
    commands = {(g.backend, m.arm): m for g in r.groups for m in g.measurements}
    rows.append("\nOne measured command per backend and arm (every one is in the JSON):\n")
    for (backend, arm), m in sorted(commands.items()):
        env = " ".join(f"{k}={v}" for k, v in sorted(m.env.items()))
        rows.append(f"- {backend} / {arm}: `{env + ' ' if env else ''}{' '.join(m.argv)}`")
    return "\n".join(rows) + "\n"


def _hosts(r: Record) -> str:
    rows = ["## Hosts\n", "| host | OS | kernel | arch | chip | cores | memory GB | GPU "
            "| Python |", "|---|---|---|---|---|---|---|---|---|"]
    rows += [f"| {h.hostname} | {h.os} | {h.kernel} | {h.arch} | {h.chip} | {h.cores} "
             f"| {h.memory_gb:.1f} | {h.gpu or '–'} | {h.python} |" for h in r.hosts.values()]
    return "\n".join(rows) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
