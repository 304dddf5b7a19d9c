"""A correct engine that uses its time: it thinks until ``--reserve`` ms (default 5) before its
allowance ends by its own clock, then plays a random legal move and reports the time it took.

Usage: python tests/engines/steady.py [--reserve MS] [--connect URL --server-key FILE --key FILE]
"""
from __future__ import annotations

import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from protocol.kit import engine_arguments, run_engine  # noqa: E402


def main() -> int:
    parser = engine_arguments(__doc__.splitlines()[0], "steady")
    parser.add_argument("--reserve", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(args.seed)

    first = []

    def decide(request, game):
        if not first:  # what a (re)started engine is told first: a resumed game comes with its history
            first.append(request)
            print(f"first request: ply {request.ply}, {len(request.last_moves)} moves", file=sys.stderr, flush=True)
        if request.time_left_ms:
            time.sleep(max(0, request.time_left_ms - args.reserve) / 1000)
        return rng.choice(request.legal_moves)

    return run_engine(decide, name=args.name, wants_legal_moves=True, endpoint=args.endpoint)


if __name__ == "__main__":
    raise SystemExit(main())
