"""A random legal engine for A&A Chess (the ``aachess`` game).

Usage: python -m sample_engines.aachess_random [--seed N]

The legal-move list of A&A Chess is not enumerated (it is huge), so this engine builds its
decisions itself with the rules module as a library (``arbiter.games.aachess.library``): it
rebuilds the position from the request, then draws a random research (usually none, else one
die), a random purchase, random legal moves (each
tried on a copy of the position and kept only if the rules accept it), random casualties, a
random battle order and retreat choice, and places what it bought at random legal spots.
"""
from __future__ import annotations

import random

from arbiter.games.aachess import AAChessGame

NAME = "aachess-random"


def make_decider(seed: int = 0):
    """``decide(request, new_game) -> move`` for ``protocol.kit.run_engine`` or in-process use."""
    from arbiter.games.aachess import library as lib

    cache: dict[str, object] = {}
    rng = random.Random(seed)

    def decide(request, new_game) -> str:
        if cache.get("id") != request.game_id:
            cache["id"] = request.game_id
            cache["game"] = AAChessGame(**dict(new_game.options or {}))
            rng.seed(f"{seed}|{new_game.dice_commitment}|{request.seat}")
        state = cache["game"].from_text(request.position)
        kind = request.kind
        if kind == "research":
            return lib.random_research(state, rng)
        if kind == "purchase":
            return lib.random_purchase(state, rng)
        if kind in ("combat_move", "noncombat_move"):
            return lib.random_plan(state, rng, kind == "combat_move")
        if kind == "casualties":
            return lib.random_casualties(state, rng)
        if kind in ("battle", "retreat"):
            return rng.choice(state.legal_moves())
        if kind == "place":
            return lib.random_placement(state, rng)
        raise ValueError(f"unknown decision kind {kind!r}")
    return decide


def main(argv: list[str] | None = None) -> int:
    from protocol.kit import engine_arguments, run_engine

    args = engine_arguments(__doc__.splitlines()[0], NAME).parse_args(argv)
    return run_engine(make_decider(args.seed), name=args.name, author="arbiter project", version="1",
                      games=["aachess"], endpoint=args.endpoint)


if __name__ == "__main__":
    raise SystemExit(main())
