"""Remote engines: participants who run their engine on their own machine and connect over tcp.

One ``RemoteHub`` per listening endpoint: a ROUTER socket that every participant connects to,
CURVE-encrypted, with a ZAP handler that admits only keys of the ``Roster`` (before any protocol
message is read) and at most one healthy connection per key. Messages are told apart by the
``User-Id`` the ZAP handler gave the connection (the participant's name), so a participant can
speak only for itself, whatever it puts in its messages. ``RemoteSession`` is the referee's
session with one participant: it waits for it until a deadline (``absent``), survives a dropped
connection for a grace period (the engine is sent the game again when it is back, else
``disconnect``), and compensates network lag within a documented quota (``LagPolicy``).

Plain tcp (no CURVE) exists only for an explicit ``insecure`` event: then a hello's ``name``
says who is who, and every record says ``insecure``.
"""
from __future__ import annotations

import collections
import os
import struct
import sys
import threading
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import zmq
from zmq.utils import z85

from protocol import ProtocolError
from protocol.codec import MAX_MESSAGE_SIZE, decode, encode
from protocol.curve import KeyFileError, fingerprint, load_keypair, valid_key
from protocol.messages import (EndReason, GameOver, Hello, Message, NewGame, Ping, Pong, Ready, Request,
                               Welcome)
from protocol.transport import RECEIVE_HWM

from .process import EngineConfig
from .session import EngineFault, EngineSession, raise_fd_limit

QUEUE_LIMIT = 256
"""Messages kept per participant until its session reads them; more is a flood and is dropped."""
PUMP_BURST = 256
"""At most this many frames are read from the socket in one go (bounded CPU per poll)."""
HANDSHAKE_MS = 5000
"""A connection that has not completed its CURVE handshake by then is closed (slowloris)."""
HEARTBEAT_MS, HEARTBEAT_TIMEOUT_MS = 1000, 3000
"""ZeroMQ heartbeats: a peer silent at the transport level this long is disconnected (sooner
than an engine's own 4 s, so when a dead link is redialled the referee has already let it go,
and the new connection is not refused as a second one)."""
PROBE_SEQ = -1
"""Seq of the referee's liveness probes; their pongs are the hub's, not a session's."""


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
        self.hubs: dict[bytes, RemoteHub] = {}
        self.socket = network_context().socket(zmq.REP)
        self.socket.linger = 0
        self.socket.bind("inproc://zeromq.zap.01")

    @classmethod
    def register(cls, hub: "RemoteHub") -> None:
        with cls._lock:
            if cls._instance is None:
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
                # another socket of this process (not a hub's): as without a handler, admitted
                status, text, user = (hub.authenticate(address.decode(errors="replace"), mechanism, frames[6:])
                                      if hub is not None else (200, "OK", ""))
            except Exception as exc:  # never let the handler die: the socket would stop admitting anyone
                status, text, user = 500, f"internal error: {exc}", ""
            self.socket.send_multipart([version, request_id, str(status).encode(), text.encode(),
                                        user.encode(), b""])


# --- the hub ----------------------------------------------------------------------------------------


@dataclass
class _Peer:
    """What the hub knows of one participant's link."""

    participant: Participant
    queue: collections.deque = field(default_factory=lambda: collections.deque())
    route: bytes | None = None
    """Routing id of the connection the participant last spoke on (where we send)."""
    fd: int | None = None
    suspect: bool = False
    """The monitor saw the connection's file descriptor close: probe the route."""
    gone_since: float | None = None
    """Monotonic time the participant's connection was found gone (None: connected or never was)."""
    hello: Hello | None = None
    """The participant's last hello (a new session of a connected participant starts from it)."""
    overflow: int = 0
    connection: "RemoteConnection | None" = None


