"""A remote participant that plays legal moves at once and, whenever it is not its turn, floods the
referee, from its first reply on, with big messages of its game that cost a full decode (a stale ``reply`` whose ``info.pv``
holds 300000 strings: ~0.9 MB, ~25 ms to decode), to make the referee slow for its opponent; with
``hello``, hellos on its one connection whose ``games`` hold 300000 names (~0.9 MB, ~40 ms).

Usage: python tests/engines/flooder.py tcp://HOST:PORT KEYS_DIR NAME [reply|hello]   (KEYS_DIR: referee.pub, NAME.key)
"""
from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import zmq  # noqa: E402

from protocol import curve  # noqa: E402
from protocol.codec import decode, encode  # noqa: E402
from protocol.messages import Hello, Info, NewGame, Ping, Pong, Quit, Ready, Reply, Request  # noqa: E402


def main() -> int:
    endpoint, keys, name = sys.argv[1:4]
    kind = sys.argv[4] if len(sys.argv) > 4 else "reply"
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.linger = 0
    curve.client_options(sock, curve.load_public(os.path.join(keys, "referee.pub")),
                         curve.load_keypair(os.path.join(keys, f"{name}.key")))
    sock.connect(endpoint)
    sock.send(encode(Hello(name=name, wants_legal_moves=True)))
    junk, sent = None, 0
    while True:
        if sock.poll(0 if junk else 100):
            msg = decode(sock.recv())
            if isinstance(msg, Ping):
                sock.send(encode(Pong(game_id=msg.game_id, seq=msg.seq)))
            elif isinstance(msg, NewGame):
                sock.send(encode(Ready(game_id=msg.game_id, seq=msg.seq)))
            elif isinstance(msg, Request):
                sock.send(encode(Reply(game_id=msg.game_id, seq=msg.seq, move=msg.legal_moves[0],
                                       info=Info(time_ms=0))))
                junk = encode(Hello(name=name, games=["ab"] * 300_000)) if kind == "hello" else \
                    encode(Reply(game_id=msg.game_id, seq=-5, move="x", info=Info(pv=["ab"] * 300_000)))
            elif isinstance(msg, Quit):
                break
            continue
        try:
            sock.send(junk, zmq.NOBLOCK)
            sent += 1
        except zmq.Again:
            time.sleep(0.001)
    print(f"flooder: sent {sent} junk messages", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
