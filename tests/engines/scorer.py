"""A test engine with one option of every type: it plays a random legal move (seeded per game) and
reports the fixed score its ``score`` option says (none before its ``from_move``-th decision of a
game), with the options it was given as its ``info.comment`` (JSON), so records show both.

Usage: python tests/engines/scorer.py [--seed N]
"""
from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from protocol.kit import PerGameRandom, engine_arguments, run_engine  # noqa: E402
from protocol.messages import EngineOption, Info  # noqa: E402

OPTIONS = [
    EngineOption(name="score", type="spin", default=0, min=-10_000, max=10_000,
                 description="the score reported with every move"),
    EngineOption(name="from_move", type="spin", default=1, min=1,
                 description="report no score before this decision of a game (counted from 1)"),
    EngineOption(name="silent", type="check", default=False, description="report no score at all"),
    EngineOption(name="style", type="combo", default="calm", choices=["calm", "wild"], description="unused"),
    EngineOption(name="label", type="string", default="", description="unused"),
]


def main() -> int:
    args = engine_arguments(__doc__.splitlines()[0], "scorer").parse_args()
    rngs = PerGameRandom(args.seed)
    moves: dict[str, int] = {}

    def decide(request, game):
        options = game.engine_options
        moves[game.game_id] = n = moves.get(game.game_id, 0) + 1
        scored = not options["silent"] and n >= options["from_move"]
        info = Info(score=float(options["score"]) if scored else None, comment=json.dumps(options, sort_keys=True))
        return rngs(game).choice(request.legal_moves), info

    return run_engine(decide, name=args.name, author="tests", version="1", wants_legal_moves=True, options=OPTIONS,
                      endpoint=args.endpoint)


if __name__ == "__main__":
    raise SystemExit(main())
