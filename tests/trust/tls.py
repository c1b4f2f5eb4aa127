"""A redis-server that speaks only TLS (Debian's redis-server 7 has it built in), with a test
CA and a server certificate for its address, made with `cryptography`."""

import datetime
import ipaddress
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import redis
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from runner import processes
from runner.demo.redis_server import free_port

START_DEADLINE_S = 15.0


@dataclass(frozen=True)
class Certs:
    ca: Path
    cert: Path
    key: Path


def make_certs(folder: Path, address: str) -> Certs:
    """A CA, and a certificate it signed for `address` (an IP address, in subjectAltName)."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "benchfleet test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, address)]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address(address))]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    certs = Certs(folder / "ca.pem", folder / "server.pem", folder / "server.key")
    certs.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    certs.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    certs.key.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                            serialization.PrivateFormat.PKCS8,
                                            serialization.NoEncryption()))
    return certs


def tls_args(certs: Certs, port: int) -> list[str]:
    """redis-server's options for TLS only on `port` (no plain port), clients not asked for
    certificates (the password authenticates them)."""
    return ["--port", "0", "--tls-port", str(port), "--tls-cert-file", str(certs.cert),
            "--tls-key-file", str(certs.key), "--tls-ca-cert-file", str(certs.ca),
            "--tls-auth-clients", "no"]


@contextmanager
def tls_redis(folder: Path, password: str) -> Iterator[str]:
    """A TLS-only redis-server on loopback; yields its rediss:// URL (the CA in its query)."""
    certs = make_certs(folder / "tls", "127.0.0.1")
    port = free_port()
    proc = subprocess.Popen(["redis-server", *tls_args(certs, port), "--bind", "127.0.0.1",
                             "--requirepass", password, "--save", "", "--appendonly", "no",
                             "--dir", str(folder), "--logfile", str(folder / "redis.log")],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    url = f"rediss://:{password}@127.0.0.1:{port}/0?ssl_ca_certs={certs.ca}"
    try:
        _until_ready(url, proc)
        yield url
    finally:
        processes.stop(proc)


def _until_ready(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_DEADLINE_S
    while True:
        try:
            redis.Redis.from_url(url, socket_connect_timeout=1).ping()
            return
        except redis.ConnectionError:
            assert proc.poll() is None, "redis-server exited at start"
            assert time.monotonic() < deadline, "redis-server did not take TLS connections"
            time.sleep(0.05)
