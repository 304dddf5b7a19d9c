"""The web view's server: a Starlette app, its live state (the feed) and its sources.

Two inputs, two kinds of truth: the *feed* (``arbiter.feed``: running games, bound here as a ZeroMQ
SUB socket the referees connect to) and the *source* (finished games and standings: a tournament's
SQLite database read-only, or the games a match announced). Browsers get one snapshot, then
server-sent events: ``live`` (the public views of the running games that changed, at most one
event per ``TICK``; after a game's first view only what changed: ``Hub.delta``), ``end`` (a game
finished) and ``summary`` (standings changed). Each browser has a bounded backlog; one too slow
to keep up is dropped (its EventSource reconnects and starts again from a snapshot), so no viewer
holds up another, nor the server, nor (through the feed) any game. The event stream is served in
plain ASGI, beside Starlette (``_App``): it is the one path that runs per browser per tick.
"""
from __future__ import annotations

import asyncio
import bisect
import collections
import difflib
import functools
import json
import logging
import math
import os
import socket
import threading
import time
from collections import OrderedDict
from importlib import resources
from typing import Any

import msgspec

from ..dice import stream_name, verify_rolls
from ..games import load_game
from ..games.base import OptionError, Utility
from ..records import GameRecord
from ..records.store import SEAT_FIELDS, GameLine, iter_records
from ..stats import MIN_INTERVAL_GAMES, contested, forfeiting_seats, mean_ci, paired_rows, wilson_interval
from ..records.replay import replay, start_state, verify
from .process import listening_socket, spectator_nice

QUEUE = 256
"""Messages a browser may lag behind, queued before its stream is written directly (``Viewer``),
before it is dropped (and reconnects)."""
BEHIND_BYTES = 2 << 20
"""Bytes a directly written stream may have waiting in the server, beyond what the kernel holds,
before its connection is cut (its browser reconnects for a snapshot)."""
STREAM_HEADERS = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache"),
                  (b"x-accel-buffering", b"no")]
TICK = 0.05
"""Seconds between pushes of the running games' changed views (see ``Hub.flush``)."""
KEEP_ALIVE = 10.0
"""Seconds between keep-alive comments to every browser."""
SUMMARY_SHARE = 30.0
"""After making the standings, wait this many times their CPU time before making them again (~3 %
of a core at most: at 9, ~10 %, they were most of the server's CPU, which the games paid for on a
busy machine; a small event's standings take ~27 ms, so they still follow within a second)."""
FINISHED_ROWS = 200
"""Finished games a summary lists (the newest; the page's table of finished games)."""
STALE = 600.0
"""A running game not heard of for this long (seconds) is taken off the page (its referee died)."""


# --- what the page shows besides the running games -------------------------------------------

def game_row(r: GameLine) -> dict[str, Any]:
    """A finished game's row; ``forfeit_seats``: every seat that forfeited (several when engines of
    both alliances, or both of a pair, could not start it), not only the first (``forfeit_seat``)."""
    return {"game_id": r.game_id, "match_id": r.match_id, "number": r.game_number, "game": r.game,
            "players": r.players, "returns": r.returns, "reason": r.reason, "detail": r.detail,
            "forfeit_seat": r.forfeit_seat, "forfeit_seats": forfeiting_seats(r.forfeit_seat, r.forfeit_seats),
            "plies": r.plies, "started_at": r.started_at, "ended_at": r.ended_at}


def newest_first(row: dict[str, Any]) -> tuple[float, str]:
    """The finished games' order, newest first (page.js ``finishedMerged`` sorts alike)."""
    return -(row["ended_at"] or 0.0), row["game_id"]


RESULT_ROWS = 500
"""The newest games an engine's page lists one by one (its totals count every game)."""
_MS_N, _MS_SUM, _MS_MAX, _LAT_N, _LAT_SUM = (SEAT_FIELDS.index(f) for f in ("ms_n", "ms_sum", "ms_max", "lat_n", "lat_sum"))


def outcome(r: GameLine, seat: int) -> tuple[bool, bool]:
    """(won, drawn) for ``seat``: the best return wins (alone, or with its alliance at a table, as
    the tournament report counts it), all equal is a draw (unless all lost: a double forfeit); a
    solo game is won or lost against the game; a record without returns counts as lost (as it always has)."""
    if not r.returns:
        return False, False
    mine, best = r.returns[seat], max(r.returns)
    if len(r.returns) == 1:
        return mine > 0, False
    return mine == best and min(r.returns) < best, len(set(r.returns)) == 1 and contested(r.returns)


