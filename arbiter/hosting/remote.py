"""Remote engines: participants who run their engine on their own machine and connect over tcp.

One ``RemoteHub`` per listening endpoint: a ROUTER socket that every participant connects to,
CURVE-encrypted, with a ZAP handler that admits only keys of the ``Roster`` (before any protocol
message is read) and at most one healthy connection per key. Messages are told apart by the
``User-Id`` the ZAP handler gave the connection (the participant's name), so a participant can
speak only for itself, whatever it puts in its messages. ``RemoteSession`` is the referee's
session with one participant in one game: it waits for it until a deadline (``absent``),
survives a dropped connection for a grace period (the engine is sent the game again when it is
back, else ``disconnect``), and compensates network lag within a documented quota
(``LagPolicy``), measured by pings at the handshake, between games and during them. A
participant whose hello says ``max_games`` > 1 has several sessions at once (one per game, in
the threads of a tournament worker); the hub routes its messages by ``game_id``.

Plain tcp (no CURVE) exists only for an explicit ``insecure`` event: then a hello's ``name``
says who is who, and every record says ``insecure``.
"""
from __future__ import annotations

import collections
import itertools
import math
import os
import re
import struct
import threading
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import zmq
from zmq.utils import z85

from protocol import ProtocolError
from protocol.codec import MAX_MESSAGE_SIZE, decode, encode
from protocol.curve import KeyFileError, fingerprint, load_keypair, valid_key
from protocol.messages import (EndReason, Error, ErrorCode, GameOver, Hello, Message, NewGame, Ping, Pong, Ready,
                               Request, Welcome)
from protocol.transport import RECEIVE_HWM

from .. import say
from .lag import LagAccount, LagPolicy
from .process import EngineConfig
from .session import EngineFault, EngineSession, ParticipantFault, _tag, raise_fd_limit

QUEUE_LIMIT = 256
"""Messages kept per session until it reads them; more is a flood and is dropped."""
PUMP_BURST = 256
"""At most this many frames are read from the socket in one go (bounded CPU per poll)."""
HANDSHAKE_MS = 5000
"""A connection that has not completed its CURVE handshake by then is closed (slowloris)."""
HEARTBEAT_MS, HEARTBEAT_TIMEOUT_MS = 1000, 3000
"""ZeroMQ heartbeats: a peer silent at the transport level this long is disconnected (sooner
than an engine's own 4 s, so when a dead link is redialled the referee has already let it go,
and the new connection is not refused as a second one)."""
GAME_PING_EVERY = 1.0
"""Seconds between the pings a remote engine gets during a game while another seat thinks."""
SUSPECT_PROBING = 2.0
"""Seconds a suspect route is probed (at each turn of the I/O thread, at least every 0.1 s)."""
SILENT_ADMISSION = HANDSHAKE_MS / 1000
"""Seconds after admitting a connection of a participant during which another one of it is refused
unless the first has spoken (an engine says hello at once)."""
HUB_DOMAIN = b"arbiter-hub-"
"""Prefix of every hub's ZAP domain: a connection to a hub's socket is admitted only by that hub."""
RECONNECTION_LOG_EVERY = 10.0
"""Seconds between two "reconnected" lines of one participant (the others are counted)."""
PROBE_SEQ = -1
"""Seq of the referee's liveness probes; their pongs are the hub's, not a session's."""


def listen_problem(endpoint: str) -> str | None:
    """What is wrong with a listening endpoint for remote participants; None for ``tcp://HOST:PORT``
    with a port of 0..65535 (or ``*``: any free one). ZeroMQ itself binds ``tcp://HOST:99999`` to port
    34463 and ``tcp://HOST:7a`` to port 7, without a word: the participants would dial a port nobody named."""
    host, colon, port = endpoint.removeprefix("tcp://").rpartition(":")
    if not endpoint.startswith("tcp://") or not colon or not host:
        return "expected tcp://HOST:PORT"
    if port != "*" and not (re.fullmatch(r"[0-9]{1,5}", port) and int(port) <= 65535):
        return f"the port is a number 0..65535, not {port!r}"
    return None


class RosterError(ValueError):
    """A roster that cannot be used; the message names the file (and line)."""


@dataclass(frozen=True)
class Participant:
    name: str
    public: str
    """Z85 CURVE public key (empty in an insecure roster entry without a key)."""
    engines: tuple[str, ...] = ()
    """Engine names the participant may play (besides its own name)."""