class RemoteHub:
    """The listening socket for remote participants. Single-threaded use (the referee's thread),
    apart from the ZAP and monitor threads that only read and mark the peers' state."""

    _hubs: dict[str, "RemoteHub"] = {}

    def __init__(self, endpoint: str, roster: Roster, server_key: str | Path | None = None, *,
                 insecure: bool = False, deadline: float = 300.0, grace: float = 30.0,
                 lag: "LagPolicy | None" = None, log=None):
        if not insecure and server_key is None:
            raise KeyFileError("the referee's CURVE key is needed (--server-key FILE; arbiter keygen referee)")
        self.roster, self.insecure, self.grace = roster, insecure, grace
        self.deadline = time.monotonic() + deadline
        """Participants not connected by then are absent."""
        self.lag = lag or LagPolicy()
        self.log = log or (lambda text: print(text, file=sys.stderr, flush=True))
        self.peers = {name: _Peer(p) for name, p in roster.participants.items()}
        self.refused: list[tuple[str, str, str]] = []
        """(address, key fingerprint, why) of every refused connection, in order."""
        self.strangers = 0
        self.domain = f"arbiter-{id(self):x}".encode()
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
        s.zap_domain = self.domain
        try:
            if not insecure:
                public, secret = load_keypair(server_key)
                s.curve_server = True
                s.curve_publickey, s.curve_secretkey = public, secret
            s.bind(endpoint)
        except BaseException:
            s.close(linger=0)
            raise
        _Zap.register(self)
        monitor = s.get_monitor_socket(zmq.EVENT_DISCONNECTED | zmq.EVENT_MONITOR_STOPPED)
        self._watcher = threading.Thread(target=self._watch, args=(monitor,), name="hub-monitor", daemon=True)
        self._watcher.start()
        self.endpoint = s.getsockopt(zmq.LAST_ENDPOINT).decode()
        self.poller = zmq.Poller()
        self.poller.register(s, zmq.POLLIN)
        RemoteHub._hubs[self.endpoint] = self
        if insecure:
            self.log(f"WARNING: INSECURE: {self.endpoint} is plain tcp without CURVE: anyone on the network can read "
                     f"the games and take a seat by its name; every record says so")

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
        if peer.route is not None and peer.gone_since is None and not peer.suspect:
            return self._refuse(address, fingerprint(key), f"{participant.name} is already connected")
        return 200, "OK", participant.name

    def _refuse(self, address: str, key: str, why: str) -> tuple[int, str, str]:
        if len(self.refused) < 10000:  # bounded: a storm of strangers must not grow memory
            self.refused.append((address, key, why))
        if len(self.refused) <= 100 or len(self.refused) % 1000 == 0:
            self.log(f"refused a connection from {address}, key {key}: {why}"
                     + (f" ({len(self.refused)} refused so far)" if len(self.refused) > 100 else ""))
        return 400, why, ""

    def _watch(self, monitor: zmq.Socket) -> None:
        """Monitor thread: a closed connection of a participant makes its route suspect."""
        try:
            while True:
                frames = monitor.recv_multipart()
                event, value = struct.unpack_from("=Hi", frames[0])
                if event == zmq.EVENT_MONITOR_STOPPED:
                    return
                for peer in self.peers.values():
                    if peer.fd == value:
                        peer.suspect = True
        except zmq.ZMQError:
            return
        finally:
            monitor.close(linger=0)

    # --- traffic (referee thread) ----------------------------------------------------------------

    def pump(self, timeout_ms: int) -> None:
        """Wait up to ``timeout_ms`` for frames; file up to ``PUMP_BURST`` of them by participant."""
        self._probe()
        if not self.poller.poll(max(0, timeout_ms)):
            return
        for _ in range(PUMP_BURST):
            try:
                frames = self.socket.recv_multipart(flags=zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            except zmq.ZMQError:
                return
            self._file(frames)

    def _file(self, frames: list) -> None:
        route, payload = frames[0].bytes, frames[1:]
        if len(payload) != 1:
            self.strangers += 1
            return
        data = payload[0]
        user = data.get("User-Id") if not self.insecure else ""
        peer = self.peers.get(user) if user else self._insecure_peer(route, data.bytes)
        if peer is None:
            self.strangers += 1
            return
        if route != peer.route:
            peer.route, peer.gone_since, peer.suspect = route, None, False
            try:
                peer.fd = data.get(zmq.SRCFD)
            except zmq.ZMQError:
                peer.fd = None
        body = data.bytes
        if body[:40].find(b"pong") >= 0:
            try:
                msg = decode(body)
                if isinstance(msg, Pong) and msg.seq == PROBE_SEQ:
                    return
            except ProtocolError:
                pass
        if len(peer.queue) >= QUEUE_LIMIT:
            peer.overflow += 1
            return
        peer.queue.append(body)

    def _insecure_peer(self, route: bytes, body: bytes) -> _Peer | None:
        """Without CURVE: the peer that spoke from ``route`` before, or the one a hello names."""
        for peer in self.peers.values():
            if peer.route == route:
                return peer
        try:
            msg = decode(body)
        except ProtocolError:
            return None
        return self.peers.get(msg.name) if isinstance(msg, Hello) else None

    def _probe(self) -> None:
        """Check suspect routes: sending to a closed connection fails at once (ROUTER_MANDATORY)."""
        for peer in self.peers.values():
            if peer.suspect and peer.route is not None:
                peer.suspect = False
                if not self.send(peer, Ping(seq=PROBE_SEQ)):
                    peer.gone_since = peer.gone_since or time.monotonic()

    def send(self, peer: _Peer, message: Message) -> bool:
        """Send to the participant's current connection; False if it has none (now)."""
        if peer.route is None or peer.gone_since is not None:
            return False
        try:
            self.socket.send_multipart([peer.route, encode(message)], flags=zmq.NOBLOCK)
            return True
        except zmq.ZMQError:  # EHOSTUNREACH: the connection is gone; EAGAIN: it does not read
            peer.gone_since = time.monotonic()
            return False

    def connection(self, name: str) -> "RemoteConnection":
        participant = self.roster.find(name)
        if participant is None:
            raise KeyError(f"{name!r} is not in the roster {self.roster.path}")
        peer = self.peers[participant.name]
        peer.connection = RemoteConnection(self, peer)
        return peer.connection

    def close(self) -> None:
        RemoteHub._hubs.pop(self.endpoint, None)
        try:
            self.socket.disable_monitor()
        except zmq.ZMQError:
            pass
        self._watcher.join(1.0)
        self.socket.close(linger=0)
        _Zap.unregister(self)  # after the socket: it never asks again


class RemoteConnection:
    """One participant's link as a ``protocol.connection.Connection``. It stays usable while the
    participant is away: what is sent meanwhile is resent when it is back (its hello, on any new
    connection, is answered with welcome, the current game's ``new_game`` and the pending
    request carrying every move of the game so far)."""

    def __init__(self, hub: RemoteHub, peer: _Peer):
        self.hub, self.peer = hub, peer
        self.endpoint = hub.endpoint
        self.introduced = False
        self.game: NewGame | None = None
        self.moves: list[str] = []
        """Every move the engine has been told of in the current game (for a resend)."""
        self.pending: Request | None = None
        self.resent_ready: int | None = None
        self.reconnections = 0
        self.stale = 0
        """Messages before the participant's hello, dropped unread."""
        if peer.hello is not None and peer.gone_since is None:
            peer.queue.appendleft(encode(peer.hello))  # a new session of a connected participant

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
            self.game, self.moves, self.pending = message, [], None
        elif isinstance(message, Request):
            self.moves.extend(message.last_moves)
            self.pending = message
        elif isinstance(message, GameOver):
            self.game, self.pending = None, None
        if not self.hub.send(self.peer, message) and self.disconnected:
            raise ConnectionError(f"{self.peer.participant.name} is disconnected")

    def wait(self, timeout_ms: int) -> bool:
        deadline = time.monotonic() + timeout_ms / 1000
        while not self.peer.queue:
            left = int((deadline - time.monotonic()) * 1000)
            if left <= 0:
                return False
            self.hub.pump(min(left, 50))
        return True

    @staticmethod
    def wait_any(connections: "list[RemoteConnection]", timeout_ms: int) -> set[int]:
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            ready = {i for i, c in enumerate(connections) if c.peer.queue}
            left = int((deadline - time.monotonic()) * 1000)
            if ready or left <= 0:
                return ready
            for hub in {id(c.hub): c.hub for c in connections}.values():
                hub.pump(min(left, 50) if len(connections) == 1 else 0)
            if len(connections) > 1:
                time.sleep(0.0005)

    def receive(self) -> Message | None:
        if not self.peer.queue:
            return None
        msg = decode(self.peer.queue.popleft())
        if isinstance(msg, Hello):
            if self.hub.insecure and msg.name != self.peer.participant.name:
                return None
            self.peer.hello = msg
            if not self.introduced:
                self.introduced = True
                return msg
            self._resume()
            return None
        if not self.introduced:
            self.stale += 1  # e.g. a reply an engine had queued for a referee that was restarted since
            return None
        if isinstance(msg, Ready) and self.resent_ready is not None and msg.seq == self.resent_ready:
            self.resent_ready = None
            return None
        return msg

    def _resume(self) -> None:
        """The participant is back on a new connection: bring it up to date."""
        self.reconnections += 1
        self.hub.log(f"{self.peer.participant.name} reconnected")
        self.hub.send(self.peer, Welcome(referee="arbiter"))
        if self.game is not None:
            self.resent_ready = self.game.seq
            self.hub.send(self.peer, self.game)
            if self.pending is not None:
                again = Request(**{f: getattr(self.pending, f) for f in self.pending.__struct_fields__})
                again.last_moves = list(self.moves)
                self.hub.send(self.peer, again)

    def close(self) -> None:
        if self.peer.connection is self:
            self.peer.connection = None


# --- fair lag ---------------------------------------------------------------------------------------


@dataclass
class LagPolicy:
    """How much network lag is not charged to a remote engine's clock (SPEC.md, 'Remote engines').

    For each decision, lag = the referee's measured time − the engine's reported ``time_ms``,
    never counted above ``rtt_factor`` × the connection's ping round trip + ``rtt_slack_ms``;
    compensation = min(lag, ``move_ms``, what is left of ``quota_ms`` for the game)."""

    move_ms: int = 250
    quota_ms: int = 5000
    rtt_factor: float = 2.0
    rtt_slack_ms: int = 10


class LagAccount:
    """One remote session's lag bookkeeping for the current game."""

    def __init__(self, policy: LagPolicy):
        self.policy = policy
        self.quota_left = policy.quota_ms
        self.rtts: collections.deque = collections.deque(maxlen=8)

    def new_game(self) -> None:
        self.quota_left = self.policy.quota_ms

    def bound_ms(self) -> float:
        rtt = sorted(self.rtts)[len(self.rtts) // 2] if self.rtts else None
        bound = self.policy.move_ms if rtt is None else rtt * self.policy.rtt_factor + self.policy.rtt_slack_ms
        return max(0.0, min(bound, self.policy.move_ms, self.quota_left))

    def compensate(self, measured_ms: float, reported_ms: int | None) -> tuple[float, float]:
        """(lag, compensation) for one decision, in ms; spends the quota."""
        lag = max(0.0, measured_ms - (reported_ms if reported_ms is not None else measured_ms))
        comp = round(min(lag, self.bound_ms()), 3)
        self.quota_left -= comp
        return round(lag, 3), comp


# --- the session ----------------------------------------------------------------------------------


class RemoteSession(EngineSession):
    """A remote participant's engine: no process; its seat is held through disconnections."""

    insecure = False

    def __init__(self, config: EngineConfig, log_dir: Path):
        super().__init__(config, log_dir)
        self.hub = RemoteHub.at(config.endpoint)
        self.insecure = self.hub.insecure
        self.lag = LagAccount(self.hub.lag)

    def launch(self) -> None:
        try:
            self.connection = self.hub.connection(self.config.participant)
        except KeyError as exc:
            raise EngineFault(EndReason.NOT_STARTED, str(exc.args[0])) from None

    def handshake(self, game: str | None = None) -> None:
        """Wait for the participant until the event's deadline; absent past it."""
        left = self.hub.deadline - time.monotonic()
        self.config = _with_timeout(self.config, max(0.05, left))
        try:
            super().handshake(game)
        except EngineFault as fault:
            if fault.reason == EndReason.STALL:
                raise EngineFault(EndReason.ABSENT, f"{self.config.participant} did not connect by the deadline") \
                    from None
            raise
        self.ping()

    def ping(self, timeout: float = 5.0) -> None:
        """A real round trip every time (never skipped): its time is a sample of the link's RTT."""
        self._pings += 1
        started = time.monotonic()
        answer = self._request(Ping(seq=self._pings), timeout, "pong")
        if not isinstance(answer, Pong):
            raise EngineFault(EndReason.PROTOCOL_ERROR, f"expected pong, got {type(answer).__name__.lower()}")
        self.lag.rtts.append((time.monotonic() - started) * 1000)

    def new_game(self, message: NewGame) -> None:
        self.lag.new_game()
        super().new_game(message)

    def alive(self) -> bool:
        return self.connection is not None and not self.connection.disconnected

    def _lost_fault(self, detail: str) -> EngineFault:
        return EngineFault(EndReason.DISCONNECT, f"{detail} (not back within {self.hub.grace:g} s)")

    def check_alive(self) -> None:
        if self.connection.disconnected:
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
