"""A&A Chess: diceless Axis & Allies on the classic map, for 2-5 seats.

``AAChessGame`` is the registered game (``load_game("aachess")``); ``combat.py`` is the combat
arithmetic, ``board.py`` the map data loader (``classic_map.json``, written by ``make_map.py``),
``rules.py`` the game.
"""
from .board import Board, MapError, load_board
from .rules import AAChessGame, AAChessState

__all__ = ["AAChessGame", "AAChessState", "Board", "MapError", "load_board"]
