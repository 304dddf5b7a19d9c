"""A remote participant whose link drops after its first game: it plays random legal moves and,
at the first game_over, exits at once without a word (as a pulled cable would look to the referee).

Usage: python tests/engines/one_game.py --connect tcp://HOST:PORT --server-key FILE --key FILE
"""
from __future__ import annotations

import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from protocol.kit import engine_arguments, run_engine  # noqa: E402


def main() -> int:
    args = engine_arguments(__doc__.splitlines()[0], "alice").parse_args()
    return run_engine(lambda request, game: random.choice(request.legal_moves), name=args.name,
                      wants_legal_moves=True, on_game_over=lambda message, game: os._exit(0),
                      endpoint=args.endpoint)


if __name__ == "__main__":
    raise SystemExit(main())
