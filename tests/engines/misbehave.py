"""A test engine that plays randomly until told to misbehave in one specific way.

Usage: python tests/engines/misbehave.py MODE [--after N] [--delay SECONDS] [--seat S]
MODE: hang | crash | illegal | garbage | no_hello | no_secret | double_fork | stale | wrong_type | oversize | wrong_game | huge_illegal | deep
      | exit_after_reply | close_after_reply | bad_hello | not_ready | game_over_for_ready | slow_ready | slow | old_protocol | chatty | hang_after_game
The misbehaviour happens at the engine's (N+1)-th decision request (default N=2), with ``--seat S``
at the first such request for seat S (a copy of the engine in another seat plays on); ``bad_hello``
says hello with a field of the wrong type and logs the answer; ``no_secret`` says hello without the
session secret (an engine author's first mistake) and waits; ``not_ready``
answers new_game with a pong, ``game_over_for_ready`` with a game_over; ``old_protocol`` says hello with another protocol version;
``slow_ready`` waits ``--delay`` before each ready; ``hang_after_game`` stops answering once told its first game is over; ``chatty`` sends an ``error`` message and a ping before every reply; ``slow`` plays legally but takes 0.3 s (``--delay``) per decision (an opponent that
gives the referee time to notice a peer that left).
"""
from __future__ import annotations

import os
import random
import sys
import time

import msgspec

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from protocol import encode  # noqa: E402
from protocol.kit import endpoint_from_environment, session_secret  # noqa: E402
from protocol.messages import Error, GameOver, Hello, NewGame, Ping, Pong, Quit, Ready, Reply, Request  # noqa: E402
from protocol.transport import EngineSocket  # noqa: E402


def double_fork() -> None:
    """Leave a grandchild in its own session that sleeps forever (an engine 'helper' gone rogue)."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            print("grandchild started", file=sys.stderr, flush=True)
            time.sleep(3600)
        os._exit(0)
    os.wait()


def main() -> int:
    mode = sys.argv[1]
    after = int(sys.argv[sys.argv.index("--after") + 1]) if "--after" in sys.argv else 2
    delay = float(sys.argv[sys.argv.index("--delay") + 1]) if "--delay" in sys.argv else 0.3
    only_seat = int(sys.argv[sys.argv.index("--seat") + 1]) if "--seat" in sys.argv else None
    if mode == "no_hello":
        time.sleep(3600)
    if mode == "double_fork":
        double_fork()
    sock = EngineSocket(endpoint_from_environment([]))
    games = ["smess"] if mode == "wrong_game" else []
    version = {"protocol_version": 999} if mode == "old_protocol" else {}
    if mode == "bad_hello":  # wants_state as 1, as some msgpack libraries write a true: not a bool
        sock.socket.send(msgspec.msgpack.encode({"type": "hello", "name": "misbehave-bad_hello", "wants_state": 1,
                                                 "secret": session_secret()}))
        print(sock.recv(), file=sys.stderr, flush=True)  # the referee's error, in the engine's log
        return 0
    if mode == "secret_not_hello":  # a valid message of another type, carrying the secret: the engine's own
        sock.socket.send(msgspec.msgpack.encode({"type": "ready", "secret": session_secret()}))
        print(sock.recv(), file=sys.stderr, flush=True)  # the referee's error, in the engine's log
        return 0
    if mode == "no_secret":
        sock.send(Hello(name="misbehave-no_secret", wants_legal_moves=True))
        time.sleep(3600)
    sock.send(Hello(name=f"misbehave-{mode}", wants_legal_moves=True, games=games, secret=session_secret(), **version))
    rng = random.Random(1)
    decisions = 0
    while True:
        msg = sock.recv()
        if isinstance(msg, Quit):
            return 0
        if isinstance(msg, GameOver) and mode == "hang_after_game":
            time.sleep(3600)
        if isinstance(msg, NewGame):
            if mode == "not_ready":
                sock.send(Pong(game_id=msg.game_id, seq=msg.seq))
                continue
            if mode == "game_over_for_ready":  # a message type whose tag is not its class name lowered
                sock.send(GameOver(game_id=msg.game_id, seq=msg.seq, returns=[], reason="normal"))
                continue
            if mode == "slow_ready":
                time.sleep(delay)
            sock.send(Ready(game_id=msg.game_id, seq=msg.seq))
            if mode == "presend":  # its set-up sent ahead for every seq the request could have
                for ahead in range(1, 4):
                    sock.send(Reply(game_id=msg.game_id, seq=msg.seq + ahead, move="123456"))
        elif isinstance(msg, Ping):
            sock.send(Pong(game_id=msg.game_id, seq=msg.seq))
        elif isinstance(msg, Request):
            decisions += 1
            move = rng.choice(msg.legal_moves) if msg.legal_moves else "?"  # a game that lists none: misbehave at once
            if decisions > after and only_seat in (None, msg.seat):
                if mode == "hang":
                    time.sleep(3600)
                elif mode == "crash":
                    os._exit(7)
                elif mode == "illegal":
                    move = "zz99"
                elif mode == "huge_illegal":  # its quote in game_over.detail was 1.6 MB: over the frame limit
                    move = "\x01" * 4000
                elif mode == "padded":  # a legal move and 5,000 spaces: passed on, it made the opponent's requests huge
                    move += " " * 5000
                elif mode == "garbage":
                    sock.socket.send(b"\xc1\x00garbage")
                    continue
                elif mode == "deep":  # a valid reply with an unknown field 100 000 arrays deep (100 KB)
                    data = encode(Reply(game_id=msg.game_id, seq=msg.seq, move=move))
                    sock.socket.send(bytes([data[0] + 1]) + data[1:] + b"\xa1x" + b"\x91" * 100_000 + b"\x01")
                    continue
                elif mode == "oversize":
                    sock.socket.send(b"\x00" * (2 << 20))
                    continue
                elif mode == "wrong_type":
                    sock.send(Ready(game_id=msg.game_id, seq=msg.seq))
                    continue
                elif mode == "wrong_seq":  # its answer, but with a seq the request does not have: never an answer
                    sock.send(Reply(game_id=msg.game_id, seq=msg.seq + 1, move=move))
                    continue
                elif mode == "stale":
                    sock.send(Reply(game_id=msg.game_id, seq=msg.seq - 1, move="zz99"))
                    sock.send(Reply(game_id="other-game", seq=msg.seq, move="zz99"))
            if mode == "slow" or (mode in ("slow_setup", "presend") and msg.kind == "setup"):
                time.sleep(delay)
            if mode == "chatty":  # neither is an answer: the referee notes the error, answers the ping
                sock.send(Error(code="unexpected", message="just saying"))
                sock.send(Ping(game_id=msg.game_id, seq=10_000 + decisions))
            sock.send(Reply(game_id=msg.game_id, seq=msg.seq, move=move))
            if decisions > after and mode == "exit_after_reply":
                sock.socket.close(linger=2000)  # the reply leaves first; then the process is gone
                sock.socket.context.term()
                os._exit(0)
            if decisions > after and mode == "close_after_reply":
                sock.socket.close(linger=2000)  # the connection is gone; the process lives on
                time.sleep(3600)


if __name__ == "__main__":
    raise SystemExit(main())
