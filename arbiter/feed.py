"""The live feed: a running game's spectator view, published without ever waiting for a viewer.

A referee (in the arbiter's own process or in a tournament worker) calls ``Feed.hook`` on every
event and ``Feed.finished`` at the end of a game. The feed is a ZeroMQ PUB socket that *connects*
to the viewer's SUB socket (``arbiter/web``): PUB never blocks, and with no viewer bound, or a
viewer that is slow (its queue past ``SNDHWM``), messages are dropped, so a viewer can never slow a
game. Each message is a msgpack map; a viewer that missed some rebuilds from the next one (every
event message carries the whole spectator view, not a delta), which is also why the feed may send
only the newest view every ``interval`` (50 ms) when engines move faster than that (a viewer keeps
the view of the highest ply it got).

What a message holds is all a spectator may know (docs/web.md, "No leaks"): the board from
``State.render_svg()`` (hidden information stays hidden), the decisions made, the dice outcomes of
games without hidden information (a hidden-information game's draws are shown as ``?``), clocks,
engine info; never the dice seed. The end message carries the full record (seed, final position,
and the board with ``reveal=True``): the game is over.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import msgspec
import zmq

from .clock import Clock
from .games.base import State
from .records import Event, GameRecord

HIGH_WATER = 1000
"""Messages queued for a viewer before the feed drops the newest ones."""


def feed_endpoint(anchor: str | Path) -> str:
    """The ipc endpoint beside ``anchor`` (an event's database): ``DB.feed``, or a name under the
    temporary directory derived from its path when that path is too long for a Unix socket."""
    path = os.path.abspath(str(anchor)) + ".feed"
    if len(path) > 100:
        digest = hashlib.sha256(path.encode()).hexdigest()[:20]
        path = os.path.join(tempfile.gettempdir(), f"arbiter-feed-{digest}")
    return f"ipc://{path}"


def public_event(event: Event, hidden_draws: bool) -> dict[str, Any]:
    """An event as a spectator may see it during the game."""
    out: dict[str, Any] = {"ply": event.ply, "seat": event.seat, "kind": event.kind, "move": event.move}
    if event.seat < 0 and hidden_draws:
        out["move"] = "?"
    else:
        if event.note:
            out["note"] = event.note
    if event.measured_ms is not None:
        out["ms"] = event.measured_ms
    if event.clock_ms is not None:
        out["clock_ms"] = event.clock_ms
    if event.info is not None:
        out["info"] = {k: v for k, v in msgspec.structs.asdict(event.info).items() if v is not None}
    return out


def spectator_view(record: GameRecord, state: State, events: list[Event], clocks_ms: list[int | None],
                   hidden: bool, at: float) -> dict[str, Any]:
    """The whole live view of a running game (``state`` after ``events``, at Unix time ``at``, when
    the clocks were read): everything public."""
    acting = state.acting_seats() if not state.is_terminal() else []
    return {
        "type": "live", "game_id": record.game_id, "match_id": record.match_id, "number": record.game_number,
        "game": record.game, "players": record.players, "roles": record.seat_roles,
        "time_control": record.time_control, "dice_commitment": record.dice_commitment,
        "started_at": record.started_at, "ply": events[-1].ply + 1 if events else 0, "acting": acting,
        "clocks_ms": clocks_ms, "sent_at": at,
        "board": state.render_svg(),
        "last": [public_event(e, hidden) for e in events],
    }


class Feed:
    """Publishes a referee's games to ``endpoint`` (see the module doc). One per process.

    At most one view per ``interval`` (50 ms): the hook draws and sends the current view itself
    when the last one is older than that (a few hundred microseconds, so at most ~1 % of the
    referee's time however fast the engines), and otherwise only keeps a copy of the state; a
    thread sends the newest such copy once the interval is over, if the game did not go on by then
    (the last move before a long think is shown too). Drawing in a thread for every event instead
    would take the interpreter lock from the referee at any moment."""

    def __init__(self, endpoint: str, interval: float = 0.05, events: int = 40):
        self.endpoint, self.interval, self.events = endpoint, interval, events
        self._hidden: dict[str, bool] = {}
        self._game, self._on = "", False
        self._lock = threading.Lock()
        """Guards the socket (used from the referee's thread and the feed's) and ``_pending``."""
        self._sock = zmq.Context.instance().socket(zmq.PUB)
        self._sock.setsockopt(zmq.SNDHWM, HIGH_WATER)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.connect(endpoint)
        self._pending: tuple | None = None
        self._last = 0.0
        self._wake = threading.Event()
        self._closing = False
        self._thread: threading.Thread | None = None
        self.dropped = 0
        self.sent = 0

    def listening(self) -> bool:
        """Whether a viewer may be there: an ipc endpoint's socket file exists (checked once per
        game, so an event nobody watches pays nothing for its feed)."""
        if self.endpoint.startswith("ipc://"):
            return os.path.exists(self.endpoint[len("ipc://"):])
        return True

    def hook(self, record: GameRecord, state: State, event: Event, clocks: list[Clock]) -> None:
        """The referee's ``on_event``: publish the game's view after this event (never waits)."""
        if record.game_id != self._game:
            self._game, self._on = record.game_id, self.listening()
        if not self._on:
            return
        hidden = self._hidden.get(record.game)
        if hidden is None:
            hidden = self._hidden[record.game] = state.game.game_type.hidden_information
        now = time.monotonic()
        clocks_ms = [c.remaining_ms() if c.allowance() is not None else None for c in clocks]
        if now - self._last >= self.interval:
            self._last = now
            with self._lock:
                self._pending = None
            self._publish((record, state, record.events[-self.events:], clocks_ms, hidden, time.time()))
            return
        snapshot = (record, state.clone(), record.events[-self.events:], clocks_ms, hidden, time.time())
        with self._lock:
            self._pending = snapshot
        if self._thread is None:
            self._thread = threading.Thread(target=self._trail, name="feed", daemon=True)
            self._thread.start()
        if not self._wake.is_set():
            self._wake.set()

    def _publish(self, snapshot: tuple) -> None:
        self._send(spectator_view(*snapshot))

    def _send(self, message: dict[str, Any]) -> None:
        data = msgspec.msgpack.encode(message)
        with self._lock:
            try:
                self._sock.send(data, zmq.NOBLOCK)
                self.sent += 1
            except zmq.Again:
                self.dropped += 1

    def _trail(self) -> None:
        """Send the view kept by a throttled event once its interval is over, unless newer came."""
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._closing:
                return
            delay = self._last + self.interval - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            with self._lock:
                snapshot, self._pending = self._pending, None
            if snapshot is not None:
                self._last = time.monotonic()
                self._publish(snapshot)

    def finished(self, record: GameRecord) -> None:
        """The game is over: everything may be shown now, the dice seed included."""
        from .records import to_json

        with self._lock:
            self._pending = None
        if self.listening():
            self._send({"type": "end", "game_id": record.game_id, "record": msgspec.json.decode(to_json(record))})

    def close(self) -> None:
        self._closing = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(2)
        with self._lock:
            self._sock.close(0)


def chain(*hooks):
    """One ``on_event`` calling each given hook (None ones skipped)."""
    hooks = [h for h in hooks if h is not None]
    if len(hooks) == 1:
        return hooks[0]

    def call(*args):
        for h in hooks:
            h(*args)
    return call if hooks else None
