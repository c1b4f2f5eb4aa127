"""The benchmark's figures as docs/benchmarks/overhead.json (everything, raw samples
included) and overhead.md (tables, the goals of issue 9 met or missed). Nothing here
measures; it only lays out what the blocks measured."""

import json
from pathlib import Path
from typing import Any

from tests.bench.figures import RECORD_IMPORTS, fmt, fmt_x, spread

# The idle gate's default threshold: a block that started above it ran on a busy machine.
BUSY_LOAD1 = 0.6
_DISPATCH_HEAD = ("| contestant | p50 ms | p99 ms | min to max ms | vs bare p50 / p99 | "
                  "per-round ratio | processes per cell | gate wait ms |\n"
                  "|---|---|---|---|---|---|---|---|")


# "Flat": a worker grows at most this much more than bare Celery per cell (1 MiB over
# 10,000 cells), allocator noise included.
FLAT_B_PER_CELL = 100
BLOCKS = ("dispatch", "throughput", "memory", "quiet", "scale", "floors")


def write(results: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "overhead.json").write_text(json.dumps(results, indent=1, default=str) + "\n")
    (out / "overhead.md").write_text(markdown(results))
    print((out / "overhead.md").read_text())


def markdown(r: dict[str, Any]) -> str:
    parts = [_head(r), _goals(r)]
    for name, view in (("dispatch", _dispatch), ("throughput", _throughput),
                       ("memory", _memory), ("quiet", _quiet), ("scale", _scale),
                       ("floors", _floors)):
        if name in r:
            parts.append(view(r[name]))
    return "\n".join(parts)


def _head(r: dict[str, Any]) -> str:
    blocks = [b for b in BLOCKS if b in r]
    loads = "\n".join(f"| {b} | {r[b]['load1_before']:.2f} | {r[b]['load1_after']:.2f} | "
                      f"{r[b]['wall_s']:.0f} s |" for b in blocks)
    busy = any(r[b]["load1_before"] >= BUSY_LOAD1 for b in blocks)
    verdict = (f"**These figures are from a loaded machine** (load1 at or above {BUSY_LOAD1} "
               "before a block; load1 decays over minutes, so part of it can be this "
               "benchmark's own previous block): ratios are fairer than absolute times, "
               "since both sides of each ratio ran interleaved under the same load; re-run on "
               "a quiet machine for the absolute figures." if busy else
               f"The machine was quiet (load1 below {BUSY_LOAD1} before every block).")
    args = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in r["arguments"].items()
                    if k != "out")
    return f"""# What benchfleet costs around a measurement

Measured {r['date']} on {r['host']} by
`.venv/bin/python -m tests.bench.overhead` (`tests/bench/overhead.py`; this run: `{args}`).
{_earlier(r)}Every figure is set against a baseline measured in the same run, on the same private
redis-server, interleaved (the order rotated every round) and repeated; a figure reads
`median (min to max)` over its repeats. Raw figures, every sample included: `overhead.json`.
Where the time goes, with profiles: [overhead-profiles.md](overhead-profiles.md).

| block | load1 before | load1 after | wall |
|---|---|---|---|
{loads}

{verdict}
"""


def _earlier(r: dict[str, Any]) -> str:
    """Where some blocks were kept from earlier runs (`python -m tests.bench.report --merge`):
    which, when they ran, and on which machine where it was another (their absolute times do
    not compare with this run's; their ratios do)."""
    return "".join(f"The {', '.join(e['blocks'])} "
                   f"{'block is' if len(e['blocks']) == 1 else 'blocks are'} kept from the run "
                   f"of {e['date']} (`--blocks {e['arguments'].get('blocks', '')}`)"
                   + (f", **on another machine**: {e['host']}" if e.get("host") not in
                      (None, r.get("host")) else "") + ".\n"
                   for e in r.get("earlier") or [])


