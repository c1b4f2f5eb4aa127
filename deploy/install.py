"""`benchfleet deploy install` for one host, step by step, each step changing the host only
where it differs from what is wanted, so a second install changes nothing and says so.

The steps: probe the host (python3 >= 3.11, OS, service manager); create the venv; upload the
wheelhouse (only files whose sha256 differs) and install with `pip --no-index`; write keys,
known_hosts and the env file (secrets mode 600); write the service definition; start the
service, or restart it when anything it runs from changed.
"""

import hashlib
import json
import posixpath
from dataclasses import dataclass, field
from pathlib import Path
from shlex import quote
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit
from urllib.parse import quote as url_quote

from workers.shared.stores.manifest import REMOTE_SHA256, sha256_file

from deploy import wheelhouse
from deploy.envfile import render_env
from deploy.layout import Layout
from deploy.remote import Remote
from deploy.services import Service, choose
from jobs.errors import UserError

MIN_PYTHON = (3, 11)
# Facts deploy needs from the host, and the marker environment its wheels are chosen for.
_PROBE = """import json,os,platform,sys
print(json.dumps({"version":list(sys.version_info[:2]),"executable":sys.executable,
 "system":platform.system(),"machine":platform.machine(),"home":os.path.expanduser("~"),
 "uid":os.getuid(),"systemd":os.path.isdir("/run/systemd/system"),
 "markers":{"implementation_name":sys.implementation.name,
  "implementation_version":platform.python_version(),"os_name":os.name,
  "platform_machine":platform.machine(),"platform_release":platform.release(),
  "platform_system":platform.system(),"platform_version":platform.version(),
  "python_full_version":platform.python_version(),
  "platform_python_implementation":platform.python_implementation(),
  "python_version":".".join(platform.python_version_tuple()[:2]),
  "sys_platform":sys.platform}}))
"""


@dataclass(frozen=True)
class Plan:
    """What a host should end up with; from the command line."""

    backend: str
    name: str
    directory: str  # on the host; relative paths are under the login's home
    redis_url: str
    service: str = "auto"
    python: str = "python3"
    models_dir: str | None = None
    tags: tuple[str, ...] = ()
    verify_key: Path | None = None
    artifacts: str | None = None  # sftp://USER@HOST[:PORT]/PATH, or a path on the host
    artifacts_key: Path | None = None
    known_hosts: Path | None = None  # where the storage host's key line is read from
    host_identity: str | None = None
    allowed_repos: tuple[str, ...] = ()  # the targets the worker may build (none: nothing)
    redis_ca: Path | None = None  # the CA that signed a rediss:// server's certificate
    settings: tuple[tuple[str, str], ...] = ()  # further BENCHFLEET_* settings, (name, value)
    wheel_cache: Path = Path.home() / ".cache" / "benchfleet" / "wheelhouse"


@dataclass
class Report:
    host: str
    service: str = ""
    changes: list[str] = field(default_factory=list)

    def line(self) -> str:
        said = "; ".join(self.changes) if self.changes else "unchanged"
        return f"{self.host}: {said}" + (f" ({self.service})" if self.service else "")


def with_password(url: str, password: str | None) -> str:
    if not password:
        return url
    parts = urlsplit(url)
    netloc = f"{url_quote(parts.username or '', safe='')}:{url_quote(password, safe='')}@" \
             f"{parts.netloc.rpartition('@')[2]}"
    return urlunsplit(parts._replace(netloc=netloc))


