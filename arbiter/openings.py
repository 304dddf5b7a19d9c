"""Openings files: start positions for a match or a tournament (docs/tournaments.md, "Openings").

One position per line in the game's own text notation (the one ``arbiter show --position`` draws
and every engine receives in its requests); ``#`` starts a comment line; blank lines are ignored.
Every game's notation is one line. Each position is checked by parsing it with the game's rules
when the file is loaded, so a bad line stops the event before any game with ``FILE:LINE``.

Who plays which position is decided up front: ``play_order`` lists the positions in the order
games take them (file order, or shuffled from a recorded seed), and a game's opening follows from
its place in the schedule alone, so a resumed event plays exactly the openings it would have.
"""
from __future__ import annotations

import random
from pathlib import Path

from .games.base import Game
from .records import Opening

ORDERS = ("sequential", "shuffled")


class OpeningsError(ValueError):
    """An openings file that cannot be used; the message names the file (and line)."""


def parse_openings(text: str, game: Game, source: str) -> list[Opening]:
    """The positions of an openings file's ``text``, each checked against ``game``'s rules."""
    openings: list[Opening] = []
    for number, line in enumerate(text.splitlines(), 1):
        position = line.strip()
        if not position or position.startswith("#"):
            continue
        try:
            state = game.from_text(position)
            over = state.is_terminal()
        except Exception as exc:  # a game's parser may trip over garbage in any way: say where
            raise OpeningsError(f"{source}:{number}: not a position of {game.name}: {exc}") from None
        if over:
            raise OpeningsError(f"{source}:{number}: the game is already over in this position")
        openings.append(Opening(index=len(openings) + 1, position=position))
    if not openings:
        raise OpeningsError(f"{source}: no positions (one per line; '#' comments and blank lines are skipped)")
    return openings


def load_openings(path: str | Path, game: Game) -> list[Opening]:
    """``parse_openings`` of the file at ``path``; ``OpeningsError`` if it cannot be read."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise OpeningsError(f"{path}: cannot read the openings file: {getattr(exc, 'strerror', None) or exc}") \
            from None
    return parse_openings(text, game, str(path))


def play_order(openings: list[Opening], order: str, seed: str) -> list[Opening]:
    """The openings in the order games take them: file order, or (``shuffled``) a permutation
    that depends only on ``seed`` (the event's recorded seed)."""
    if order not in ORDERS:
        raise OpeningsError(f"openings order {order!r}: expected {' or '.join(ORDERS)}")
    ordered = list(openings)
    if order == "shuffled":
        random.Random(f"{seed}|openings").shuffle(ordered)
    return ordered
