"""Where this machine's fleet keeps its state (BENCHFLEET_FLEET_DIR), and what it runs there.

Everything lives under one directory, so `fleet up` after `fleet down` finds the same Redis
(its AOF), keys, artifacts and password, and the user sources one env file to submit.
"""

import json
import re
from pathlib import Path

from jobs.errors import UserError
from jobs.strict import Strict
from workers.shared.private_files import write_private

# Worker names and backends end up in file names, queue names and the fleet's lease keys.
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
REDIS = "redis"


class Worker(Strict):
    name: str
    backend: str


class Plan(Strict):
    """What `fleet up` was asked for; kept (mode 600: it holds the password) for the next.
    Port 0 and no password: not chosen yet (the first `fleet up` picks them)."""
    port: int = 0
    password: str = ""
    workers: list[Worker]
    allowed_repos: list[str]
    models_dir: Path
    demo_target: bool

    def same_fleet(self, other: "Plan") -> bool:
        return self.model_dump(exclude={"password"}) == other.model_dump(exclude={"password"})


def parse_worker(text: str) -> Worker:
    name, sep, backend = text.partition(":")
    if not sep or not _WORD.fullmatch(name) or not _WORD.fullmatch(backend):
        raise UserError(f"--worker {text!r}: write it as NAME:BACKEND, each letters, digits, "
                        ". _ or - (e.g. --worker gpu-1:cuda)")
    return Worker(name=name, backend=backend)


class Home:
    def __init__(self, root: Path) -> None:
        self.root = root.expanduser().absolute()

    @property
    def plan_file(self) -> Path:
        return self.root / "fleet.json"

    @property
    def env_file(self) -> Path:
        """The coordinator's settings, for `. ENV` in the user's shell (mode 600)."""
        return self.root / "env"

    @property
    def redis_dir(self) -> Path:
        return self.root / "redis"

    @property
    def keys(self) -> Path:
        return self.root / "keys"

    @property
    def demo(self) -> Path:
        return self.root / "demo"

    def supervised(self, name: str) -> Path:
        """The supervisor config of one process (`redis` or a worker's name)."""
        return self.root / "run" / f"{name}.json"

    def log(self, name: str) -> Path:
        return self.root / "logs" / f"{name}.log"

    def read_plan(self) -> Plan | None:
        if not self.plan_file.exists():
            return None
        try:
            return Plan.model_validate(json.loads(self.plan_file.read_text()))
        except ValueError:
            raise UserError(f"{self.plan_file} is not a fleet description; move it aside (or "
                            "the whole directory) and run `benchfleet fleet up` again") from None

    def write_plan(self, plan: Plan) -> None:
        write_private(self.plan_file, plan.model_dump_json(indent=1).encode())