def _goals(r: dict[str, Any]) -> str:
    rows = []

    def row(goal: str, value: str, ok: bool | None, miss: str) -> None:
        state = "not measured" if ok is None else "met" if ok else f"missed: {miss}"
        rows.append(f"| {goal} | {value} | {state} |")

    d = r.get("dispatch")
    for ref in ("sha", "branch"):
        if d:
            x = d[ref]["ratio_p50"]
            row(f"dispatch → start <= 1.2x bare Celery ({ref}, p50)",
                f"{x:.1f}x ({d[ref]['p50_s'] * 1e3:.1f} ms vs {d['bare']['p50_s'] * 1e3:.1f} ms)",
                x <= 1.2, f"{x / 1.2:.1f}x over the goal")
    t = r.get("throughput")
    if t:
        x = t["ratio"]["median"]
        floor = (f"; bare Celery storing what an attempt stores {t['stored_ratio']['median']:.2f}x"
                 if "stored" in t else "")
        row("no-op throughput >= 0.5x bare Celery", f"{x:.2f}x ({t['benchfleet']['median']:.1f}"
            f" vs {t['bare']['median']:.1f} cells/s{floor})", x >= 0.5, f"{0.5 / x:.2f}x short")
    m = r.get("memory")
    if m:
        ours, theirs = (m[w]["growth_b_per_cell"] for w in ("benchfleet", "bare"))
        late, late_bare = (_late_growth(m["rss_kb"][w]) for w in ("benchfleet", "bare"))
        row(f"worker RSS flat over {m['cells']:,} cells (at most {FLAT_B_PER_CELL} B a cell "
            "more than bare Celery)", f"{ours:+.0f} B a cell (bare {theirs:+.0f}); over the "
            f"second half of the cells {late:+.0f} B a cell (bare {late_bare:+.0f})",
            ours - theirs <= FLAT_B_PER_CELL, f"{ours - theirs:.0f} B a cell more")
    s = r.get("scale", {})
    sizes = sorted((k for k in s if k.isdigit()), key=int)
    for size in sizes:
        f, n = s[size]["figures"], s[size]["cells"]
        x = f["ratios"].get("submit (CLI process) / submit: minimal script (process)")
        if x:
            row(f"{n:,}-cell submit, process, <= 1.1x a minimal script doing the same work",
                f"{x['median']:.2f}x ({f['submit (CLI process)']['median']:.2f} s vs "
                f"{f['submit: minimal script (process)']['median']:.2f} s)", x["median"] <= 1.1,
                f"{x['median'] / 1.1:.2f}x over")
    for size in sizes:
        f, n = s[size]["figures"], s[size]["cells"]
        x = f["ratios"]["status (CLI process) / status: minimal reader (process)"]["median"]
        row(f"{n:,}-cell status, process, <= 2x a minimal HGETALL reader",
            f"{x:.2f}x ({f['status (CLI process)']['median']:.2f} s vs "
            f"{f['status: minimal reader (process)']['median']:.2f} s)", x <= 2,
            f"{x / 2:.2f}x over")
    for size in sizes:
        row(*_record_goal(s[size]))
    if sizes:
        row(*_peak_goal(s[sizes[-1]], r.get("floors")))
    fl = r.get("floors")
    if fl:
        v = spread(fl["version_ratio"])  # the median section 6 states too
        x = v["median"]
        row("`benchfleet --version` <= 2x `python -c pass`", fmt_x(v), x <= 2,
            f"{x / 2:.2f}x over")
    q = r.get("quiet")
    if q:
        w = q["benchfleet"]["wakeups"]
        row("zero wake-ups of the worker during a measured command",
            f"{w['median']:.0f} (max {w['max']:.0f}) in {q['window_s']:.0f} s", w["max"] == 0,
            f"up to {w['max']:.0f} wake-ups")
    return ("## Goals (issues 9 and 17; every goal a ratio against a baseline of the "
            "same run)\n\n"
            "| goal | this run | |\n|---|---|---|\n" + "\n".join(rows) + "\n")


