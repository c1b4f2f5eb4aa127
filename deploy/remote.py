"""One lab host over SSH (fabric): run commands, read and write files, with the host's key
checked against known_hosts and every failure said in one sentence."""

import posixpath
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path
from shlex import quote
from types import TracebackType

import fabric
import paramiko

from jobs.errors import UserError

CONNECT_TIMEOUT_S = 15.0
COMMAND_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Address:
    user: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.user}@{self.host}" + (f":{self.port}" if self.port != 22 else "")


def parse_address(text: str, port: int | None, default_user: str) -> Address:
    """USER@HOST[:PORT] (or HOST); --port wins over a port in the text."""
    user, _, rest = text.rpartition("@")
    host, _, written = rest.partition(":")
    if not host or (written and not written.isdigit()):
        raise UserError(f"{text!r} is not a host; write USER@HOST or USER@HOST:PORT")
    return Address(user or default_user, host, port or int(written or 22))


@dataclass(frozen=True)
class Done:
    code: int
    out: str
    err: str


class Remote:
    def __init__(self, address: Address, key: Path | None, known_hosts: Path) -> None:
        self.address = address
        options: dict[str, object] = {"look_for_keys": key is None, "allow_agent": key is None,
                                      }
        if key is not None:
            options["key_filename"] = str(key)
        self.conn = fabric.Connection(address.host, user=address.user, port=address.port,
                                      connect_kwargs=options, connect_timeout=CONNECT_TIMEOUT_S)
        # fabric adds unknown host keys by default; a lab host's key must already be known.
        self.conn.client.set_missing_host_key_policy(paramiko.RejectPolicy())
        if known_hosts.is_file():
            self.conn.client.load_host_keys(str(known_hosts))
        self.known_hosts = known_hosts
        self._sftp: paramiko.SFTPClient | None = None

    def open(self) -> "Remote":
        try:
            self.conn.open()
        except paramiko.BadHostKeyException:
            raise UserError(f"{self.address}'s host key differs from the one in "
                            f"{self.known_hosts}; refusing to connect") from None
        except paramiko.AuthenticationException:
            raise UserError(f"{self.address} refused the key; add its public half to that "
                            "account's authorized_keys, or pass --key") from None
        except paramiko.SSHException as error:
            if "not found in known_hosts" in str(error):
                raise UserError(f"{self.address}'s host key is not in {self.known_hosts}; add "
                                "it (ssh-keyscan, checked against the host) or pass "
                                "--known-hosts") from None
            raise UserError(f"SSH to {self.address} failed ({error})") from None
        except OSError as error:
            raise UserError(f"cannot reach {self.address} ({error}); check the host, port and "
                            "network") from None
        return self

    def run(self, command: str, timeout: float = COMMAND_TIMEOUT_S) -> Done:
        result = self.conn.run(command, hide=True, warn=True, in_stream=False, timeout=timeout)
        return Done(result.exited, result.stdout, result.stderr)

    def check(self, command: str, what: str, timeout: float = COMMAND_TIMEOUT_S) -> str:
        """Run `command`; on failure one sentence naming `what` and the host's last words."""
        done = self.run(command, timeout)
        if done.code != 0:
            last = (done.err.strip() or done.out.strip()).splitlines()[-3:]
            raise UserError(f"{what} failed on {self.address} (exit {done.code}): "
                            f"{' / '.join(last)}")
        return done.out

    @property
    def sftp(self) -> paramiko.SFTPClient:
        if self._sftp is None:
            self._sftp = self.conn.sftp()
        return self._sftp

    def home(self) -> str:
        return self.sftp.normalize(".")

    def read(self, path: str) -> bytes | None:
        try:
            with self.sftp.open(path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def mode(self, path: str) -> int | None:
        try:
            return stat.S_IMODE(self.sftp.stat(path).st_mode or 0)
        except FileNotFoundError:
            return None

    def write(self, path: str, data: bytes, mode: int) -> bool:
        """Write `path` whole (temp file, then rename) with `mode` set before any byte lands;
        False, touching nothing, when it already holds exactly that."""
        if self.read(path) == data and self.mode(path) == mode:
            return False
        self.makedirs(posixpath.dirname(path))
        temp = f"{path}.{uuid.uuid4().hex}.part"
        with self.sftp.open(temp, "wb") as f:
            self.sftp.chmod(temp, mode)
            f.write(data)
        self.sftp.posix_rename(temp, path)
        return True

    def put(self, local: Path, path: str) -> None:
        temp = f"{path}.{uuid.uuid4().hex}.part"
        self.sftp.put(str(local), temp)
        self.sftp.posix_rename(temp, path)

    def makedirs(self, path: str, mode: int = 0o755) -> None:
        self.check(f"mkdir -p -m {mode:o} {quote(path)}", f"creating {path}")

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "Remote":
        return self.open()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()
