"""Submit a sweep: validate it, resolve its commits, sign one envelope per cell, store it
(beside the artifacts first, then in Redis), and queue one message per group in one pipeline.
Each step leaves what `benchfleet submit --resume` finishes (runner/resume.py)."""

import re
import secrets
import subprocess
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from jobs.errors import SpecError, UserError
from jobs.spec.cells import Cell, dumped_cell, expand
from jobs.spec.envelope import encode, spec_hash
from jobs.spec.recipes import Catalogue
from jobs.spec.specfile import load, located
from jobs.spec.sweep import Sweep, catalogue_problems
from runner.served import unserved
from runner.status import summary
from runner.sweep_file import SWEEP_FILE_PROTOCOL, SweepFile, write_sweep_file
from workers.shared.catalogue import load_catalogue
from workers.shared.clock import now
from workers.shared.leases import live_offers
from workers.shared.messages import GroupMessage, Signed
from workers.shared.queues import cell_queue
from workers.shared.settings import Settings
from workers.shared.signing import Signer, signer
from workers.shared.state import Store
from workers.shared.stores import open_store

_REMOTE = re.compile(r"^([a-z+]+://|[^/]+@[^/:]+:)")
_SHA = re.compile(r"^[0-9a-f]{40}$")


def read_sweep(path: Path, settings: Settings, catalogue: Catalogue | None = None) -> Sweep:
    """The sweep in `path`, checked against the coordinator's catalogue (given, or read)."""
    try:
        text = path.read_text()
    except OSError as error:
        raise UserError(f"cannot read sweep file {path} ({error.strerror})") from None
    except UnicodeDecodeError:
        raise UserError(f"sweep file {path} is not UTF-8 text") from None
    sweep, root = load(Sweep, text, str(path))
    problems = catalogue_problems(sweep, catalogue or load_catalogue(settings.catalogue))
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


# Told why no live worker could take some cells, before anything is saved: it refuses (raises)
# or warns.
Unserved = Callable[[list[str]], None]


def submit(path: Path, settings: Settings, again: bool = False,
           on_unserved: Unserved | None = None,
           started: Callable[[str, int], None] | None = None) -> tuple[str, list[Cell]]:
    # Parsed once, for the sweep's check and for what the live workers serve: 0.2-0.4 s a parse.
    catalogue = load_catalogue(settings.catalogue)
    return submit_sweep(read_sweep(path, settings, catalogue), str(path.resolve()), settings,
                        again, on_unserved, catalogue, started)


def submit_sweep(sweep: Sweep, source: str, settings: Settings, again: bool = False,
                 on_unserved: Unserved | None = None, catalogue: Catalogue | None = None,
                 started: Callable[[str, int], None] | None = None) -> tuple[str, list[Cell]]:
    """Submit a sweep already read and checked (`read_sweep`), or one made from such a sweep
    (bisect's rounds); `source` says where it came from. A sweep whose spec (commits pinned)
    is already in Redis is refused unless `again`: measuring twice is asked for, never silent.
    With `on_unserved`, the live workers are read once and it hears what none of them serves;
    `started` hears the sweep's id and cell count before anything is stored."""
    key = signer(settings.signing_key)
    resolved = resolve_commits(sweep.target.repo, sweep.target.commits)
    pinned = sweep.model_copy(update={"target": sweep.target.model_copy(
        update={"commits": [resolved[c] for c in sweep.target.commits]})})
    spec = spec_hash(pinned)
    store = Store.connect(settings.redis_url, writing=True)
    if not again:
        refuse_same(store, spec, source)  # early, before the work of signing
    cells = expand(pinned)
    if on_unserved is not None:
        reasons = unserved(cells, live_offers(store.r),
                           catalogue or load_catalogue(settings.catalogue))
        if reasons:
            on_unserved(reasons)
    dumped = [dumped_cell(c) for c in cells]  # once, for all three below
    sweep_id = f"{sweep.name}-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
    if started:
        started(sweep_id, len(cells))
    signed = sign_all(key, sweep_id, 0, spec, cells, dumped=dumped)
    # The store first: one that cannot take sweep.json (full, read-only) leaves nothing in
    # Redis, and a sweep in Redis always has its sweep.json to be restored from.
    store_sweep_file(settings, SweepFile(
        protocol=SWEEP_FILE_PROTOCOL, sweep_id=sweep_id, created=now(), source=source,
        sweep=pinned, cells=cells, resolved=resolved,
        spec_hash=spec, envelopes={c: [s.envelope, s.signature] for c, s in signed.items()}),
        dumped)
    messages = group_messages(sweep_id, cells, signed)
    same = store.save_sweep(sweep_id, pinned, cells, source, spec, signed, resolved=resolved,
                            unpublished=[m.group for m in messages], unique=not again,
                            dumped=dumped)
    if same is not None:  # an identical submit was saved since the early check
        raise UserError(_same_sentence(store, same, source))
    store.queue_once(sweep_id, messages)
    return sweep_id, cells


def store_sweep_file(settings: Settings, content: SweepFile,
                     dumped: list[dict[str, object]] | None = None) -> None:
    """sweep.json into the artifact store, or one sentence saying why it cannot go there;
    `dumped`: its cells already as JSON data."""
    try:
        write_sweep_file(open_store(settings.artifacts, settings), content, dumped)
    except OSError as error:
        raise UserError(f"cannot write {content.sweep_id}/sweep.json to the artifact store "
                        f"{settings.artifacts} ({error.strerror or error}); free space there "
                        "or set BENCHFLEET_ARTIFACTS to a writable store, then submit again "
                        "(nothing was saved or queued)") from None


def refuse_same(store: Store, spec: str, source: str) -> None:
    """A sentence naming the sweep already in Redis with this spec, finished or not."""
    same = store.same_spec(spec)
    if same is not None:
        raise UserError(_same_sentence(store, same, source))


def _same_sentence(store: Store, same: str, source: str) -> str:
    status = summary(store.states(same)) or "no cells"
    return (f"sweep {same} ({status}) has the same spec and commits and is still in Redis; "
            f"`benchfleet status {same}` shows it, and `benchfleet submit --again {source}` "
            "measures it again")


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
                         [c.id for c in members], [signed[c.id] for c in members], group=g)
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
