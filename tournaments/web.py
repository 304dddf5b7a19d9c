"""The web view of a tournament (docs/web.md): its database, read-only, as the page's source.

``arbiter-tournament serve DB`` (a process of its own) and ``run/resume --web PORT`` (a child
process of the director: ``arbiter.web.process``) both serve it. Finished games and standings come
from the SQLite file, read only; running games from the feed beside it (``DB.feed``,
``arbiter.feed``), to which every worker publishes while that socket exists.
"""
from __future__ import annotations

import argparse
import os
import socket
import threading
from pathlib import Path
from typing import Any

from arbiter.feed import feed_endpoint
from arbiter.records import GameRecord
from arbiter.records.store import GameLine, game_lines, iter_records, recent_lines
from arbiter.web import Source, WebServer
from arbiter.web.app import engine_page
from arbiter.web.process import serve_until_stdin_closes

from .report import build_report, stored_config, to_json


class TournamentSource(Source):
    """A tournament database, re-read when its files change: the report (standings) and the last
    games when they did, one record or one engine's lines when asked (never every record)."""

    def __init__(self, db_path: str | Path):
        self.path = Path(db_path)
        # not the report: at 100,000 games it takes seconds (20 s on a loaded machine), and the
        # view must answer its parent within START_TIMEOUT
        self.title = stored_config(self.path).name  # ValueError if it is not a tournament database
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[Any, Any]] = {}

    def version(self) -> Any:
        out = []
        for p in (self.path, Path(f"{self.path}-wal")):
            try:
                st = os.stat(p)
                out.append((st.st_size, st.st_mtime_ns))
            except OSError:
                out.append(None)
        return tuple(out)

    def _cached(self, key: str, make):
        version = self.version()
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and hit[0] == version:
                return hit[1]
        value = make()
        with self._lock:
            self._cache[key] = (version, value)
        return value

    def lines(self) -> list[GameLine]:
        return list(game_lines(self.path))

    def recent(self, count: int) -> list[GameLine]:
        return self._cached(f"recent{count}", lambda: recent_lines(self.path, count))

    def record(self, game_id: str) -> GameRecord | None:
        return next(iter_records(self.path, game_id), None)

    def engine(self, name: str) -> dict[str, Any] | None:
        return engine_page(game_lines(self.path, player=name), name)

    def summary(self) -> dict[str, Any]:
        import json

        try:
            report = json.loads(to_json(self._cached("report", lambda: build_report(self.path, with_timeline=False))))
        except Exception as exc:  # the report's fit can fail on a few games: the page still shows scores
            return {**super().summary(), "note": f"the full report is not available yet ({exc})"}
        if not report["tournament"]["finished"]:
            report["tournament"]["seed"] = None  # every game's dice derive from it: shown once all are played
        report["title"] = self.title
        return report


def web_server(db_path: str | Path, host: str, port: int) -> WebServer:
    """The web view of ``db_path`` on ``host:port``; OSError naming the port if it cannot listen,
    ValueError if the file is not a tournament database."""
    return WebServer(TournamentSource(db_path), feed_endpoint(db_path), host=host, port=port)


def main(argv: list[str] | None = None) -> int:
    """The child ``run --web`` starts (``arbiter.web.process.ServerProcess``): serve the listening
    socket ``--fd`` until stdin closes."""
    ap = argparse.ArgumentParser(prog="python -m tournaments.web")
    ap.add_argument("--fd", type=int, required=True)
    ap.add_argument("--db", required=True)
    args = ap.parse_args(argv)
    return serve_until_stdin_closes(WebServer(TournamentSource(args.db), feed_endpoint(args.db),
                                              sock=socket.socket(fileno=args.fd)))


if __name__ == "__main__":
    raise SystemExit(main())