def engine_page(lines, name: str) -> dict[str, Any] | None:
    """One engine's results, time use, forfeits and latency, from the finished games' lines (the
    per-seat sums saved with each game: no decision is read); the newest ``RESULT_ROWS`` games
    and forfeits listed one by one."""
    games, points, w, d, l, total = 0, 0.0, 0, 0, 0, 0.0
    ms_n, ms_sum, ms_max, lat_n, lat_sum = 0, 0.0, None, 0, 0.0
    forfeits: collections.deque = collections.deque(maxlen=RESULT_ROWS)
    forfeit_count = 0
    rows: collections.deque = collections.deque(maxlen=RESULT_ROWS)
    game = None
    for r in lines:
        seats = [s for s, p in enumerate(r.players) if p == name]
        if not seats:
            continue
        games += 1
        game = r.game
        seat = seats[0]
        total += r.returns[seat] if r.returns else 0
        won, drawn = outcome(r, seat)
        w, d, l = w + won, d + drawn, l + (not won and not drawn)
        points += 1.0 if won else 0.5 if drawn else 0.0
        used = 0.0
        for s in seats:
            sums = r.seats[s] if s < len(r.seats) else None
            if not sums:
                continue
            ms_n, lat_n = ms_n + sums[_MS_N], lat_n + sums[_LAT_N]
            ms_sum, lat_sum, used = ms_sum + sums[_MS_SUM], lat_sum + sums[_LAT_SUM], used + sums[_MS_SUM]
            if sums[_MS_MAX] is not None:
                ms_max = sums[_MS_MAX] if ms_max is None else max(ms_max, sums[_MS_MAX])
        if set(forfeiting_seats(r.forfeit_seat, r.forfeit_seats)) & set(seats):
            forfeit_count += 1
            forfeits.append({"game_id": r.game_id, "reason": r.reason, "detail": r.detail})
        # a cooperative game's seats share one score: its result is that score, not a "draw"
        result = (r.returns[seat] if r.returns else None) if _utility(r.game) is Utility.IDENTICAL \
            else "W" if won else "D" if drawn else "L"
        rows.append({**game_row(r), "seat": seat, "result": result, "time_ms": round(used, 1)})
    if not games:
        return None
    return {"engine": name, "games": games, "W": w, "D": d, "L": l, "points": points,
            "mean": round(total / games, 3), "cooperative": _utility(game) is Utility.IDENTICAL,
            "solo": _utility(game) is Utility.SOLO,
            "decisions": ms_n, "mean_ms": round(ms_sum / ms_n, 3) if ms_n else None, "max_ms": ms_max,
            "total_ms": round(ms_sum, 1), "mean_latency_ms": round(lat_sum / lat_n, 3) if lat_n else None,
            "forfeits": list(forfeits), "forfeit_count": forfeit_count, "results": list(rows)}


@functools.lru_cache(maxsize=None)
def _utility(game: str) -> Utility | None:
    try:
        return load_game(game).game_type.utility
    except Exception:  # noqa: BLE001 - a game this installation does not know: scored as a contest
        return None


def scores(records: list[GameLine]) -> list[dict[str, Any]]:
    """A score table from finished games, the standings of a plain match: points and W/D/L. A
    cooperative game's seats share one score and a solo game's seat plays the game itself (a draw
    means nothing in either): their rows are a tournament report's (``mean`` with its interval;
    solo: ``wins`` and ``win_rate`` with theirs too), so a run's page reads as an event's."""
    names: list[str] = []
    for r in records:
        names += [p for p in r.players if p not in names]
    utility = _utility(records[0].game) if records else None
    if utility in (Utility.IDENTICAL, Utility.SOLO):
        return _mean_rows(records, names, solo=utility is Utility.SOLO)
    table = {n: {"engine": n, "games": 0, "W": 0, "D": 0, "L": 0, "points": 0.0} for n in names}
    for r in records:
        for name in dict.fromkeys(r.players):  # a name in two seats counts once, at its first (as engine_page)
            row, (won, drawn) = table[name], outcome(r, r.players.index(name))
            row["games"] += 1
            row["W" if won else "D" if drawn else "L"] += 1
            row["points"] += 1.0 if won else 0.5 if drawn else 0.0
    rows = sorted(table.values(), key=lambda row: (-row["points"], row["engine"]))
    for rank, row in enumerate(rows, 1):
        row["rank"] = rank
        row["score"] = row["points"] / row["games"] if row["games"] else None
    return rows


def _mean_rows(records: list[GameLine], names: list[str], solo: bool) -> list[dict[str, Any]]:
    rows = []
    for name in names:
        values = [r.returns[r.players.index(name)] for r in records if name in r.players and r.returns]
        if not values:
            continue
        mean, lo, hi = mean_ci(values) if len(values) >= MIN_INTERVAL_GAMES else (sum(values) / len(values), None, None)
        row: dict[str, Any] = {"engine": name, "games": len(values), "mean": mean, "lo": lo, "hi": hi}
        if solo:
            wins = sum(1 for v in values if v > 0)
            win_lo, win_hi = wilson_interval(wins, len(values))
            row.update(wins=wins, win_rate=wins / len(values), win_lo=win_lo, win_hi=win_hi)
        rows.append(row)
    rows.sort(key=lambda row: (-row.get("win_rate", 0), -row["mean"], row["engine"]))
    for rank, row in enumerate(rows, 1):
        row["rank"] = rank
    return rows


class Source:
    """Finished games and standings; a tournament database or a match's own games. Whole records
    are read one at a time (``record``); the rest works on ``GameLine``s."""

    title = "arbiter"

    def version(self) -> Any:
        """Anything that changes when the finished games or the standings do (polled)."""
        raise NotImplementedError

    def lines(self) -> list[GameLine]:
        """Every finished game, in the order they ended."""
        raise NotImplementedError

    def recent(self, count: int) -> list[GameLine]:
        """The last ``count`` games finished, newest first (with when each started)."""
        return sorted(self.lines(), key=lambda r: -r.ended_at)[:count]

    def record(self, game_id: str) -> GameRecord | None:
        raise NotImplementedError

    def engine(self, name: str) -> dict[str, Any] | None:
        """``engine_page`` of ``name``."""
        return engine_page(self.lines(), name)

    def summary(self) -> dict[str, Any]:
        """Public standings (no seed of a game still to be played)."""
        return self.standings_of(self.lines())

    def standings_of(self, records: list[GameLine]) -> dict[str, Any]:
        """The standings of ``records``; for a solo game played by several engines, their
        comparisons on common seeds too (as a solo tournament's report)."""
        out: dict[str, Any] = {"title": self.title, "standings": scores(records)}
        if records and _utility(records[0].game) is Utility.SOLO and len(out["standings"]) > 1:
            by_engine: dict[str, dict[str, float]] = {}
            for r in records:  # engines in the order they first played
                by_engine.setdefault(r.players[0], {})[r.dice_stream] = r.returns[0] if r.returns else 0.0
            out["paired"] = [{k: None if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()}
                             for row in paired_rows(by_engine)]  # JSON has no NaN
        return out

    def announced(self, record: GameRecord) -> GameLine:
        """The feed announced a finished game (a source that stores nothing keeps it); its line."""
        return GameLine.of(record)

    def over(self) -> bool | None:
        """Whether every game has been played, if that is quick to know (None: the standings say)."""
        return None


