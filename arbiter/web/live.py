"""``--web PORT`` for the arbiter's own commands (``arbiter match``): the web view in a thread of
the same process, fed over an ipc socket in a private temporary folder (docs/web.md)."""
from __future__ import annotations

import shutil
import tempfile

from ..feed import Feed, chain
from .app import MemorySource, WebServer


class LiveView:
    """A web server and the feed into it; ``on_event``/``on_game`` wrap the command's own hooks."""

    def __init__(self, title: str, port: int, host: str = "127.0.0.1", total: int | None = None):
        self.folder = tempfile.mkdtemp(prefix="arbiter-web-")
        endpoint = f"ipc://{self.folder}/feed"
        try:
            self.server = WebServer(MemorySource(title, total), endpoint, host=host, port=port)
        except OSError:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        self.server.start()
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
        self.server.stop()
        shutil.rmtree(self.folder, ignore_errors=True)