def _tree_line(name: str, tree: dict[str, Any]) -> str:
    if "error" in tree:
        return f"- whole tree, {name}: not measured ({tree['error']})"
    peak = tree["peak"]
    return (f"- whole tree, {name} (a run of its own, sampled every {tree['period_s']} s): "
            f"footprint {tree['footprint_most_kib'] / 1024:.0f} MiB, PSS summed "
            f"{peak['pss_sum_kib'] / 1024:.0f} MiB over {peak['processes']} "
            f"process{'' if peak['processes'] == 1 else 'es'}, its "
            f"children's own pages {tree['children_private_most_kib'] / 1024:.0f} MiB at most")


def _peak_goal(big: dict[str, Any], fl: dict[str, Any] | None
               ) -> tuple[str, str, bool | None, str]:
    """The whole tree's footprint where the run measured it (tests/bench/tree_memory.py),
    else the largest process's peak RSS, as runs before it did. The one-process reader's
    footprint is its RSS, which GNU time reads exactly where a sampler can miss its peak: the
    larger of the two."""
    goal = f"{big['cells']:,}-cell record, peak memory, <= 3x the minimal reader's"
    peaks, trees = big.get("peak_rss_kib", {}), big.get("tree_peak", {})
    ours, theirs = peaks.get("record (CLI process)"), peaks.get("record: minimal reader (process)")
    measured = {name: t["footprint_most_kib"] for name, t in trees.items()
                if "footprint_most_kib" in t}
    if trees:
        ours = [measured["record (CLI process)"]] if "record (CLI process)" in measured else []
        theirs = [measured.get("record: minimal reader (process)", 0), *(theirs or [])]
    if not ours or not theirs or not max(theirs):
        return goal, "not measured", None, ""
    a, b = max(ours) / 1024, max(theirs) / 1024
    what = ("the whole process tree: its anonymous pages each counted once, its first "
            "process's other pages whole; " if trees else "the largest process; ")
    largest = peaks.get("record (CLI process)")
    alone = (f"; its largest process {max(largest) / 1024:,.0f} MiB"
             if trees and largest else "")
    libraries = (fl or {}).get("import_peak_kib", {}).get(RECORD_IMPORTS)
    floor = (f"; the record's libraries imported and nothing else: at least "
             f"{min(libraries) / 1024:.0f} MiB, {min(libraries) / 1024 / b:.1f}x"
             if libraries else "")
    return (goal, f"{a / b:.1f}x ({what}{a:,.0f} MiB vs {b:.1f} MiB{alone}{floor})", a / b <= 3,
            f"{a / b / 3:.1f}x over")


def _record_goal(big: dict[str, Any]) -> tuple[str, str, bool | None, str]:
    goal = f"{big['cells']:,}-cell record, process, <= 2x a minimal read-and-sha256 reader"
    note = big["notes"].get("record (CLI process)", {})
    reader = big["figures"].get("record: minimal reader (process)")
    if "at_least_s" in note or "stopped_after_s" in note:
        bound = note.get("at_least_s", note.get("stopped_after_s"))
        how = ("not run: at least " if "at_least_s" in note else "stopped after ")
        if reader is None:
            return goal, f"{how}{bound:.0f} s (minimal reader not run)", False, "see section 5"
        minimal = reader["median"]
        return (goal, f"{how}{bound:.0f} s vs {minimal:.1f} s", False,
                f"at least {bound / minimal / 2:.0f}x over")
    f = big["figures"]
    x = f["ratios"]["record (CLI process) / record: minimal reader (process)"]
    return (goal, f"{x['median']:.1f}x ({f['record (CLI process)']['median']:.1f} s vs "
            f"{f['record: minimal reader (process)']['median']:.2f} s)", x["median"] <= 2,
            f"{x['median'] / 2:.1f}x over")