class MemorySource(Source):
    """The games the feed announced (``arbiter match --web``): the match's own results, after those
    a resumed run had played before (``preload``). With the run's results database (``db``) it
    keeps a line per game and only the last ``KEEP`` whole records (an older game's page reads its
    record from the database): a 10,000-game match's view holds ~2 KB a game, not ~22."""

    KEEP = 32

    def __init__(self, title: str = "arbiter match", total: int | None = None, db: str | None = None):
        self.title, self.total, self.db = title, total, db
        self._lines: dict[str, GameLine] = {}
        self._records: OrderedDict[str, GameRecord] = OrderedDict()
        self._lock = threading.Lock()

    def lines(self) -> list[GameLine]:
        with self._lock:
            return list(self._lines.values())

    def version(self) -> Any:
        return len(self._lines)

    def record(self, game_id: str) -> GameRecord | None:
        with self._lock:
            record = self._records.get(game_id)
            if record is not None or self.db is None or game_id not in self._lines:
                return record
        return next(iter_records(self.db, game_id), None)

    def announced(self, record: GameRecord) -> GameLine:
        line = GameLine.of(record)
        with self._lock:
            if (known := self._lines.setdefault(record.game_id, line)) is not line:
                return known
            self._records[record.game_id] = record
            while self.db is not None and len(self._records) > self.KEEP:
                self._records.popitem(last=False)
        return line

    def preload(self, lines) -> None:
        """Games played before this view started (a resumed run's, from its results database); a
        line that says when its game started replaces one that does not (the ETA's pace)."""
        for line in lines:
            with self._lock:
                known = self._lines.get(line.game_id)
                if known is None or (known.started_at is None and line.started_at is not None):
                    self._lines[line.game_id] = line

    def summary(self) -> dict[str, Any]:
        """The standings and the progress of one list of games (counted apart, a game announced
        between the two made the page say a game more was played than the standings held)."""
        records = self.lines()
        out = self.standings_of(records)
        out["progress"] = {"played": len(records), "total": self.total}
        return out

    def over(self) -> bool:
        return self.total is not None and len(self._lines) >= self.total


# --- finished games: steps and boards ----------------------------------------------------------

class Replays:
    """The boards of a finished game at each step (a few games kept); with ``reveal`` False as its
    live view drew them (hidden information hidden). A game is replayed once, keeping a copy of
    the position every ``EVERY`` steps; a board is drawn when asked for, from the copy before it
    (a long A&A Chess game's page drew every step's board at its first request: seconds of CPU and
    ~50 KB a step held)."""

    EVERY = 16

    def __init__(self, keep: int = 8):
        self._cache: OrderedDict[tuple[str, bool], _Stepped] = OrderedDict()
        self._lock = threading.Lock()
        self.keep = keep

    def _game(self, record: GameRecord, reveal: bool) -> _Stepped:
        key = (record.game_id, reveal)
        with self._lock:
            game = self._cache.get(key)
            if game is not None:
                self._cache.move_to_end(key)
                return game
        game = _Stepped(record, reveal, self.EVERY)
        with self._lock:
            game = self._cache.setdefault(key, game)
            while len(self._cache) > self.keep:
                self._cache.popitem(last=False)
        return game

    def steps(self, record: GameRecord, reveal: bool = True) -> int:
        """How many boards the game has: one before the first event and one after each (none for
        a game this installation cannot replay; those that replayed, for a record that stops)."""
        game = self._game(record, reveal)
        return len(game.ends) + 1 if game.drawable else 0

    def detail(self, record: GameRecord, withheld: bool) -> dict[str, Any]:
        """``game_detail`` with the game's ``steps``, made once (it replays the whole game to
        verify it: every spectator's request did)."""
        game = self._game(record, not withheld)
        if game.detail is None:
            game.detail = {**game_detail(record, withheld), "steps": len(game.ends) + 1 if game.drawable else 0}
        return game.detail

    def board(self, record: GameRecord, step: int, reveal: bool = True) -> str | None:
        """The board after the game's first ``step`` events (None: no such step)."""
        return self._game(record, reveal).board(step)


class _Stepped:
    """One finished game for ``Replays``: ``ends[k]``, how many events the game's first k+1
    steps hold, per event (a step of simultaneous moves counts once per move, as the record
    does); ``marks[k]``, the position after step k, every ``every`` steps (-1: the start)."""

    def __init__(self, record: GameRecord, reveal: bool, every: int):
        self.record, self.reveal, self.every = record, reveal, every
        self.ends: list[int] = []
        self.marks: dict[int, Any] = {}
        self.drawn: OrderedDict[int, str] = OrderedDict()
        self.detail: dict[str, Any] | None = None
        self._lock = threading.Lock()
        try:
            self.first = load_game(record.game, **record.options).new_initial_state().render_svg(reveal=reveal)
        except Exception:  # noqa: BLE001 - a game (or options) this installation does not know: no boards, the record still shown
            self.drawable = False
            return
        self.drawable = True
        try:
            self.marks[-1] = start_state(record).clone()
            done = 0
            for k, (step, state) in enumerate(replay(record)):
                done += len(step)
                self.ends.append(done)
                if (k + 1) % every == 0:
                    self.marks[k] = state.clone()
        except Exception:  # noqa: BLE001 - a record that does not replay: show what replayed (verify says why)
            pass

    def board(self, step: int) -> str | None:
        if not self.drawable or not 0 <= step <= len(self.ends):
            return None
        if step == 0:
            return self.first
        with self._lock:
            if step in self.drawn:
                return self.drawn[step]
        k = bisect.bisect_left(self.ends, step)  # the replay step holding the record's event step - 1
        mark = max(m for m in self.marks if m <= k)
        state, start = self.marks[mark].clone(), (self.ends[mark] if mark >= 0 else 0)
        if mark < k:
            for j, (_, state) in enumerate(replay(self.record, state, start), mark + 1):
                if j == k:
                    break
        svg = state.render_svg(reveal=self.reveal)
        with self._lock:
            self.drawn[step] = svg
            while len(self.drawn) > 8:  # (a spectator stepping back and forth)
                self.drawn.popitem(last=False)
        return svg