def with_query(url: str, name: str, value: str) -> str:
    """`url` with its query's `name` set to `value` (the host's path to the Redis CA)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != name] + [(name, value)]
    return urlunsplit(parts._replace(query=urlencode(query, safe="/")))


def probe(remote: Remote, python: str) -> dict[str, object]:
    done = remote.run(f"{quote(python)} -c {quote(_PROBE)}")
    if done.code == 127 or (done.code != 0 and "not found" in done.err):
        raise UserError(f"{remote.address} has no {python}; install Python "
                        f"{MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer with venv there (Debian: "
                        "apt-get install python3 python3-venv) or pass --python PATH")
    if done.code != 0:
        raise UserError(f"{python} on {remote.address} failed: {done.err.strip()[-200:]}")
    facts: dict[str, object] = json.loads(done.out)
    found = tuple(facts["version"])  # type: ignore[arg-type]
    if found < MIN_PYTHON:
        raise UserError(f"{remote.address} has Python {found[0]}.{found[1]} at "
                        f"{facts['executable']}; benchfleet needs {MIN_PYTHON[0]}."
                        f"{MIN_PYTHON[1]} or newer (pass --python PATH to use another)")
    return facts


def layout_for(remote: Remote, plan: Plan) -> Layout:
    directory = plan.directory.removeprefix("~/")
    if not directory.startswith("/"):
        directory = posixpath.join(remote.home(), directory)
    return Layout(directory, plan.name, plan.backend)


def install(remote: Remote, plan: Plan) -> Report:
    report = Report(str(remote.address))
    facts = probe(remote, plan.python)
    layout = layout_for(remote, plan)
    service = choose(plan.service, layout, facts)
    report.service = f"{service.kind} {service.file}"
    remote.makedirs(layout.dir)
    if remote.mode(layout.python) is None:
        remote.check(f"{quote(plan.python)} -m venv {quote(layout.venv)}",
                     f"creating the venv (`{plan.python} -m venv`; Debian needs python3-venv)")
        report.changes.append("created the venv")
    installed = _install_wheels(remote, plan, layout, facts, report)
    configured = _write_config(remote, plan, layout, report)
    defined = remote.write(service.file, service.render().encode(), 0o644)
    if defined:
        report.changes.append(f"wrote {service.file}")
    described = {"name": plan.name, "backend": plan.backend, "service": service.kind}
    if remote.write(layout.described, (json.dumps(described) + "\n").encode(), 0o644):
        report.changes.append("wrote deploy.json")
    state = service.parse_status(*_status(remote, service))
    if not state.running:
        remote.check(service.start(), f"starting the {service.kind} service")
        report.changes.append("started")
    elif installed or configured or defined:
        remote.check(service.restart(), f"restarting the {service.kind} service")
        report.changes.append("restarted")
    return report


def _install_wheels(remote: Remote, plan: Plan, layout: Layout, facts: dict[str, object],
                    report: Report) -> bool:
    plan.wheel_cache.mkdir(parents=True, exist_ok=True)
    tags = _tags(remote, layout)
    markers: dict[str, str] = facts["markers"]  # type: ignore[assignment]
    own = wheelhouse.own_wheel(plan.wheel_cache)
    wheels = [own, *wheelhouse.download(wheelhouse.pins(markers), tags, plan.wheel_cache)]
    uploaded = _sync_wheels(remote, layout, wheels)
    if uploaded:
        report.changes.append(f"uploaded {uploaded} of {len(wheels)} wheels")
    digest = hashlib.sha256("".join(f"{w.name} {sha256_file(w)}\n" for w in wheels).encode())
    stamp = f"{digest.hexdigest()}\n".encode()
    if remote.read(layout.installed) == stamp:
        return False
    version = own.name.split("-")[1]
    pip = f"{quote(layout.python)} -m pip install --no-index --quiet --disable-pip-version-check"
    wheel = quote(posixpath.join(layout.wheels, own.name))
    remote.check(f"{pip} --find-links {quote(layout.wheels)} 'benchfleet[worker]=={version}' && "
                 f"{pip} --no-deps --force-reinstall {wheel}", "pip install --no-index")
    remote.write(layout.installed, stamp, 0o644)
    report.changes.append(f"installed benchfleet {version}")
    return True


def _tags(remote: Remote, layout: Layout) -> list[str]:
    out = remote.check(f"{quote(layout.python)} -m pip debug --verbose 2>/dev/null",
                       "reading the host's wheel tags (pip debug)")
    listed = out.split("Compatible tags:", 1)[-1].splitlines()[1:]
    return [line.strip() for line in listed if line.startswith("  ")]


def _sync_wheels(remote: Remote, layout: Layout, wheels: list[Path]) -> int:
    """Make the host's wheel directory hold exactly `wheels`; how many were sent."""
    remote.makedirs(layout.wheels)
    present = remote.sftp.listdir(layout.wheels)
    names = {w.name for w in wheels}
    hashes = json.loads(remote.check(
        f"printf '%s\\n' {' '.join(quote(posixpath.join(layout.wheels, n)) for n in present)} "
        f"| {quote(layout.python)} -c {quote(REMOTE_SHA256)}",
        "hashing the host's wheels")) if present else {}
    sent = 0
    for wheel in wheels:
        path = posixpath.join(layout.wheels, wheel.name)
        if hashes.get(path) != sha256_file(wheel):
            remote.put(wheel, path)
            sent += 1
    for name in set(present) - names:
        remote.sftp.remove(posixpath.join(layout.wheels, name))
    return sent


