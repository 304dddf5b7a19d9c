"""Engine hosting: spawn an engine process, shake hands, exchange messages, kill it cleanly.

An engine runs in its own process group and session, with a private token in its environment;
``stop`` kills the process tree, the group, and every process still carrying the token (so even
an engine that double-forks and calls setsid leaves nothing behind). Everything an engine can do
wrong becomes an ``EngineFault`` with one of the forfeit reasons below; nothing it does can
raise anything else into the referee.
"""
from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import zmq

from protocol import PROTOCOL_VERSION, ProtocolError
from protocol.messages import Error, Hello, Message, Ping, Pong, Quit, Reject, Welcome
from protocol.transport import ENDPOINT_ENV, RefereeSocket

# Forfeit reasons, as recorded and sent in game_over.reason.
TIME, ILLEGAL_MOVE, CRASH, DISCONNECT, PROTOCOL_ERROR, STALL = (
    "time", "illegal_move", "crash", "disconnect", "protocol_error", "stall")
FORFEIT_REASONS = (TIME, ILLEGAL_MOVE, CRASH, DISCONNECT, PROTOCOL_ERROR, STALL)

TOKEN_ENV = "ARBITER_ENGINE_TOKEN"
_POLL_SLICE_MS = 50
"""How often a wait checks whether the engine process is still alive."""


class EngineFault(Exception):
    """An engine broke the rules of the protocol or the clock; ``reason`` is a forfeit reason."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass
class EngineConfig:
    """How to start (or reach) one engine."""

    command: str | list[str] | None
    name: str | None = None
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    endpoint: str | None = None
    """Where to bind for this engine; default: a fresh ipc:// path. ``tcp://*:PORT`` for remote."""
    handshake_timeout: float = 10.0
    ready_timeout: float = 10.0
    restart_each_game: bool = False

    @property
    def remote(self) -> bool:
        """No command: the referee binds ``endpoint`` and waits for the engine to connect."""
        return not self.command

    def argv(self, endpoint: str) -> list[str]:
        parts = shlex.split(self.command) if isinstance(self.command, str) else list(self.command)
        return [p.replace("{endpoint}", endpoint) for p in parts]


