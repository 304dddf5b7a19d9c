"""A random engine whose every decision is a function of the position alone (and ``--seed``):
two runs of an event on the same dice play the same games, whatever restarts happen in between.

Usage: python bench/position_engine.py [--seed N] [--connect URL --server-key FILE --key FILE]
"""
from __future__ import annotations

import hashlib
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from protocol.kit import engine_arguments, run_engine  # noqa: E402


def main() -> int:
    args = engine_arguments(__doc__.splitlines()[0], "position-random").parse_args()

    def decide(request, game):
        key = f"{args.seed}|{request.kind}|{request.ply}|{request.position}".encode()
        return random.Random(hashlib.sha256(key).digest()).choice(request.legal_moves)

    return run_engine(decide, name=args.name, wants_legal_moves=True, endpoint=args.endpoint)


if __name__ == "__main__":
    raise SystemExit(main())
