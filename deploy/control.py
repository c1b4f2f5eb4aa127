"""`benchfleet deploy status | restart | stop | logs | uninstall` for one host: each reads
what install left in `<dir>/deploy.json` and drives that host's service manager."""

import json
import posixpath
from shlex import quote

from deploy.install import probe
from deploy.layout import Layout
from deploy.remote import Remote
from deploy.services import Service, choose
from jobs.errors import UserError


def deployed(remote: Remote, directory: str, python: str) -> tuple[Layout, Service]:
    directory = directory.removeprefix("~/")
    if not directory.startswith("/"):
        directory = posixpath.join(remote.home(), directory)
    raw = remote.read(posixpath.join(directory, "deploy.json"))
    if raw is None:
        raise UserError(f"no benchfleet worker is deployed in {directory} on {remote.address}; "
                        "run `benchfleet deploy install` first (or pass its --dir)")
    found = json.loads(raw)
    layout = Layout(directory, found["name"], found["backend"])
    return layout, choose(found["service"], layout, probe(remote, python))


def status(remote: Remote, directory: str, python: str) -> str:
    layout, service = deployed(remote, directory, python)
    done = remote.run(service.status())
    state = service.parse_status(done.code, done.out)
    said = f"running (worker pid {state.pid})" if state.running else "stopped"
    return f"{remote.address}: {layout.name} ({layout.backend}) {said} [{service.kind}]"


def restart(remote: Remote, directory: str, python: str) -> str:
    layout, service = deployed(remote, directory, python)
    remote.check(service.restart(), f"restarting {layout.name}")
    return status(remote, directory, python)


def stop(remote: Remote, directory: str, python: str) -> str:
    layout, service = deployed(remote, directory, python)
    remote.check(service.stop(), f"stopping {layout.name}")
    return status(remote, directory, python)


def logs(remote: Remote, directory: str, python: str, lines: int) -> str:
    layout, _ = deployed(remote, directory, python)
    return remote.check(f"tail -n {int(lines)} {quote(layout.log)}", "reading the log")


def uninstall(remote: Remote, directory: str, python: str) -> str:
    """Stop the service, remove its definition and everything under the directory."""
    layout, service = deployed(remote, directory, python)
    remote.run(service.uninstall())
    remote.check(f"rm -rf {quote(layout.dir)}", f"removing {layout.dir}")
    return f"{remote.address}: {layout.name} uninstalled ({service.kind}, {layout.dir} removed)"
