"""CurveZMQ key files: the identity of a remote engine and of the referee's tcp endpoint.

``NAME.key`` (mode 0600) holds a key pair, ``NAME.pub`` its public half, both small TOML files
with Z85 text (40 characters per key), so any language reads them without a library::

    public = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
    secret = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6"

An engine needs the referee's public key (its ``.pub``) and its own ``.key``; the referee needs
its own ``.key`` and every participant's public key (the roster).
"""
from __future__ import annotations

import hashlib
import os
import re
import stat
import tomllib
from pathlib import Path

import zmq
from zmq.utils import z85

_Z85 = re.compile(r"[0-9a-zA-Z.\-:+=^!/*?&<>()\[\]{}@%$#]{40}")


class KeyFileError(ValueError):
    """A key file that cannot be used; the message names the file."""


def valid_key(text: object) -> bool:
    """A 40-character Z85 CURVE key."""
    return isinstance(text, str) and _Z85.fullmatch(text) is not None


def fingerprint(public: str | bytes) -> str:
    """A short printable name for a public key (Z85 text or 32 raw bytes): 16 hex digits of SHA-256."""
    raw = z85.decode(public) if len(public) == 40 else bytes(public)
    return hashlib.sha256(raw).hexdigest()[:16]


def keygen(name: str, out_dir: str | Path = ".") -> tuple[Path, Path]:
    """Write ``NAME.key`` (created 0600, never wider) and ``NAME.pub`` into ``out_dir``; refuses
    to overwrite either."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name) or name.startswith("."):
        raise KeyFileError(f"key name {name!r}: use letters, digits, '-', '_' and '.'")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    secret_path, public_path = out / f"{name}.key", out / f"{name}.pub"
    for p in (secret_path, public_path):
        if p.exists():
            raise KeyFileError(f"{p} exists: refusing to overwrite a key")
    public, secret = (k.decode() for k in zmq.curve_keypair())
    fd = os.open(secret_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(f'public = "{public}"\nsecret = "{secret}"\n')
    public_path.write_text(f'public = "{public}"\n')
    return secret_path, public_path


def _read(path: str | Path) -> dict:
    path = Path(path)
    try:
        text = path.read_text()
        return tomllib.loads(text)
    except OSError as exc:
        raise KeyFileError(f"{path}: cannot read the key: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        if isinstance(exc, tomllib.TOMLDecodeError) and text.lstrip().startswith("-----BEGIN"):
            # the referee's PEM signing key, also called referee.key: the likely mix-up, said as such
            raise KeyFileError(f"{path}: the referee's signing key (arbiter keygen), not a CURVE key for tcp "
                               f"(arbiter keygen NAME)") from None
        raise KeyFileError(f"{path}: not a key file ({exc})") from None


def load_keypair(path: str | Path) -> tuple[bytes, bytes]:
    """(public, secret) Z85 bytes from a ``.key`` file; refused when group or others may access
    it (anyone who reads it can take the seat)."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise KeyFileError(f"{path}: cannot read the key: {exc.strerror or exc}") from None
    data = _read(path)
    if "secret" not in data and valid_key(data.get("public")):  # NAME.pub for NAME.key: not "chmod 600 it"
        raise KeyFileError(f"{path}: a public key (NAME.pub), not a key pair: give the .key file made with it "
                           f"(arbiter keygen NAME)")
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KeyFileError(f"{path}: the secret key is accessible by group or others "
                           f"(mode {stat.S_IMODE(mode):o}); chmod 600 {path}")
    for field in ("public", "secret"):
        if not valid_key(data.get(field)):
            raise KeyFileError(f"{path}: '{field}' must be a 40-character Z85 key")
    public, secret = data["public"].encode(), data["secret"].encode()
    if zmq.curve_public(secret) != public:
        raise KeyFileError(f"{path}: 'public' is not the public half of 'secret'")
    return public, secret


def load_public(path: str | Path) -> bytes:
    """The Z85 public key of a ``.pub`` (or ``.key``) file."""
    data = _read(path)
    if not valid_key(data.get("public")):
        raise KeyFileError(f"{path}: 'public' must be a 40-character Z85 key")
    return data["public"].encode()


def client_options(socket: zmq.Socket, server_public: bytes, keypair: tuple[bytes, bytes]) -> None:
    """Make ``socket`` a CURVE client of the server with ``server_public``, as ``keypair``."""
    socket.curve_serverkey = server_public
    socket.curve_publickey, socket.curve_secretkey = keypair
