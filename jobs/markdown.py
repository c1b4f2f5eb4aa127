"""The record as Markdown, laid out like mlxcel's docs/benchmark_results pages."""

from jobs.record import Group, Record
from jobs.stats import Span, ratio_text, span_text


def render(record: Record, plot_name: str | None = None) -> str:
    parts = [_opening(record), _method(record), _idleness(record)]
    parts += [_group(g) for g in record.groups]
    if plot_name:
        parts.append(f"## Plot\n\n![decode tok/s per arm]({plot_name})\n")
    parts += [_missing(record), _measurements(record), _hosts(record)]
    return "\n".join(parts)


def _opening(r: Record) -> str:
    commits = "; ".join(f"`{k}` → {', '.join(f'`{s[:12]}`' for s in v) or 'not resolved'}"
                        for k, v in r.commits.items())
    hosts = "; ".join(f"{h.hostname} ({h.chip}, {h.os})" for h in r.hosts.values()) or "none"
    builds = ", ".join(f"{b}: `{recipe}`" for b, recipe in r.builds.items())
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
    rows = ["## Failed or missing cells\n", "| cell | backend | model | arm | repeat | state "
            "| reason |", "|---|---|---|---|---|---|---|"]
    rows += [f"| `{m.cell_id}` | {m.backend} | {m.model} | {m.arm} | {m.repeat} | {m.status} "
             f"| {_cell(m.reason)} |" for m in r.missing]
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
