"""ZeroMQ transport: the referee binds a ROUTER per engine, the engine connects a DEALER.

One protocol message is one ZeroMQ frame (the ROUTER side sees [routing id, payload]).
``ipc://`` endpoints in a private temp directory are the default for local engines;
``tcp://`` works the same way for remote ones.
"""
from __future__ import annotations

import atexit
import hmac
import os
import struct
import threading
import shutil
import tempfile
import uuid

import msgspec
import zmq

from .codec import MAX_MESSAGE_SIZE, ProtocolError, decode, encode
from .messages import Message

ENDPOINT_ENV = "ARBITER_ENDPOINT"
"""The environment variable through which a spawned engine learns where to connect."""
SECRET_ENV = "ARBITER_SECRET_FILE"
"""The environment variable naming the file that holds a spawned engine's session secret."""
MAX_CONNECTIONS = 8
"""Connections to one engine's socket beyond which the engine is stopped (it needs one)."""
RECEIVE_HWM = 64
"""Messages queued from one engine before ZeroMQ stops reading more: a flood costs bounded memory."""

_ipc_dir: str | None = None
_ipc_dir_owner = 0
"""The process that made ``_ipc_dir`` (a forked child inherits the name: not its to use or remove)."""


def context() -> zmq.Context:
    return zmq.Context.instance()


_calmed: set[tuple[int, int]] = set()

_MORE, _NOW = int(zmq.SNDMORE | zmq.NOBLOCK), int(zmq.NOBLOCK)
"""Flags as plain ints: pyzmq's enum arithmetic and option lookups cost microseconds per message."""


def calm_io_threads() -> None:
    """Give this process's ZeroMQ I/O threads the ``SCHED_BATCH`` policy (Linux; best effort).

    Every send wakes the context's I/O thread. A normal thread woken that way may preempt the
    sender on its core, so a send returned only after the I/O thread had run: ~40 us per send
    on a busy 2-core machine. A batch thread does not preempt on wake-up; it runs on an idle core
    or as soon as the sender blocks in its next poll (tens of microseconds later at most), so
    messages go out as fast and the sender does not stall. Called after a socket is made
    (libzmq starts its threads with the context's first socket); threads already done are kept
    by (pid, tid), so a forked child does its own."""
    batch = getattr(os, "SCHED_BATCH", None)
    if batch is None:
        return
    pid = os.getpid()
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return
    for tid in tids:
        if (pid, int(tid)) in _calmed:
            continue
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                if not f.read().startswith("ZMQbg/IO"):
                    continue
            os.sched_setscheduler(int(tid), batch, os.sched_param(0))
        except OSError:
            pass
        _calmed.add((pid, int(tid)))


def new_ipc_endpoint(own_folder: bool = False) -> str:
    """A fresh ``ipc://`` path in a private directory (kept short: Unix paths max ~107 bytes);
    with ``own_folder``, in a folder of its own (so a sandbox can show an engine its socket and
    nothing else). A forked child makes a folder of its own, for it or its guardian to remove: in
    its parent's, neither could (a tournament worker's sockets were in the director's folder)."""
    global _ipc_dir, _ipc_dir_owner
    if _ipc_dir is None or _ipc_dir_owner != os.getpid() or not os.path.isdir(_ipc_dir):
        _ipc_dir, _ipc_dir_owner = tempfile.mkdtemp(prefix="arb-"), os.getpid()
        os.chmod(_ipc_dir, 0o711)  # others may pass through to their own folder, not list it
        atexit.register(remove_ipc_dir)  # the same rule at exit: a forked child inherits this, not the folder
    name = uuid.uuid4().hex[:12]
    if own_folder:
        folder = os.path.join(_ipc_dir, name)
        os.mkdir(folder, 0o700)
        return f"ipc://{folder}/s"
    return f"ipc://{_ipc_dir}/{name}.sock"


