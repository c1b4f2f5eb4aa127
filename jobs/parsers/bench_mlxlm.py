"""`scripts/bench_mlxlm.py` output: one `RESULT {json}` line on stdout per model."""

import json

from jobs.parsers.exits import failed_exit, plain
from jobs.readings import BenchReading, Failure, Parsed, RunOutput

_KEYS = ("prompt_tokens", "prefill_tps", "gen_tokens", "decode_tps")
_PREFIX = "RESULT "


def parse(run: RunOutput) -> Parsed:
    # Its failures say `ERROR <stage>` on stderr and exit 2-6.
    failure = failed_exit(run, error_prefix="ERROR")
    if failure:
        return failure
    results = [line.strip()[len(_PREFIX):] for line in plain(run.stdout).splitlines()
               if line.strip().startswith(_PREFIX)]
    if len(results) != 1:
        return Failure(kind="unparseable", reason=f"{len(results)} 'RESULT' lines on stdout "
                       "(expected exactly one: run one model per cell)")
    try:
        data = json.loads(results[0])
    except json.JSONDecodeError as error:
        return Failure(kind="unparseable", reason=f"RESULT line is not JSON: {error.msg} "
                       f"at column {error.colno}")
    if not isinstance(data, dict):
        return Failure(kind="unparseable", reason="RESULT line is not a JSON object")
    missing = [key for key in _KEYS if not isinstance(data.get(key), int | float)
               or isinstance(data.get(key), bool)]
    if missing:
        return Failure(kind="unparseable", reason=f"RESULT lacks numeric {', '.join(missing)}")
    return BenchReading(
        prompt_tokens=int(data["prompt_tokens"]), generated_tokens=int(data["gen_tokens"]),
        prefill_tps=float(data["prefill_tps"]), decode_tps=float(data["decode_tps"]),
        finish_reason=str(data["finish_reason"]) if "finish_reason" in data else None,
    )
