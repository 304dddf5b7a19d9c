"""The games the referee knows, by name. One module (or package) per game."""
from __future__ import annotations

from typing import Any

from .base import (CHANCE, SIMULTANEOUS, TERMINAL, ChanceError, Game, GameOptions, GameType, IllegalMove, OptionError,
                   State, Utility)


GAME_CLASSES = {
    "einstein": "arbiter.games.einstein:EinsteinGame",
    "smess": "arbiter.games.smess:SmessGame",
    "catalonia": "arbiter.games.catalonia:CataloniaGame",
    "stalingrad": "arbiter.games.stalingrad:StalingradGame",
    "aachess": "arbiter.games.aachess:AAChessGame",
}
"""Game name -> "module:class"; imported on first use so one game's module never slows another's."""


def _registry() -> dict[str, str]:
    import importlib.util

    return {name: path for name, path in GAME_CLASSES.items()
            if importlib.util.find_spec(path.split(":")[0]) is not None}


def game_class(name: str) -> type[Game]:
    import importlib

    module, cls = _registry()[name].split(":")
    return getattr(importlib.import_module(module), cls)


def game_names() -> list[str]:
    return sorted(_registry())


def register_game(name: str, cls: type[Game] | str) -> None:
    """Make a game known by ``name`` (a class, or its "module:class" path, which is what is kept: a
    process that imports this registry afresh can still find it). Registering the same game again
    is harmless; giving a taken name to another game is an error."""
    path = cls if isinstance(cls, str) else f"{cls.__module__}:{cls.__name__}"
    known = GAME_CLASSES.setdefault(name, path)
    if known != path and (isinstance(cls, str) or game_class(name) is not cls):
        raise ValueError(f"game name {name!r} is taken by {known}, not {path}")


def load_game(name: str, **options: Any) -> Game:
    """Make a game by name with options; raise ``OptionError`` naming what is wrong."""
    games = _registry()
    if name not in games:
        raise OptionError(f"unknown game {name!r}; known games: {', '.join(sorted(games))}")
    return game_class(name)(**options)


__all__ = ["CHANCE", "SIMULTANEOUS", "TERMINAL", "ChanceError", "Game", "GameOptions", "GameType", "IllegalMove",
           "OptionError", "State", "Utility", "load_game", "game_names", "game_class", "register_game"]