def remove_ipc_dir(if_empty: bool = False) -> None:
    """Remove the private folder of this process's ipc sockets (at exit, and at once by a process
    that ends with ``os._exit``, as a tournament worker stopped in a hurry: it runs no ``atexit``,
    and left the folder behind). A folder inherited through a fork is its creator's to remove.
    ``if_empty``: only if no socket is left in it (a tournament director's, once its pre-flight's
    engines are gone: kept for the event, it outlived a ``kill -9`` with no guardian to remove it)."""
    global _ipc_dir
    if _ipc_dir is not None and _ipc_dir_owner == os.getpid():
        if not if_empty:
            shutil.rmtree(_ipc_dir, True)
        else:
            try:
                os.rmdir(_ipc_dir)
            except OSError:  # sockets in it still
                return
        _ipc_dir = None


class ZmqConnection:
    """The referee's end of one engine's connection over ZeroMQ: a bound ROUTER
    (a ``protocol.connection.Connection``).

    The peer is the first connection whose first message is a ``hello`` carrying ``secret`` (any
    first message, when no secret is expected, as for remote engines; a message carrying the
    secret that is not a valid hello makes its sender the peer too: returned when it is another
    valid message, a ``ProtocolError`` when it does not decode); frames from any other
    routing id are dropped undecoded (counted in ``strangers``), so no other connection can
    impersonate the engine. ``seal`` removes an ``ipc://`` socket's file: with a secret (a spawned
    engine) that happens as soon as the first connection is accepted, by a watcher thread that
    follows ZeroMQ's socket monitor, so an engine cannot flood the referee with connections (each
    would cost it a file descriptor); ``flooded`` reports any that got through the race.
    """

    def __init__(self, endpoint: str | None = None, secret: str | None = None):
        self.secret = secret
        self.socket = context().socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_SIZE)
        self.socket.setsockopt(zmq.RCVHWM, RECEIVE_HWM)
        self.socket.setsockopt(zmq.ROUTER_MANDATORY, 1)
        self.socket.bind(endpoint or new_ipc_endpoint())
        calm_io_threads()
        self.endpoint: str = self.socket.getsockopt(zmq.LAST_ENDPOINT).decode()
        self.accepted = 0
        """Connections ever accepted: an engine needs one; ``MAX_CONNECTIONS`` makes it a flood."""
        self.peer: bytes | None = None
        self._disconnected = False  # before the watcher starts: it may set it at once
        self.strangers = 0
        self.unproven_hellos = 0
        """Hellos dropped for want of the right secret (``_introduce``)."""
        monitor = self.socket.get_monitor_socket(zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED
                                                 | zmq.EVENT_MONITOR_STOPPED)
        self._watcher = threading.Thread(target=self._watch, args=(monitor, secret is not None),
                                         name="zmq-monitor", daemon=True)
        self._watcher.start()
        self.poller = zmq.Poller()  # one poller for the socket's life: Socket.poll builds one per call
        self.poller.register(self.socket, zmq.POLLIN)

    def wait(self, timeout_ms: int) -> bool:
        """True when a frame is waiting (within ``timeout_ms``)."""
        return bool(self.poller.poll(timeout_ms))

    @staticmethod
    def wait_any(connections: "list[ZmqConnection]", timeout_ms: int) -> set[int]:
        """Poll several connections at once (simultaneous decisions)."""
        if len(connections) == 1:
            return {0} if connections[0].wait(timeout_ms) else set()
        poller = zmq.Poller()
        index = {}
        for i, conn in enumerate(connections):
            poller.register(conn.socket, zmq.POLLIN)
            index[conn.socket] = i
        return {index[s] for s, _ in poller.poll(timeout_ms)}

    @property
    def connected(self) -> bool:
        return self.peer is not None

    @property
    def flooded(self) -> bool:
        """More connections than any engine needs were made to this socket (each costs the
        referee a file descriptor): the engine is to be stopped, which frees them all."""
        return self.accepted > MAX_CONNECTIONS

    @property
    def disconnected(self) -> bool:
        """ZeroMQ's socket monitor reported the peer's disconnection (or a send found it gone)."""
        return self._disconnected

    def send(self, message: Message) -> None:
        if self.peer is None:
            raise ProtocolError("no engine has connected yet")
        data = encode(message)
        try:  # two frames sent directly: send_multipart's checks cost ~2 us per message
            self.socket.send(self.peer, _MORE)
            self.socket.send(data, _NOW)
        except zmq.ZMQError as exc:  # EHOSTUNREACH: the peer is gone
            self._disconnected = True
            raise ConnectionError(f"cannot send to the engine: {exc}") from None

    def receive(self) -> Message | None:
        """Read one waiting frame: a message from the peer, or None for a stranger's frame.

        Raises ``ProtocolError`` for bytes that are not a valid message, ``ConnectionError`` when
        the socket fails."""
        socket = self.socket
        try:  # a ROUTER's message is the routing id and at least one frame: read as such, then the rest
            identity = socket.recv(_NOW)
            frame = socket.recv(_NOW, copy=False)  # a frame says itself whether more follow (no RCVMORE call)
            payload = [frame.bytes]
            while frame.more:
                frame = socket.recv(_NOW, copy=False)
                payload.append(frame.bytes)
        except zmq.Again:
            return None
        except zmq.ZMQError as exc:
            raise ConnectionError(f"cannot read from the engine: {exc}") from None
        if self.peer is None and self.secret is not None:
            return self._introduce(identity, payload)
        if self.peer is None:
            self.peer = identity
        elif identity != self.peer:
            self.strangers += 1
            return None
        if len(payload) != 1:
            raise ProtocolError(f"expected one frame per message, got {len(payload)}")
        return decode(payload[0])

    def _introduce(self, identity: bytes, payload: list[bytes]) -> Message | None:
        """Before the engine is in: accept only a hello with the right secret; drop anything else."""
        from .messages import Hello

        try:
            msg = decode(payload[0]) if len(payload) == 1 else None
        except ProtocolError:
            if self._holds_secret(payload[0]):  # the engine's own hello, invalid: it is told why
                self.peer = identity
                raise
            msg = None
        if isinstance(msg, Hello) and hmac.compare_digest(msg.secret.encode(), self.secret.encode()):
            self.peer = identity
            return msg
        if msg is not None and not isinstance(msg, Hello) and self._holds_secret(payload[0]):
            self.peer = identity  # the engine's own message, not a hello: the handshake says so
            return msg
        if isinstance(msg, Hello):  # most often an engine that forgot the secret: said at the stall
            self.unproven_hellos += 1
        self.strangers += 1
        return None

    def _holds_secret(self, data: bytes) -> bool:
        """``data`` is a msgpack map whose ``secret`` is this seat's: a message from the engine,
        however invalid otherwise (a hello with a field of the wrong type)."""
        try:
            raw = msgspec.msgpack.decode(data)
        except (msgspec.DecodeError, RecursionError):
            return False
        secret = raw.get("secret") if isinstance(raw, dict) else None
        return isinstance(secret, str) and hmac.compare_digest(secret.encode(), self.secret.encode())

    def seal(self) -> None:
        """Remove an ipc socket's file: the connected engine stays, nobody else can connect."""
        if self.endpoint.startswith("ipc://"):
            try:
                os.unlink(self.endpoint[len("ipc://"):])
            except OSError:
                pass

    def _watch(self, monitor: zmq.Socket, seal_on_accept: bool) -> None:
        """The monitor's own thread (it alone uses the monitor socket): counts connections, notes
        disconnections, seals the socket file at the first accepted connection."""
        try:
            while True:
                frames = monitor.recv_multipart()
                (event,) = struct.unpack_from("=H", frames[0])
                if event == zmq.EVENT_ACCEPTED:
                    self.accepted += 1
                    if seal_on_accept and self.accepted == 1:
                        self.seal()
                elif event == zmq.EVENT_DISCONNECTED:
                    self._disconnected = True
                elif event == zmq.EVENT_MONITOR_STOPPED:
                    return
        except zmq.ZMQError:
            return
        finally:
            monitor.close(linger=0)

    def close(self) -> None:
        try:
            self.socket.disable_monitor()  # the watcher sees MONITOR_STOPPED, closes its socket, ends
        except zmq.ZMQError:
            pass
        self._watcher.join(1.0)
        self.socket.close(linger=0)
        if self.endpoint.startswith("ipc://"):
            path = self.endpoint[len("ipc://"):]
            for remove in (os.unlink, os.rmdir):  # the socket, then its own folder if it has one
                try:
                    remove(path)
                except OSError:
                    pass
                path = os.path.dirname(path) if os.path.basename(path) == "s" else ""