def shares_dice(record: GameRecord) -> bool:
    """Whether other games roll this game's dice by design (duplicate dice, a solo or team suite,
    a table's rotations): its seed is theirs, and so are its chance outcomes."""
    return bool(record.dice_stream) and record.dice_stream != stream_name(record.match_id, record.game_number)


@functools.lru_cache(maxsize=None)
def _hidden_information(game: str) -> bool:
    try:
        return load_game(game).game_type.hidden_information
    except Exception:  # noqa: BLE001 - a game this installation does not know: nothing of it is shown as known
        return True


def game_detail(record: GameRecord, withheld: bool = False) -> dict[str, Any]:
    """A finished game for its page: every move, the dice and their verification, why it ended.
    ``withheld``: other games still to end roll the same dice (``shares_dice``): no seed, no rolls,
    no final position, and a hidden-information game's chance outcomes as ``?``, as in its live view."""
    data = json.loads(msgspec.json.encode(record))
    try:
        problems = verify(record)
    except OptionError as exc:  # a game (or options) this installation does not know: the record is shown unchecked
        problems = [f"not replayed here: {exc}"]
    if withheld:
        hidden = _hidden_information(record.game)
        for event in data["events"]:
            if event["seat"] < 0 and hidden:
                event["move"] = "?"
                event.pop("note", None)
        data.update(dice_seed="", rolls=[], final_position="")
        dice = {"seed": None, "commitment": record.dice_commitment, "stream": record.dice_stream,
                "rolls": len(record.rolls), "verified": False, "problems": [], "withheld": True}
    else:
        dice_problems = verify_rolls(record.dice_seed, record.dice_commitment, record.dice_stream, record.rolls)
        dice = {"seed": record.dice_seed, "commitment": record.dice_commitment, "stream": record.dice_stream,
                "rolls": len(record.rolls), "verified": not dice_problems, "problems": dice_problems,
                "withheld": False}
    return {"type": "finished", "row": game_row(GameLine.of(record)), "record": data, "dice": dice,
            "verified": not problems, "problems": problems}


# --- the live state and the browsers -----------------------------------------------------------

class Viewer:
    """One browser's event stream: the messages it has yet to be sent and its wake-up, or, once
    its snapshot is sent, its connection's transport, which ``Hub.send_all`` writes each message
    to in place (``transport``: ``None`` until then, or where the server's HTTP layer frames the
    body itself)."""

    __slots__ = ("pending", "wake", "ended", "transport")

    def __init__(self) -> None:
        self.pending: list[bytes] = []
        self.wake = asyncio.Event()
        self.ended = False
        self.transport: Any = None  # a transport as ``_chunked_transport`` finds one, or None

    def end(self) -> None:
        self.ended = True
        self.pending = []  # never sent now: a dropped browser's backlog goes at once
        self.wake.set()

    def write_directly(self, transport: Any) -> None:
        """From now on messages go to ``transport`` as HTTP/1.1 chunks, those queued first."""
        self.transport = transport
        if self.pending:
            body, self.pending = b"".join(self.pending), []
            transport.write(b"%x\r\n%b\r\n" % (len(body), body))


BOARD_DIFF_PARTS = 4000
"""Boards whose changed middle has more elements than this are patched as one hunk, unmatched (an
A&A map has ~950 elements, matched in ~4 ms)."""


def board_patch(old: str, new: str) -> list[list[Any]] | None:
    """``new`` as edits of ``old``, both split at every ``<`` (an SVG's elements): ``[start, end,
    parts]`` hunks, in order, each replacing ``old``'s parts ``start:end`` (page.js ``merge``
    applies them from the last); None when they would not save a quarter of the board. A move
    changes a few elements of a board drawn whole, and 100 browsers read every board 20 times a
    second: the edits are ~10-20 % of EinStein's boards (2.6-3 KB), ~1 % of Smess's (32 KB), ~2 %
    of Catalonia's (10 KB), at 0.1-0.4 ms of the server's CPU a board (once for every browser)."""
    a, b = old.split("<"), new.split("<")
    n = min(len(a), len(b))
    start = 0
    while start < n and a[start] == b[start]:
        start += 1
    same_end = 0
    while same_end < n - start and a[-1 - same_end] == b[-1 - same_end]:
        same_end += 1
    end_a, end_b = len(a) - same_end, len(b) - same_end
    if max(end_a, end_b) - start > BOARD_DIFF_PARTS:  # one hunk: what lies between
        hunks = [[start, end_a, b[start:end_b]]]
    else:  # autojunk: elements common in a board (its closing tags) cannot make the matching slow
        matcher = difflib.SequenceMatcher(None, a[start:end_a], b[start:end_b], autojunk=True)
        hunks = [[start + i1, start + i2, b[start + j1:start + j2]]
                 for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]
    size = sum(len(part) + 4 for hunk in hunks for part in hunk[2]) + 16 * len(hunks)
    return hunks if size < 0.75 * len(new) else None


def event_text(message: dict[str, Any]) -> bytes:
    """``message`` as a server-sent event named by its type, encoded once for every browser."""
    return f"event: {message['type']}\ndata: {json.dumps(message, separators=(',', ':'))}\n\n".encode()