class Engine:
    """One running engine: its process, its socket and what it said in ``hello``."""

    def __init__(self, config: EngineConfig, log_dir: Path):
        self.config = config
        self.log_path = Path(log_dir) / f"engine-{_safe(config.name or 'engine')}-{uuid.uuid4().hex[:6]}.log"
        self.token = uuid.uuid4().hex
        self.sock: RefereeSocket | None = None
        self.proc: subprocess.Popen | None = None
        self.hello: Hello | None = None
        self.pending: tuple[str, int] | None = None
        """(game_id, seq) of the request whose answer we wait for."""
        self.dropped = 0
        """Late or stray answers recognised by game id / seq and dropped."""
        self._quit_sent = False

    @property
    def name(self) -> str:
        if self.config.name:
            return self.config.name
        return self.hello.name if self.hello else "engine"

    # --- life cycle -------------------------------------------------------------------------

    def start(self, game: str | None = None) -> None:
        """Spawn the engine and complete the handshake, or raise ``EngineFault``."""
        self.launch()
        self.handshake(game)

    def launch(self) -> None:
        """Bind the socket and spawn the process (or wait for a remote engine); no waiting here,
        so several engines can start in parallel before their handshakes."""
        self.sock = RefereeSocket(self.config.endpoint)
        if self.config.remote:
            print(f"waiting for a remote engine to connect to {self.sock.endpoint}", file=sys.stderr)
        else:
            self._spawn()

    def handshake(self, game: str | None = None) -> None:
        """Wait for hello and answer welcome or reject (an engine whose hello lists only other
        games than ``game`` is rejected); raise ``EngineFault``."""
        msg = self.receive(time.monotonic() + self.config.handshake_timeout, what="hello")
        if not isinstance(msg, Hello):
            self._send_quietly(Error(code="unexpected", message=f"expected hello, got {_tag(msg)}"))
            raise EngineFault(PROTOCOL_ERROR, f"expected hello, got {_tag(msg)}")
        if msg.protocol_version != PROTOCOL_VERSION:
            self._send_quietly(Reject(reason=f"protocol version {msg.protocol_version} is not supported; "
                                             f"this referee speaks {PROTOCOL_VERSION}"))
            raise EngineFault(PROTOCOL_ERROR, f"engine speaks protocol version {msg.protocol_version}")
        if game is not None and msg.games and game not in msg.games:
            self._send_quietly(Reject(reason=f"this match is {game}; the engine plays {', '.join(msg.games)}"))
            raise EngineFault(PROTOCOL_ERROR, f"engine does not play {game} (it plays {', '.join(msg.games)})")
        self.hello = msg
        self.send(Welcome(referee="arbiter"))

    def _spawn(self) -> None:
        env = {**os.environ, **self.config.env, ENDPOINT_ENV: self.sock.endpoint, TOKEN_ENV: self.token}
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(self.config.argv(self.sock.endpoint), cwd=self.config.cwd, env=env,
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True, preexec_fn=_die_with_parent)
        except OSError as exc:
            raise EngineFault(CRASH, f"cannot start {self.config.command!r}: {exc}") from None
        finally:
            log.close()

    def request_quit(self) -> None:
        """Send quit without waiting (``stop`` then finds the engine already leaving)."""
        if self.sock is not None and self.sock.peer is not None and not self._quit_sent and self.alive():
            self._send_quietly(Quit())
            self._quit_sent = True

    def stop(self, grace: float = 0.5) -> None:
        """Ask the engine to quit, then kill whatever of it is left. Never raises."""
        if self.sock is not None and self.sock.peer is not None and self.alive():
            self.request_quit()
            try:
                if self.proc is not None:
                    self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        if self.proc is not None:
            kill_engine_processes(self.proc.pid, self.token)
            try:
                self.proc.wait(2)
            except subprocess.TimeoutExpired:
                pass
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def ping(self, timeout: float = 5.0) -> None:
        """Check the engine still answers (between games); raise ``EngineFault`` (stall) if not."""
        self._pings = getattr(self, "_pings", 0) + 1
        answer = self.request(Ping(seq=self._pings), timeout, "pong")
        if not isinstance(answer, Pong):
            raise EngineFault(PROTOCOL_ERROR, f"expected pong, got {_tag(answer)}")

    def alive(self) -> bool:
        """Running (or, for a remote engine, still connected)."""
        if self.config.remote:
            return self.sock is not None and not self.sock.disconnected
        return self.proc is not None and self.proc.poll() is None

    # --- messages ---------------------------------------------------------------------------

    def send(self, message: Message) -> float:
        """Send a message; return the monotonic time it left. Raises ``EngineFault`` if gone."""
        try:
            self.sock.send(message)
        except (ConnectionError, ProtocolError) as exc:
            raise EngineFault(DISCONNECT if self.alive() else CRASH, str(exc)) from None
        return time.monotonic()

    def _send_quietly(self, message: Message) -> None:
        try:
            self.sock.send(message)
        except Exception:
            pass

    def expect(self, game_id: str, seq: int) -> None:
        self.pending = (game_id, seq)

    def ready_to_read(self, timeout_ms: int) -> bool:
        return self.sock.wait(timeout_ms)

    def read_one(self) -> Message | None:
        """Read one waiting message. Returns the answer to the pending request, handles pings and
        stale answers itself (returning None), raises ``EngineFault`` on garbage."""
        try:
            msg = self.sock.recv()
        except ProtocolError as exc:
            self._send_quietly(Error(code="malformed", message=str(exc)))
            raise EngineFault(PROTOCOL_ERROR, str(exc)) from None
        except zmq.ZMQError as exc:
            raise EngineFault(DISCONNECT, str(exc)) from None
        if msg is None:
            return None
        if isinstance(msg, Ping):
            self._send_quietly(Pong(game_id=msg.game_id, seq=msg.seq))
            return None
        if isinstance(msg, Error):
            # An engine complaining is logged by the caller's record; it is not an answer.
            self.dropped += 1
            return None
        if self.hello is None:
            return msg  # the handshake: start() checks that it is a hello
        if self.pending is None or (msg.game_id, msg.seq) != self.pending:
            self.dropped += 1
            return None
        return msg

    def check_alive(self) -> None:
        """Raise ``EngineFault`` (crash or disconnect) if the engine is gone."""
        if self.proc is not None and self.proc.poll() is not None:
            raise EngineFault(CRASH, f"engine process exited with code {self.proc.returncode}")
        self.sock.check_monitor()
        if self.sock.disconnected:
            raise EngineFault(DISCONNECT, "the engine's socket disconnected")

    def receive(self, deadline: float, what: str, stall_reason: str = STALL) -> Message:
        """Wait for the pending answer until ``deadline`` (monotonic). A timeout is ``stall_reason``."""
        while True:
            left_ms = int((deadline - time.monotonic()) * 1000)
            if left_ms <= 0:
                self.check_alive()
                raise EngineFault(stall_reason, f"no {what} within the time allowed")
            if self.ready_to_read(min(left_ms, _POLL_SLICE_MS)):
                msg = self.read_one()
                if msg is not None:
                    return msg
            else:
                self.check_alive()

    def request(self, message: Message, timeout: float, what: str, stall_reason: str = STALL) -> Message:
        """Send a message that must be answered (same game id and seq) within ``timeout``."""
        self.expect(message.game_id, message.seq)
        self.send(message)
        try:
            return self.receive(time.monotonic() + timeout, what, stall_reason)
        finally:
            self.pending = None