class EngineSocket:
    """The engine's end: a DEALER connected to the referee; with ``curve`` = (the referee's
    public key, this engine's (public, secret) key pair), a CURVE client."""

    def __init__(self, endpoint: str, curve: tuple[bytes, tuple[bytes, bytes]] | None = None):
        self.socket = context().socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_SIZE)
        if curve is not None:
            self.socket.curve_serverkey = curve[0]
            self.socket.curve_publickey, self.socket.curve_secretkey = curve[1]
        self._monitor: zmq.Socket | None = None
        self.handshakes = 0
        """Connections established (the CURVE handshake, if any, passed) so far."""
        self.refused = ""
        """Why the last handshake failed ("" if none has): ``key`` (the referee refused this
        engine's key: not in its roster, or the participant is connected already) or
        ``handshake`` (not the referee's key, or not a referee at all: ZeroMQ keeps retrying)."""
        if endpoint.startswith("tcp://"):  # a remote engine: a link that can drop and be redialled
            self.socket.setsockopt(zmq.HEARTBEAT_IVL, 1000)
            self.socket.setsockopt(zmq.HEARTBEAT_TIMEOUT, 4000)
            self.socket.setsockopt(zmq.IPV6, 1)  # else ZeroMQ cannot dial tcp://[::1]:PORT ("No such device")
            self._monitor = self.socket.get_monitor_socket(
                zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_HANDSHAKE_FAILED_AUTH | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
                | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL)
        self.socket.connect(endpoint)
        calm_io_threads()
        self._timeout_ms = -1  # the socket's RCVTIMEO: a timed read is one call, not a poll and a read

    def reconnected(self) -> bool:
        """True once per re-established connection (after the first): time to say hello again.
        Notes failed handshakes in ``refused`` on the way."""
        again = False
        while self._monitor is not None and self._monitor.poll(0):
            (event,) = struct.unpack_from("=H", self._monitor.recv_multipart()[0])
            if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self.handshakes += 1
                self.refused = ""
                again = again or self.handshakes > 1
            else:
                self.refused = "key" if event == zmq.EVENT_HANDSHAKE_FAILED_AUTH else "handshake"
        return again

    def send(self, message: Message) -> None:
        self.socket.send(encode(message))

    def recv(self, timeout_ms: int | None = None) -> Message | None:
        """The next message, or None on timeout. Raises ``ProtocolError`` on garbage."""
        wanted = -1 if timeout_ms is None else max(0, timeout_ms)
        if wanted != self._timeout_ms:
            self.socket.setsockopt(zmq.RCVTIMEO, wanted)
            self._timeout_ms = wanted
        try:
            frame = self.socket.recv()
        except zmq.Again:
            return None
        return decode(frame)

    def close(self) -> None:
        if self._monitor is not None:
            try:
                self.socket.disable_monitor()
            except zmq.ZMQError:
                pass
            self._monitor.close(linger=0)
        self.socket.close(linger=0)