class Hub:
    """Running games (from the feed) and the browsers' streams."""

    def __init__(self, source: Source):
        self.source = source
        self.live: dict[str, dict[str, Any]] = {}
        self.dirty: dict[str, dict[str, Any]] = {}
        """Games whose view changed since the last ``flush``."""
        self.ends: list[bytes] = []
        """``end`` events since the last ``flush``, encoded (it sends them)."""
        self.broadcast_views: dict[str, dict[str, Any]] = {}
        """Per running game, the view its last ``live`` event brought the browsers (see ``delta``)."""
        self.viewers: set[Viewer] = set()
        self.summary_cache: tuple[Any, dict] | None = None
        self.summary_due = 0.0
        """When the standings may be made again (monotonic; see ``summary``)."""
        self.summaries_made = 0
        self.broadcast_finished: dict[str, dict[str, Any]] | None = None
        """The finished games' rows of the last summary broadcast, by game id (see ``summary_event``)."""
        self._making = threading.Lock()
        self.messages = 0

    def summary(self) -> dict[str, Any]:
        """The standings, made again when the source changed, but not before ``summary_due``: a
        big event's take long to make (a 100,000-game tournament's report, 4-7 s of CPU), so after
        each the view waits ``SUMMARY_SHARE`` times as long, and never takes more than a small
        share of a core from the games however fast they commit or how many browsers arrive."""
        with self._making:
            version = self.source.version()
            stale = self.summary_cache is None or self.summary_cache[0] != version
            if stale and (self.summary_cache is None or time.monotonic() >= self.summary_due):
                self._make_summary(version)
        out = dict(self.summary_cache[1])
        out["type"] = "summary"
        out["running"] = len(self.live)
        return out

    def _make_summary(self, version: Any) -> None:
        """Make the standings and when they may be made again: ``SUMMARY_SHARE`` times the CPU time
        this took (its wall time, which it was, grows with the load: on a busy machine, where the
        server waits for the CPU at niceness 19, the standings and a finished event's seeds came
        up to a minute late)."""
        started = time.thread_time()
        recent = self.source.recent(FINISHED_ROWS)
        summary = self.source.summary()
        summary["finished"] = sorted(map(game_row, recent), key=newest_first)
        durations = [r.ended_at - r.started_at for r in recent if r.ended_at and r.started_at]
        summary["mean_game_s"] = sum(durations) / len(durations) if durations else None
        self.summaries_made += 1
        summary["made"] = self.summaries_made  # a browser keeps the newer of its snapshot's and a queued summary
        self.summary_cache = (version, summary)
        self.summary_due = time.monotonic() + (time.thread_time() - started) * SUMMARY_SHARE

    def summary_event(self, summary: dict[str, Any]) -> dict[str, Any]:
        """``summary`` as broadcast: with only the finished games' rows that are new or changed since
        the last broadcast (``finished_new``; the page merges them into the ones it holds, newest
        first, ``finished_keep`` of them), not all 200 again (70 % of the summary's bytes, and a
        third of what a browser read). Every browser holds the last broadcast's rows or newer: its
        snapshot (made after it was added to the viewers), then every broadcast. Whole when a row
        the last one had is gone other than off the end (the games were replaced)."""
        rows = summary["finished"]
        before, self.broadcast_finished = self.broadcast_finished, {r["game_id"]: r for r in rows}
        if before is None:
            return summary
        last = newest_first(rows[-1]) if len(rows) >= FINISHED_ROWS else None
        if any(gid not in self.broadcast_finished and (last is None or newest_first(row) < last)
               for gid, row in before.items()):
            return summary
        out = {k: v for k, v in summary.items() if k != "finished"}
        out["finished_new"] = [r for r in rows if before.get(r["game_id"]) != r]
        out["finished_keep"] = FINISHED_ROWS
        return out

    def over(self) -> bool:
        """Whether the event (or run) is over, as its source or its standings say (made at most as
        often as ``summary`` allows): every game's dice may be shown."""
        over = self.source.over()
        if over is not None:
            return over
        try:
            summary = self.summary()
        except Exception:  # noqa: BLE001 - standings that cannot be made say nothing: not over
            return False
        return bool((summary.get("tournament") or {}).get("finished"))

    def snapshot(self) -> dict[str, Any]:
        now = time.time()
        for gid in [g for g, v in self.live.items() if now - v["sent_at"] > STALE]:
            del self.live[gid]
            self.broadcast_views.pop(gid, None)
        # a game's view as last broadcast, when it was: the deltas that follow build on that one
        live = [self.broadcast_views.get(gid, view) for gid, view in list(self.live.items())]
        return {"type": "snapshot", "summary": self.summary(), "live": live}

    def broadcast(self, message: dict[str, Any]) -> None:
        self.send_all(event_text(message))

    def keep_alive(self) -> None:
        """A comment line to every browser, so that proxies keep an idle stream open."""
        self.send_all(b": keep-alive\n\n")

    def send_all(self, text: bytes) -> None:
        """``text`` to every browser: written to each stream's connection in this one loop (framed
        once for all), or queued for the stream's own task until its snapshot is sent."""
        chunk = None
        for viewer in list(self.viewers):
            transport = viewer.transport
            if transport is not None:
                if transport.is_closing():
                    continue  # gone: its stream's task takes it off the list
                if transport.get_write_buffer_size() > BEHIND_BYTES:  # too slow: cut, its backlog freed
                    self.viewers.discard(viewer)
                    viewer.end()
                    transport.abort()
                    continue
                if chunk is None:
                    chunk = b"%x\r\n%b\r\n" % (len(text), text)
                transport.write(chunk)
            elif len(viewer.pending) >= QUEUE:  # too slow: drop it; its browser reconnects for a snapshot
                self.viewers.discard(viewer)
                viewer.end()
            else:
                viewer.pending.append(text)
                viewer.wake.set()

    def close(self) -> None:
        """End every event stream (the server is stopping): a stream still open when uvicorn's
        graceful shutdown times out is cancelled with a traceback per browser."""
        for viewer in list(self.viewers):
            self.viewers.discard(viewer)
            viewer.end()

    def flush(self) -> None:
        """The games that ended since the last tick, then one ``live`` event with every game whose
        view changed, in one write to each browser: a browser gets at most one write per tick
        however many games run and end and however fast (random engines end ~150 games a
        second; an ``end`` each, sent at once, was most of the server's writes)."""
        parts, self.ends = self.ends, []
        if not self.viewers:  # nobody to tell (nor a board to diff): a browser that comes gets a
            self.dirty.clear()  # snapshot of the views as they are, then whole views, then deltas
            self.broadcast_views.clear()
            return
        if self.dirty:
            games, self.dirty = list(self.dirty.values()), {}
            parts.append(event_text({"type": "live", "games": [self.delta(view) for view in games]}))
        if parts:
            self.send_all(b"".join(parts))

    def delta(self, view: dict[str, Any]) -> dict[str, Any]:
        """What browsers that have the game's last broadcast view need to make ``view``: the first
        time the whole view, then (``"delta": true``) its ``ply`` and the fields that changed, with
        only the events after those already sent and ``keep``, how many events the view holds,
        and the board as edits of the one sent before (``board_patch``) when that is much smaller.
        The static fields and the repeated events were ~40 % of a game's bytes, 20 times a second
        to every browser. A browser merges by ply (page.js ``merge``); its snapshot holds the views
        as last broadcast, so the deltas after it build on what it has (one queued before the
        snapshot was made is no newer than it, and changes nothing)."""
        gid = view["game_id"]
        before = self.broadcast_views.get(gid)
        self.broadcast_views[gid] = view
        if before is None:
            return view
        sent = before["last"][-1]["ply"] if before["last"] else -1
        out: dict[str, Any] = {"game_id": gid, "delta": True, "ply": view["ply"]}
        out.update((k, v) for k, v in view.items() if k != "last" and before.get(k) != v)
        if isinstance(out.get("board"), str) and isinstance(before.get("board"), str) and before["ply"] < view["ply"]:
            patch = board_patch(before["board"], out["board"])
            if patch is not None:  # of the board at ply "board_from" (a browser with a newer one keeps it)
                del out["board"]
                out["board_patch"], out["board_from"] = patch, before["ply"]
        out["last"] = [e for e in view["last"] if e["ply"] > sent]
        out["keep"] = len(view["last"])
        return out

    def on_feed(self, message: dict[str, Any]) -> None:
        self.messages += 1
        kind = message.get("type")
        if kind == "live":
            known = self.live.get(message["game_id"])
            if known is not None and known["ply"] > message["ply"]:
                return  # an older view sent late by the feed's thread: the newer one stands
            if known is None:  # new, or back after being taken off as stale: browsers get it whole
                self.broadcast_views.pop(message["game_id"], None)
            self.live[message["game_id"]] = self.dirty[message["game_id"]] = message
        elif kind == "end":
            record = msgspec.convert(message["record"], GameRecord)
            self.live.pop(record.game_id, None)
            self.dirty.pop(record.game_id, None)
            self.broadcast_views.pop(record.game_id, None)
            line = self.source.announced(record)
            self.ends.append(event_text({"type": "end", "game_id": record.game_id, "row": game_row(line)}))