def _dispatch(d: dict[str, Any]) -> str:
    rows = []
    for who, label in (("sha", "benchfleet, commit named by sha"),
                       ("branch", "benchfleet, commit named by branch"),
                       ("bare", "bare Celery, same command")):
        f = d[who]
        ratio = (f"{f['ratio_p50']:.1f}x / {f['ratio_p99']:.1f}x | {fmt_x(f['ratio_per_round'])}"
                 if who != "bare" else "1 | 1")
        rows.append(f"| {label} | {f['p50_s'] * 1e3:.1f} | {f['p99_s'] * 1e3:.1f} | "
                    f"{f['min_s'] * 1e3:.1f} to {f['max_s'] * 1e3:.1f} | {ratio} | "
                    f"{f['processes']['median']:.0f} | {fmt(f['gate'], ' ms', 1e3, digits=2)} |")
    steps = _steps(d["samples"]["sha"])
    commands = "; ".join(f"`{c}`" for c in d["samples"]["sha"][0]["commands"])
    n = len(d["samples"]["bare"])
    return f"""## 1. Dispatch → command start

`dispatch`: the moment the bench process writes the message's LPUSH to Redis (timed inside
redis-py, through which both benchfleet's `submit` and Celery's `send_task` write);
`command start`: the kernel's exec event of the measured command, a child of the worker
(netlink process events, CLOCK_MONOTONIC). One cell at a time, the worker idle before each
(no thread of it ran for 150 ms). benchfleet runs a one-cell sweep of the shipped
`mlxcel-bench-decode` recipe (flag probe included) built by `tinymoe-build` on the stand-in
target; bare Celery's task spawns the very command benchfleet's measured run had (argv, cwd,
env from its result.json): `{_short(d['command']['argv'])}`.
The idle gate is capped (threshold 0, longest wait 0: it reads load1 once); its wait, read
from each attempt, is shown apart and taken out of the figures. {n} dispatches per
contestant; p99 of fewer than 100 samples is their largest.

{_DISPATCH_HEAD}
{chr(10).join(rows)}

Commands a benchfleet cell starts, in order: {commands}. "Processes" counts every
descendant of the worker that exec'd during the cell (grandchildren included).
{_inodes(d)}
Where a benchfleet dispatch (sha) goes, median over its dispatches:

| step | ms |
|---|---|
{steps}
"""


def _inodes(block: dict[str, Any]) -> str:
    """The cost of a new file or folder in the rig's store, read after the block (blocks
    kept from before it was read have none)."""
    cost = block.get("store_inodes")
    if cost is None:
        return ""
    line = (f"\nA new inode in the rig's store folder, where the worker makes each attempt's "
            f"folders and files, after the block: a folder {cost['folder_ms']:.3f} ms, a file in "
            f"it {cost['file_ms']:.3f} ms (medians of {cost['repeats']}; on this machine's disk "
            "the cost differs from folder to folder, by block group).")
    if "attempt_inodes" in block:
        n = block["attempt_inodes"]
        per_cell = 1e3 / block["benchfleet"]["median"]
        line += (f" A stored no-op attempt is {n} new files and folders, its cell's folder "
                 f"included: about {n * cost['file_ms']:.1f} ms of benchfleet's "
                 f"{per_cell:.1f} ms a cell, which bare Celery, storing nothing, does not spend.")
    return line + "\n"


def _stored(t: dict[str, Any]) -> str:
    """The same-work floor: bare Celery storing what an attempt stores (blocks kept from
    before it was measured have none)."""
    if "stored" not in t:
        return ""
    return (f"| bare Celery storing what an attempt stores | {fmt(t['stored'])} | "
            f"{fmt_x(t['stored_ratio'])} |\n\nThe last row is the floor under the goal: the "
            "same command in a bare Celery task that also keeps what a stored benchfleet "
            "attempt keeps, done plainly (tests/bench/bare_worker.py `stored`: the cell "
            "marked running and done in Redis, the output in files of a new attempt folder, "
            "its JSON, a manifest of sha256 and an accepted marker; "
            f"{t['stored_attempt_inodes']} new files and folders an attempt, against "
            f"benchfleet's {t['attempt_inodes']}), with none of benchfleet's guarantees, on "
            f"{_floor_worker(t)}. benchfleet runs at {fmt_x(t['vs_stored'])} of its rate, "
            "measured in the same rounds, the three contestants' order rotated.\n")


