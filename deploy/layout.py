"""Where a deployed worker's files live on its host, all under one directory (`--dir`)."""

import posixpath
from dataclasses import dataclass


@dataclass(frozen=True)
class Layout:
    dir: str  # absolute, on the host
    name: str  # the worker's name, unique in the fleet
    backend: str

    def _at(self, *parts: str) -> str:
        return posixpath.join(self.dir, *parts)

    @property
    def described(self) -> str:
        """What deploy installed here (name, backend, service manager), for the other verbs."""
        return self._at("deploy.json")

    @property
    def venv(self) -> str:
        return self._at("venv")

    @property
    def python(self) -> str:
        return self._at("venv", "bin", "python")

    @property
    def benchfleet(self) -> str:
        return self._at("venv", "bin", "benchfleet")

    @property
    def wheels(self) -> str:
        return self._at("wheels")

    @property
    def installed(self) -> str:
        """The digest of the wheel set last installed into the venv."""
        return self._at("installed.sha256")

    @property
    def env_file(self) -> str:
        return self._at("worker.env")

    @property
    def keys(self) -> str:
        return self._at("keys")

    @property
    def workspace(self) -> str:
        return self._at("workspace")

    @property
    def artifact_cache(self) -> str:
        return self._at("artifact-cache")

    @property
    def log(self) -> str:
        return self._at("log", "worker.log")

    @property
    def supervise_config(self) -> str:
        return self._at("supervise.json")

    @property
    def pidfile(self) -> str:
        return self._at("run", "supervisor.pid")

    @property
    def worker_pidfile(self) -> str:
        return self._at("run", "worker.pid")

    @property
    def worker_command(self) -> list[str]:
        return [self.benchfleet, "worker", "--backend", self.backend, "--name", self.name]