def _bind_private(sock: Any, endpoint: str) -> None:
    """Bind the feed's SUB socket; an ipc socket file is this user's alone (0600 whatever the
    umask): whoever can connect to it writes the running games every spectator's page shows, and
    a match's finished games. The umask is the process's, narrowed only for the bind (the file is
    never open to others, not even between the bind and a chmod)."""
    if not endpoint.startswith("ipc://"):
        sock.bind(endpoint)
        return
    umask = os.umask(0o077)
    try:
        sock.bind(endpoint)
    finally:
        os.umask(umask)
    os.chmod(endpoint[len("ipc://"):], 0o600)


async def _feed_task(hub: Hub, endpoint: str, bound: threading.Event) -> None:
    import zmq
    import zmq.asyncio

    ctx = zmq.asyncio.Context()
    sock = ctx.socket(zmq.SUB)
    sock.setsockopt(zmq.SUBSCRIBE, b"")
    sock.setsockopt(zmq.RCVHWM, 10000)
    sock.setsockopt(zmq.LINGER, 0)
    _bind_private(sock, endpoint)
    bound.set()
    decode = msgspec.msgpack.Decoder()
    try:
        while True:
            data = await sock.recv()
            try:
                hub.on_feed(decode.decode(data))
            except (msgspec.DecodeError, msgspec.ValidationError, KeyError, TypeError):
                pass  # not a feed message: ignored
    finally:
        sock.close(0)
        ctx.term()
        if endpoint.startswith("ipc://"):  # no socket file left: the referees stop publishing
            try:
                os.unlink(endpoint[len("ipc://"):])
            except OSError:
                pass


async def _flush_task(hub: Hub, every: float) -> None:
    ticks = 0
    while True:
        await asyncio.sleep(every)
        hub.flush()
        ticks += 1
        if ticks * every >= KEEP_ALIVE:
            ticks = 0
            hub.keep_alive()


