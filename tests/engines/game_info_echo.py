"""A test engine that reports what ``new_game.game_info`` carried, in the ``info.comment`` of every
reply (which the referee records): a digest of it (``null`` when it was not attached) and, for a
Smess board, the arrows of three squares in clear so that a failing test shows what arrived.

Usage: python tests/engines/game_info_echo.py NAME   (the engine named ``asks`` sets
``wants_game_info`` in its hello; any other name does not). Plays the first legal move.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from protocol.kit import run_engine  # noqa: E402
from protocol.messages import Info  # noqa: E402


def decide(request, game):
    info = game.game_info
    text = json.dumps(info, sort_keys=True, separators=(",", ":"))
    seen = {"digest": hashlib.sha256(text.encode()).hexdigest(), "none": info is None}
    if info and "board" in info:
        seen["sample"] = {sq: info["board"]["arrows"][sq] for sq in ("a5", "d4", "g4")}
    return request.legal_moves[0], Info(comment=json.dumps(seen))


if __name__ == "__main__":
    run_engine(decide, name=sys.argv[1], wants_legal_moves=True, wants_game_info=sys.argv[1] == "asks")
