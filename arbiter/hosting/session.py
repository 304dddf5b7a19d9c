"""The protocol conversation with one player: handshake, requests and replies, liveness.

The referee talks only to sessions (the ``Session`` protocol below). ``EngineSession`` is an
engine behind a ``protocol.connection.Connection`` — a spawned local process or a remote program;
``InProcessSession`` is a Python function in the referee's own process (quick evaluations, tests).
Everything a player can do wrong becomes an ``EngineFault`` with an ``EndReason``; nothing it
does can raise anything else into the referee.
"""
from __future__ import annotations

import dataclasses
import errno
import os
import resource
import secrets
import subprocess
import tempfile
import time
import traceback
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Sequence

import zmq

from protocol import PROTOCOL_VERSION, ProtocolError
from protocol.codec import clip, printable
from protocol.connection import Connection, wait_any as wait_any_connection
from protocol.kit import Decide, as_reply
from protocol.messages import (BadOption, EndReason, Error, ErrorCode, Hello, Message, NewGame, Ping, Pong, Quit,
                               Ready, Reject, Reply, Request, Welcome, check_engine_options)
from protocol.transport import ENDPOINT_ENV, SECRET_ENV, ZmqConnection, new_ipc_endpoint

from .. import say
from ..clock import paused_between
from .guardian import ensure_guardian, guard_folder, remove_folder
from .process import EngineConfig, EngineProcess, Limits, engine_environment
from .sandbox import SandboxUnavailable

_POLL_SLICE_MS = 50
"""How often a wait checks whether the engine is still alive."""
_READ_BURST = 64
"""At most this many waiting messages are read in one go, so a flood cannot starve the watchdog."""
OFFTURN_SLACK = 0.005
"""Seconds of CPU an engine that may not ponder may use between two of its moves before it is
frozen between moves (honest engines measured: 0.5 ms at most, the work after sending a reply)."""
STOPPED_SLACK = 0.03
"""Seconds of CPU the control group of an engine that has just been stopped may still count (the
work of its last moments, which the kernel accounts up to a scheduler tick late on each core: 6-7
ms seen for four spinning threads on two cores); more means it resumed itself (see ``_resisted``)."""
RECENT_ANSWER = 1.0
"""Seconds: an engine that answered a request this recently needs no ping before its next game
(a ping round trip cost 13 % of a fast match)."""


class EngineFault(Exception):
    """A player broke the rules of the protocol or the clock; ``reason`` says how."""

    def __init__(self, reason: EndReason, detail: str):
        detail = printable(detail)  # it may quote the engine (its hello, its options): clipped, escapes shown as ?
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class OptionFault(EngineFault):
    """The operator's engine options do not fit what the engine declares in its hello (unknown
    option, wrong type, out of range): a configuration error, not the engine's misbehaviour."""

    def __init__(self, detail: str, option: str = ""):
        super().__init__(EndReason.PROTOCOL_ERROR, detail)
        self.option = option
        """The option's name: the operator's file says on which line it was given."""


class ParticipantFault(EngineFault):
    """A remote participant's own forfeit before a game starts (``absent``: never came by the
    deadline; ``disconnect``: came, its link dropped, not back within its grace period): recorded
    under that reason, not as ``not_started``."""


