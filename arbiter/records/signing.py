"""The referee's Ed25519 key: records signed with it can be checked by anyone holding the public key.

Keys are PEM files (PKCS#8 for the secret key, SubjectPublicKeyInfo for the public one), so
``openssl pkey`` reads them too. A key's id is the first 16 hex digits of the SHA-256 of its raw
32-byte public key; records name the key that signed them by this id.
"""
from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

SECRET_NAME, PUBLIC_NAME = "referee.key", "referee.pub"


class KeyFileError(ValueError):
    """A key file that cannot be used (missing, wrong format, readable by others)."""


def key_id(public: Ed25519PublicKey) -> str:
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


class Signer:
    """A loaded secret key: signs byte strings, names itself by ``key_id``."""

    def __init__(self, secret: Ed25519PrivateKey):
        self._secret = secret
        self.public = secret.public_key()
        self.key_id = key_id(self.public)

    def sign(self, data: bytes) -> str:
        return self._secret.sign(data).hex()


def check_signature(public: Ed25519PublicKey, data: bytes, signature_hex: str) -> bool:
    try:
        public.verify(bytes.fromhex(signature_hex), data)
        return True
    except (InvalidSignature, ValueError):
        return False


def keygen(out_dir: str | Path) -> tuple[Path, Path]:
    """Write a new key pair into ``out_dir``: the secret key 0600 (created so, never wider), the
    public key 0644. Refuses to overwrite an existing key."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    secret_path, public_path = out / SECRET_NAME, out / PUBLIC_NAME
    for p in (secret_path, public_path):
        if p.exists():
            raise KeyFileError(f"{p} exists: refusing to overwrite a key")
    secret = Ed25519PrivateKey.generate()
    pem = secret.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                               serialization.NoEncryption())
    fd = os.open(secret_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    public_path.write_bytes(secret.public_key().public_bytes(serialization.Encoding.PEM,
                                                             serialization.PublicFormat.SubjectPublicKeyInfo))
    return secret_path, public_path


def _not_pem(path: Path, data: bytes, problem: str) -> KeyFileError:
    """A CURVE key file (``arbiter keygen NAME``, TOML) where the signing key belongs is the likely
    mix-up, both being called ``referee.key`` in the docs: say that, not what the PEM parser says."""
    if data.lstrip().startswith(b"public ="):
        return KeyFileError(f"{path}: a CURVE key for tcp (arbiter keygen NAME), not the referee's signing key "
                            f"(arbiter keygen)")
    return KeyFileError(f"{path}: {problem}")


def load_signer(path: str | Path) -> Signer:
    """The secret key at ``path``; refused when group or others may read it (an engine running as
    another user must never be able to sign)."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
        data = path.read_bytes()
    except OSError as exc:
        raise KeyFileError(f"{path}: cannot read the key: {exc.strerror or exc}") from None
    if data.lstrip().startswith(b"-----BEGIN PUBLIC KEY-----"):  # referee.pub for referee.key: not "chmod 600 it"
        raise KeyFileError(f"{path}: the referee's public key (for verify --public-key), not its secret key: "
                           f"sign with the .key file made with it (arbiter keygen)")
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KeyFileError(f"{path}: the secret key is accessible by group or others (mode {stat.S_IMODE(mode):o}); "
                        f"chmod 600 it")
    try:
        secret = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise _not_pem(path, data, f"not a PEM secret key: {exc}") from None
    if not isinstance(secret, Ed25519PrivateKey):
        raise KeyFileError(f"{path}: not an Ed25519 key")
    return Signer(secret)


def load_public_key(path: str | Path) -> Ed25519PublicKey:
    """A public key file (or a secret key file, whose public half is taken)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise KeyFileError(f"{path}: cannot read the key: {exc.strerror or exc}") from None
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError:
        try:
            key = serialization.load_pem_private_key(data, password=None).public_key()
        except (ValueError, TypeError) as exc:
            raise _not_pem(path, data, f"not a PEM Ed25519 key: {exc}") from None
    if not isinstance(key, Ed25519PublicKey):
        raise KeyFileError(f"{path}: not an Ed25519 key")
    return key
