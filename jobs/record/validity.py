"""Rules a measurement must meet before its figures mean anything, as MLPerf's submission
checker has them: every measured run generated exactly the tokens its cell asked for, the arms
of a group ran one prompt length, and an attempt's raw output, parsed again, gives what its
`parsed.json` and `result.json` say. `benchfleet check` applies the first two to a record,
`check --artifacts` the third to its store.
"""

from collections import Counter
from collections.abc import Mapping

from jobs.parsers.readings import BenchReading, Failure, ProfileReading
from jobs.record.model import Record
from jobs.record.parts import Group, Measurement
from jobs.spec.recipes import Recipe
from jobs.strict import Scalar

# A bench recipe's parameters that ask for a token count, and the reading's count for each:
# the shipped recipes name them so (`--prompt-tokens {prompt_tokens}`, `-n {max_tokens}`).
ASKED = {"prompt_tokens": "prompt_tokens", "max_tokens": "generated_tokens"}
# What a measurement and the reading it came from both carry.
_SHARED = ("decode_tps", "prefill_tps", "decode_ms", "prefill_ms", "prompt_tokens",
           "generated_tokens", "peak_gb", "notes")
Reading = BenchReading | ProfileReading | Failure


def asked_tokens(recipe: Recipe, given: Mapping[str, Scalar]) -> dict[str, int]:
    """The token counts a cell asks its recipe for: its own values, else the defaults."""
    values = {n: p.default for n, p in recipe.params.items()} | dict(given)
    return {name: value for name in ASKED if isinstance(value := values.get(name), int)
            and not isinstance(value, bool)}


def record_problems(r: Record) -> list[str]:
    """The record's measurements against the validity rules, one sentence each."""
    problems = []
    for g in r.groups:
        problems += [p for m in g.measurements if (p := _generated(g, m))]
        problems += _prompt_lengths(g)
    return problems


def _where(g: Group, m: Measurement) -> str:
    return f"{m.cell_id} ({g.backend} · {g.model} / {m.arm} r{m.repeat})"


def _generated(g: Group, m: Measurement) -> str | None:
    if m.asked_tokens is None or m.generated_tokens == m.asked_tokens:
        return None
    return (f"{_where(g, m)}: asked for {m.asked_tokens} generated tokens but generated "
            f"{m.generated_tokens}, so its decode rate is not over the asked shape")


def _prompt_lengths(g: Group) -> list[str]:
    """Arms compared in a group must have run one prompt length: the baseline's, else the
    length most of the group ran."""
    lengths = Counter(m.prompt_tokens for m in g.measurements)
    if len(lengths) < 2:
        return []
    base = Counter(m.prompt_tokens for m in g.measurements
                   if any(row.baseline and row.arm == m.arm for row in g.rows))
    ref = (base or lengths).most_common(1)[0][0]
    return [f"{_where(g, m)}: ran a {m.prompt_tokens}-token prompt where the group's "
            f"{'baseline' if base else 'other runs'} ran {ref}; arms compared must run the "
            "same prompt length" for m in g.measurements if m.prompt_tokens != ref]


def reparsed_problems(where: str, parser: str, again: Reading, parsed_json: str | None,
                      stated: BenchReading | ProfileReading | None,
                      measured: Measurement | None) -> list[str]:
    """The raw output parsed again against `parsed.json`, `result.json` and the record."""
    fresh = again.model_dump(mode="json")
    said = f"{where}: its raw output, parsed again with {parser},"
    if isinstance(again, Failure):
        return [f"{said} gives no reading ({again.reason}), though the attempt has one"]
    problems = []
    try:
        # Read through the reading's own model, as result.json is: a field added since the
        # attempt was stored takes its default on both sides instead of reading as a change.
        saved = (type(again).model_validate_json(parsed_json).model_dump(mode="json")
                 if parsed_json is not None else None)
    except ValueError:
        saved = None
    for name, other in (("parsed.json", saved),
                        ("result.json", stated.model_dump(mode="json") if stated else None)):
        if other is None:
            problems.append(f"{said} cannot be compared: the attempt has no readable {name}")
        elif (diff := _fields(fresh, other)):
            problems.append(f"{said} differs from its {name}: {diff}")
    if measured is not None:
        mine = {k: getattr(measured, k) for k in _SHARED}
        if (diff := _fields({k: fresh.get(k) for k in _SHARED}, mine)):
            problems.append(f"{said} differs from the record's measurement: {diff}")
    return problems


def _fields(fresh: Mapping[str, object], other: Mapping[str, object]) -> str:
    """The fields that differ, as `name: raw X, stated Y`, at most three."""
    names = [k for k in sorted(fresh.keys() | other.keys()) if fresh.get(k) != other.get(k)]
    text = "; ".join(f"{k}: raw {_short(fresh.get(k))}, stated {_short(other.get(k))}"
                     for k in names[:3])
    return text + (f" (and {len(names) - 3} more)" if len(names) > 3 else "")


def _short(value: object, limit: int = 160) -> str:
    """A value as a sentence can carry it: a kernel table is cut, never printed whole."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"