class Session(Protocol):
    """What the referee and the match formats need of a player."""

    name: str
    hello: Hello | None
    dropped: int
    """Late or stray answers recognised by game id / seq and dropped."""
    read_at: float | None
    """When ``poll_reply`` reached the reply it returned, if other messages came first (monotonic)."""
    limits: Limits
    offturn_cpu_ms: float | None
    """CPU time used while it waited for this request (engines that ponder or are watched), for the record."""
    options: dict
    """The engine options to send in ``new_game`` (checked against its hello at the handshake)."""

    @property
    def reusable(self) -> bool:
        """May play another game (alive, not configured to restart every game)."""

    def launch(self) -> None:
        """Start the player without waiting for it (several start in parallel); raise ``EngineFault``."""

    def handshake(self, game: str) -> None:
        """Wait for the player's hello and accept or refuse it; raise ``EngineFault``."""

    def alive(self) -> bool: ...

    def start_game(self, message: NewGame) -> None:
        """Send ``new_game`` without waiting for ``ready`` (every seat is told at once, so a game
        starts after one round trip, not one per seat); raise ``EngineFault``."""

    def new_game(self, message: NewGame) -> None:
        """Announce a game (unless ``start_game`` just did) and wait for ``ready``; raise ``EngineFault``."""

    def ask(self, request: Request) -> float:
        """Send a decision request; return the monotonic time it left. Raises ``EngineFault``."""

    def poll_reply(self) -> Reply | None:
        """The answer to the last ``ask`` if it has arrived; raises ``EngineFault``. ``read_at`` then
        says when it was found behind other messages of the player (None: it was the first)."""

    def rest(self, watch: bool = False) -> None:
        """The decision is over: the player must not use the CPU until it is asked again (unless
        it may ponder). ``watch`` (between moves of a game): where its CPU use can be read
        cheaply, only watch it and stop it once it is seen using the CPU (``OFFTURN_SLACK``);
        otherwise stop it at once. The referee calls it once the next step's requests are out
        (or the game is over), so it is never between a reply and the next request."""

    def watch(self) -> None:
        """While others decide: stop this resting player if it has used the CPU since it rested."""

    def check_alive(self) -> None:
        """Raise ``EngineFault`` (crash or disconnect) if the player is gone."""

    def tell(self, message: Message) -> None:
        """Send a message that needs no answer (``game_over``); never raises."""

    def stray_note(self) -> str:
        """For the detail of a forfeit for a missing answer: what came meanwhile that was not
        the answer (a wrong seq or game_id), or ``""``."""

    def ping(self) -> None:
        """Check the player still answers between games (an engine that answered a request
        within ``RECENT_ANSWER`` seconds and still runs counts as answering); raise ``EngineFault``."""

    def request_quit(self) -> None: ...

    def stop(self) -> None:
        """End the player and free everything it holds. Never raises."""

    def kill_now(self) -> None:
        """Kill the player at once without talking to it or waiting (from a signal handler)."""