async def _watch_task(hub: Hub, every: float, made: threading.Event) -> None:
    """Push the standings when the source changes (a game committed to the database) and someone
    watches (``Hub.summary`` says when they are due again). ``made``: set once the first standings
    are made (``WebServer.start`` waits for them)."""
    version = hub.source.version()
    try:  # made once now, so that the first browser of a big event does not wait for them (~7 s)
        await asyncio.to_thread(hub.summary)
    except Exception:  # noqa: BLE001 - made again when asked; the page says what failed then
        logging.getLogger(__name__).exception("the standings could not be made")
    finally:
        made.set()
    while True:
        await asyncio.sleep(every)
        if not hub.viewers:  # nobody to tell: a browser that comes is sent a snapshot made then
            continue
        now = await asyncio.to_thread(hub.source.version)
        if now != version:
            summary = await asyncio.to_thread(hub.summary)
            if hub.summary_cache is not None and hub.summary_cache[0] == now:  # made for this change
                version = now
                hub.broadcast(hub.summary_event(summary))


def build_app(source: Source, feed: str | None, *, poll: float = 0.5, tick: float = TICK):
    """The Starlette app of the web view over ``source``, listening to ``feed`` (an endpoint)."""
    from contextlib import asynccontextmanager

    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse, JSONResponse, Response
    from starlette.routing import Route

    hub = Hub(source)
    replays = Replays()
    page = resources.files(__package__).joinpath("page.html").read_text()
    script = resources.files(__package__).joinpath("page.js").read_text()
    bound, made = threading.Event(), threading.Event()
    if not feed:  # nothing to bind: ``start`` must not wait for it (it waited its whole timeout, 10 s)
        bound.set()

    @asynccontextmanager
    async def lifespan(app):
        app.state.loop = asyncio.get_running_loop()
        tasks = [asyncio.create_task(_watch_task(hub, poll, made)), asyncio.create_task(_flush_task(hub, tick))]
        if feed:
            tasks.append(asyncio.create_task(_feed_task(hub, feed, bound)))
        yield
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def index(request):
        return HTMLResponse(page)

    async def js(request):
        return Response(script, media_type="text/javascript")

    async def state(request):
        return JSONResponse(await asyncio.to_thread(hub.snapshot))

    async def game(request):
        gid = request.path_params["gid"]
        if gid in hub.live:
            return JSONResponse(hub.live[gid])
        record = await asyncio.to_thread(source.record, gid)
        if record is None:
            return JSONResponse({"error": f"no game {gid}"}, status_code=404)
        withheld = shares_dice(record) and not await asyncio.to_thread(hub.over)
        return JSONResponse(await asyncio.to_thread(replays.detail, record, withheld))

    async def board(request):
        gid, step = request.path_params["gid"], request.path_params["step"]
        record = await asyncio.to_thread(source.record, gid)
        if record is None:  # a running game has no step boards: only finished games are stepped
            return JSONResponse({"error": f"no finished game {gid}"}, status_code=404)
        withheld = shares_dice(record) and not await asyncio.to_thread(hub.over)
        svg = await asyncio.to_thread(replays.board, record, step, not withheld)
        if svg is None:
            return JSONResponse({"error": f"step {step} out of range"}, status_code=404)
        return Response(svg, media_type="image/svg+xml")

    async def engine(request):
        name = request.path_params["name"]
        data = await asyncio.to_thread(source.engine, name)
        if data is None:
            return JSONResponse({"error": f"no finished game of {name}"}, status_code=404)
        return JSONResponse(data)

    async def server_error(request, exc):
        """A failure is JSON the page can show, naming nothing of the server (the log has the traceback)."""
        return JSONResponse({"error": "the server could not answer this (an internal error; its log says why)"},
                            status_code=500)

    app = Starlette(exception_handlers={500: server_error}, routes=[
        Route("/", index), Route("/page.js", js), Route("/api/state", state),
        Route("/api/game/{gid}", game), Route("/api/game/{gid}/board/{step:int}", board),
        Route("/api/engine/{name:path}", engine),  # a name may hold a slash (team/a)
    ], lifespan=lifespan)
    app.state.hub = hub
    app.state.feed_bound = bound
    app.state.standings_made = made
    return _App(app, hub)


