"""Ed25519 keys: the coordinator signs cell envelopes, workers verify them.

Asymmetric on purpose: a worker holds only the public key, so a compromised worker (or anyone
who can write to Redis) cannot forge a task that another worker would run. With HMAC every
worker would hold the signing secret.
"""

import base64
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from jobs.errors import UserError
from workers.shared.private_files import write_private


class BadSignature(Exception):
    """An envelope whose signature does not verify: unsigned, tampered or foreign."""


class Signer:
    def __init__(self, key: Ed25519PrivateKey) -> None:
        self._key = key

    def sign(self, data: bytes) -> str:
        return base64.b64encode(self._key.sign(data)).decode()


class Verifier:
    def __init__(self, key: Ed25519PublicKey) -> None:
        self._key = key

    def verify(self, data: bytes, signature: str) -> None:
        try:
            self._key.verify(base64.b64decode(signature, validate=True), data)
        except (InvalidSignature, ValueError):
            raise BadSignature("the signature does not verify against this worker's "
                               "coordinator key") from None


def generate(private: Path, public: Path) -> None:
    """A new key pair; the private key file is readable by its owner only."""
    key = Ed25519PrivateKey.generate()
    write_private(private, key.private_bytes(serialization.Encoding.PEM,
                                             serialization.PrivateFormat.PKCS8,
                                             serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))


def signer(path: Path | None) -> Signer:
    if path is None:
        raise UserError("no signing key: set BENCHFLEET_SIGNING_KEY to the coordinator's "
                        "Ed25519 private key (`benchfleet keys generate DIR` makes one)")
    data = _read(path, "BENCHFLEET_SIGNING_KEY")
    if b"PUBLIC KEY-----" in data:
        raise UserError(f"{path} is a public key; BENCHFLEET_SIGNING_KEY needs the private one "
                        "(coordinator.pem), and only workers take the public one")
    try:
        key = serialization.load_pem_private_key(data, None)
    except (ValueError, TypeError):
        key = None
    if not isinstance(key, Ed25519PrivateKey):
        raise UserError(f"{path} is not an Ed25519 private key (BENCHFLEET_SIGNING_KEY)")
    return Signer(key)


def verifier(path: Path | None) -> Verifier:
    if path is None:
        raise UserError("no verify key: set BENCHFLEET_VERIFY_KEY to the coordinator's Ed25519 "
                        "public key; a worker runs only what the coordinator signed")
    data = _read(path, "BENCHFLEET_VERIFY_KEY")
    if b"PRIVATE KEY-----" in data:
        raise UserError(f"{path} is a private key; BENCHFLEET_VERIFY_KEY takes the public one "
                        "(coordinator.pub): a worker must never hold the signing key")
    try:
        pub = serialization.load_pem_public_key(data)
    except (ValueError, TypeError):
        pub = None
    if not isinstance(pub, Ed25519PublicKey):
        raise UserError(f"{path} is not an Ed25519 public key (BENCHFLEET_VERIFY_KEY)")
    return Verifier(pub)


def _read(path: Path, setting: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise UserError(f"cannot read {path} ({error.strerror}); check {setting}") from None
