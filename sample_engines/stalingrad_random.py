"""A random legal engine for Stalingrad factory street fight (the ``stalingrad`` game).

Usage: python -m sample_engines.stalingrad_random [--seed N]

``legal_moves`` cannot list set-ups and movement plans (there are far too many), so this engine
builds them itself with the rules module as a library: it reads the position it is shown (face-down
counters are ``?``; their identity does not matter for a legal move, so they are filled in at
random), then draws a random legal set-up or plan (``arbiter.games.stalingrad.library``). Air
strikes are a coin flip; a depletion picks a random candidate. Its generator is seeded from the
game's public dice commitment and ``--seed``, so a seeded suite replays exactly.
"""
from __future__ import annotations


from arbiter.games import load_game
from arbiter.games.stalingrad.library import (deployment_text, determinize, plan_text,
                                              random_deployment, random_moves)
from sample_engines.stalingrad_planner import game_rng

NAME = "stalingrad-random"


def make_decider(seed: int = 0):
    """``decide(request, new_game) -> move``, for ``protocol.kit.run_engine`` or in-process use."""
    games: dict[str, tuple] = {}

    def decide(request, new_game) -> str:
        if request.game_id not in games:
            games.clear()
            games[request.game_id] = (load_game("stalingrad", **dict(new_game.options or {})),
                                      game_rng(new_game, seed))
        game, rng = games[request.game_id]
        state = determinize(game, request.position, rng)
        if request.kind == "deploy":
            return deployment_text(state, random_deployment(state, rng))
        if request.kind == "movement_plan":
            return plan_text(state, random_moves(state, rng))
        if request.kind == "air_strike":
            return rng.choice(("no", "yes"))
        if request.kind == "deplete":
            return rng.choice([state.ed.german_ids[i] for i in state.deplete_candidates()])
        raise ValueError(f"unknown decision kind {request.kind!r}")
    return decide


def main(argv: list[str] | None = None) -> int:
    from protocol.kit import engine_arguments, run_engine

    args = engine_arguments(__doc__.splitlines()[0], NAME).parse_args(argv)
    return run_engine(make_decider(args.seed), name=args.name, author="arbiter project", version="1",
                      games=["stalingrad"], endpoint=args.endpoint)


if __name__ == "__main__":
    raise SystemExit(main())
