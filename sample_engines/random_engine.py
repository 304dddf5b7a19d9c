"""A uniformly random engine for any game: it asks the referee for the legal moves and picks one.

Usage: python -m sample_engines.random_engine [--seed N] [--name NAME]
"""
from __future__ import annotations

from protocol.kit import PerGameRandom, engine_arguments, run_engine


def main(argv: list[str] | None = None) -> int:
    args = engine_arguments(__doc__.splitlines()[0], "random", seed=None).parse_args(argv)
    rngs = PerGameRandom(args.seed)  # seeded per game: the same game is played the same in any run

    def decide(request, game):
        if request.legal_moves is None:  # the game cannot list these (a plan, a purchase...)
            raise RuntimeError(f"the referee cannot list the {request.kind} decisions of this game; "
                               f"use an engine of the game's own")
        if not request.legal_moves:
            raise RuntimeError(f"no legal moves given for {request.kind}")
        return rngs(game).choice(request.legal_moves)

    return run_engine(decide, name=args.name, author="arbiter project", version="1", wants_legal_moves=True,
                      endpoint=args.endpoint)


if __name__ == "__main__":
    raise SystemExit(main())
