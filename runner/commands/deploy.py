"""benchfleet deploy install|status|restart|stop|logs|uninstall HOST...: workers on lab hosts,
over SSH. Docs: docs/deploy.md."""

import getpass
import os
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import click

from jobs.errors import UserError

HOST_HELP = "USER@HOST[:PORT]; USER defaults to yours"


def _connection_options(f: Callable[..., int]) -> Callable[..., int]:
    for option in reversed([
        click.argument("hosts", nargs=-1, required=True),
        click.option("--port", type=int, help="SSH port for every HOST (default 22)"),
        click.option("--key", type=click.Path(path_type=Path, exists=True, dir_okay=False),
                     help="private key to log in with (default: ~/.ssh and the agent)"),
        click.option("--known-hosts", type=click.Path(path_type=Path),
                     default=Path.home() / ".ssh" / "known_hosts", show_default=True,
                     help="known_hosts naming every HOST (and the storage host)"),
        click.option("--dir", "directory", default="benchfleet", show_default=True,
                     help="directory on the host, under its home unless absolute"),
        click.option("--python", default="python3", show_default=True,
                     help="the host's Python (3.11 or newer)")]):
        f = option(f)
    return f


@click.group()
def command() -> None:
    """Install and control benchfleet workers on lab hosts over SSH."""


@command.command()
@_connection_options
@click.option("--backend", required=True, help="the backend the worker serves, e.g. cuda")
@click.option("--name", help="worker name, unique in the fleet (default: the HOST's address)")
@click.option("--redis-url", required=True, envvar="BENCHFLEET_REDIS_URL",
              help="the coordinator's Redis, as the host reaches it")
@click.option("--redis-password", envvar="BENCHFLEET_REDIS_PASSWORD",
              help="Redis password (or BENCHFLEET_REDIS_PASSWORD), written into the env file")
@click.option("--models-dir", help="BENCHFLEET_MODELS_DIR on the host")
@click.option("--tag", "tags", multiple=True, help="capability tag (repeatable), e.g. gpu=gb10")
@click.option("--verify-key", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="the coordinator's Ed25519 public key (PEM) the worker verifies cells with")
@click.option("--artifacts", help="store the worker pushes to: sftp://USER@HOST[:PORT]/PATH")
@click.option("--artifacts-key", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="private key the worker logs in to the storage host with (copied, mode 600)")
@click.option("--service", type=click.Choice(["auto", "systemd", "launchd", "supervisor"]),
              default="auto", show_default=True, help="how the worker runs on the host")
@click.option("--host-identity", help="BENCHFLEET_HOST (default: the worker name)")
@click.option("--allow-repo", "allowed_repos", multiple=True,
              help="a target repository (URL, path or glob) the worker may build; repeatable. "
              "None: the worker builds nothing")
@click.option("--redis-ca", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="for a rediss:// URL: the CA that signed Redis's certificate (copied)")
@click.option("--set", "extra", multiple=True, metavar="NAME=VALUE",
              help="another worker setting, e.g. --set idle_load1=1.5 (BENCHFLEET_IDLE_LOAD1)")
def install(hosts: tuple[str, ...], port: int | None, key: Path | None, known_hosts: Path,
            directory: str, python: str, backend: str, name: str | None, redis_url: str,
            redis_password: str | None, models_dir: str | None, tags: tuple[str, ...],
            verify_key: Path | None, artifacts: str | None, artifacts_key: Path | None,
            service: str, host_identity: str | None, allowed_repos: tuple[str, ...],
            redis_ca: Path | None, extra: tuple[str, ...]) -> int:
    """Install (or bring up to date) a worker on each HOST and start it; a second run with
    the same options changes nothing and says "unchanged"."""
    from deploy.install import Plan, with_password
    from deploy.install import install as run_install
    from workers.shared.settings import load_settings

    url = with_password(redis_url, redis_password)
    load_settings(redis_url=url)  # a malformed URL is one sentence here, not on the host
    if not url.startswith("unix:") and urlsplit(url).password is None:
        raise UserError("the Redis URL has no password: a worker's Redis must require one "
                        "(requirepass); pass --redis-password or set BENCHFLEET_REDIS_PASSWORD")
    settings = _extra_settings(extra)
    if not allowed_repos:
        click.echo("warning: no --allow-repo: the worker builds no repository until "
                   "BENCHFLEET_ALLOWED_REPOS names one", err=True)
    if name and len(hosts) > 1:
        raise UserError("--name names one worker; deploy several hosts without it (each is "
                        "named for its address) or one at a time")
    for text in hosts:
        with _remote(text, port, key, known_hosts) as remote:
            plan = Plan(backend=backend, name=name or remote.address.host, directory=directory,
                        redis_url=url, service=service, python=python, models_dir=models_dir,
                        tags=tags, verify_key=verify_key, artifacts=artifacts,
                        artifacts_key=artifacts_key, known_hosts=known_hosts,
                        host_identity=host_identity, allowed_repos=allowed_repos,
                        redis_ca=redis_ca, settings=settings)
            click.echo(run_install(remote, plan).line())
    return 0


# Settings deploy writes itself, from its own options.
_OWN = {"redis_url", "host", "workspace", "artifact_cache", "tags", "allowed_repos", "models_dir",
        "verify_key", "artifacts", "ssh_key", "ssh_known_hosts", "signing_key"}


def _extra_settings(pairs: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """`--set NAME=VALUE` pairs, each a worker setting with a value it accepts."""
    from workers.shared.settings import Settings, load_settings

    found = []
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip().lower().removeprefix("benchfleet_")
        if not sep or name not in Settings.model_fields or name in _OWN:
            known = ", ".join(sorted(set(Settings.model_fields) - _OWN))
            raise UserError(f"--set {pair!r}: name one of {known}, as NAME=VALUE (deploy's "
                            "own options set the rest)")
        load_settings(**{name: value})  # a bad value is one sentence here, not on the host
        found.append((name, value))
    return tuple(found)


_HELP = {"status": "Whether the worker on each HOST runs, and its pid.",
         "restart": "Restart the worker on each HOST.", "stop": "Stop the worker on each HOST.",
         "uninstall": "Stop the worker on each HOST and remove its service and directory."}


def _control(verb: str) -> None:
    @command.command(name=verb, help=_HELP[verb])
    @_connection_options
    def run(hosts: tuple[str, ...], port: int | None, key: Path | None, known_hosts: Path,
            directory: str, python: str) -> int:
        from deploy import control

        for text in hosts:
            with _remote(text, port, key, known_hosts) as remote:
                click.echo(getattr(control, verb)(remote, directory, python))
        return 0


for _verb in ("status", "restart", "stop", "uninstall"):
    _control(_verb)


@command.command()
@_connection_options
@click.option("-n", "--lines", default=50, show_default=True, help="lines from the end")
def logs(hosts: tuple[str, ...], port: int | None, key: Path | None, known_hosts: Path,
         directory: str, python: str, lines: int) -> int:
    """Print the end of the worker's log on each HOST."""
    from deploy import control

    for text in hosts:
        with _remote(text, port, key, known_hosts) as remote:
            click.echo(f"==> {remote.address} <==")
            click.echo(control.logs(remote, directory, python, lines), nl=False)
    return 0


def _remote(text: str, port: int | None, key: Path | None, known_hosts: Path):  # type: ignore[no-untyped-def]
    from deploy.remote import Remote, parse_address

    user = os.environ.get("USER") or getpass.getuser()
    return Remote(parse_address(text, port, user), key, known_hosts)
