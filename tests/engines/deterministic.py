"""A correct engine whose every move is a pure function of its argument, the game (match id and
number come in new_game) and the position: the same moves however its processes are reused,
restarted or killed. For kill-and-resume tests.

Usage: python tests/engines/deterministic.py NAME
"""
from __future__ import annotations

import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from protocol.kit import run_engine  # noqa: E402


def decide(request, game):
    rng = random.Random(f"{sys.argv[1]}|{game.match_id}|{game.game_number}|{request.ply}|{request.position}")
    time.sleep(0.002)  # a little thinking, so that kills land in the middle of games
    return rng.choice(request.legal_moves)


if __name__ == "__main__":
    run_engine(decide, name="det-" + sys.argv[1], wants_legal_moves=True)