class _App:
    """The ASGI app: ``/events`` here, everything else Starlette's. A message goes to 100 browsers
    20 times a second, so their streams skip Starlette's per-send layers (the streaming response's
    task group, two middleware wrappers): the web server's CPU with 100 viewers ~9 -> ~5 % of a core
    (bench/bench_web_server.py)."""

    def __init__(self, starlette: Any, hub: Hub):
        self.starlette, self.hub = starlette, hub

    @property
    def state(self) -> Any:
        return self.starlette.state

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["path"] == "/events":
            await self.events(scope, receive, send)
        else:
            await self.starlette(scope, receive, send)

    async def events(self, scope, receive, send) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await send({"type": "http.response.start", "status": 405, "headers": [(b"allow", b"GET, HEAD")]})
            await send({"type": "http.response.body", "body": b""})
            return
        viewer = Viewer()
        self.hub.viewers.add(viewer)
        gone = None
        try:
            first = json.dumps(await asyncio.to_thread(self.hub.snapshot), separators=(",", ":"))
            await send({"type": "http.response.start", "status": 200, "headers": STREAM_HEADERS})
            if scope["method"] == "HEAD":
                await send({"type": "http.response.body", "body": b""})
                return
            await send({"type": "http.response.body", "more_body": True,
                        "body": f"retry: 1000\nevent: snapshot\ndata: {first}\n\n".encode()})
            gone = asyncio.ensure_future(_until_disconnect(receive, viewer))
            transport = _chunked_transport(send)
            if transport is not None:  # less of the server's CPU per message than a send per stream
                viewer.write_directly(transport)
            while True:
                await viewer.wake.wait()
                viewer.wake.clear()
                if viewer.ended:  # dropped for lagging (the browser reconnects), gone, or the server stops
                    break
                if viewer.pending:  # everything due in one write: a browser that lagged catches up at once
                    body, viewer.pending = b"".join(viewer.pending), []
                    await send({"type": "http.response.body", "body": body, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            self.hub.viewers.discard(viewer)
            if gone is not None:
                gone.cancel()


def _chunked_transport(send) -> Any:
    """The connection under an event stream whose response uvicorn writes as HTTP/1.1 chunks
    (httptools' cycle, its body under way): there ``Hub.send_all`` may write each message to it
    framed the same way, ahead of the stream's last chunk, which the stream's task still sends.
    Duck-typed (asyncio's, or uvloop's, which is no ``asyncio.WriteTransport``).
    ``None`` elsewhere (h11, which frames the body itself; another server): the task sends."""
    cycle = getattr(send, "__self__", None)
    transport = getattr(cycle, "transport", None)
    if getattr(cycle, "chunked_encoding", None) is True and all(
            callable(getattr(transport, name, None)) for name in ("write", "get_write_buffer_size", "is_closing", "abort")):
        return transport  # uvloop's transports are not asyncio.WriteTransport's subclasses
    return None


async def _until_disconnect(receive, viewer: Viewer) -> None:
    """Ends ``viewer``'s stream when its browser goes away (the request has no body to read)."""
    while (await receive())["type"] != "http.disconnect":
        pass
    viewer.end()


# --- serving -------------------------------------------------------------------------------------

def _not_a_cancelled_request(record: logging.LogRecord) -> bool:
    """A spectator's request still running when the graceful shutdown times out (a long game's
    replay) is cancelled; uvicorn logs that, and each request as an "Exception in ASGI
    application" with its traceback, on the terminal of an event that has ended well. Other
    errors are logged as ever."""
    if record.exc_info and record.exc_info[0] is asyncio.CancelledError:
        return False
    return "timeout graceful shutdown exceeded" not in record.getMessage()


FIRST_REQUEST_SECONDS = 10.0
"""A connection must have sent a whole request head within this long of opening, or of its last
response. uvicorn keeps a connection that sends nothing open for ever: ~20,000 of them (the
process's file limit) and the view could accept nobody until they left."""
STALLED_SECONDS = 30.0
"""A connection whose reader has taken too little of what it was sent for this long (its writes
paused the whole time) is cut: a browser that stops reading an event stream is dropped from the
hub, but its stream waits in a write that would never end, holding the connection for ever."""


def _guarded_protocol() -> type:
    """uvicorn's HTTP protocol (httptools where installed), closing a connection that has no
    request under way ``FIRST_REQUEST_SECONDS`` after it opened or after its last response (an idle
    or trickling stranger); a request under way, such as an event stream, is never cut, unless its
    reader takes too little of it for ``STALLED_SECONDS`` (writes paused all that time: cut, its
    buffer freed; a browser's EventSource reconnects for a snapshot)."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    class Guarded(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
        _idle_timer = None
        _stall_timer = None

        def _arm(self) -> None:
            if self._idle_timer is not None:
                self._idle_timer.cancel()
            self._idle_timer = self.loop.call_later(FIRST_REQUEST_SECONDS, self._close_if_idle)

        def _close_if_idle(self) -> None:
            self._idle_timer = None
            if (self.cycle is None or self.cycle.response_complete) and not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def pause_writing(self) -> None:
            super().pause_writing()
            if self._stall_timer is None:
                self._stall_timer = self.loop.call_later(STALLED_SECONDS, self.transport.abort)

        def resume_writing(self) -> None:
            if self._stall_timer is not None:
                self._stall_timer.cancel()
                self._stall_timer = None
            super().resume_writing()

        def connection_lost(self, exc) -> None:
            for timer in (self._idle_timer, self._stall_timer):
                if timer is not None:
                    timer.cancel()
            self._idle_timer = self._stall_timer = None
            super().connection_lost(exc)

    return Guarded


class WebServer:
    """The app served by uvicorn, on a socket bound at construction (so a port in use is an error
    the caller reports before anything starts) or given (``sock``, already listening); ``start``
    runs it in a thread, ``run`` here."""

    def __init__(self, source: Source, feed: str | None, host: str = "127.0.0.1", port: int = 8080,
                 poll: float = 0.5, tick: float = TICK, sock: socket.socket | None = None):
        import uvicorn

        self.nice = spectator_nice()
        self.sock = sock if sock is not None else listening_socket(host, port)
        self.host, self.port = self.sock.getsockname()[:2]
        self.app = build_app(source, feed, poll=poll, tick=tick)
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="on",
                                timeout_graceful_shutdown=1, http=_guarded_protocol())
        self.server = uvicorn.Server(config)
        self.thread: threading.Thread | None = None
        quiet = logging.getLogger("uvicorn.error")
        if _not_a_cancelled_request not in quiet.filters:
            quiet.addFilter(_not_a_cancelled_request)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def run(self) -> None:
        try:  # Linux: the niceness of this thread and of the threads it starts
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), self.nice)
        except OSError:
            pass
        self.server.run(sockets=[self.sock])

    def start(self, timeout: float = 10.0) -> None:
        self.thread = threading.Thread(target=self.run, name="web", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started and time.monotonic() < deadline and self.thread.is_alive():
            time.sleep(0.02)
        # the feed bound, and the first standings made: their imports and making (~0.4 s of CPU,
        # seconds for a big event) are then over before a run's games start, not taken from them
        for ready in (self.app.state.feed_bound, self.app.state.standings_made):
            while not ready.wait(0.05) and time.monotonic() < deadline and self.thread.is_alive():
                pass

    def stop(self) -> None:
        loop = getattr(self.app.state, "loop", None)
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self.app.state.hub.close)
            except RuntimeError:  # the loop has just closed
                pass
        self.server.should_exit = True
        if self.thread is not None:
            self.thread.join(5)
        self.sock.close()
