"""``--web PORT`` for the arbiter's own commands (``arbiter match``, ``coop``, ``solo``): the web view
in a child process (``arbiter.web.process``: never a thread of the referee), fed over an ipc
socket in a private temporary folder (docs/web.md)."""
from __future__ import annotations

import argparse
import shutil
import socket
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from .. import say
from ..feed import Feed, chain
from ..records.store import game_lines, recent_lines
from .process import ServerProcess, serve_until_stdin_closes

if TYPE_CHECKING:
    from .app import MemorySource


class LiveView:
    """A web server process and the feed into it; ``on_event``/``on_game`` wrap the command's own
    hooks. ``db``: the run's results database, where the view reads an older game's record (it
    keeps only the last few); ``match_ids``: a resumed run's matches, whose games played before
    are shown too (the standings are the run's, not this process's). Raises ``PortError`` (the
    port), ``OSError`` (the server did not start) or ``ValueError`` (a bad ``ARBITER_WEB_NICE``)."""

    def __init__(self, title: str, port: int, host: str = "127.0.0.1", total: int | None = None,
                 db: str | Path | None = None, match_ids: tuple[str, ...] | list[str] = ()):
        self.folder = tempfile.mkdtemp(prefix="arbiter-web-")
        endpoint = f"ipc://{self.folder}/feed"
        stored = ["--db", str(Path(db).resolve()), *(a for mid in match_ids for a in ("--match", mid))] \
            if db is not None else []
        try:
            self.server = ServerProcess("arbiter.web.live", ["--feed", endpoint, "--title", title] +
                                        (["--total", str(total)] if total is not None else []) +
                                        stored, host, port)
        except (OSError, ValueError):
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        self.feed = Feed(endpoint)

    @property
    def url(self) -> str:
        return self.server.url

    def on_event(self, hook=None):
        return chain(hook, self.feed.hook)

    def on_game(self, hook=None):
        """``hook(result, record)`` and then the feed's end of game."""
        def call(result, record):
            if hook is not None:
                hook(result, record)
            self.feed.finished(record)
        return call

    def close(self) -> None:
        self.feed.close()
        self.server.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """The child: serve the listening socket ``--fd`` until stdin closes."""
    ap = argparse.ArgumentParser(prog="python -m arbiter.web.live")
    ap.add_argument("--fd", type=int, required=True)
    ap.add_argument("--feed", required=True)
    ap.add_argument("--title", default="arbiter match")
    ap.add_argument("--total", type=int, default=None)
    ap.add_argument("--db", default=None, help="the run's results database (older games' records, --match)")
    ap.add_argument("--match", action="append", default=[], help="a match whose stored games to show")
    args = ap.parse_args(argv)
    from .app import MemorySource, WebServer  # the child's alone: the referee that starts it stays lean

    source = MemorySource(args.title, args.total, db=args.db)
    server = WebServer(source, args.feed, sock=socket.socket(fileno=args.fd))
    if args.db and args.match:  # read while the page is already served (a long match's games take a while to parse)
        threading.Thread(target=_preload, args=(source, args.db, args.match), name="preload", daemon=True).start()
    folder = Path(args.feed.removeprefix("ipc://")).parent
    return serve_until_stdin_closes(server, folder if folder.name.startswith("arbiter-web-") else None)


def _preload(source: MemorySource, db: str, match_ids: list[str]) -> None:
    try:
        source.preload(line for match_id in match_ids for line in game_lines(db, match_id=match_id))
        source.preload(line for line in recent_lines(db, 200) if line.match_id in match_ids)  # when they started
    except Exception as exc:  # noqa: BLE001 - the view still shows the games from now on
        say(f"web view: the games played before could not be read from {db}: {exc}")


if __name__ == "__main__":
    raise SystemExit(main())
