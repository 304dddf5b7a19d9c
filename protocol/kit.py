"""A small engine kit: a Python engine is one function from a request to a move.

    from protocol.kit import run_engine

    def decide(request, game):          # protocol.Request, protocol.NewGame
        return request.legal_moves[0]   # or a protocol.Reply, or (move, protocol.Info)

    run_engine(decide, name="first-legal", games=["einstein"], wants_legal_moves=True)

The kit finds the endpoint (``--endpoint URL`` or ``--connect URL`` on the command line, else
``ARBITER_ENDPOINT``); for a remote referee it takes ``--server-key FILE`` (the referee's ``.pub``)
and ``--key FILE`` (the engine's own ``.key`` from ``arbiter keygen NAME``) and connects with
CURVE, saying hello again whenever its connection is re-established; it says hello, answers ``new_game``/``ping``, measures its own thinking time into ``info.time_ms``,
and exits on ``quit``, ``reject``, when the referee has been silent for ``idle_timeout``, or when
the process that started it has gone.

Options the operator may set (UCI's ``setoption``) are declared with ``options=[EngineOption(...)]``;
the kit fills ``game.engine_options`` with every declared option's value for the game (the
operator's, else the default), so ``decide`` reads ``game.engine_options["depth"]``.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import random
import sys
import time
from typing import Callable, Union

from .codec import ProtocolError
from .curve import KeyFileError, load_keypair, load_public
from .messages import (PROTOCOL_VERSION, EngineOption, Error, ErrorCode, GameOver, Hello, Info, NewGame, Ping,
                       Pong, Quit, Ready, Reject, Reply, Request, Welcome)
from .transport import ENDPOINT_ENV, SECRET_ENV, EngineSocket

Decision = Union[str, Reply, tuple[str, Info]]
Decide = Callable[[Request, NewGame], Decision]


SERVER_KEY_ENV, KEY_ENV = "ARBITER_SERVER_KEY", "ARBITER_KEY_FILE"
"""Environment variables naming the referee's public key file and the engine's own key file."""


def _option(flags: tuple[str, ...], argv: list[str] | None) -> str | None:
    argv = sys.argv[1:] if argv is None else argv
    for i, arg in enumerate(argv):
        for flag in flags:
            if arg == flag and i + 1 < len(argv):
                return argv[i + 1]
            if arg.startswith(flag + "="):
                return arg.split("=", 1)[1]
    return None


def endpoint_from_environment(argv: list[str] | None = None) -> str:
    endpoint = _option(("--endpoint", "--connect"), argv) or os.environ.get(ENDPOINT_ENV)
    if not endpoint:
        raise SystemExit(f"no endpoint: pass --endpoint URL or set {ENDPOINT_ENV}")
    return endpoint


def session_secret() -> str:
    """The secret a spawned engine must put in its hello: the text of the file named by
    ``ARBITER_SECRET_FILE`` (empty when there is none: a remote engine, or a referee that does
    not use secrets)."""
    path = os.environ.get(SECRET_ENV)
    if not path:
        return ""
    with open(path, encoding="ascii") as f:
        return f.read().strip()


def as_reply(decision: Decision, request: Request, elapsed_ms: int) -> Reply:
    """A decide function's answer as a ``Reply`` to ``request``, with the thinking time filled in."""
    if isinstance(decision, Reply):
        reply = decision
    elif isinstance(decision, tuple):
        reply = Reply(move=decision[0], info=decision[1])
    else:
        reply = Reply(move=str(decision))
    reply.game_id, reply.seq = request.game_id, request.seq
    if reply.info is None:
        reply.info = Info(time_ms=elapsed_ms)
    elif reply.info.time_ms is None:
        reply.info.time_ms = elapsed_ms
    return reply


