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
                   hidden: bool, at: float, event_at: float | None = None) -> dict[str, Any]:
    """The whole live view of a running game (``state`` after ``events``, at Unix time ``at``, when
    the clocks were read; the newest event happened at ``event_at``): everything public."""
    acting = state.acting_seats() if not state.is_terminal() else []
    return {
        "type": "live", "game_id": record.game_id, "match_id": record.match_id, "number": record.game_number,
        "game": record.game, "players": record.players, "roles": record.seat_roles,
        "time_control": record.time_control, "dice_commitment": record.dice_commitment,
        "started_at": record.started_at, "ply": events[-1].ply + 1 if events else 0, "acting": acting,
        "clocks_ms": clocks_ms, "sent_at": at, "event_at": at if event_at is None else event_at,
        "board": state.render_svg(),
        "last": [public_event(e, hidden) for e in events],
    }


class _Referee(threading.local):
    """What a ``Feed`` keeps of the game of the referee calling it, one per thread: shared by the
    threads of a worker playing several games at once, one referee's ``draw`` published another
    thread's game (mid-move) and the views of the other games were lost."""

    game: str = ""
    on = False
    """A viewer may be there (``Feed.listening``, once per game)."""
    current: tuple | None = None
    """The newest view, not drawn yet: (record, state, clocks, when)."""
    last = 0.0
    """When it last drew (monotonic)."""


class Feed:
    """Publishes a referee's games to ``endpoint`` (see the module doc). One per process, shared by
    the referees it runs at once, each in a thread of its own (the games of a tournament worker's
    lanes): each thread's game, newest view and interval are its own, and sends take turns on the
    socket (a ZeroMQ socket must not be used by two threads at once).

    The hook itself only notes the game (a few microseconds, once the next requests are out:
    ``referee.EventHook``) and hands the referee ``draw`` as deferred work: the referee runs it
    next, while the engines think, so drawing the board costs the game
    no time. At most one view per ``interval`` (50 ms): a draw asked for sooner waits for the
    referee's next idle moment after the interval (the last move before a long think is shown too).
    """

    def __init__(self, endpoint: str, interval: float = 0.05, events: int = 40):
        self.endpoint, self.interval, self.events = endpoint, interval, events
        self._hidden: dict[str, bool] = {}
        self._sock = zmq.Context.instance().socket(zmq.PUB)
        self._sock.setsockopt(zmq.SNDHWM, HIGH_WATER)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.connect(endpoint)
        self._sending = threading.Lock()
        """Held for every use of the socket (and its counts, and ``_ended``)."""
        self._ended: list[GameRecord] = []
        """Games over whose end is not sent yet (``finished``)."""
        self._mine = _Referee()
        self.dropped = 0
        self.sent = 0

    def listening(self) -> bool:
        """Whether a viewer may be there: an ipc endpoint's socket file exists (checked once per
        game, so an event nobody watches pays nothing for its feed)."""
        if self.endpoint.startswith("ipc://"):
            return os.path.exists(self.endpoint[len("ipc://"):])
        return True

    def hook(self, record: GameRecord, state: State, event: Event, clocks: list[Clock]):
        """The referee's ``on_event``: the game's view is to be published (``draw``, deferred)."""
        mine = self._mine
        if record.game_id != mine.game:
            mine.game, mine.on = record.game_id, self.listening()
        if not mine.on:
            return None
        mine.current = (record, state, clocks, time.time())
        return self.draw

    def draw(self) -> bool:
        """Publish the newest view of the calling referee's game, unless its last one is younger
        than the interval (False: the referee calls again at its next idle moment)."""
        mine = self._mine
        if self._ended:
            self.flush()
        now = time.monotonic()
        if mine.current is None:
            return True
        if now - mine.last < self.interval:
            return False
        record, state, clocks, event_at = mine.current
        mine.current, mine.last = None, now
        hidden = self._hidden.get(record.game)
        if hidden is None:
            hidden = self._hidden[record.game] = state.game.game_type.hidden_information
        clocks_ms = [c.remaining_ms() if c.allowance() is not None else None for c in clocks]
        self._send(spectator_view(record, state, record.events[-self.events:], clocks_ms, hidden, time.time(),
                                  event_at))
        return True

    def _send(self, message: dict[str, Any]) -> None:
        data = msgspec.msgpack.encode(message)
        with self._sending:
            try:
                self._sock.send(data, zmq.NOBLOCK)
                self.sent += 1
            except zmq.Again:
                self.dropped += 1

    def finished(self, record: GameRecord) -> None:
        """The game is over: everything may be shown now, the dice seed included. The end is sent
        with the next view drawn (while the next game's engines think), at ``flush`` or when the feed closes:
        sent at once, the viewer's handling of it ran beside the next game's start, whose
        ``new_game`` round trips then took ~300 us longer (bench/web.md)."""
        self._mine.current = None
        if self.listening():
            with self._sending:
                self._ended.append(record)

    def flush(self) -> None:
        """Send the ends of the games over now (``finished``). The record goes as the Struct it is,
        encoded once: through its JSON and back it cost 63 us a game against 6 (a 24-move EinStein
        game), on the referee's thread while the next game's engines think (random engines hardly
        do, so it was theirs to wait for)."""
        with self._sending:
            ended, self._ended = self._ended, []
        for record in ended:
            self._send({"type": "end", "game_id": record.game_id, "record": record})

    def close(self, linger: float = 1.0) -> None:
        """Send the ends not sent yet (waiting up to ``linger`` seconds for them to leave), then close."""
        if self._sock.closed:
            return
        ended = bool(self._ended)
        if ended:
            self.flush()
        with self._sending:
            self._sock.close(int(linger * 1000) if ended else 0)


def chain(*hooks):
    """One ``on_event`` calling each given hook (None ones skipped); the deferred work they return
    is done together."""
    hooks = [h for h in hooks if h is not None]
    if len(hooks) <= 1:
        return hooks[0] if hooks else None

    together: dict[tuple, Any] = {}  # one callable per set of works: the referee keeps each once

    def call(*args):
        works = tuple(w for w in (h(*args) for h in hooks) if w is not None)
        if len(works) <= 1:
            return works[0] if works else None
        if works not in together:
            together[works] = lambda: all([w() for w in works])
        return together[works]
    return call
