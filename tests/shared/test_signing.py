"""Signing: the coordinator's private key signs, a worker's public key verifies; anything else
is refused, and a missing or wrong key file is one clear sentence."""

import os
import stat
from pathlib import Path

import pytest

from jobs.errors import UserError
from workers.shared.signing import BadSignature, generate, signer, verifier


def test_what_is_signed_verifies_and_a_change_does_not(tmp_path: Path) -> None:
    generate(tmp_path / "c.pem", tmp_path / "c.pub")
    signature = signer(tmp_path / "c.pem").sign(b"envelope")
    check = verifier(tmp_path / "c.pub")
    check.verify(b"envelope", signature)
    with pytest.raises(BadSignature):
        check.verify(b"envelope!", signature)
    with pytest.raises(BadSignature):
        check.verify(b"envelope", "not base64")


def test_another_coordinators_signature_is_refused(tmp_path: Path) -> None:
    generate(tmp_path / "a.pem", tmp_path / "a.pub")
    generate(tmp_path / "b.pem", tmp_path / "b.pub")
    with pytest.raises(BadSignature, match="does not verify"):
        verifier(tmp_path / "a.pub").verify(b"x", signer(tmp_path / "b.pem").sign(b"x"))


def test_the_private_key_is_its_owners_alone(tmp_path: Path) -> None:
    generate(tmp_path / "keys" / "c.pem", tmp_path / "keys" / "c.pub")
    assert stat.S_IMODE(os.stat(tmp_path / "keys" / "c.pem").st_mode) == 0o600


def test_missing_or_wrong_keys_are_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="set BENCHFLEET_VERIFY_KEY"):
        verifier(None)
    with pytest.raises(UserError, match="set BENCHFLEET_SIGNING_KEY"):
        signer(None)
    with pytest.raises(UserError, match="cannot read .*check BENCHFLEET_VERIFY_KEY"):
        verifier(tmp_path / "absent.pub")
    generate(tmp_path / "c.pem", tmp_path / "c.pub")
    with pytest.raises(UserError, match="is a public key; BENCHFLEET_SIGNING_KEY needs"):
        signer(tmp_path / "c.pub")
    with pytest.raises(UserError, match="is a private key; BENCHFLEET_VERIFY_KEY takes"):
        verifier(tmp_path / "c.pem")
    (tmp_path / "junk.pem").write_text("not a key\n")
    with pytest.raises(UserError, match="not an Ed25519 private key"):
        signer(tmp_path / "junk.pem")