@dataclass
class Roster:
    """Who may connect: ``[[participant]]`` tables with ``name``, ``public`` (the Z85 key from
    the participant's ``.pub``) and optionally ``engines = [...]``; a top-level ``insecure = true``
    allows plain tcp."""

    participants: dict[str, Participant] = field(default_factory=dict)
    insecure: bool = False
    path: str = ""

    @classmethod
    def load(cls, path: str | Path) -> "Roster":
        path = Path(path)
        try:
            text = path.read_text()
            if text.startswith("\ufeff"):  # tomllib: "Invalid statement (at line 1, column 1)"
                raise RosterError(f"{path}:1: starts with a byte order mark (U+FEFF: some Windows editors begin "
                                  f"UTF-8 files with it), which TOML does not allow; save it as UTF-8 without BOM")
            data = tomllib.loads(text)
        except OSError as exc:
            raise RosterError(f"{path}: cannot read the roster: {exc.strerror or exc}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise RosterError(f"{path}: {exc}") from None
        headers = [i + 1 for i, line in enumerate(text.splitlines()) if line.strip().startswith("[[participant]]")]
        roster = cls(path=str(path))
        unknown = set(data) - {"participant", "insecure"}
        if unknown:
            raise RosterError(f"{path}: unknown key {sorted(unknown)[0]!r} (expected [[participant]] tables, insecure)")
        insecure = data.get("insecure", False)
        if not isinstance(insecure, bool):
            raise RosterError(f"{path}: insecure must be true or false")
        roster.insecure = insecure
        entries = data.get("participant", [])
        if not isinstance(entries, list) or not entries:
            raise RosterError(f"{path}: no [[participant]] tables")
        keys: dict[str, str] = {}
        for i, entry in enumerate(entries):
            where = f"{path}:{headers[i] if i < len(headers) else '?'}"
            if not isinstance(entry, dict):
                raise RosterError(f"{path}: participant {i + 1} is {entry!r}: each participant is a [[participant]] "
                                  f"table (name, public, engines)")
            name, public = entry.get("name"), entry.get("public", "")
            engines = entry.get("engines", [])
            extra = set(entry) - {"name", "public", "engines"}
            if extra:
                raise RosterError(f"{where}: unknown key {sorted(extra)[0]!r} (expected name, public, engines)")
            if not isinstance(name, str) or not name.strip():
                raise RosterError(f"{where}: participant without a name")
            if not valid_key(public) and not (insecure and public == ""):
                raise RosterError(f"{where}: participant {name!r}: public must be a 40-character Z85 key "
                                  f"(the 'public' line of its .pub file)")
            if not isinstance(engines, list) or not all(isinstance(e, str) for e in engines):
                raise RosterError(f"{where}: participant {name!r}: engines must be a list of names")
            if name in roster.participants or any(name in p.engines for p in roster.participants.values()):
                raise RosterError(f"{where}: duplicate participant {name!r}")
            for engine in engines:  # ``find`` must name one participant, or a seat goes to whoever is first
                owner = roster.find(engine)
                if owner is not None or engine == name or engines.count(engine) > 1:
                    raise RosterError(f"{where}: participant {name!r}: engine name {engine!r} is taken"
                                      + (f" by participant {owner.name!r}" if owner is not None else ""))
            if public and public in keys:
                raise RosterError(f"{where}: participant {name!r} has the same key as {keys[public]!r}")
            keys[public] = name
            roster.participants[name] = Participant(name, public, tuple(engines))
        return roster

    def find(self, name: str) -> Participant | None:
        """The participant called ``name`` or playing an engine called ``name``."""
        if name in self.participants:
            return self.participants[name]
        return next((p for p in self.participants.values() if name in p.engines), None)

    def by_key(self, public: bytes) -> Participant | None:
        text = z85.encode(public).decode() if len(public) == 32 else ""
        return next((p for p in self.participants.values() if p.public and p.public == text), None)


class _Head(msgspec.Struct):
    """What the hub reads of a message to file it: its type and game (the rest, skipped unread,
    is decoded by the session that reads it, in its engine's own time)."""

    type: str = ""
    game_id: str = ""
    seq: int = 0


_head_decoder = msgspec.msgpack.Decoder(_Head)
EAGER = frozenset({"hello", "pong"})
"""Types the hub decodes whole as they come (a hello is kept, a pong is timed on arrival); every
other message is filed as bytes after a look at its head (~1 ms for 1 MiB: its big fields are
skipped, never built). A full decode of a hostile 1 MiB message takes ~25 ms or more: done in the
hub's I/O thread for every frame, an engine flooding them while its opponent thought made that
opponent's reply wait behind them (seconds; it lost on time)."""
EAGER_MAX = 64 * 1024
"""Largest frame the hub decodes whole or files for a participant without a session (a hello with
many options is a few kB): a bigger hello or pong, or any big frame of a participant not playing
now, is a flood and is dropped unread. Decoded, 960 kB pongs of a roster member not seated cost
the honest players' replies up to 300 ms each (they lost on time)."""


def _head(data: bytes) -> _Head | None:
    try:
        return _head_decoder.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None


def _user_id(frame: zmq.Frame) -> str:
    """The participant a frame's connection was admitted as; "" if it came in unauthenticated
    (ZeroMQ then has no such property, and asking raised in the hub's I/O thread, which died)."""
    try:
        return frame.get("User-Id")
    except zmq.ZMQError:
        return ""


def _says_hello(data: bytes) -> bool:
    """``data`` is a msgpack map whose ``type`` is ``hello`` (a hello, valid or not)."""
    try:
        raw = msgspec.msgpack.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return False
    return isinstance(raw, dict) and raw.get("type") == "hello"


# --- ZAP: the authentication handler (one per ZeroMQ context) -------------------------------------

_network: tuple[int, zmq.Context] | None = None


def network_context() -> zmq.Context:
    """The ZeroMQ context of the listening hubs, apart from the local engines' one: its own I/O
    thread does the CURVE handshakes, so a storm of strangers on the tcp port never queues a local
    engine's reply behind its crypto (one per process: a forked worker makes its own)."""
    global _network
    if _network is None or _network[0] != os.getpid():
        _network = (os.getpid(), zmq.Context())
    return _network[1]



class _Zap(threading.Thread):
    """Answers ZeroMQ's authentication requests for every hub of the context (by ZAP domain)."""

    _instance: "_Zap | None" = None
    _lock = threading.Lock()

    def __init__(self):
        super().__init__(name="zap", daemon=True)
        self.pid = os.getpid()
        self.hubs: dict[bytes, RemoteHub] = {}
        self.socket = network_context().socket(zmq.REP)
        self.socket.linger = 0
        self.socket.bind("inproc://zeromq.zap.01")

    @classmethod
    def register(cls, hub: "RemoteHub") -> None:
        with cls._lock:
            if cls._instance is None or cls._instance.pid != os.getpid():  # a forked process has no parent's thread
                cls._instance = cls()
                cls._instance.start()
            cls._instance.hubs[hub.domain] = hub

    @classmethod
    def unregister(cls, hub: "RemoteHub") -> None:
        if cls._instance is not None:
            cls._instance.hubs.pop(hub.domain, None)

    def run(self) -> None:
        while True:
            try:
                frames = self.socket.recv_multipart()
            except zmq.ZMQError:
                return
            version, request_id, domain, address, _identity, mechanism = frames[:6]
            hub = self.hubs.get(domain)
            try:
                if hub is not None:
                    status, text, user = hub.authenticate(address.decode(errors="replace"), mechanism, frames[6:])
                elif domain.startswith(HUB_DOMAIN):  # a hub's socket not (or no longer) answered for: nobody gets in
                    status, text, user = 400, "the referee is not admitting connections", ""
                else:  # another socket of this process (not a hub's): as without a handler, admitted
                    status, text, user = 200, "OK", ""
            except Exception as exc:  # never let the handler die: the socket would stop admitting anyone
                status, text, user = 500, f"internal error: {exc}", ""
            self.socket.send_multipart([version, request_id, str(status).encode(), text.encode(),
                                        user.encode(), b""])


# --- the hub ----------------------------------------------------------------------------------------


@dataclass
class _Peer:
    """What the hub knows of one participant's link."""

    participant: Participant
    route: bytes | None = None
    """Routing id of the connection the participant last spoke on (where we send)."""
    fd: int | None = None
    suspect: float | None = None
    """When the monitor saw the connection's file descriptor close: probe the route (for a while:
    ZeroMQ may take a moment to drop the route, and a send before that still succeeds)."""
    gone_since: float | None = None
    """Monotonic time the participant's connection was found gone (None: connected or never was)."""
    hello: Hello | None = None
    """The participant's last hello (a new session of a connected participant starts from it)."""
    overflow: int = 0
    connections: tuple["RemoteConnection", ...] = ()
    """The referee's sessions with it, one per game it may be playing (``max_games``)."""
    pings: dict[int, "RemoteConnection"] = field(default_factory=dict)
    """Seq of each ping in flight outside a game -> the session that sent it (its pong goes there).
    Changed under ``ARRIVALS`` only: the participant's sessions ping and stop in several threads."""
    playing: int = 0
    """Games of it in play (``RemoteHub.claim``)."""
    welcomed: bytes | None = None
    """The route its last welcome after a reconnection went to (one welcome however many games)."""
    admitted: float | None = None
    """When a connection of its was admitted that has not spoken since (monotonic; None: none)."""
    reconnections: int = 0
    """Reconnections not yet logged (``RemoteHub.log_reconnection``)."""
    reconnection_logged: float = -math.inf
    """When its last "reconnected" line was printed (monotonic)."""
    hello_route: bytes | None = None
    """The connection its last valid hello came on: another hello there is dropped unread (an engine
    says hello once per connection; a flood of 1 MB hellos cost the hub ~40 ms each to decode,
    while other engines' replies waited). Forgotten when a connection of its closes."""

    @property
    def max_games(self) -> int:
        """Games it accepts at once: its hello's ``max_games`` (1 until it has said hello)."""
        return self.hello.max_games if self.hello is not None else 1


class RemoteHub:
    """The listening socket for remote participants. One I/O thread owns the socket: it reads and
    files each message into the inbox of the session it is for (by ``game_id``; a hello goes to
    every session of the participant), and sends what the sessions queue for it. Sessions may be
    used from several threads (a tournament's games in parallel); the ZAP and monitor threads
    only read and mark the peers' state."""

    _hubs: dict[str, "RemoteHub"] = {}

    def __init__(self, endpoint: str, roster: Roster, server_key: str | Path | None = None, *,
                 insecure: bool = False, deadline: float = 300.0, grace: float = 30.0,
                 lag: "LagPolicy | None" = None, log=None):
        if not insecure and server_key is None:
            raise KeyFileError("the referee's CURVE key is needed (--server-key FILE; arbiter keygen referee-curve)")
        self.roster, self.insecure, self.grace = roster, insecure, grace
        self.deadline = time.monotonic() + deadline
        """Participants not connected by then are absent."""
        self.lag = lag or LagPolicy()
        self.log = log or say
        self.peers = {name: _Peer(p) for name, p in roster.participants.items()}
        self.refused: list[tuple[str, str, str]] = []
        """(address, key fingerprint, why) of every refused connection, in order."""
        self.strangers = 0
        self.stale = 0
        """Messages for no session (a game that is over, a ping nobody waits for), dropped."""
        self.unfiled = 0
        """Frames dropped because filing them failed (a bug: each is logged, up to a point)."""
        self.domain = HUB_DOMAIN + f"{id(self):x}".encode()
        self._seqs = itertools.count(1)
        self._lock = threading.Lock()
        """Held for every use of the socket: the I/O thread's reads, any session's sends."""
        raise_fd_limit()
        self.socket = network_context().socket(zmq.ROUTER)
        s = self.socket
        s.linger = 0
        s.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_SIZE)
        s.setsockopt(zmq.RCVHWM, RECEIVE_HWM)
        s.setsockopt(zmq.ROUTER_MANDATORY, 1)
        s.setsockopt(zmq.HANDSHAKE_IVL, HANDSHAKE_MS)
        s.setsockopt(zmq.HEARTBEAT_IVL, HEARTBEAT_MS)
        s.setsockopt(zmq.HEARTBEAT_TIMEOUT, HEARTBEAT_TIMEOUT_MS)
        s.setsockopt(zmq.HEARTBEAT_TTL, HEARTBEAT_TIMEOUT_MS)
        if endpoint.startswith("tcp://["):  # tcp://[::]:PORT, [::1]: "No such device" without it (only then: set
            s.setsockopt(zmq.IPV6, 1)     # for 0.0.0.0, ZeroMQ calls the endpoint tcp://[::ffff:0.0.0.0]:PORT)
        s.zap_domain = self.domain
        _Zap.register(self)  # before the port opens: a connection admitted without it had no participant's name
        try:
            if not insecure:
                public, secret = load_keypair(server_key)
                s.curve_server = True
                s.curve_publickey, s.curve_secretkey = public, secret
            s.bind(endpoint)
            self._wake_r, self._wake_w = os.pipe()
        except BaseException:
            s.close(linger=0)
            _Zap.unregister(self)
            raise
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        monitor = s.get_monitor_socket(zmq.EVENT_DISCONNECTED | zmq.EVENT_MONITOR_STOPPED
                                       | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL)
        self._watcher = threading.Thread(target=self._watch, args=(monitor,), name="hub-monitor", daemon=True)
        self._watcher.start()
        self.endpoint = s.getsockopt(zmq.LAST_ENDPOINT).decode()
        self.poller = zmq.Poller()  # on the socket's signalling fd, not the socket: sends need no hand-over
        self.poller.register(s.getsockopt(zmq.FD), zmq.POLLIN)
        self.poller.register(self._wake_r, zmq.POLLIN)
        self._closing = False
        self._io = threading.Thread(target=self._run, name="hub-io", daemon=True)
        self._io.start()
        RemoteHub._hubs[self.endpoint] = self
        if insecure:
            self.log(f"WARNING: INSECURE: {self.endpoint} is plain tcp without CURVE: anyone on the network can read "
                     f"the games and take a seat by its name; every record says so")

    def log_reconnection(self, peer: _Peer) -> None:
        """"NAME reconnected", at most once per ``RECONNECTION_LOG_EVERY`` seconds and participant,
        with how many times since the last such line: an engine saying hello on two connections in
        turn was 62,016 lines (1 MB of output) in 40 s."""
        peer.reconnections += 1
        now = time.monotonic()
        if now - peer.reconnection_logged < RECONNECTION_LOG_EVERY:
            return
        times = f" ({peer.reconnections} times since its last such line)" if peer.reconnections > 1 else ""
        peer.reconnections, peer.reconnection_logged = 0, now
        self.log(f"{peer.participant.name} reconnected{times}")

    @classmethod
    def at(cls, endpoint: str) -> "RemoteHub":
        hub = cls._hubs.get(endpoint)
        if hub is None:
            raise KeyError(f"no remote hub listens on {endpoint}")
        return hub

    # --- admission (ZAP thread) ----------------------------------------------------------------

    def authenticate(self, address: str, mechanism: bytes, credentials: list[bytes]) -> tuple[int, str, str]:
        """ZAP verdict for one connection: (status, text, user id = participant name)."""
        if mechanism == b"NULL" and self.insecure:
            return 200, "OK", ""
        if mechanism != b"CURVE" or not credentials:
            return self._refuse(address, "-", f"mechanism {mechanism.decode(errors='replace')} not allowed")
        key = credentials[0]
        participant = self.roster.by_key(key)
        if participant is None:
            return self._refuse(address, fingerprint(key), "key not in the roster")
        peer = self.peers[participant.name]
        if peer.route is not None and peer.gone_since is None and peer.suspect is None:
            return self._refuse(address, fingerprint(key), f"{participant.name} is already connected")
        now = time.monotonic()
        if peer.admitted is not None and now - peer.admitted < SILENT_ADMISSION:
            # a connection that has not spoken yet has no route, so the rule above did not see it: a
            # participant opened any number of connections at once, each admitted (a file descriptor each)
            return self._refuse(address, fingerprint(key), f"{participant.name} is connecting already (a connection "
                                                           f"admitted {now - peer.admitted:.1f} s ago has not spoken)")
        peer.admitted = now
        return 200, "OK", participant.name

    def _refuse(self, address: str, key: str, why: str) -> tuple[int, str, str]:
        if len(self.refused) < 10000:  # bounded: a storm of strangers must not grow memory
            self.refused.append((address, key, why))
        if len(self.refused) <= 100 or len(self.refused) % 1000 == 0:
            self.log(f"refused a connection from {address}, key {key}: {why}"
                     + (f" ({len(self.refused)} refused so far)" if len(self.refused) > 100 else ""))
        return 400, why, ""

    def _watch(self, monitor: zmq.Socket) -> None:
        """Monitor thread: a closed connection of a participant makes its route suspect; a
        connection whose CURVE handshake fails before the key check (its HELLO not made for this
        referee's key: an entrant with the wrong --server-key, or not an engine at all) is
        logged, at most once a minute (ZeroMQ retries such a connection ten times a second)."""
        said = -math.inf
        try:
            while True:
                frames = monitor.recv_multipart()
                event, value = struct.unpack_from("=Hi", frames[0])
                if event == zmq.EVENT_MONITOR_STOPPED:
                    return
                if event in (zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL, zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL):
                    if time.monotonic() - said > 60:
                        said = time.monotonic()
                        self.log("a connection failed the ZeroMQ handshake before its key could be checked: an "
                                 "engine given another --server-key than this referee's .pub, or not an engine "
                                 "at all (said once a minute)")
                    continue
                for peer in self.peers.values():
                    if peer.fd == value:
                        peer.suspect = time.monotonic()
                        peer.hello_route = None  # a reconnection with a routing id of its own says hello there
                self._wake()
        except zmq.ZMQError:
            return
        finally:
            monitor.close(linger=0)

    # --- traffic (I/O thread) --------------------------------------------------------------------

    def _run(self) -> None:
        """The I/O thread: reads and files what arrives, probes suspect routes. It waits on the
        socket's signalling fd (edge-triggered: the socket's ``EVENTS`` is checked after every use,
        here and after each send) and on a pipe other threads write to to wake it."""
        wake = self._wake_r
        while not self._closing:
            with self._lock:
                self._probe()
            self._read()
            with self._lock:
                more = not self._closing and self.socket.getsockopt(zmq.EVENTS) & zmq.POLLIN
            if more:
                continue
            try:
                ready = dict(self.poller.poll(100))
            except zmq.ZMQError:
                return
            if wake in ready:
                try:
                    os.read(wake, 4096)
                except BlockingIOError:
                    pass

    def _read(self) -> None:
        """Read up to ``PUMP_BURST`` frames (bounded work per turn) and file each one, stamped
        with its arrival, at once: the session waiting for it wakes then, not after the burst
        (whose other frames may be another engine's flood). The socket's lock is held for each
        read alone: held for a whole burst, taken again at once, it kept a session's send (the
        next request, a ping) waiting for most of a second while an engine flooded the port."""
        for _ in range(PUMP_BURST):
            with self._lock:
                if self._closing:
                    return
                try:
                    frames = self.socket.recv_multipart(flags=zmq.NOBLOCK, copy=False)
                except zmq.ZMQError:  # EAGAIN: nothing more
                    break
            arrived = time.monotonic()
            with ARRIVALS:  # the sessions' list of a peer does not change meanwhile
                try:
                    filed = self._file(frames, arrived)
                except Exception as exc:  # a frame the hub cannot file is dropped; the thread that hears everyone lives
                    self.unfiled += 1
                    if self.unfiled <= 10 or self.unfiled % 1000 == 0:
                        self.log(f"dropped a frame the hub could not file ({self.unfiled} so far): {exc!r}")
                    continue
                if filed:
                    ARRIVALS.notify_all()

    def _file(self, frames: list, arrived: float) -> bool:
        route, payload = frames[0].bytes, frames[1:]
        if not payload:
            self.strangers += 1
            return False
        data = payload[0]
        user = "" if self.insecure else _user_id(data)
        peer = self.peers.get(user) if user else None
        if peer is not None:
            peer.admitted = None  # its admitted connection spoke: the usual rule (one healthy route) holds
        if peer is not None and peer.connections and all(len(c.inbox) >= QUEUE_LIMIT for c in peer.connections):
            peer.overflow += 1  # a flood its sessions have not read: dropped unread (no decoding cost)
            return False
        if peer is not None and not peer.connections and len(data) > EAGER_MAX:
            peer.overflow += 1  # nobody would read it: dropped before even a look at its head
            return False
        msg: Message | ProtocolError
        head = _head(data.bytes) if len(payload) == 1 and peer is not None else None
        if head is not None and head.type == "hello" and route == peer.hello_route:
            peer.overflow += 1  # its connection's hello came already
            return False
        if head is not None and head.type in EAGER and len(data) > EAGER_MAX:
            peer.overflow += 1  # too big to decode here, in the thread that hears everyone
            return False
        if head is not None and head.type not in EAGER:
            msg = head  # filed as bytes: decoded by the session that reads it
        elif len(payload) != 1:  # malformed, as from a local engine (it is the participant's: its key says so)
            msg = ProtocolError(f"expected one frame per message, got {len(payload)}")
        else:
            try:
                msg = decode(data.bytes)
            except ProtocolError as exc:
                msg = exc  # garbage: the session that reads it forfeits the engine (``receive``)
        if self.insecure:
            peer = self._insecure_peer(route, msg)
        if peer is None:
            self.strangers += 1
            return False
        if route != peer.route:
            peer.route, peer.gone_since, peer.suspect = route, None, None
            try:
                peer.fd = data.get(zmq.SRCFD)
            except zmq.ZMQError:
                peer.fd = None
        if isinstance(msg, Pong) and msg.seq == PROBE_SEQ:
            return False
        if isinstance(msg, ProtocolError) and not any(c.introduced for c in peer.connections) \
                and _says_hello(data.bytes):  # dropped as not a hello (below), but the engine is told why
            with self._lock:
                self._send_now(peer, encode(Error(code=ErrorCode.MALFORMED, message=str(msg))))
        if isinstance(msg, Hello):
            peer.hello, peer.hello_route = msg, route
            targets = peer.connections
        else:
            targets = self._route(peer, msg)
            if isinstance(msg, Pong):  # an in-game ping's answer is timed now, on arrival
                targets = tuple(c for c in targets if not (c.on_pong is not None and c.on_pong(msg)))
        item = (arrived, data.bytes if isinstance(msg, _Head) else msg)
        for connection in targets:
            if len(connection.inbox) >= QUEUE_LIMIT:
                peer.overflow += 1
            else:
                connection.inbox.append(item)
        return bool(targets)

    def _route(self, peer: _Peer, msg: "Message | ProtocolError") -> tuple["RemoteConnection", ...]:
        """The session a message is for: the one playing its ``game_id``; outside a game, the one
        whose ping it answers; else the participant's first (which drops it as stale)."""
        connections = peer.connections
        if isinstance(msg, ProtocolError):  # undecodable: every game it is playing is forfeited
            return tuple(c for c in connections if c.game_id) or connections[:1]
        if msg.game_id:
            for c in connections:
                if c.game_id == msg.game_id:
                    return (c,)
        elif isinstance(msg, Pong) and msg.seq in peer.pings:
            return (peer.pings.pop(msg.seq),)
        if not connections:
            self.stale += 1
        return connections[:1]

    def _insecure_peer(self, route: bytes, msg: "Message | ProtocolError") -> _Peer | None:
        """Without CURVE: the peer that spoke from ``route`` before, or the one a hello names."""
        for peer in self.peers.values():
            if peer.route == route:
                return peer
        return self.peers.get(msg.name) if isinstance(msg, Hello) else None

    def _probe(self) -> None:
        """Check suspect routes: sending to a closed connection fails at once (ROUTER_MANDATORY)."""
        for peer in self.peers.values():
            if peer.suspect is not None and peer.route is not None and peer.gone_since is None:
                if not self._send_now(peer, encode(Ping(seq=PROBE_SEQ))):
                    peer.gone_since = time.monotonic()
                elif time.monotonic() - peer.suspect > SUSPECT_PROBING:
                    peer.suspect = None  # still there: another connection of its closed

    def _send_now(self, peer: _Peer, data: bytes) -> bool:
        if peer.route is None or peer.gone_since is not None:
            return False
        try:
            self.socket.send_multipart([peer.route, data], flags=zmq.NOBLOCK)
            return True
        except zmq.ZMQError:  # EHOSTUNREACH: the connection is gone; EAGAIN: it does not read
            peer.gone_since = time.monotonic()
            return False

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"!")
        except (BlockingIOError, OSError):
            pass  # the pipe is full (the I/O thread will wake anyway) or closed

    # --- for the sessions (any thread) -----------------------------------------------------------

    def send(self, peer: _Peer, message: "Message | bytes") -> bool:
        """Send to the participant's current connection; False if it has none (now)."""
        data = message if isinstance(message, bytes) else encode(message)
        with self._lock:
            if self._closing:
                return False
            sent = self._send_now(peer, data)
            if self.socket.getsockopt(zmq.EVENTS) & zmq.POLLIN:
                self._wake()  # the send may have taken the fd's signal of something to read
        return sent

    def next_seq(self) -> int:
        """A seq no other session of this hub uses (pings outside a game are routed back by it)."""
        return next(self._seqs)

    def connection(self, name: str) -> "RemoteConnection":
        participant = self.roster.find(name)
        if participant is None:
            raise KeyError(f"{name!r} is not in the roster {self.roster.path}")
        peer = self.peers[participant.name]
        connection = RemoteConnection(self, peer)
        with ARRIVALS:
            if peer.hello is not None and peer.gone_since is None:
                connection.inbox.append((time.monotonic(), peer.hello))  # a new session of a connected participant
            peer.connections = (*peer.connections, connection)
        return connection

    def claim(self, names: list[str], timeout: float) -> bool:
        """Count a game for each participant in ``names`` (engine or participant names; others are
        ignored), waiting up to ``timeout`` until each of them plays fewer games than its
        ``max_games``; False if that did not happen in time (nothing is counted then)."""
        peers = [self.peers[p.name] for p in filter(None, map(self.roster.find, names))]
        deadline = time.monotonic() + timeout
        with ARRIVALS:
            while any(p.playing >= p.max_games for p in peers):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                ARRIVALS.wait(min(left, 0.1))
            for p in peers:
                p.playing += 1
        return True

    def release(self, names: list[str]) -> None:
        """The game counted by ``claim(names)`` is over."""
        with ARRIVALS:
            for p in filter(None, map(self.roster.find, names)):
                self.peers[p.name].playing -= 1
            ARRIVALS.notify_all()

    def close(self) -> None:
        RemoteHub._hubs.pop(self.endpoint, None)
        with self._lock:
            if self._closing:
                return
            self._closing = True
        self._wake()
        self._io.join(2.0)
        try:
            self.socket.disable_monitor()
        except zmq.ZMQError:
            pass
        self._watcher.join(1.0)
        self.socket.close(linger=0)
        _Zap.unregister(self)  # after the socket: it never asks again
        with self._lock:
            for fd in (self._wake_r, self._wake_w):
                os.close(fd)
            self._wake_r = self._wake_w = -1  # never written to once closed (the number may be reused)


