"""``--web PORT`` for the arbiter's own commands (``arbiter match``, ``coop``, ``solo``): the web view
in a child process, fed over an ipc socket in a private temporary folder (docs/web.md).

A child, not a thread of the referee: a spectator's request costs Python work (a finished A&A
game's page replays the whole game, ~0.4 s), and in the referee's process that work would hold
the interpreter while an engine's reply waits to be read, and the wait would be charged to the
engine (eight spectators on a finished A&A game made honest engines lose four games of six on
time at 50 ms a move; tests/test_web.py). The parent binds the port (a port in use is its own
error, exit 2) and hands the socket over; the child serves until its stdin closes, which happens
when the referee closes the view or dies, however it dies; then it removes the view's folder."""
from __future__ import annotations

import argparse
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from ..feed import Feed, chain
from .app import SPECTATOR_NICE, MemorySource, WebServer, listening_socket

START_TIMEOUT = 20.0
"""Seconds the child may take to import the server, bind the feed and start serving."""


class LiveView:
    """A web server process and the feed into it; ``on_event``/``on_game`` wrap the command's own
    hooks. Raises ``PortError`` (the port) or ``OSError`` (the server did not start)."""

    def __init__(self, title: str, port: int, host: str = "127.0.0.1", total: int | None = None):
        self.folder = tempfile.mkdtemp(prefix="arbiter-web-")
        endpoint = f"ipc://{self.folder}/feed"
        try:
            sock = listening_socket(host, port)
        except OSError:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        self.host, self.port = sock.getsockname()[:2]
        with sock:
            argv = [sys.executable, "-m", "arbiter.web.live", "--fd", str(sock.fileno()), "--feed", endpoint,
                    "--title", title] + (["--total", str(total)] if total is not None else [])
            # its own session: the terminal's Ctrl-C is the referee's to handle; the referee ends it
            self.process = subprocess.Popen(argv, pass_fds=[sock.fileno()], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, start_new_session=True)
        ready = select.select([self.process.stdout], [], [], START_TIMEOUT)[0]
        if not ready or self.process.stdout.readline() != b"ready\n":
            try:  # a closed stdout: it is exiting
                code = self.process.wait(1) if ready else None
            except subprocess.TimeoutExpired:
                code = None
            self._end(0)
            raise OSError(f"the web view's server did not start within {START_TIMEOUT:.0f} s" if code is None else
                          f"the web view's server exited at its start (exit status {code}; its error is above)")
        self.feed = Feed(endpoint)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

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
        self._end(5.0)

    def _end(self, grace: float) -> None:
        """Close the child's stdin (it ends its streams and exits), kill it after ``grace`` s."""
        try:
            self.process.stdin.close()
            self.process.wait(grace)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """The child: serve the listening socket ``--fd`` until stdin closes."""
    ap = argparse.ArgumentParser(prog="python -m arbiter.web.live")
    ap.add_argument("--fd", type=int, required=True)
    ap.add_argument("--feed", required=True)
    ap.add_argument("--title", default="arbiter match")
    ap.add_argument("--total", type=int, default=None)
    args = ap.parse_args(argv)
    try:
        os.setpriority(os.PRIO_PROCESS, 0, SPECTATOR_NICE)
    except OSError:
        pass
    server = WebServer(MemorySource(args.title, args.total), args.feed, sock=socket.socket(fileno=args.fd))
    server.start()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    try:
        while sys.stdin.buffer.read(65536):  # nothing is sent: EOF is the signal to stop
            pass
    except KeyboardInterrupt:
        pass
    server.stop()
    folder = Path(args.feed.removeprefix("ipc://")).parent  # the referee's, made for this view
    if folder.name.startswith("arbiter-web-"):  # gone even when the referee was killed
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