def game_rng(game: NewGame, seed: object = 0) -> random.Random:
    """The engine's randomness for one game, from its seed and what identifies the game in a
    reproducible way (dice commitment, dice stream, seat: not the game id, which is unique per
    run). An engine reused across games, or restarted after a crash, then plays each game as it
    would have in any other run: the practice protocol/SPEC.md recommends."""
    text = f"{seed}|{game.dice_commitment}|{game.dice_stream}|{game.seat}"
    return random.Random(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big"))


class PerGameRandom:
    """``rng = PerGameRandom(seed)(game)``: ``game_rng`` made once per game, kept per game id (an
    engine playing several games at once draws from each game's own stream)."""

    KEEP = 64

    def __init__(self, seed: object = 0):
        self.seed = seed
        self._rngs: dict[str, random.Random] = {}

    def __call__(self, game: NewGame) -> random.Random:
        rng = self._rngs.get(game.game_id)
        if rng is None:
            if len(self._rngs) >= self.KEEP:
                del self._rngs[next(iter(self._rngs))]  # the oldest game: long over
            rng = self._rngs[game.game_id] = game_rng(game, self.seed)
        return rng


def engine_arguments(description: str, name: str, seed: int | None = 0) -> argparse.ArgumentParser:
    """The command-line options every sample engine takes (--name, --endpoint, --seed); add your own."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--seed", type=int, default=seed, help="seed of the engine's own randomness")
    parser.add_argument("--name", default=name, help="the name the engine gives in hello")
    parser.add_argument("--endpoint", "--connect", default=None, help=f"where to connect (default: ${ENDPOINT_ENV})")
    parser.add_argument("--server-key", default=None, help="a remote referee's public key file (its .pub): "
                                                           "connect with CURVE")
    parser.add_argument("--key", default=None, help="this engine's key file (arbiter keygen NAME) for CURVE")
    parser.add_argument("--max-games", type=int, default=None, help="games to accept at once from a remote "
                                                                    "referee (default 1)")
    return parser


class _Link:
    """What a remote engine's operator sees of the connection, on stderr: connected, not (yet),
    or refused and why. Without it an engine given the wrong key or address waited in silence
    until the referee forfeited it as absent."""

    QUIET = 10.0
    """Seconds without a referee before saying so (once)."""

    def __init__(self, endpoint: str, name: str):
        self.endpoint, self.name = endpoint, name
        self.since = time.monotonic()
        self.said: set[str] = set()

    def _say(self, key: str, text: str) -> None:
        if key not in self.said:
            self.said.add(key)
            print(f"{self.name}: {text}", file=sys.stderr, flush=True)

    def check(self, sock: EngineSocket) -> None:
        if sock.handshakes:
            self._say("connected", f"connected to the referee at {self.endpoint}")
        elif sock.refused == "key":  # not fatal: the referee also refuses a second connection of one participant
            self._say("key", f"the referee at {self.endpoint} refused this engine's key: is --key the .key whose "
                             f".pub the organiser has in the roster (or is this participant connected already)?")
        elif sock.refused == "handshake":
            self._say("handshake", f"the CURVE handshake with {self.endpoint} fails: is --server-key the "
                                   f"referee's public key (its .pub)? still trying")
        elif time.monotonic() - self.since > self.QUIET:
            self._say("quiet", f"no referee answers at {self.endpoint} yet (is it running, and listening "
                               f"there?); still trying")


def _wait(sock: EngineSocket, idle_timeout: float, parent: int, hello: Hello, link: _Link | None = None):
    """The next message; None when idle too long or when the process that started us is gone
    (a referee killed with -9 cannot send quit). Says hello again on a re-established connection."""
    deadline = time.monotonic() + idle_timeout
    while time.monotonic() < deadline:
        msg = sock.recv(timeout_ms=200)
        if sock.reconnected():
            sock.send(hello)
        if link is not None:
            link.check(sock)
        if msg is not None:
            return msg
        if parent != 1 and os.getppid() != parent:
            return None
    return None


def run_engine(decide: Decide, *, name: str, author: str = "", version: str = "", games: list[str] | None = None,
               wants_legal_moves: bool = False, wants_state: bool = False, wants_game_info: bool = False,
               on_game_over: Callable[[GameOver, NewGame], None] | None = None,
               options: list[EngineOption] | tuple[EngineOption, ...] = (),
               endpoint: str | None = None, idle_timeout: float = 3600.0, server_key: str | None = None,
               key: str | None = None, max_games: int | None = None) -> int:
    """Serve the referee until told to quit; returns a process exit code. With ``server_key``
    and ``key`` (or ``--server-key``/``--key`` on the command line, or $ARBITER_SERVER_KEY and
    $ARBITER_KEY_FILE), the connection is CURVE-encrypted and authenticated.

    ``max_games`` (or ``--max-games N``): games the engine accepts at once (``hello``); the kit
    keeps each game's ``new_game`` by its id and answers requests in the order they arrive, one
    ``decide`` call at a time, so ``decide`` sees the right game and nothing else changes for it
    (time a request waits behind another game's decision runs on its own game's clock)."""
    if max_games is None:
        text = _option(("--max-games",), None) or "1"
        if not text.isdigit() or int(text) < 1:
            raise SystemExit(f"{name}: --max-games must be a positive whole number, got {text!r}")
        max_games = int(text)
    server_key = server_key or _option(("--server-key",), None) or os.environ.get(SERVER_KEY_ENV)
    key = key or _option(("--key",), None) or os.environ.get(KEY_ENV)
    if bool(server_key) != bool(key):
        raise SystemExit("give both --server-key (the referee's .pub) and --key (this engine's .key), or neither")
    curve = None
    if server_key:
        try:
            curve = (load_public(server_key), load_keypair(key))
        except KeyFileError as exc:
            raise SystemExit(f"{name}: {exc}") from None
    endpoint = endpoint or endpoint_from_environment()
    sock = EngineSocket(endpoint, curve=curve)
    link = _Link(endpoint, name) if endpoint.startswith("tcp://") else None
    parent = os.getppid()
    hello = Hello(name=name, author=author, version=version, protocol_version=PROTOCOL_VERSION,
                  games=list(games or []), wants_legal_moves=wants_legal_moves, wants_state=wants_state,
                  wants_game_info=wants_game_info, options=list(options), max_games=max_games,
                  secret=session_secret())
    defaults = {o.name: o.default for o in options}
    try:
        sock.send(hello)
        games_by_id: dict[str, NewGame] = {}
        while True:
            try:
                msg = _wait(sock, idle_timeout, parent, hello, link)
            except ProtocolError as exc:
                sock.send(Error(code=ErrorCode.MALFORMED, message=str(exc)))
                continue
            if msg is None or isinstance(msg, Quit):
                return 0
            if isinstance(msg, Reject):
                print(f"{name}: rejected by the referee: {msg.reason}", file=sys.stderr)
                return 1
            if isinstance(msg, Request):
                started = time.monotonic()
                game = games_by_id.get(msg.game_id)
                if game is None:
                    sock.send(Error(game_id=msg.game_id, seq=msg.seq, code=ErrorCode.UNEXPECTED,
                                    message="request for a game this engine was not told about"))
                    continue
                decision = decide(msg, game)
                elapsed_ms = int((time.monotonic() - started) * 1000)
                sock.send(as_reply(decision, msg, elapsed_ms))
            elif isinstance(msg, NewGame):
                msg.engine_options = {**defaults, **msg.engine_options}  # the referee checked them
                games_by_id.pop(msg.game_id, None)
                while len(games_by_id) >= max_games:  # one the referee gave up without game_over (a reconnect)
                    del games_by_id[next(iter(games_by_id))]
                games_by_id[msg.game_id] = msg
                sock.send(Ready(game_id=msg.game_id, seq=msg.seq))
            elif isinstance(msg, GameOver):
                game = games_by_id.pop(msg.game_id, None)
                if on_game_over is not None and game is not None:
                    on_game_over(msg, game)
            elif isinstance(msg, Ping):
                sock.send(Pong(game_id=msg.game_id, seq=msg.seq))
            elif isinstance(msg, Error):
                print(f"{name}: referee reports {msg.code}: {msg.message}", file=sys.stderr)
            elif isinstance(msg, Welcome):
                pass
    finally:
        sock.close()