ARRIVALS = threading.Condition()
"""Notified whenever a hub files messages for a session, or a game of a participant ends."""


class RemoteConnection:
    """One session's view of a participant's link, as a ``protocol.connection.Connection``: it
    receives the messages of the game it plays (a participant with ``max_games`` > 1 has several
    at once). It stays usable while the participant is away: what is sent meanwhile is resent
    when it is back (its hello, on any new connection, is answered with welcome, the current
    game's ``new_game`` and the pending request carrying every move of the game so far)."""

    def __init__(self, hub: RemoteHub, peer: _Peer):
        self.hub, self.peer = hub, peer
        self.endpoint = hub.endpoint
        self.inbox: collections.deque = collections.deque()
        """(arrival, message) for this session: the message decoded (a ``ProtocolError``: one that
        was not a valid message) or its bytes, decoded when read."""
        self.arrived = 0.0
        """When the message ``receive`` returned last reached the hub (monotonic)."""
        self.introduced = False
        self.game: NewGame | None = None
        self.game_id = ""
        """The game this session plays: messages with its id come here."""
        self.moves: list[str] = []
        """Every move the engine has been told of in the current game (for a resend)."""
        self.pending: Request | None = None
        self.resent_ready: int | None = None
        self.awaiting_ready: int | None = None
        """Seq of the ``new_game`` whose ``ready`` the session waits for now (a resent one's ready is
        then the answer, not dropped: dropped, a participant back within the wait stalled)."""
        self.reconnections = 0
        self.stale = 0
        """Messages before the participant's hello, dropped unread."""
        self.on_pong = None
        """Called by the I/O thread with each pong for this session; True: consumed (not filed)."""

    @property
    def connected(self) -> bool:
        return self.introduced

    @property
    def disconnected(self) -> bool:
        """Gone for longer than the grace period."""
        gone = self.peer.gone_since
        return gone is not None and time.monotonic() - gone > self.hub.grace

    @property
    def away(self) -> bool:
        return self.peer.gone_since is not None

    def send(self, message: Message) -> None:
        if isinstance(message, NewGame):
            self.game, self.game_id, self.moves, self.pending = message, message.game_id, [], None
        elif isinstance(message, Request):
            self.moves.extend(message.last_moves)
            self.pending = message
        elif isinstance(message, GameOver):
            self.game, self.pending = None, None  # game_id kept: late replies still come here, to be dropped
        elif isinstance(message, Ping) and not message.game_id:
            with ARRIVALS:  # another game's session may be walking the list (``close``)
                self.peer.pings[message.seq] = self
        if not self.hub.send(self.peer, message) and self.disconnected:
            raise ConnectionError(f"{self.peer.participant.name} is disconnected")

    def wait(self, timeout_ms: int) -> bool:
        if self.inbox:
            return True
        with ARRIVALS:
            return bool(ARRIVALS.wait_for(lambda: self.inbox, max(0, timeout_ms) / 1000))

    @staticmethod
    def wait_any(connections: "list[RemoteConnection]", timeout_ms: int) -> set[int]:
        ready = {i for i, c in enumerate(connections) if c.inbox}
        if ready or timeout_ms <= 0:
            return ready
        with ARRIVALS:
            ARRIVALS.wait_for(lambda: any(c.inbox for c in connections), timeout_ms / 1000)
        return {i for i, c in enumerate(connections) if c.inbox}

    def receive(self) -> Message | None:
        if not self.inbox:
            return None
        self.arrived, msg = self.inbox.popleft()
        if not self.introduced and not isinstance(msg, Hello):
            self.stale += 1  # e.g. a reply an engine had queued for a referee that was restarted since
            return None
        if isinstance(msg, bytes):
            msg = decode(msg)  # raises ProtocolError for garbage
        if isinstance(msg, ProtocolError):
            raise ProtocolError(*msg.args)  # the engine sent garbage (a fresh one: sessions may share it)
        if isinstance(msg, Hello):
            if self.hub.insecure and msg.name != self.peer.participant.name:
                return None
            if not self.introduced:
                self.introduced = True
                return msg
            self._resume()
            return None
        if isinstance(msg, Ready) and self.resent_ready is not None and msg.seq == self.resent_ready:
            self.resent_ready = None
            return None
        return msg

    def _resume(self) -> None:
        """The participant is back on a new connection: bring it up to date."""
        self.reconnections += 1
        if self.peer.welcomed != self.peer.route:  # the first of its sessions to read the hello
            self.peer.welcomed = self.peer.route
            self.hub.log_reconnection(self.peer)
            self.hub.send(self.peer, Welcome(referee="arbiter"))
        if self.game is not None:
            self.resent_ready = None if self.awaiting_ready == self.game.seq else self.game.seq
            self.hub.send(self.peer, self.game)
            if self.pending is not None:
                again = Request(**{f: getattr(self.pending, f) for f in self.pending.__struct_fields__})
                again.last_moves = list(self.moves)
                while len(again.last_moves) > 1 and len(encode(again)) > MAX_MESSAGE_SIZE:
                    again.last_moves = again.last_moves[len(again.last_moves) // 2:]  # the newest that fit
                self.hub.send(self.peer, again)

    def close(self) -> None:
        with ARRIVALS:
            self.peer.connections = tuple(c for c in self.peer.connections if c is not self)
            for seq in [s for s, c in self.peer.pings.items() if c is self]:
                del self.peer.pings[seq]


# --- fair lag ---------------------------------------------------------------------------------------


# --- the session ----------------------------------------------------------------------------------


class RemoteSession(EngineSession):
    """A remote participant's engine: no process; its seat is held through disconnections."""

    insecure = False

    def __init__(self, config: EngineConfig, log_dir: Path):
        super().__init__(config, log_dir)
        self.hub = RemoteHub.at(config.endpoint)
        self.insecure = self.hub.insecure
        self.lag = LagAccount(self.hub.lag)
        self._game_ping: tuple[int, float] | None = None
        self._game_ping_at = 0.0
        self._asked_at = 0.0
        self.game_pings = 0
        """In-game pings answered (each one an RTT sample)."""

    def launch(self) -> None:
        try:
            self.connection = self.hub.connection(self.config.participant)
        except KeyError as exc:
            raise EngineFault(EndReason.NOT_STARTED, str(exc.args[0])) from None
        self.connection.on_pong = self._pong

    def watch(self) -> None:
        """Called while another seat of its game thinks: now and then (``GAME_PING_EVERY``) a
        ping, with the game's id, whose round trip is one more sample of the link's RTT (the lag
        bound follows the link during the game, not only as it was at the handshake). Never
        raises; an unanswered ping costs nothing (the transport's heartbeats judge liveness)."""
        c = self.connection
        now = time.monotonic()
        if c is None or c.game is None or c.away or now - self._game_ping_at < GAME_PING_EVERY:
            return
        self._game_ping_at = now
        self._game_ping = (self.hub.next_seq(), now)
        self.hub.send(c.peer, Ping(game_id=c.game_id, seq=self._game_ping[0]))

    def _pong(self, pong: Pong) -> bool:
        """(I/O thread) The answer to the in-game ping: its round trip is an RTT sample."""
        ping = self._game_ping
        if ping is None or pong.seq != ping[0]:
            return False
        self._game_ping = None
        self.lag.rtts.append((time.monotonic() - ping[1]) * 1000)
        self.game_pings += 1
        return True

    def handshake(self, game: str | None = None) -> None:
        """Wait for the participant until the event's deadline; absent past it. A participant that
        had come and whose link dropped (between games: the ping before the next one failed, and
        this is a fresh session for it) is waited for until its grace period ends instead, and
        forfeits ``disconnect`` past it: it was given 'absent' at once once the deadline had passed."""
        now, peer = time.monotonic(), self.connection.peer
        came = peer.hello is not None
        left = self.hub.deadline - now
        if came and peer.gone_since is not None:
            left = max(left, peer.gone_since + self.hub.grace - now)
        self.config = _with_timeout(self.config, max(0.05, left))
        try:
            super().handshake(game)
        except EngineFault as fault:
            if came and fault.reason in (EndReason.STALL, EndReason.DISCONNECT):
                raise ParticipantFault(EndReason.DISCONNECT, f"{self.config.participant}'s connection was lost (not "
                                                             f"back within {self.hub.grace:g} s)") from None
            if fault.reason == EndReason.STALL:
                raise ParticipantFault(EndReason.ABSENT, f"{self.config.participant} did not connect by the "
                                                         f"deadline") from None
            raise
        self.ping()

    def ping(self, timeout: float = 5.0) -> None:
        """A real round trip every time (never skipped): its time is a sample of the link's RTT."""
        self._pings += 1
        started = time.monotonic()
        answer = self._request(Ping(seq=self.hub.next_seq()), timeout, "pong")
        if not isinstance(answer, Pong):
            raise EngineFault(EndReason.PROTOCOL_ERROR, f"expected pong, got {_tag(answer)}")
        self.lag.rtts.append((time.monotonic() - started) * 1000)

    def poll_reply(self):
        """The reply is timed to when it reached the hub (its I/O thread stamps every frame), not
        to when the referee's thread got to it: another engine's traffic is never this one's time."""
        reply = super().poll_reply()
        if reply is not None and self.connection is not None:  # never before the request (a reply sent ahead)
            self.read_at = max(self.connection.arrived, self._asked_at)
        return reply

    def ask(self, request: Request) -> float:
        self._asked_at = super().ask(request)
        return self._asked_at

    def arrival(self) -> float | None:
        """When the first message waiting to be read reached the hub (None: nothing waits)."""
        inbox = self.connection.inbox if self.connection is not None else None
        try:
            return inbox[0][0] if inbox else None
        except IndexError:  # read meanwhile by another thread
            return None

    def start_game(self, message: NewGame) -> None:
        self.lag.new_game()
        super().start_game(message)

    def new_game(self, message: NewGame) -> None:
        """A participant whose link drops while it is sent ``new_game`` is given back its game when it
        returns (the resent ``new_game``'s ready answers); one still away when the wait ends is lost
        (``disconnect``, not ``stall``), its seat then waited for until its grace period ends."""
        connection = self.connection
        connection.awaiting_ready = message.seq
        try:
            super().new_game(message)
        except EngineFault as fault:
            if fault.reason == EndReason.STALL and connection.away:
                raise self._lost_fault(f"{self.config.participant}'s connection was lost") from None
            raise
        finally:
            connection.awaiting_ready = None

    def alive(self) -> bool:
        return self.connection is not None and not self.connection.disconnected

    def _lost_fault(self, detail: str) -> EngineFault:
        return EngineFault(EndReason.DISCONNECT, f"{detail} (not back within {self.hub.grace:g} s)")

    def check_alive(self) -> None:
        connection = self.connection  # None once stopped (by a host closing down from another thread)
        if connection is None or connection.disconnected:
            raise self._lost_fault(f"{self.config.participant}'s connection was lost")

    def stop(self, grace: float = 0.5) -> None:
        """Let go of the participant without telling it to quit: it stays connected for its next
        game (``request_quit`` is what ends it, at the end of a match or event)."""
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    def slack(self) -> float:
        """Seconds the watchdog waits beyond the allowance: the most lag that can be compensated."""
        return self.lag.bound_ms() / 1000


def _with_timeout(config: EngineConfig, seconds: float) -> EngineConfig:
    import dataclasses

    return dataclasses.replace(config, handshake_timeout=seconds)
