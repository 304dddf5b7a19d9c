"""A remote participant whose link drops as it is sent its second game: it plays random legal moves,
and at its second ``new_game`` exits at once without a word, its ``ready`` never sent.

Usage: python tests/engines/drop_at_new_game.py tcp://HOST:PORT KEYS_DIR NAME   (KEYS_DIR: referee.pub, NAME.key)
"""
from __future__ import annotations

import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import zmq  # noqa: E402

from protocol import curve  # noqa: E402
from protocol.codec import decode, encode  # noqa: E402
from protocol.messages import Hello, Info, NewGame, Ping, Pong, Quit, Ready, Reply, Request  # noqa: E402


def main() -> int:
    endpoint, keys, name = sys.argv[1:4]
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.linger = 0
    curve.client_options(sock, curve.load_public(os.path.join(keys, "referee.pub")),
                         curve.load_keypair(os.path.join(keys, f"{name}.key")))
    sock.connect(endpoint)
    sock.send(encode(Hello(name=name, wants_legal_moves=True)))
    games = 0
    while True:
        msg = decode(sock.recv())
        if isinstance(msg, Ping):
            sock.send(encode(Pong(game_id=msg.game_id, seq=msg.seq)))
        elif isinstance(msg, NewGame):
            games += 1
            if games == 2:
                os._exit(0)
            sock.send(encode(Ready(game_id=msg.game_id, seq=msg.seq)))
        elif isinstance(msg, Request):
            sock.send(encode(Reply(game_id=msg.game_id, seq=msg.seq, move=random.choice(msg.legal_moves),
                                   info=Info(time_ms=0))))
        elif isinstance(msg, Quit):
            return 0


if __name__ == "__main__":
    raise SystemExit(main())
