"""A web view's server in a child process (``arbiter match --web``, ``arbiter-tournament run --web``).

A child, never a thread of the process that runs the games: a spectator's request is Python work
(a finished A&A game's page replays the whole game, seconds of it), and in a referee's process it
would hold the interpreter while an engine's reply waits to be read, the wait charged to the
engine (eight spectators on a finished A&A game made honest engines lose four games of six on
time at 50 ms a move; tests/test_web.py); and a tournament's workers are forked from the
director, which should then have no server threads to fork. The parent binds the port (a port in
use is its own error, exit 2) and hands the listening socket over; the child serves until its
stdin closes, which happens when the parent closes the view or dies, however it dies.
"""
from __future__ import annotations

import os
import select
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the server itself is imported by the child alone: the parent (a tournament's
    from .app import WebServer  # director, before it forks its workers) stays lean (bench/web.md)

SPECTATOR_NICE = 19
"""The web server's CPU niceness (the child's, or the serving thread's in ``serve``): on a busy
machine the games' referees and engines come first, the spectators' page after them."""

NICE_VARIABLE = "ARBITER_WEB_NICE"


def spectator_nice() -> int:
    """``SPECTATOR_NICE``, or the operator's ``ARBITER_WEB_NICE`` from 0 to 19: 0 where the server
    has the machine to itself (at 19, beside processes keeping every core busy, it gets ~1 % of a
    core by the scheduler's weights, and a page waited over a minute). Never below 0: spectators
    do not go before the games. ValueError names a bad one."""
    text = os.environ.get(NICE_VARIABLE)
    if text is None:
        return SPECTATOR_NICE
    try:
        nice = int(text)
    except ValueError:
        nice = -1
    if not 0 <= nice <= 19:
        raise ValueError(f"{NICE_VARIABLE}={text!r}: expected a niceness from 0 (as the games) "
                         f"to {SPECTATOR_NICE} (the default: after them)")
    return nice

START_TIMEOUT = 20.0
"""Seconds the child may take to import the server, bind the feed and start serving."""


class PortError(OSError):
    """The web view cannot listen where asked (the message names the address and port)."""


def listening_socket(host: str = "127.0.0.1", port: int = 8080) -> socket.socket:
    """A TCP socket bound to host:port and listening (port 0: any free one); ``PortError`` names
    the address when it cannot be had, before anything else starts. An empty address is refused:
    the kernel reads it as every interface, which must be asked for by name (0.0.0.0)."""
    if not host.strip():
        raise PortError(f"cannot listen on {host!r}:{port}: an empty address would be every interface; "
                        f"name one (0.0.0.0 for all)")
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise PortError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)
    return sock


class ServerProcess:
    """``python -m MODULE --fd N *args`` serving a socket bound here to ``host:port``. Raises
    ``PortError`` (the port), ``OSError`` (the server did not start) or ``ValueError`` (a bad
    ``ARBITER_WEB_NICE``)."""

    def __init__(self, module: str, args: list[str], host: str = "127.0.0.1", port: int = 8080):
        spectator_nice()  # a bad ARBITER_WEB_NICE is the caller's error, before the child starts
        sock = listening_socket(host, port)
        self.host, self.port = sock.getsockname()[:2]
        with sock:
            # its own session: the terminal's Ctrl-C is the parent's to handle; the parent ends it
            self.process = subprocess.Popen([sys.executable, "-m", module, "--fd", str(sock.fileno()), *args],
                                            pass_fds=[sock.fileno()], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, start_new_session=True)
        ready = select.select([self.process.stdout], [], [], START_TIMEOUT)[0]
        if not ready or self.process.stdout.readline() != b"ready\n":
            try:  # a closed stdout: it is exiting
                code = self.process.wait(1) if ready else None
            except subprocess.TimeoutExpired:
                code = None
            self.close(0)
            raise OSError(f"the web view's server did not start within {START_TIMEOUT:.0f} s" if code is None else
                          f"the web view's server exited at its start (exit status {code}; its error is above)")

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def close(self, grace: float = 5.0) -> None:
        """Close the child's stdin (it ends its streams and exits); kill it after ``grace`` s."""
        try:
            self.process.stdin.close()
            self.process.wait(grace)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()


def serve_until_stdin_closes(server: WebServer, folder: Path | None = None) -> int:
    """The child's life: serve, say ``ready``, stop when stdin closes; then remove ``folder``
    (the parent's private folder for this view: gone even when the parent was killed)."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, server.nice)
    except OSError:
        pass
    server.start()
    try:
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # nobody reads the pipe from now on
        while sys.stdin.buffer.read(65536):  # nothing is sent: EOF is the signal to stop
            pass
    except (BrokenPipeError, KeyboardInterrupt):  # the parent went before it heard "ready"
        pass
    finally:
        server.stop()
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
    return 0