class EngineSession:
    """An engine reached over a ``Connection``: its own local process, or a remote program."""

    def __init__(self, config: EngineConfig, log_dir: Path):
        self.config = config
        self.log_path = Path(log_dir) / f"engine-{_safe(config.name or 'engine')}-{uuid.uuid4().hex[:6]}.log"
        self.connection: Connection | None = None
        self.process: EngineProcess | None = None
        self.hello: Hello | None = None
        self.pending: tuple[str, int] | None = None
        """(game_id, seq) of the request whose answer we wait for."""
        self.dropped = 0
        self._strays: tuple[int, str] = (0, "")
        """Messages dropped while the pending one waited for its answer: how many, and the first
        described (``stray_note``: a forfeit for the missing answer says what came instead)."""
        self.read_at: float | None = None
        self._quit_sent = False
        self._pings = 0
        self._answered_at = float("-inf")
        """When it last answered a request (monotonic): ``ping`` trusts a recent answer."""
        self.work_dir: Path | None = None
        self._socket_dir: Path | None = None
        self.offturn_cpu_ms: float | None = None
        """CPU time the engine used since its previous reply (measured when it may ponder)."""
        self._cpu_at_rest: float | None = None
        """Its CPU counter when its rest began (``rest``, just after the next requests went out):
        the start of its off-turn."""
        self.caught_pondering = False
        """Used more than OFFTURN_SLACK of CPU while it should have been idle: frozen from then on."""
        self._cpu_at_freeze: float | None = None
        """Its CPU counter when ``rest`` or ``watch`` froze it (caught pondering) while it waits in a
        game: it must not grow until the thaw (see ``_resisted``)."""
        self._resisted_ms: float | None = None
        """CPU ms it used while it was frozen, once seen above STOPPED_SLACK: it resumed itself (control
        groups v1 stop each process with SIGSTOP, and one process can SIGCONT another); its next
        request in this game is then a time forfeit."""
        self._has_played = False
        """Sent a game: ``restart_each_game`` makes it unusable for another (not one only started)."""
        self.options: dict = {}
        """``config.options`` converted to the types the engine declared (set at the handshake)."""
        self.insecure = bool(config.remote and (config.endpoint or "").startswith("tcp://"))
        """Reached over plain tcp, unauthenticated and unencrypted (recorded in every record)."""

    @property
    def name(self) -> str:
        if self.config.name:
            return self.config.name
        return self.hello.name if self.hello else "engine"

    @property
    def reusable(self) -> bool:
        flooded = self.process is not None and getattr(self.connection, "flooded", False)
        return (not self.config.restart_each_game or not self._has_played) and self.alive() and not flooded

    @property
    def limits(self) -> Limits:
        return self.config.limits

    # --- life cycle -------------------------------------------------------------------------

    def launch(self) -> None:
        """Bind the connection and spawn the process (or wait for a remote engine); no waiting
        here, so several engines can start in parallel before their handshakes.

        A local engine gets a private work folder holding its session secret (its hello must
        carry it), its own socket folder, and a clean environment; ``EngineProcess`` confines it."""
        config = self.config
        if config.remote:
            self.connection = ZmqConnection(config.endpoint)
            say(f"waiting for a remote engine to connect to {self.connection.endpoint}")
            return
        raise_fd_limit()
        try:
            self._spawn(config)
        except EngineFault:
            raise
        except (OSError, subprocess.SubprocessError, zmq.ZMQError) as exc:
            self.stop()  # whatever was made before it failed: socket, work folder
            raise EngineFault(EndReason.NOT_STARTED, _start_failure(config, exc)) from None

    def _spawn(self, config: EngineConfig) -> None:
        secret = secrets.token_hex(16)
        ensure_guardian()  # before the first folder: a kill -9 while the engine starts (a Python to start, a
        # sandbox probe: tenths of a second on a busy machine) leaves none, its session secret included
        self.work_dir = Path(tempfile.gettempdir()) / f"arb-engine-{secrets.token_hex(6)}"  # named before it is
        guard_folder(self.work_dir)  # made: a hurried exit (a worker's SIGTERM), or a kill -9 that leaves it to
        self.work_dir.mkdir(mode=0o700)  # the guardian, between the two cannot miss it
        secret_file = self.work_dir / "session-secret"
        secret_file.write_text(secret)
        secret_file.chmod(0o400)
        endpoint = config.endpoint or new_ipc_endpoint(own_folder=True)
        if not config.endpoint:  # a socket folder made for it (removed by kill_now): the guardian told at once
            self._socket_dir = Path(endpoint[len("ipc://"):]).parent
            guard_folder(self._socket_dir, parent_too=True)
        self.connection = ZmqConnection(endpoint, secret=secret)
        endpoint = self.connection.endpoint
        endpoint_dir = Path(endpoint[len("ipc://"):]).parent if endpoint.startswith("ipc://") else None
        env = engine_environment(config, {ENDPOINT_ENV: endpoint, SECRET_ENV: str(secret_file),
                                          "HOME": str(self.work_dir), "TMPDIR": "/tmp"})
        hidden = dataclasses.replace(config, hide=(*config.hide, str(self.log_path.parent.resolve())),
                                     cwd=config.cwd or os.getcwd(),
                                     network=config.network or endpoint.startswith("tcp://"))
        try:
            self.process = EngineProcess(hidden, config.argv(endpoint), env=env, token=uuid.uuid4().hex,
                                         log_path=self.log_path, work_dir=self.work_dir, endpoint_dir=endpoint_dir)
        except SandboxUnavailable as exc:
            raise EngineFault(EndReason.NOT_STARTED, str(exc)) from None
        except OSError as exc:
            if exc.errno in (errno.EMFILE, errno.ENFILE):
                raise
            raise EngineFault(EndReason.CRASH, f"cannot start {config.command!r}: {exc}") from None

    def handshake(self, game: str | None = None) -> None:
        """Wait for hello and answer welcome or reject (an engine whose hello lists only other
        games than ``game`` is rejected); raise ``EngineFault``."""
        try:
            msg = self._receive(self.config.handshake_timeout, what="hello")
        except EngineFault as fault:
            if fault.reason == EndReason.STALL and (unproven := getattr(self.connection, "unproven_hellos", 0)):
                raise EngineFault(EndReason.STALL, f"{fault.detail}: {unproven} hello(s) without the engine's session "
                                                   f"secret were dropped (a spawned engine sends the text of the "
                                                   f"file ARBITER_SECRET_FILE names; protocol/SPEC.md)") from None
            raise
        if not isinstance(msg, Hello):
            self._send_quietly(Error(code=ErrorCode.UNEXPECTED, message=f"expected hello, got {_tag(msg)}"))
            raise EngineFault(EndReason.PROTOCOL_ERROR, f"expected hello, got {_tag(msg)}")
        if msg.protocol_version != PROTOCOL_VERSION:
            self._send_quietly(Reject(reason=f"protocol version {msg.protocol_version} is not supported; "
                                             f"this referee speaks {PROTOCOL_VERSION}"))
            raise EngineFault(EndReason.PROTOCOL_ERROR, f"engine speaks protocol version {msg.protocol_version}")
        if game is not None and msg.games and game not in msg.games:
            self._send_quietly(Reject(reason=f"this match is {game}; the engine plays {', '.join(msg.games)}"))
            raise EngineFault(EndReason.PROTOCOL_ERROR,
                              f"engine does not play {game} (it plays {', '.join(msg.games)})")
        try:
            self.options = check_engine_options(msg.options, self.config.options)
        except BadOption as exc:
            self._send_quietly(Reject(reason=str(exc)))
            raise OptionFault(str(exc), exc.option) from None
        self.hello = msg
        self._send(Welcome(referee="arbiter"))
        self.rest(watch=True)

    def rest(self, watch: bool = False) -> None:
        """An engine that may not ponder is only watched while it waits (its control group's CPU
        counter, ~4 us a read) and frozen, whole tree at once, once it has been seen using the
        CPU then; with ``watch=False`` (an engine left idle: no game for it now) or without a
        control group it is frozen at once. Stopping and resuming idle processes costs the
        referee ~0.1 ms per move (each signal wakes a process), so honest engines are not."""
        if self.process is None:
            return
        if self.config.ponder or (watch and self.process.cgroup is not None):
            if self._cpu_at_rest is None:  # its off-turn starts: counted for the record, and watched
                self._cpu_at_rest = self.process.cpu_seconds()
            if self.config.ponder or not self.caught_pondering:
                return
            if self._cpu_at_freeze is None:
                self.process.freeze(True)
                self._cpu_at_freeze = self.process.cpu_seconds()  # once stopped: the count is settled then
                return
        self.process.freeze(True)

    def watch(self) -> None:
        if self.process is None or self.config.ponder or self._cpu_at_rest is None or self.process.cgroup is None:
            return
        if self.caught_pondering:
            self._resisted()
        elif self.process.cpu_seconds() - self._cpu_at_rest > OFFTURN_SLACK:
            self.caught_pondering = True
            self.process.freeze(True)
            self._cpu_at_freeze = self.process.cpu_seconds()

    def _resisted(self) -> None:
        """A frozen engine whose CPU counter grew beyond STOPPED_SLACK resumed itself: noted for
        its next request (one counter read, only for an engine caught pondering)."""
        if self._cpu_at_freeze is not None and self._resisted_ms is None:
            used = self.process.cpu_seconds() - self._cpu_at_freeze
            if used > STOPPED_SLACK:
                self._resisted_ms = round(used * 1000, 1)

    def alive(self) -> bool:
        """Running (or, for a remote engine, still connected)."""
        if self.process is not None:
            return self.process.exit_code is None
        return self.connection is not None and not self.connection.disconnected

    def request_quit(self) -> None:
        """Send quit without waiting (``stop`` then finds the engine already leaving)."""
        if self.connection is not None and self.connection.connected and not self._quit_sent and self.alive():
            if self.process is not None:
                self.process.freeze(False)
            self._send_quietly(Quit())
            self._quit_sent = True

    def last_words(self, limit: int = 200) -> str:
        """The last line the engine printed (from its log, once stopped), quoted and cut to
        ``limit``: shown with a start-up failure, so that a mistyped command or a missing module
        is seen without opening the log. Never recorded: it is the engine's own text."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(max(0, log.seek(0, os.SEEK_END) - 4096))
                lines = log.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return ""
        line = next((x.strip() for x in reversed(lines) if x.strip()), "")
        line = "".join(c if c.isprintable() else "?" for c in line)
        return repr(line if len(line) <= limit else line[:limit] + "...") if line else ""

    def with_last_words(self, fault: EngineFault) -> EngineFault:
        """``fault`` (a failed start) with the engine's last words and its log, once it is stopped;
        an option's fault unchanged: that one is the operator's, not the engine's."""
        words = "" if isinstance(fault, OptionFault) else self.last_words()
        if not words:
            return fault
        return EngineFault(fault.reason, f"{fault.detail}; its last output: {words} (log {self.log_path})")

    def stop(self, grace: float = 0.5) -> None:
        if self.connection is not None and self.connection.connected and self.alive():
            self.request_quit()
            if self.process is not None:
                self.process.wait(grace)
        if self.process is not None:
            self.process.kill()
        if self.connection is not None:
            self.connection.close()
            self.connection = None
        self._remove_folders()

    def kill_now(self) -> None:
        """Also removes the folders made for it (its session secret, its socket's folder): a host
        leaving this instant ends with ``os._exit``, and nothing else would."""
        if self.process is not None:
            self.process.kill_group_now()
        self._remove_folders()

    def _remove_folders(self) -> None:
        for folder in (self.work_dir, self._socket_dir):
            if folder is not None:
                remove_folder(folder)
        self.work_dir = self._socket_dir = None

    def ping(self, timeout: float = 5.0) -> None:
        if time.monotonic() - self._answered_at < RECENT_ANSWER and self.alive() and self.connection is not None \
                and not self.connection.disconnected:
            return  # it has just answered a request: no round trip needed between two games
        self._pings += 1
        answer = self._request(Ping(seq=self._pings), timeout, "pong")
        if not isinstance(answer, Pong):
            raise EngineFault(EndReason.PROTOCOL_ERROR, f"expected pong, got {_tag(answer)}")

    # --- a game -----------------------------------------------------------------------------

    def start_game(self, message: NewGame) -> None:
        self._resisted_ms = None  # a game is forfeited only for what happened in it
        self._has_played = True
        self._announce(message)

    def new_game(self, message: NewGame) -> None:
        if self.pending != (message.game_id, message.seq):
            self.start_game(message)
        answer = self._await(self.config.ready_timeout, "ready to new_game")
        if not isinstance(answer, Ready):
            raise EngineFault(EndReason.PROTOCOL_ERROR, f"expected ready, got {_tag(answer)}")

    def ask(self, request: Request) -> float:
        self.pending = (request.game_id, request.seq)
        self._strays = (0, "")
        if self._cpu_at_freeze is not None:  # caught pondering and frozen: did it stay stopped?
            self._resisted()
        if self._resisted_ms is not None:
            raise EngineFault(EndReason.TIME, f"used {self._resisted_ms:.0f} ms of CPU while stopped between its "
                                              f"moves (it resumed itself; pondering is off)")
        settled = self._cpu_at_freeze  # frozen (caught pondering): its count stands at that reading
        sent = self._send(request)
        # after sending: its turn's first microseconds are noise; but a frozen engine's count is the
        # one read at its freeze: read once it is thawed, it took in the engine's first moments of
        # its turn, tens of ms where the referee lost the CPU between the two (a loaded machine)
        self.offturn_cpu_ms = self._end_rest(until=settled)
        return sent

    def _end_rest(self, judge: bool = True, until: float | None = None) -> float | None:
        """Its rest is over: the CPU ms it used while resting (None if not counted), up to ``until``
        (its CPU counter when it was frozen) or now; with ``judge``, an engine that may not ponder
        and used more than OFFTURN_SLACK is frozen whenever it rests from now on (not judged: the
        rest after a game, when it digests ``game_over``)."""
        started, self._cpu_at_rest = self._cpu_at_rest, None
        if started is None or self.process is None:
            return None
        now = until if until is not None else self.process.cpu_seconds()
        if now is None:
            return None
        if judge and now - started > OFFTURN_SLACK and not self.config.ponder:
            self.caught_pondering = True
        return round((now - started) * 1000, 1)

    def poll_reply(self) -> Reply | None:
        self.read_at = None
        watched = self._cpu_at_rest is None and self.process is not None and self.process.cgroup is not None
        if watched:  # its off-turn starts with its reply, before the referee decodes and checks it
            self._cpu_at_rest = self.process.cpu_seconds()
        stopped = watched and self.caught_pondering and not self.config.ponder
        if stopped:  # caught pondering: stopped from its reply on, while the referee decodes and checks it
            self.process.freeze(True)
        for i in range(_READ_BURST):
            if i:
                if not self.connection.wait(0):  # the first read needs no poll: it does not block
                    break
                self.read_at = time.monotonic()  # behind its other messages: it may have come only now
            msg = self._read_one()
            if msg is None:
                continue
            if not isinstance(msg, Reply):
                raise EngineFault(EndReason.PROTOCOL_ERROR, f"expected reply, got {_tag(msg)}")
            self.pending = None
            self._answered_at = time.monotonic()
            if stopped:
                self._cpu_at_freeze = self.process.cpu_seconds()
            return msg
        if watched:  # no reply yet: its turn goes on
            self._cpu_at_rest = None
        if stopped:
            self.process.freeze(False)
        return None

    def check_alive(self) -> None:
        if self.process is not None and self.process.exit_code is not None:
            raise self._exit_fault()
        if self.process is not None and getattr(self.connection, "flooded", False):
            raise EngineFault(EndReason.PROTOCOL_ERROR, f"{self.connection.accepted} connections to its socket "
                                                        f"(an engine needs one)")
        if self.connection.disconnected:
            raise self._lost_fault("the engine's socket disconnected")

    def _exit_fault(self) -> EngineFault:
        if self.process.memory_exceeded():
            return EngineFault(EndReason.MEMORY, f"engine used more than its {self.config.limits.memory_mb} MB "
                                                 f"(exited with code {self.process.exit_code})")
        return EngineFault(EndReason.CRASH, f"engine process exited with code {self.process.exit_code}")

    def _lost_fault(self, detail: str) -> EngineFault:
        """The connection is gone: a crash if the process ends too (its sandbox takes a moment to
        follow its exit), else a disconnect."""
        if self.process is not None and self.process.wait(0.2):
            fault = self._exit_fault()
            return EngineFault(fault.reason, f"{detail}; {fault.detail}")
        return EngineFault(EndReason.DISCONNECT if self.alive() else EndReason.CRASH, detail)

    def tell(self, message: Message) -> None:
        self.pending = None
        self._send_quietly(message)

    # --- messages ---------------------------------------------------------------------------

    def _send(self, message: Message) -> float:
        """Send a message; return the monotonic time it left, or, for an engine that was frozen, the
        time it was resumed: it may think from then on (its threads may even delay the send). Raises
        ``EngineFault`` if gone."""
        resumed = None
        if self.process is not None:
            if self.process.frozen:
                resumed = time.monotonic()
            self.process.freeze(False)  # thawed before it is asked anything
            self._cpu_at_freeze = None
        try:
            self.connection.send(message)
        except (ConnectionError, ProtocolError) as exc:
            raise self._lost_fault(str(exc)) from None
        return time.monotonic() if resumed is None else resumed

    def _send_quietly(self, message: Message) -> None:
        try:
            self.connection.send(message)
        except Exception:
            pass

    def _read_one(self) -> Message | None:
        """Read one waiting message. Returns the answer to the pending request (or, before the
        handshake, whatever came); handles pings and stale answers itself (returning None);
        raises ``EngineFault`` on garbage."""
        try:
            msg = self.connection.receive()
        except ProtocolError as exc:
            self._send_quietly(Error(code=ErrorCode.MALFORMED, message=str(exc)))
            raise EngineFault(EndReason.PROTOCOL_ERROR, str(exc)) from None
        except ConnectionError as exc:
            raise EngineFault(EndReason.DISCONNECT, str(exc)) from None
        if msg is None:
            return None
        if isinstance(msg, Ping):
            self._send_quietly(Pong(game_id=msg.game_id, seq=msg.seq))
            return None
        if isinstance(msg, Error):
            self.dropped += 1  # an engine complaining is not an answer
            return None
        if self.hello is None:
            return msg  # the handshake checks that it is a hello
        if self.pending is None or (msg.game_id, msg.seq) != self.pending:
            self.dropped += 1
            if self.pending is not None:
                count, first = self._strays
                self._strays = (count + 1, first or f"the request's game_id {self.pending[0]!r} and seq "
                                                     f"{self.pending[1]}: a {_tag(msg)} with game_id "
                                                     f"{clip(msg.game_id, 100)!r} and seq {msg.seq}")
            return None
        return msg

    def stray_note(self) -> str:
        """For the detail of a forfeit for a missing answer: what was dropped meanwhile as not the
        answer (a wrong seq or game_id), or ``""``."""
        count, first = self._strays
        if not count:
            return ""
        head = f"; dropped {count} message{'s' if count > 1 else ''} that did not echo "
        return head + (first if count == 1 else first.replace(": a ", "; the first: a ", 1))

    def _receive(self, timeout: float, what: str) -> Message:
        """Wait up to ``timeout`` seconds for the pending answer (moved on by the referee's own
        stops); a timeout is a stall, whose detail says how long was allowed."""
        begun = time.monotonic()
        deadline = begun + timeout
        while True:
            now = time.monotonic()
            left_ms = int((deadline + paused_between(begun, now) - now) * 1000)
            if left_ms <= 0:
                self.check_alive()
                raise EngineFault(EndReason.STALL, f"no {what} within the {timeout:g} s allowed{self.stray_note()}")
            if self.connection.wait(min(left_ms, _POLL_SLICE_MS)):
                msg = self._read_one()
                if msg is not None:
                    return msg
            else:
                self.check_alive()

    def _request(self, message: Message, timeout: float, what: str) -> Message:
        """Send a message that must be answered (same game id and seq) within ``timeout``."""
        self._announce(message)
        return self._await(timeout, what)

    def _announce(self, message: Message) -> None:
        """Send a message that must be answered (``_await``)."""
        try:
            self.pending = (message.game_id, message.seq)
            self._strays = (0, "")
            self._send(message)
        except EngineFault:
            self.pending = None
            raise
        self._end_rest(judge=False)

    def _await(self, timeout: float, what: str) -> Message:
        """Wait up to ``timeout`` for the answer to the message ``_announce`` sent."""
        try:
            answer = self._receive(timeout, what)
            self._answered_at = time.monotonic()
            return answer
        finally:
            self.pending = None
            self.rest(watch=True)


