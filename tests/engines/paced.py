"""A correct engine that takes ``--think`` ms per decision (sleeping: it holds no CPU) and plays a
random legal move, seeded per game; ``--max-games N`` lets a remote referee give it N games at once.

Usage: python tests/engines/paced.py [--think MS] [--max-games N] --connect URL --server-key FILE --key FILE
"""
from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from protocol.kit import PerGameRandom, engine_arguments, run_engine  # noqa: E402


def main() -> int:
    parser = engine_arguments(__doc__.splitlines()[0], "paced")
    parser.add_argument("--think", type=float, default=20.0)
    args = parser.parse_args()
    rngs = PerGameRandom(args.seed)

    def decide(request, game):
        time.sleep(args.think / 1000)
        return rngs(game).choice(request.legal_moves)

    return run_engine(decide, name=args.name, wants_legal_moves=True, endpoint=args.endpoint)


if __name__ == "__main__":
    raise SystemExit(main())
