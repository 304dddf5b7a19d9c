"""The games the referee knows, by name. One module (or package) per game."""
from __future__ import annotations

from typing import Any

from .base import CHANCE, SIMULTANEOUS, TERMINAL, Game, IllegalMove, OptionError, State


def _registry() -> dict[str, type[Game]]:
    from .einstein import EinsteinGame

    return {cls.name: cls for cls in (EinsteinGame,)}


def game_names() -> list[str]:
    return sorted(_registry())


def load_game(name: str, **options: Any) -> Game:
    """Make a game by name with options; raise ``OptionError`` naming what is wrong."""
    games = _registry()
    if name not in games:
        raise OptionError(f"unknown game {name!r}; known games: {', '.join(sorted(games))}")
    return games[name](**options)


__all__ = ["CHANCE", "SIMULTANEOUS", "TERMINAL", "Game", "IllegalMove", "OptionError", "State",
           "load_game", "game_names"]