@dataclass
class InProcessPlayer:
    """A player that is a Python function (``protocol.kit.Decide``) run inside the referee's
    process: no process, no socket, the same requests an engine gets. For quick measurements
    and tests; its time is measured and charged, but no watchdog can interrupt it."""

    decide: Decide
    name: str = "local"
    wants_legal_moves: bool = False
    wants_state: bool = True
    restart_each_game: bool = False


class InProcessSession:
    """The session of an ``InProcessPlayer``: ``ask`` calls the function at once."""

    def __init__(self, player: InProcessPlayer):
        self.player = player
        self.name = player.name
        self.hello: Hello | None = None
        self.dropped = 0
        self.read_at: float | None = None
        self.limits = Limits()
        self.offturn_cpu_ms: float | None = None
        self.options: dict = {}
        self._game: NewGame | None = None
        self._reply: Reply | None = None

    @property
    def reusable(self) -> bool:
        return not self.player.restart_each_game

    def launch(self) -> None:
        pass

    def handshake(self, game: str | None = None) -> None:
        self.hello = Hello(name=self.player.name, wants_legal_moves=self.player.wants_legal_moves,
                           wants_state=self.player.wants_state)

    def alive(self) -> bool:
        return True

    def start_game(self, message: NewGame) -> None:
        self._game = message

    def new_game(self, message: NewGame) -> None:
        self._game = message

    def ask(self, request: Request) -> float:
        started = time.monotonic()
        try:
            decision = self.player.decide(request, self._game)
            self._reply = as_reply(decision, request, int((time.monotonic() - started) * 1000))
        except Exception as exc:
            where = traceback.extract_tb(exc.__traceback__)[-1]
            raise EngineFault(EndReason.CRASH, f"{type(exc).__name__}: {exc} "
                                               f"({Path(where.filename).name}:{where.lineno})") from None
        return started

    def poll_reply(self) -> Reply | None:
        reply, self._reply = self._reply, None
        return reply

    def rest(self, watch: bool = False) -> None:
        pass

    def watch(self) -> None:
        pass

    def check_alive(self) -> None:
        pass

    def tell(self, message: Message) -> None:
        pass

    def stray_note(self) -> str:
        return ""  # a function's answer is always the one asked for

    def ping(self) -> None:
        pass

    def request_quit(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def kill_now(self) -> None:
        pass


PlayerSpec = EngineConfig | InProcessPlayer
"""How to obtain a player: an engine to start or reach, or a function to call."""


def open_session(spec: PlayerSpec, log_dir: Path, hide: tuple[str, ...] = ()) -> Session:
    """A new, not yet started session for ``spec``; ``hide``: more folders its sandbox hides."""
    if isinstance(spec, InProcessPlayer):
        return InProcessSession(spec)
    if spec.participant:
        from .remote import RemoteSession  # remote imports this module

        return RemoteSession(spec, log_dir)
    return EngineSession(dataclasses.replace(spec, hide=(*spec.hide, *hide)) if hide else spec, log_dir)


def wait_any(sessions: Sequence[Session], timeout_ms: int) -> set[int]:
    """Indexes of the sessions with something to read, waiting up to ``timeout_ms``."""
    if len(sessions) == 1 and not isinstance(sessions[0], InProcessSession):  # the common case, kept short
        return {0} if sessions[0].connection.wait(timeout_ms) else set()  # type: ignore[attr-defined]
    ready = {i for i, s in enumerate(sessions) if isinstance(s, InProcessSession)}
    if ready:
        return ready  # an in-process reply is there at once
    found = wait_any_connection([s.connection for s in sessions], timeout_ms)  # type: ignore[attr-defined]
    return found


_fd_limit_raised = False


def raise_fd_limit() -> None:
    """Raise the referee's own open-file limit once, as far as allowed (as root: to the kernel's
    ``nr_open``, so that even an engine's every process and file used on connections cannot
    exhaust it): engines' connections cost the referee file descriptors, and running out must
    never be what ends a match."""
    global _fd_limit_raised
    if not _fd_limit_raised:
        _fd_limit_raised = True
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        try:
            ceiling = int(Path("/proc/sys/fs/nr_open").read_text()) if os.geteuid() == 0 else hard
        except (OSError, ValueError):
            ceiling = hard
        for target in (max(hard, ceiling), hard):
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (target, target))
                return
            except (ValueError, OSError):
                continue


def _start_failure(config: EngineConfig, exc: BaseException) -> str:
    """Why an engine could not be started, in one line; running out of file descriptors names
    the limit to raise."""
    if getattr(exc, "errno", None) in (errno.EMFILE, errno.ENFILE) or "Too many open files" in str(exc):
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        why = f"the referee ran out of file descriptors (limit {soft} open files; raise it with ulimit -n)"
    elif isinstance(exc, subprocess.SubprocessError):
        why = f"its process could not be set up (rlimits, control group, CPUs): {exc}"
    else:
        why = str(exc) or type(exc).__name__
    return f"cannot start {config.command!r}: {why}"


def _tag(msg: Message) -> str:
    """The message's ``type`` as on the wire (``game_over``, not the class name)."""
    return msg.__struct_config__.tag


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:40]
