"""`check --artifacts`, third part: parse every attempt's raw output again, as its worker did.

A store whose `result.json`, `parsed.json` and manifest were rewritten together verifies and
rebuilds cleanly; its `*.stdout.txt` / `*.stderr.txt` (and the files the parser read under
`out/`) still say what the command printed, so the reading is made again from them with the
recipe's parser and compared (jobs/record/validity.py).
"""

from collections.abc import Mapping
from pathlib import Path

from jobs.parsers import PARSERS, PROFILE_PARSERS
from jobs.parsers.readings import ProfileInput, RunOutput
from jobs.record.attempts import AttemptResult, Run
from jobs.record.model import Record
from jobs.record.validity import Reading, reparsed_problems
from workers.shared.parser_files import LIMIT_BYTES, SUFFIXES, read_bounded
from workers.shared.stores import ArtifactStore, CorruptArtifact

_OUT = "out/"


def raw_problems(store: ArtifactStore, record: Record,
                 results: Mapping[str, AttemptResult]) -> list[str]:
    """Each attempt the record used, parsed again from its raw output; one sentence a problem."""
    measured = {m.cell_id: m for g in record.groups for m in g.measurements}
    problems = []
    for cell_id, result in sorted(results.items()):
        if result.reading is None and result.profile is None:
            continue  # a failed cell: its reason is compared by the rebuild
        where = f"{cell_id} attempt {result.attempt}"
        try:
            files = store.read(record.sweep_id, cell_id, result.attempt)
        except CorruptArtifact:
            continue  # already reported where the record read it
        again = _parse_again(files, result)
        if isinstance(again, str):
            problems.append(f"{where}: {again}")
            continue
        parsed = files.get("parsed.json")
        problems += reparsed_problems(where, result.parser or "", again,
                                      parsed.read_text() if parsed else None,
                                      result.reading or result.profile, measured.get(cell_id))
    return problems


def _parse_again(files: Mapping[str, Path], result: AttemptResult) -> Reading | str:
    """The reading from the raw output, or why it cannot be made."""
    if result.profile is not None:
        return _profile_again(files, result)
    bench = PARSERS.get(result.parser or "")
    run = result.measured
    if bench is None or run is None:
        return _unknown(result.parser) if run else "it has a reading but no measured run"
    output = _output(files, run)
    if isinstance(output, str):
        return output
    missing = [f for f in run.files if _OUT + f not in files]
    if missing:
        return f"the files its parser read are not in the store: {', '.join(missing)}"
    return bench(output.model_copy(update={"files": {
        f: files[_OUT + f].read_text(errors="replace") for f in run.files}}))


def _profile_again(files: Mapping[str, Path], result: AttemptResult) -> Reading | str:
    """Every step's output by its name (`profile-<step>.stdout.txt`), and, as the worker gave
    them, every text file under out/."""
    parse = PROFILE_PARSERS.get(result.parser or "")
    if parse is None:
        return _unknown(result.parser)
    steps = {}
    for step in (r for r in result.runs if r.role == "profile" and not r.superseded):
        name = Path(step.stdout).name.removesuffix(".stdout.txt").removeprefix("profile-")
        output = _output(files, step)
        if isinstance(output, str):
            return output
        steps[name] = output
    texts = {k.removeprefix(_OUT): p.read_text(errors="replace")
             for k, p in sorted(files.items()) if k.startswith(_OUT) and _readable(p)}
    return parse(ProfileInput(steps=steps, files=texts))


def _output(files: Mapping[str, Path], run: Run) -> RunOutput | str:
    streams = [files.get(name) for name in (run.stdout, run.stderr)]
    if None in streams:
        return (f"its raw output ({run.stdout}, {run.stderr}) is not in the store, so its "
                "reading cannot be made again")
    out, err = (read_bounded(p) for p in streams if p is not None)
    return RunOutput(stdout=out, stderr=err, exit_code=run.exit_code, timed_out=run.timed_out)


def _readable(path: Path) -> bool:
    """Whether the worker's rule (workers/shared/parser_files.py) hands this file to a parser."""
    return path.suffix in SUFFIXES and path.stat().st_size < LIMIT_BYTES


def _unknown(parser: str | None) -> str:
    if not parser:
        return ("the attempt names no parser, so its raw output cannot be parsed again (made "
                "by an older worker? run the cell again)")
    return f"its parser {parser!r} is not one this benchfleet has"
