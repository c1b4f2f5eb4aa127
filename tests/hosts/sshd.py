"""A real OpenSSH server (Debian's openssh-server) with its own host key, config and one
authorized client key; on loopback for the benchmark, or inside a network namespace."""

import shutil
import subprocess
import time
from pathlib import Path
from types import TracebackType

from runner import processes

SSHD = "/usr/sbin/sshd"
SFTP_SERVER = "/usr/lib/openssh/sftp-server"
# sshd refuses to start without its privilege-separation directory (systemd creates it at boot).
PRIVSEP_DIR = Path("/run/sshd")
START_DEADLINE_S = 10.0
INSTALL_HINT = ("install it with `apt-get install openssh-server openssh-client` "
                "(./install.sh --test does)")


def missing_sshd() -> str | None:
    """Why a real sshd cannot run here, or None."""
    if not Path(SSHD).is_file():
        return f"{SSHD} is missing; {INSTALL_HINT}"
    if shutil.which("ssh-keygen") is None:
        return f"ssh-keygen is missing; {INSTALL_HINT}"
    return None


def keygen(path: Path) -> Path:
    """An ed25519 key pair without a passphrase: `path` and `path`.pub."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", path.name, "-f",
                    str(path)], check=True, capture_output=True, timeout=30)
    return path


class SshServer:
    """One sshd on `address:port`, optionally inside network namespace `netns`."""

    def __init__(self, root: Path, address: str, port: int, client_key: Path,
                 netns: str | None = None) -> None:
        self.root = root
        self.address = address
        self.port = port
        self.client_key = client_key
        self.netns = netns
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> Path:
        return self.root / "sshd.log"

    def known_hosts_line(self) -> str:
        """This server's entry for a known_hosts file, as ssh and paramiko read it."""
        host = self.address if self.port == 22 else f"[{self.address}]:{self.port}"
        kind, key = (self.root / "host_ed25519.pub").read_text().split()[:2]
        return f"{host} {kind} {key}\n"

    def start(self) -> "SshServer":
        self.root.mkdir(parents=True, exist_ok=True)
        PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
        keygen(self.root / "host_ed25519")
        shutil.copyfile(self.client_key.with_suffix(".pub"), self.root / "authorized_keys")
        config = self.root / "sshd_config"
        config.write_text(self._config())
        prefix = ["ip", "netns", "exec", self.netns] if self.netns else []
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen([*prefix, SSHD, "-D", "-e", "-f", str(config)],
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         start_new_session=True)
        self._wait_listening()
        return self

    def _config(self) -> str:
        # StrictModes off: the test's key files sit under a temporary directory's modes.
        return "\n".join([
            f"Port {self.port}", f"ListenAddress {self.address}",
            f"HostKey {self.root / 'host_ed25519'}", f"PidFile {self.root / 'sshd.pid'}",
            f"AuthorizedKeysFile {self.root / 'authorized_keys'}",
            "PermitRootLogin prohibit-password", "PubkeyAuthentication yes",
            "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no",
            "StrictModes no", "MaxStartups 64", "MaxSessions 64", "LogLevel INFO",
            f"Subsystem sftp {SFTP_SERVER}", ""])

    def _wait_listening(self) -> None:
        # sshd says so on stderr once its socket is bound; the test process may sit outside
        # the namespace, so it cannot simply try to connect.
        deadline = time.monotonic() + START_DEADLINE_S
        while "Server listening" not in self.log.read_text(errors="replace"):
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited at start: {self.log.read_text()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"sshd did not listen within {START_DEADLINE_S}s: "
                                   f"{self.log.read_text()}")
            time.sleep(0.02)

    def stop(self) -> None:
        processes.stop(self.proc)

    def __enter__(self) -> "SshServer":
        return self.start()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()
