"""Stalingrad factory street fight (solitaire): rules, the map/counter data file and engine helpers.

``StalingradGame`` is the registered game (``load_game("stalingrad")``); see ``rules.py`` for the
flow, ``edition.py`` for the data file and ``library.py`` for engine helpers.
"""
from .edition import Edition, EditionError, edition_from_data, load_edition
from .rules import StalingradGame, StalingradState, combat_winner, dice_counts

__all__ = ["StalingradGame", "StalingradState", "Edition", "EditionError", "load_edition",
           "edition_from_data", "combat_winner", "dice_counts"]