def _floor_worker(t: dict[str, Any]) -> str:
    if t.get("stored_worker") == "its own":
        return "a bare worker of its own"
    return "bare Celery's worker (its memory below is after both kinds of task)"


def _short(argv: list[str]) -> str:
    """An argv without the run's temporary directories: file names only."""
    return " ".join(Path(a).name if "/" in a else a for a in argv)


def _steps(samples: list[dict[str, Any]]) -> str:
    names = [s[0] for s in samples[0]["steps"]]
    rows = []
    for i, name in enumerate(names):
        xs = sorted(s["steps"][i][1] for s in samples if len(s["steps"]) > i)
        rows.append(f"| {name} | {xs[len(xs) // 2] * 1e3:.1f} |")
    return "\n".join(rows)


def _throughput(t: dict[str, Any]) -> str:
    mem = t["memory"]
    total = t["cells_total"]
    mem_rows = "\n".join(
        f"| {who} | {m['after_1']['VmRSS'] / 1024:.1f} | {m[f'after_{total}']['VmRSS'] / 1024:.1f}"
        f" | {m[f'after_{total}']['VmHWM'] / 1024:.1f} |" for who, m in mem.items())
    rss = mem["benchfleet"][f"after_{total}"]["VmRSS"] / mem["bare"][f"after_{total}"]["VmRSS"]
    return f"""## 2. No-op throughput

{t['rounds']} rounds of {t['cells_per_round']} cells of a command that exits at once
(coreutils `printf` of a results block: the `noop` recipe of tests/bench/catalogue.yaml):
benchfleet as one sweep (one group, one message), bare Celery as {t['cells_per_round']} tasks
spawning the same command. Cells per second, start to start: (cells - 1) over the time from
the first command's exec to the last's.

| contestant | cells per second | vs bare Celery |
|---|---|---|
| bare Celery | {fmt(t['bare'])} | 1 |
| benchfleet | {fmt(t['benchfleet'])} | {fmt_x(t['ratio'])} |
{_stored(t)}{_inodes(t)}
## 3. Worker memory

VmRSS after the worker's first cell and after {total} cells (the throughput rounds), and the
peak (VmHWM), in MiB. benchfleet / bare Celery after {total}: {rss:.2f}x.

| worker | RSS after 1 | RSS after {total} | peak after {total} |
|---|---|---|---|
{mem_rows}
"""


