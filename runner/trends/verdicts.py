"""What confirmation said of each candidate, kept in the artifact store beside the sweeps
(`history-verdicts/`): a step found "not confirmed" never alerts again for that data, and a
rebuilt index still knows."""

from pydantic import ValidationError

from jobs.trends.regressions import Verdict
from workers.shared.stores import ArtifactStore, get_json, put_json

VERDICTS = "history-verdicts/verdicts.json"


def verdicts(store: ArtifactStore) -> dict[str, Verdict]:
    raw = get_json(store, VERDICTS)
    if not isinstance(raw, dict):
        return {}
    kept = {}
    for name, value in raw.items():
        try:
            kept[name] = Verdict.model_validate(value)
        except ValidationError:
            continue  # a verdict this version cannot read is a candidate again, not a crash
    return kept


def remember(store: ArtifactStore, verdict: Verdict) -> None:
    known = verdicts(store)
    known[verdict.key] = verdict
    put_json(store, VERDICTS, {k: v.model_dump(mode="json") for k, v in known.items()})
