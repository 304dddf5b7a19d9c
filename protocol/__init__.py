"""The arbiter's wire protocol: msgpack messages over ZeroMQ (see SPEC.md)."""
from .codec import MAX_MESSAGE_SIZE, ProtocolError, decode, encode
from .messages import *  # noqa: F401,F403
from .messages import PROTOCOL_VERSION, AnyMessage, Message

__all__ = ["MAX_MESSAGE_SIZE", "ProtocolError", "decode", "encode", "PROTOCOL_VERSION", "AnyMessage", "Message"]