def _die_with_parent() -> None:
    """In the child before exec: on Linux, get SIGKILL when the referee dies (even by kill -9),
    so an engine never outlives a crashed referee."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except OSError:
            pass


def kill_engine_processes(pid: int, token: str) -> list[int]:
    """SIGKILL a process, its descendants, its process group and anything carrying ``token``."""
    victims: dict[int, psutil.Process] = {}
    try:
        root = psutil.Process(pid)
        victims[pid] = root
        for child in root.children(recursive=True):
            victims[child.pid] = child
    except psutil.NoSuchProcess:
        pass
    try:
        os.killpg(pid, signal.SIGKILL)  # the engine leads its own group (start_new_session)
    except (ProcessLookupError, PermissionError):
        pass
    for proc in _processes_whose_environment(lambda env: env.get(TOKEN_ENV) == token, skip=victims):
        victims[proc.pid] = proc
    _kill_and_reap(victims.values())
    return sorted(victims)


def kill_marked(var: str, value: str, *, unless: tuple[str, str] | None = None) -> list[int]:
    """SIGKILL every process (but this one) whose environment has ``var=value``, except those
    that also have ``unless = (var2, value2)``. Tournaments mark every engine of a run this way,
    so a worker (or a later run) can find engines whatever they did to their process tree."""
    def marked(env: dict[str, str]) -> bool:
        return env.get(var) == value and not (unless is not None and env.get(unless[0]) == unless[1])

    return [p.pid for p in _kill_and_reap(_processes_whose_environment(marked))]


def _processes_whose_environment(matches, skip=()) -> list[psutil.Process]:
    """Every process but this one (and those in ``skip``) whose environment ``matches``; the
    environment is what an engine cannot shed by forking, setsid or re-parenting."""
    found = []
    for proc in psutil.process_iter():
        if proc.pid in skip or proc.pid == os.getpid():
            continue
        try:
            if matches(proc.environ()):
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found


def _kill_and_reap(victims) -> list[psutil.Process]:
    """SIGKILL each process and wait (2 s at most) for them to go; returns those the signal reached."""
    victims = list(victims)
    killed = []
    for proc in victims:
        try:
            proc.kill()
            killed.append(proc)
        except psutil.Error:
            pass
    psutil.wait_procs(victims, timeout=2)
    return killed


def _tag(msg: Message) -> str:
    return type(msg).__name__.lower()


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:40]
