"""Submit a sweep: validate it, resolve its commits, sign one envelope per cell, store it (in
Redis and beside the artifacts), and queue one message per group in one pipeline."""

import re
import secrets
import subprocess
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

from jobs.errors import SpecError, UserError
from jobs.spec.cells import Cell, expand
from jobs.spec.envelope import encode, spec_hash
from jobs.spec.specfile import load, located
from jobs.spec.sweep import Sweep, catalogue_problems
from runner.records import SWEEP_FILE_PROTOCOL, SweepFile, write_sweep_file
from runner.status import summary
from workers.shared.catalogue import load_catalogue
from workers.shared.clock import now
from workers.shared.messages import GroupMessage, Signed, publish
from workers.shared.queues import cell_queue
from workers.shared.settings import Settings
from workers.shared.signing import Signer, signer
from workers.shared.state import Store
from workers.shared.stores import open_store

_REMOTE = re.compile(r"^([a-z+]+://|[^/]+@[^/:]+:)")
_SHA = re.compile(r"^[0-9a-f]{40}$")


def read_sweep(path: Path, settings: Settings) -> Sweep:
    """The sweep in `path`, checked against the coordinator's catalogue."""
    try:
        text = path.read_text()
    except OSError as error:
        raise UserError(f"cannot read sweep file {path} ({error.strerror})") from None
    except UnicodeDecodeError:
        raise UserError(f"sweep file {path} is not UTF-8 text") from None
    sweep, root = load(Sweep, text, str(path))
    problems = catalogue_problems(sweep, load_catalogue(settings.catalogue))
    repo = sweep.target.repo
    if not _REMOTE.match(repo):
        local = (path.parent / repo).resolve()
        if not local.is_dir():
            problems.append((("target", "repo"), f"{repo} is neither a URL nor a directory "
                             f"(looked for {local})"))
        repo = str(local)
    if problems:
        raise SpecError(located(str(path), root, problems))
    return sweep.model_copy(update={"target": sweep.target.model_copy(update={"repo": repo})})


def resolve_commits(repo: str, names: list[str]) -> dict[str, str]:
    """Each commit name resolved to its 40-hex sha once, here: a branch that moves mid-sweep
    cannot make one sweep measure two commits."""
    resolved = {}
    for name in names:
        sha = name if _SHA.match(name) else _resolve(repo, name)
        if sha is None:
            raise UserError(f"commit {name!r} is not in {repo}; name a branch, a tag or a sha "
                            "that exists there")
        resolved[name] = sha
    return resolved


def submit(path: Path, settings: Settings, again: bool = False) -> tuple[str, list[Cell]]:
    return submit_sweep(read_sweep(path, settings), str(path.resolve()), settings, again)


def submit_sweep(sweep: Sweep, source: str, settings: Settings, again: bool = False
                 ) -> tuple[str, list[Cell]]:
    """Submit a sweep already read and checked (`read_sweep`), or one made from such a sweep
    (bisect's rounds); `source` says where it came from. A sweep whose spec (commits pinned)
    is already in Redis is refused unless `again`: measuring twice is asked for, never silent."""
    key = signer(settings.signing_key)
    resolved = resolve_commits(sweep.target.repo, sweep.target.commits)
    pinned = sweep.model_copy(update={"target": sweep.target.model_copy(
        update={"commits": [resolved[c] for c in sweep.target.commits]})})
    spec = spec_hash(pinned)
    store = Store.connect(settings.redis_url, writing=True)
    if not again:
        refuse_same(store, spec, source)
    cells = expand(pinned)
    dumped = [c.model_dump(mode="json") for c in cells]  # once, for all three below
    sweep_id = f"{sweep.name}-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
    signed = sign_all(key, sweep_id, 0, spec, cells, dumped=dumped)
    store.save_sweep(sweep_id, pinned, cells, source, spec, signed, resolved=resolved,
                     dumped=dumped)
    write_sweep_file(open_store(settings.artifacts, settings), SweepFile(
        protocol=SWEEP_FILE_PROTOCOL, sweep_id=sweep_id, created=now(), source=source,
        sweep=pinned, cells=cells, resolved=resolved,
        spec_hash=spec, envelopes={c: [s.envelope, s.signature] for c, s in signed.items()}),
        dumped)
    publish(store.r, group_messages(sweep_id, cells, signed))
    return sweep_id, cells


def refuse_same(store: Store, spec: str, source: str) -> None:
    """A sentence naming the sweep already in Redis with this spec, finished or not."""
    same = store.same_spec(spec)
    if same is None:
        return
    status = summary(store.states(same)) or "no cells"
    raise UserError(f"sweep {same} ({status}) has the same spec and commits and is still in "
                    f"Redis; `benchfleet status {same}` shows it, and `benchfleet submit "
                    f"--again {source}` measures it again")


def sign_all(key: Signer, sweep_id: str, generation: int, spec: str, cells: list[Cell],
             rebuild: bool = False, dumped: list[dict[str, object]] | None = None
             ) -> dict[str, Signed]:
    """Each cell's envelope, signed; `dumped`: the cells already as JSON data, in order."""
    signed = {}
    for i, cell in enumerate(cells):
        data = encode(sweep_id, generation, spec, cell, rebuild, dumped[i] if dumped else None)
        signed[cell.id] = Signed(data.decode(), key.sign(data))
    return signed


def group_messages(sweep_id: str, cells: list[Cell], signed: dict[str, Signed],
                   queue_of: dict[str, str] | None = None) -> list[GroupMessage]:
    """One message per group, its cells in run order, on its route's queue (or the queue
    `queue_of` names for the group, e.g. the host that ran it before)."""
    groups: dict[str, list[Cell]] = defaultdict(list)
    for cell in sorted(cells, key=lambda c: c.order):
        groups[cell.group].append(cell)
    return [GroupMessage(sweep_id, (queue_of or {}).get(g) or cell_queue(members[0]),
                         [c.id for c in members], [signed[c.id] for c in members])
            for g, members in groups.items()]


def _resolve(repo: str, name: str) -> str | None:
    if _REMOTE.match(repo):
        done = _git(["git", "ls-remote", "--", repo, name, f"{name}^{{}}"])
        lines = [line.split("\t") for line in done.splitlines() if "\t" in line]
        peeled = [sha for sha, ref in lines if ref.endswith("^{}")]
        return (peeled or [sha for sha, _ in lines] or [None])[0]
    return _git(["git", "-C", repo, "rev-parse", "--verify", "--quiet",
                 f"{name}^{{commit}}"]).strip() or None


def _git(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise UserError(f"cannot run `{' '.join(argv[:3])}`: {error}") from None
    return done.stdout if done.returncode == 0 else ""
