"""Tournaments: a whole event described in one TOML file, played durably, rated with error bars.

Modules: ``config`` (the file), ``director`` and ``schedule`` (which games, as a pure function
of the seed and the committed results), ``db`` (SQLite), ``runner`` (plans, hands out jobs,
commits results; kill -9 safe), ``jobs`` (the runner's messages and the ``Backend`` interface),
``pool`` and ``worker`` (the local backend: worker processes), ``ratings`` and ``sprt`` (rating
models; means, rates and paired tests are ``arbiter.stats``), ``report`` (text, JSON, CSV, plot),
``cli`` (``arbiter-tournament``). See docs/tournaments.md.
"""

import arbiter as _arbiter  # noqa: F401,E402  first: holds the operator's signals until the command handles them