def _late_growth(readings: list[list[float]]) -> float:
    """Bytes a cell over the second half of the readings (cells, KiB): whether growth goes on
    or was a step early on."""
    (c0, k0), (c1, k1) = readings[len(readings) // 2], readings[-1]
    return (k1 - k0) * 1024 / (c1 - c0) if c1 > c0 else 0.0


def _memory(m: dict[str, Any]) -> str:
    rows = "\n".join(
        f"| {b[0]:,} | {b[1] / 1024:.1f} | {c[1] / 1024:.1f} |"
        for b, c in zip(m["rss_kb"]["benchfleet"], m["rss_kb"]["bare"], strict=True))
    return f"""### Over {m['cells']:,} cells

Each worker (benchfleet's the throughput block's, bare Celery's a fresh one on its own
queue) ran {m['warmup_cells']:,} no-op cells of warm-up, then
{m['cells']:,} more: benchfleet as sweeps of 100 cells (one message each), bare Celery as 100
tasks at a time, interleaved. VmRSS in MiB, read between batches; growth per cell from the
first reading to the last:
benchfleet {m['benchfleet']['growth_b_per_cell']:+.0f} B, bare Celery
{m['bare']['growth_b_per_cell']:+.0f} B.

| cells | benchfleet | bare |
|---|---|---|
{rows}
"""


def _quiet(q: dict[str, Any]) -> str:
    rows = []
    for who in ("benchfleet", "bare"):
        f = q[who]
        cpu = fmt(f["cpu_s"], " ms", 1e3, digits=3)
        rows.append(f"| {who} | {fmt(f['wakeups'], digits=0)} | {fmt(f['voluntary'], digits=0)}"
                    f" | {fmt(f['nonvoluntary'], digits=0)} | {cpu}"
                    f" | {fmt(f['thread_count'], digits=0)} |")
    threads = []
    for who in ("benchfleet", "bare"):
        for tid, t in q["rounds"][who][0]["threads"].items():
            threads.append(f"| {who} | {tid} ({t['name']}) | {t['runs']} | {t['voluntary']} | "
                           f"{t['nonvoluntary']} | {t['cpu_ns'] / 1e6:.3f} |")
    return f"""## 4. Quietness during a measured command

A measured command spins for {q['seconds']:g} s (tests/bench/spin.py, the `spin` recipe); every
thread of the worker process, and of its processes other than the command (benchfleet's
watch, workers/deathwatch.py), is read 1 s after the command's exec and 1 s before its end
({q['window_s']:g} s between): run count (wake-ups) and CPU time from
`/proc/<pid>/task/<tid>/schedstat`, voluntary and involuntary context switches from its
`status`. {len(q['rounds']['benchfleet'])} rounds each.

| worker | wake-ups | voluntary switches | involuntary switches | CPU ms | threads |
|---|---|---|---|---|---|
{chr(10).join(rows)}

Every thread, first round:

| worker | thread | runs | voluntary | involuntary | CPU ms |
|---|---|---|---|---|---|
{chr(10).join(threads)}
"""


def _scale(s: dict[str, Any]) -> str:
    parts = ["""## 5. Submit, status and record at scale

Sweeps of 2 backends x 5 models x 2 arms x 5 repeats per commit (100 cells per commit, 10
cells per group): 1,000 cells are 10 commits, 10,000 are 100, 100,000 are 1,000 (submit is
timed up to 10,000 cells). `CLI process`: the
`benchfleet` command as a process, as a user runs it (its output to a file); `CLI, in
process`: `runner.cli.main` in the benchmark's process, imports already paid, so the
difference is start-up; `submit() call`: the library call alone, without the printed table.
Baselines: for submit, a minimal script doing its work (read the YAML, expand the cells,
sign each envelope with Ed25519, write sweep.json, store the cells, states and envelopes in
Redis and queue one message per group) without its checks or models; the exact messages
submit wrote, LPUSHed again in one pipeline; a pipeline that
RESTOREs every key submit wrote (its whole Redis footprint); Celery's `send_task` once per cell
with that cell's signed envelope (the one-task-per-cell design); for status, one HGETALL of the
states and counts per state; for record, reading every attempt's manifest, sha256 of every
file it lists, and parsing result.json (tests/bench/minimal.py; as a process it imports only
what it uses). Record rounds read a warm page cache. Peak memory: each process's own
`ru_maxrss` (wait4), the largest over its rounds; for the record, whose figures are drawn in
children it forks, the largest of it and its children, each counted whole. The goal's figure
is the whole tree's, from one more run of the record and of the reader, untimed
(tests/bench/tree_memory.py, every 100 ms): its footprint, each anonymous page of the tree
counted once and its first process's other pages whole (not the file pages only a child maps),
which for the one-process reader is its RSS (the larger of that and its `ru_maxrss` is used:
a peak shorter than the period can be missed).

How the large sweeps' states and artifacts were made: a seed sweep of 12 real cells (the
stand-in's decode, both backends and arms, 3 repeats) ran on the real workers; then every
cell of a large sweep got a copy of a seed attempt of its backend and arm, its result.json
rewritten with the cell's sweep, id and commit and its times moved so the cells ran one after
another on the host, published through the real artifact store (staging, sha256 manifest, one
rename) and taken and finished through the real Redis scripts, then accepted, as a worker
does. Its figures are the seeds' real figures, repeated. The extra commits are empty commits
on the stand-in (only their shas matter here).
"""]
    for size, r in s.items():
        if not size.isdigit():
            continue
        f = r["figures"]
        rows = [f"| {name} | {fmt(v, digits=3)} |" for name, v in f.items() if name != "ratios"]
        ratio_rows = [f"| {name} | {fmt_x(v)} |" for name, v in f["ratios"].items()]
        notes = "\n".join(f"- {name}: {_note(n)}" for name, n in r["notes"].items())
        peaks = "\n".join([f"- peak RSS, {name}: {max(v) / 1024:.0f} MiB"
                            for name, v in r.get("peak_rss_kib", {}).items()]
                           + [_tree_line(name, t) for name, t in r.get("tree_peak", {}).items()])
        parts.append(f"""### {r['cells']:,} cells

(states and artifacts made in {r['generated_s']:.0f} s)

| contestant | seconds |
|---|---|
{chr(10).join(rows)}

| ratio (per round) | |
|---|---|
{chr(10).join(ratio_rows)}
{notes}
{peaks}
""")
    return "\n".join(parts)


def _floors(fl: dict[str, Any]) -> str:
    rows = "\n".join(f"| {name} | {fmt(spread(xs), ' ms', 1e3, digits=3)} |"
                      for name, xs in fl["seconds"].items())
    return f"""## 6. The floor

What the machine itself costs, in the same run (tests/bench/floors.py): the pieces no
implementation of benchfleet's work can go below. Interleaved repeats, median (min to max).

| floor | median (min to max) |
|---|---|
{rows}

`benchfleet --version` / `python -c pass`, per round: {fmt_x(spread(fl['version_ratio']))}.
{_import_peaks(fl.get("import_peak_kib", {}))}"""


def _import_peaks(peaks: dict[str, list[int]]) -> str:
    """What a process holds for its libraries alone (absent from runs before it was kept)."""
    if not peaks:
        return ""
    rows = "\n".join(f"| {name} | {min(kib) / 1024:.1f} MiB |" for name, kib in peaks.items())
    repeats = len(next(iter(peaks.values())))
    return f"""
Peak RSS of a process that imports the libraries and does nothing else (its own, read by GNU
time; the smallest of {repeats}): what a command that needs them holds before any data.

| process | peak RSS |
|---|---|
{rows}
"""


def _note(n: dict[str, Any]) -> str:
    if "not_run" in n:
        return (f"not run: from the smaller sizes up to {n['from_size']:,} cells (their cost per "
                f"cell, or a smaller one stopped), it would take at least "
                f"{n['at_least_s']:.0f} s here, past the benchmark's limit")
    if "stopped_after_s" in n:
        return f"stopped after {n['stopped_after_s']:.0f} s without finishing"
    if n.get("ran_once"):
        return "ran once (too slow to repeat within the benchmark's bound); its ratio is " \
               "against the baseline's median"
    return json.dumps(n)


def merged(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """`new`'s blocks over `old`'s: a run of some blocks keeps the others, each saying the
    run it came from."""
    kept = [b for b in BLOCKS if b in old and b not in new]
    earlier = []
    for source in [*(old.get("earlier") or []),
                   {"date": old["date"], "arguments": old["arguments"], "host": old.get("host"),
                    "blocks": BLOCKS}]:
        blocks = [b for b in source["blocks"] if b in kept]
        kept = [b for b in kept if b not in blocks]
        if blocks:
            earlier.append({**source, "blocks": blocks})
    return {**{b: old[b] for e in earlier for b in e["blocks"]}, **new, "earlier": earlier}


if __name__ == "__main__":
    # Lay out an earlier run's JSON again: python -m tests.bench.report [DIR]; or fold a run
    # of some blocks into DIR's: python -m tests.bench.report --merge RUN_DIR [DIR]
    import sys

    default = Path(__file__).parents[2] / "docs" / "benchmarks"
    argv = sys.argv[1:]
    run = None
    if argv[:1] == ["--merge"]:
        run, argv = Path(argv[1]), argv[2:]
    where = Path(argv[0]) if argv else default
    results = json.loads((where / "overhead.json").read_text())
    if run is not None:
        results = merged(results, json.loads((run / "overhead.json").read_text()))
    write(results, where)
