"""Tournaments: a whole event described in one TOML file, played durably, rated with error bars.

Modules: ``config`` (the file), ``director`` and ``schedule`` (which games, as a pure function
of the seed and the committed results), ``db`` (SQLite), ``worker`` and ``runner`` (parallel
play, kill -9 safe), ``ratings`` and ``sprt`` (statistics), ``report`` (text, JSON, CSV, plot),
``cli`` (``arbiter-tournament``). See docs/tournaments.md.
"""
