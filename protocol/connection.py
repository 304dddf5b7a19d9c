"""What the referee needs of a transport: the ``Connection`` protocol.

A connection carries whole protocol messages between the referee and one engine. The referee's
session layer (``arbiter.hosting.session``) talks to engines only through this interface, so a
new transport — a sandbox's socket, an authenticated remote link — is one more class with these
methods; ``protocol.transport.ZmqConnection`` is the ZeroMQ one.
"""
from __future__ import annotations

import time
from typing import Protocol, Sequence, runtime_checkable

from .messages import Message


@runtime_checkable
class Connection(Protocol):
    """The referee's end of one engine's link.

    ``receive`` never blocks; ``wait`` blocks up to a timeout; neither raises on silence. Bytes
    that are not a valid message raise ``protocol.ProtocolError``; sending to a peer that is
    gone raises ``ConnectionError``."""

    endpoint: str
    """Where the engine connects (given to the engine as ``ARBITER_ENDPOINT``)."""

    def send(self, message: Message) -> None: ...

    def receive(self) -> Message | None:
        """One waiting message from the engine, or None (nothing waiting, or a frame that was
        not the engine's and has been dropped)."""

    def wait(self, timeout_ms: int) -> bool:
        """True as soon as something is waiting to be received (within ``timeout_ms``)."""

    @property
    def connected(self) -> bool:
        """An engine has introduced itself on this connection."""

    @property
    def disconnected(self) -> bool:
        """The engine's side is known to be gone."""

    def close(self) -> None: ...


def wait_any(connections: Sequence[Connection], timeout_ms: int) -> set[int]:
    """Indexes of the connections with a message waiting, waiting up to ``timeout_ms`` for the
    first. Connections of one transport are polled together by that transport's own
    ``wait_any`` (one system call); a mix of transports is polled in turn every millisecond."""
    if not connections:
        return set()
    transport = type(connections[0])
    if hasattr(transport, "wait_any") and all(type(c) is transport for c in connections):
        return transport.wait_any(connections, timeout_ms)
    deadline = time.monotonic() + max(0, timeout_ms) / 1000
    while True:
        ready = {i for i, c in enumerate(connections) if c.wait(0)}
        if ready or time.monotonic() >= deadline:
            return ready
        time.sleep(0.001)
