"""A 1-ply greedy engine for Smess: take the most material now, else a random move.

Usage: python -m sample_engines.smess_greedy [--seed N] [--name NAME]

Each legal move is scored by what it wins at once: the captured piece (the Brain wins the
game, so it outweighs everything) plus the gain of a promotion (a Ninny becoming a Numskull).
Among equal scores the engine picks at random, so quiet positions are played like the random
engine. It looks no further: it neither sees recaptures nor defends. It is the yardstick a
searching engine must beat clearly (see ``bench/smess_strength.md``).
"""
from __future__ import annotations

import json
import random

from arbiter.games.smess import BRAIN, NINNY, NUMSKULL, SmessGame
from protocol.kit import PerGameRandom

NAME = "smess-greedy"
VALUE = {NINNY: 100, NUMSKULL: 400, BRAIN: 1_000_000}
"""Material values (a Ninny is 100) used to rank captures and promotions."""


def greedy_move(state, rng: random.Random) -> tuple[int, int]:
    """The ``(from, to)`` that gains the most material immediately (random among ties)."""
    board = state.board()
    promotes = state.game.board_def.promotes[state.side_to_move()]
    best, best_moves = None, []
    for frm, to in state.moves_ints():
        gain = VALUE.get(abs(board[to]), 0)
        if abs(board[frm]) == NINNY and promotes[to]:
            gain += VALUE[NUMSKULL] - VALUE[NINNY]
        if best is None or gain > best:
            best, best_moves = gain, [(frm, to)]
        elif gain == best:
            best_moves.append((frm, to))
    if not best_moves:
        raise ValueError("no legal move")
    return rng.choice(best_moves)


def make_decider(seed: int | None = None):
    """A kit decision function that keeps one rules object per option set."""
    rngs = PerGameRandom(seed)  # seeded per game: the same game is played the same in any run
    games: dict[str, SmessGame] = {}

    def decide(request, game):
        rng = rngs(game)
        try:
            key = json.dumps(game.options, sort_keys=True)
            rules = games.get(key)
            if rules is None:
                rules = games[key] = SmessGame(**game.options)
            state = rules.from_text(request.position)
            frm, to = greedy_move(state, rng)
        except Exception:  # never forfeit over an engine bug: any listed move will do
            if not request.legal_moves:
                raise
            return rng.choice(request.legal_moves)
        return rules.board_def.move_name(frm, to)

    return decide


def main(argv: list[str] | None = None) -> int:
    from protocol.kit import engine_arguments, run_engine

    args = engine_arguments("Smess 1-ply greedy engine", NAME, seed=None).parse_args(argv)
    return run_engine(make_decider(args.seed), name=args.name, author="arbiter project", version="1",
                      games=["smess"], wants_legal_moves=True, endpoint=args.endpoint)


if __name__ == "__main__":
    raise SystemExit(main())