def _write_config(remote: Remote, plan: Plan, layout: Layout, report: Report) -> bool:
    env = {"BENCHFLEET_REDIS_URL": plan.redis_url,
           "BENCHFLEET_HOST": plan.host_identity or plan.name,
           "BENCHFLEET_WORKSPACE": layout.workspace,
           "BENCHFLEET_ARTIFACT_CACHE": layout.artifact_cache,
           "BENCHFLEET_TAGS": json.dumps(list(plan.tags)),
           "BENCHFLEET_ALLOWED_REPOS": json.dumps(list(plan.allowed_repos)),
           **{f"BENCHFLEET_{name.upper()}": value for name, value in plan.settings}}
    files: list[tuple[str, bytes, int]] = []
    if plan.redis_ca:
        ca = posixpath.join(layout.keys, "redis-ca.pem")
        files.append((ca, _read(plan.redis_ca, "--redis-ca"), 0o644))
        env["BENCHFLEET_REDIS_URL"] = with_query(plan.redis_url, "ssl_ca_certs", ca)
    if plan.models_dir:
        env["BENCHFLEET_MODELS_DIR"] = plan.models_dir
    if plan.verify_key:
        env["BENCHFLEET_VERIFY_KEY"] = posixpath.join(layout.keys, "verify.pem")
        files.append((env["BENCHFLEET_VERIFY_KEY"], _read(plan.verify_key, "--verify-key"),
                      0o644))
    if plan.artifacts:
        env["BENCHFLEET_ARTIFACTS"] = plan.artifacts
    if plan.artifacts and plan.artifacts.startswith("sftp:"):
        files += _store_files(plan, layout, env)
    changed = [path for path, data, mode in files if remote.write(path, data, mode)]
    if remote.write(layout.env_file, render_env(env).encode(), 0o600):
        changed.append(layout.env_file)
    for path in changed:
        report.changes.append(f"wrote {posixpath.relpath(path, layout.dir)}")
    return bool(changed)


def _store_files(plan: Plan, layout: Layout,
                 env: dict[str, str]) -> list[tuple[str, bytes, int]]:
    """The store's key (mode 600) and the known_hosts line that vouches for its host."""
    if plan.artifacts_key is None:
        raise UserError("an sftp:// store needs --artifacts-key, the private key the worker "
                        "logs in to the storage host with")
    parts = urlsplit(plan.artifacts or "")
    host = parts.hostname or ""
    name = host if (parts.port or 22) == 22 else f"[{host}]:{parts.port}"
    source = plan.known_hosts or Path.home() / ".ssh" / "known_hosts"
    lines = [line for line in (source.read_text().splitlines() if source.is_file() else [])
             if line.split(" ", 1)[0].split(",").count(name)]
    if not lines:
        raise UserError(f"the storage host {name} is not in {source}; ssh to it once (checking "
                        "its key) or pass --known-hosts FILE that names it")
    env["BENCHFLEET_SSH_KEY"] = posixpath.join(layout.keys, "store_key")
    env["BENCHFLEET_SSH_KNOWN_HOSTS"] = posixpath.join(layout.keys, "known_hosts")
    return [(env["BENCHFLEET_SSH_KEY"], _read(plan.artifacts_key, "--artifacts-key"), 0o600),
            (env["BENCHFLEET_SSH_KNOWN_HOSTS"], ("\n".join(lines) + "\n").encode(), 0o644)]


def _status(remote: Remote, service: Service) -> tuple[int, str]:
    done = remote.run(service.status())
    return done.code, done.out


def _read(path: Path, option: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise UserError(f"{option} {path}: {error.strerror}") from None


