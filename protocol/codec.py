"""Encoding and typed decoding of protocol messages (msgpack).

Decoding is strict: anything that is not one valid message becomes a ``ProtocolError`` that
says exactly what was wrong, so a referee can forfeit an engine with a precise reason.
"""
from __future__ import annotations

import msgspec

from .messages import AnyMessage, Message

MAX_MESSAGE_SIZE = 1 << 20
"""Largest accepted message in bytes (also set as ZMQ_MAXMSGSIZE on every socket)."""


DETAIL_LIMIT = 1000
"""Most characters of a text the referee sends that quotes an engine's own bytes (the decoder's
words, an illegal move in ``game_over.detail``): cut there, a hostile engine's 1 MiB move or tag
cannot make the referee's messages to it or its opponent exceed ``MAX_MESSAGE_SIZE``."""


def clip(text: str, limit: int = DETAIL_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, ending with ``...`` when cut."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


def printable(text: str, limit: int = DETAIL_LIMIT) -> str:
    """``text`` clipped, with every character a terminal would act on (escape sequences, control
    characters) shown as ``?`` and line breaks as spaces: an engine's own words, safe to print."""
    text = clip(text, limit)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else " " if c in "\n\r\t" else "?" for c in text)


class ProtocolError(Exception):
    """A peer sent bytes that are not a valid protocol message."""


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(AnyMessage)


def _integral(value):
    """``value`` with every float that has an integral value made an int (int fields accept it,
    float fields take it back as a float); only used once a strict decode has failed."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_integral(v) for v in value]
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    return value


def encode(message: Message) -> bytes:
    return _encoder.encode(message)


NESTED_TOO_DEEPLY = "invalid message: nested too deeply"
"""The decoder's text for values nested beyond Python's recursion limit (about 1000 levels: a
100 KB frame of arrays in arrays), which raised ``RecursionError`` into the referee and ended
the whole match."""


def decode(data: bytes) -> Message:
    """Decode one message; raise ``ProtocolError`` naming the problem."""
    try:
        return _decode(data)
    except RecursionError:
        raise ProtocolError(NESTED_TOO_DEEPLY) from None


def _decode(data: bytes) -> Message:
    if len(data) > MAX_MESSAGE_SIZE:
        raise ProtocolError(f"message of {len(data)} bytes exceeds the {MAX_MESSAGE_SIZE}-byte limit")
    if not data:
        raise ProtocolError("empty message")
    try:
        return _decoder.decode(data)
    except msgspec.ValidationError as exc:
        if "got `float`" in str(exc):  # JavaScript & co. may send 3 as 3.0: an integral float is that int
            try:
                return msgspec.convert(_integral(msgspec.msgpack.decode(data)), AnyMessage)
            except msgspec.ValidationError:
                pass  # 1.5 where an int belongs: the first error says it
        raise ProtocolError(clip(f"invalid message: {exc}")) from None
    except msgspec.DecodeError as exc:
        raise ProtocolError(clip(f"not msgpack: {exc}")) from None
