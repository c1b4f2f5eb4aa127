"""Ed25519 keys: the coordinator signs cell envelopes, workers verify them.

Asymmetric on purpose: a worker holds only the public key, so a compromised worker (or anyone
who can write to Redis) cannot forge a task that another worker would run. With HMAC every
worker would hold the signing secret.
"""

import base64
import os
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from jobs.errors import UserError


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
    private.parent.mkdir(parents=True, exist_ok=True)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    public.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))


def signer(path: Path | None) -> Signer:
    if path is None:
        raise UserError("no signing key: set BENCHFLEET_SIGNING_KEY to the coordinator's "
                        "Ed25519 private key (`benchfleet keys generate DIR` makes one)")
    key = serialization.load_pem_private_key(_read(path, "BENCHFLEET_SIGNING_KEY"), None)
    if not isinstance(key, Ed25519PrivateKey):
        raise UserError(f"{path} is not an Ed25519 private key (BENCHFLEET_SIGNING_KEY)")
    return Signer(key)


def verifier(path: Path | None) -> Verifier:
    if path is None:
        raise UserError("no verify key: set BENCHFLEET_VERIFY_KEY to the coordinator's Ed25519 "
                        "public key; a worker runs only what the coordinator signed")
    key = serialization.load_pem_public_key(_read(path, "BENCHFLEET_VERIFY_KEY"))
    if not isinstance(key, Ed25519PublicKey):
        raise UserError(f"{path} is not an Ed25519 public key (BENCHFLEET_VERIFY_KEY)")
    return Verifier(key)


def _read(path: Path, setting: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise UserError(f"cannot read {path} ({error.strerror}); check {setting}") from None
