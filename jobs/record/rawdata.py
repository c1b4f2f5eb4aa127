"""The record's raw data as files a reader can `cat`: one CSV row per measurement, per
comparison and per profiled kernel, and the measurements as JSON.

A view of the record like the Markdown: nothing here computes a figure.
"""

import csv
import io
import json
from collections.abc import Iterable, Iterator, Sequence

from jobs.record.model import Record
from jobs.strict import dumped_json


def files(record: Record) -> dict[str, str]:
    """File name -> content, for `<out>/data/<record>/`."""
    return {name: "".join(chunks) for name, chunks in parts(record).items()}


def parts(record: Record) -> dict[str, Iterable[str]]:
    """File name -> its content in pieces, made as they are written: a record of 100,000
    measurements never holds a whole file of them in memory."""
    out: dict[str, Iterable[str]] = {
        "measurements.csv": _csv(_MEASUREMENT_COLUMNS, _measurements(record)),
        "measurements.json": _json(record),
        "comparisons.csv": _csv(_COMPARISON_COLUMNS, _comparisons(record))}
    if any(g.profile and g.profile.attribution.kernels for g in record.groups):
        out["kernels.csv"] = _csv(_KERNEL_COLUMNS, _kernels(record))
    return out


_MEASUREMENT_COLUMNS = (
    "backend", "model", "commit", "arm", "repeat", "adaptive", "cell_id", "attempt", "host",
    "worker", "started", "ended", "decode_tok_s", "decode_ms", "prefill_tok_s", "prefill_ms",
    "prompt_tokens", "generated_tokens", "peak_gb", "load1_before", "load1_after",
    "host_idle", "gate_waited_s", "host_lease", "flags")
_COMPARISON_COLUMNS = (
    "backend", "model", "commit", "arm", "metric", "n", "n_baseline", "ratio_mean",
    "ratio_low", "ratio_high", "ranges_apart", "mann_whitney_p", "ks_p", "alpha",
    "same_above", "rank_test", "noise_floor", "answer", "word", "capped", "reason")
_KERNEL_COLUMNS = ("backend", "model", "commit", "kernel", "phase", "launches_per_token",
                   "us_per_token", "share")


def _measurements(record: Record) -> Iterable[Sequence[object]]:
    for g in record.groups:
        for m in g.measurements:
            yield (g.backend, g.model, m.commit, m.arm, m.repeat, m.adaptive, m.cell_id,
                   m.attempt, m.hostname, m.worker, m.started, m.ended, m.decode_tps,
                   m.decode_ms, m.prefill_tps, m.prefill_ms, m.prompt_tokens,
                   m.generated_tokens, m.peak_gb, m.load1_before, m.load1_after,
                   m.gate.idle if m.gate else None, m.gate.waited_s if m.gate else None,
                   m.host_lease, "; ".join(m.flags))


def _comparisons(record: Record) -> Iterable[Sequence[object]]:
    for g in record.groups:
        for row in g.rows:
            for c in (row.decode_comparison, row.prefill_comparison):
                if c is None:
                    continue
                yield (g.backend, g.model, g.commit, row.arm, c.metric, c.n, c.n_baseline,
                       c.ratio.mean, c.ratio.low, c.ratio.high, c.ranges_apart,
                       c.rank.mann_whitney_p, c.rank.ks_p, c.rank.alpha, c.rank.same_above,
                       c.rank.answer, c.noise_floor, c.answer, c.word, c.capped, c.reason)


def _kernels(record: Record) -> Iterable[Sequence[object]]:
    for g in record.groups:
        if g.profile is None:
            continue
        for k in g.profile.attribution.kernels:
            yield (g.backend, g.model, g.commit, k.name, k.phase, k.launches_per_token,
                   k.us_per_token, k.share)


def _json(record: Record) -> Iterator[str]:
    """A JSON array, one measurement a line: its group's keys, then the measurement's own JSON
    as the record holds it (serialised by its model, not rebuilt as a dict first)."""
    first = True
    for g in record.groups:
        head = json.dumps({"backend": g.backend, "model": g.model, "requested_commit": g.commit},
                          separators=(",", ":"))
        for m in g.measurements:
            yield ("[\n" if first else ",\n") + head[:-1] + "," + dumped_json(m).decode()[1:]
            first = False
    yield "[]\n" if first else "\n]\n"


_ROWS_PER_PIECE = 1000


def _csv(columns: Sequence[str], rows: Iterable[Sequence[object]]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for k, row in enumerate(rows, 1):
        writer.writerow(["" if v is None else v for v in row])
        if k % _ROWS_PER_PIECE == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()
