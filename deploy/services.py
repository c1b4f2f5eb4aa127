"""The three ways a worker runs as a service: a systemd unit (Linux with systemd), a launchd
agent (macOS), and the pidfile supervisor (everything else, and network-namespace test hosts).

Each renders its definition file and names the shell commands that start, stop, restart and
inspect it; deploy runs them over SSH. Every one appends the worker's output to the layout's
log, so `deploy logs` reads the same file whatever the manager.
"""

import json
import plistlib
import posixpath
import re
from dataclasses import dataclass
from importlib import resources
from shlex import quote
from string import Template

from deploy.layout import Layout

LAUNCHD_PREFIX = "org.benchfleet.worker."


@dataclass(frozen=True)
class State:
    running: bool
    pid: int | None


class Systemd:
    """A system unit when deploy logs in as root, else a user unit (`loginctl enable-linger`
    keeps it running after logout; docs/deploy.md)."""

    kind = "systemd"

    def __init__(self, layout: Layout, home: str, root: bool) -> None:
        self.layout = layout
        self.unit = f"benchfleet-worker-{layout.name}.service"
        self.systemctl = "systemctl" if root else "systemctl --user"
        folder = "/etc/systemd/system" if root else posixpath.join(home, ".config/systemd/user")
        self.file = posixpath.join(folder, self.unit)
        self.wanted_by = "multi-user.target" if root else "default.target"

    def render(self) -> str:
        template = resources.files("deploy").joinpath("templates/benchfleet-worker.service")
        layout = self.layout
        return Template(template.read_text()).substitute(
            name=layout.name, backend=layout.backend, env_file=layout.env_file, dir=layout.dir,
            exec_start=" ".join(_systemd_quote(a) for a in layout.worker_command),
            log=layout.log, wanted_by=self.wanted_by)

    def start(self) -> str:
        return f"{self.systemctl} daemon-reload && {self.systemctl} enable --now {self.unit}"

    def restart(self) -> str:
        return f"{self.systemctl} daemon-reload && {self.systemctl} restart {self.unit}"

    def stop(self) -> str:
        return f"{self.systemctl} stop {self.unit}"

    def status(self) -> str:
        return f"{self.systemctl} show {self.unit} -p ActiveState -p MainPID"

    def parse_status(self, code: int, out: str) -> State:
        fields = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        pid = int(fields.get("MainPID", "0") or 0)
        return State(fields.get("ActiveState") == "active", pid or None)

    def uninstall(self) -> str:
        return (f"{self.systemctl} disable --now {self.unit}; rm -f {quote(self.file)} && "
                f"{self.systemctl} daemon-reload")


class Launchd:
    """A LaunchAgent: it runs in the user's session, where Metal can reach the GPU."""

    kind = "launchd"

    def __init__(self, layout: Layout, home: str, uid: int) -> None:
        self.layout = layout
        self.label = f"{LAUNCHD_PREFIX}{layout.name}"
        self.domain = f"gui/{uid}"
        self.file = posixpath.join(home, "Library/LaunchAgents", f"{self.label}.plist")

    def render(self) -> str:
        layout = self.layout
        plist = {"Label": self.label,
                 # The wrapper loads the env file and execs the worker, so secrets stay in the
                 # mode-600 env file rather than in the plist.
                 "ProgramArguments": [layout.python, "-m", "deploy.supervise", "exec",
                                      layout.supervise_config],
                 "WorkingDirectory": layout.dir, "RunAtLoad": True, "KeepAlive": True,
                 "ThrottleInterval": 5, "ExitTimeOut": 30, "ProcessType": "Interactive",
                 "StandardOutPath": layout.log, "StandardErrorPath": layout.log}
        return plistlib.dumps(plist).decode()

    def start(self) -> str:
        return (f"launchctl bootstrap {self.domain} {quote(self.file)} 2>/dev/null; "
                f"launchctl kickstart {self.domain}/{self.label}")

    def restart(self) -> str:
        return (f"launchctl bootout {self.domain}/{self.label} 2>/dev/null; "
                f"launchctl bootstrap {self.domain} {quote(self.file)}")

    def stop(self) -> str:
        return f"launchctl bootout {self.domain}/{self.label}"

    def status(self) -> str:
        return f"launchctl print {self.domain}/{self.label}"

    def parse_status(self, code: int, out: str) -> State:
        if code != 0:
            return State(False, None)
        pid = re.search(r"^\s*pid = (\d+)", out, re.M)
        return State(bool(re.search(r"^\s*state = running", out, re.M)),
                     int(pid.group(1)) if pid else None)

    def uninstall(self) -> str:
        return f"{self.stop()} 2>/dev/null; rm -f {quote(self.file)}"


class Supervisor:
    """deploy/supervise.py, started detached; its config is the definition file."""

    kind = "supervisor"

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.file = layout.supervise_config

    def render(self) -> str:
        layout = self.layout
        return json.dumps({"command": layout.worker_command, "env_file": layout.env_file,
                           "pidfile": layout.pidfile, "worker_pidfile": layout.worker_pidfile,
                           "log": layout.log, "workdir": layout.dir}, indent=1) + "\n"

    def _verb(self, verb: str) -> str:
        return f"{quote(self.layout.python)} -m deploy.supervise {verb} {quote(self.file)}"

    def start(self) -> str:
        return self._verb("start")

    def restart(self) -> str:
        return f"{self._verb('stop')} && {self._verb('start')}"

    def stop(self) -> str:
        return self._verb("stop")

    def status(self) -> str:
        return self._verb("status")

    def parse_status(self, code: int, out: str) -> State:
        if code != 0:
            return State(False, None)
        found = json.loads(out)
        return State(bool(found["running"] and found["worker_pid"]), found["worker_pid"])

    def uninstall(self) -> str:
        return f"{self.stop()}; rm -f {quote(self.file)}"


Service = Systemd | Launchd | Supervisor


def choose(kind: str, layout: Layout, facts: dict[str, object]) -> Service:
    """The manager `kind` names, or for "auto" the one the host has."""
    home, uid = str(facts["home"]), int(str(facts["uid"]))
    if kind == "auto":
        kind = ("launchd" if facts["system"] == "Darwin"
                else "systemd" if facts["systemd"] else "supervisor")
    if kind == "systemd":
        return Systemd(layout, home, root=uid == 0)
    if kind == "launchd":
        return Launchd(layout, home, uid)
    return Supervisor(layout)


def _systemd_quote(arg: str) -> str:
    return f'"{arg}"' if re.search(r'[\s"\\]', arg) else arg
