"""Matches: a series of games between the same engines under one format.

Formats (text syntax, used by ``arbiter match --format``):

- ``olympiad``      — the EinStein olympiad match: ``bo7:ABBAABB``.
- ``boN[:SCHEDULE]`` — best of N, first to ⌊N/2⌋+1 wins; SCHEDULE says who moves first in each
  game (A = the first engine given, B = the second); default alternates ABAB...
- ``games=N``       — exactly N games, first move alternating A, B, A, ...

"Moves first" means taking seat 0 (seat 0 makes the first decision in every game).
"""
from __future__ import annotations

import gc
import os
import re
import time
import uuid
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from protocol.messages import TimeControl

from ..adjudication import Adjudication
from ..dice import Dice, seed_for, stream_name
from ..hosting import EngineFault, PlayerSpec, Session, open_session
from ..games.base import Game
from ..records import GameRecord, Opening
from ..referee import DEFAULT_MARGIN, EventHook, Referee
from ..records.store import ResultsStore
from ..sprt import concluded, sprt
from ..stats import contested, game_points


MAX_GAMES = 10_000_000
"""Games a match format may ask for at most (days of play; its schedule is a string of that length)."""


@dataclass(frozen=True)
class MatchFormat:
    games: int
    first_to: float | None
    """Points that win the match early (a win counts 1, a draw ½); None plays every game."""
    schedule: str
    """Who moves first in each game: 'A' or 'B' per game."""

    @classmethod
    def parse(cls, text: str) -> "MatchFormat":
        t = text.strip().lower()
        if t == "olympiad":
            return cls(7, 4, "ABBAABB")
        m = re.fullmatch(r"(?:bo|games=)(\d+).*", t)
        if m and int(m.group(1)) > MAX_GAMES:
            raise ValueError(f"format {text!r}: at most {MAX_GAMES:,} games")
        m = re.fullmatch(r"bo(\d+)(?::([ab]+))?", t)
        if m:
            n = int(m.group(1))
            if n < 1:
                raise ValueError(f"format {text!r}: a match is of at least one game (bo1, bo7...)")
            schedule = (m.group(2) or "ab" * n)[:n].upper()
            if len(schedule) != n or (m.group(2) and len(m.group(2)) != n):
                raise ValueError(f"format {text!r}: the schedule must have one letter (A/B) per game ({n})")
            return cls(n, n // 2 + 1, schedule)
        m = re.fullmatch(r"games=(\d+)", t)
        if m and int(m.group(1)) < 1:
            raise ValueError(f"format {text!r}: a match is of at least one game (games=1, games=100...)")
        if m:
            n = int(m.group(1))
            return cls(n, None, ("AB" * n)[:n])
        raise ValueError(f"format {text!r}: expected 'olympiad', 'boN', 'boN:ABBA...' or 'games=N'")


def _seat_orders(k: int) -> list[tuple[int, ...]]:
    """Orders of a table's k members whose cyclic rotations, taken together, put every pair of
    members at every distance round the table equally often. Which seats are partners depends on
    the distance between them (A&A with 4 seats: seats 0 and 2 are allies, 1 and 3; with 5: 1
    and 3), so with one order the same engines would be partners in every game. k = 4: three
    orders; k prime: i -> i*m mod k for m = 1 .. (k-1)/2 (multiplying by m maps distance d to
    d*m); other k: the one order (no game has 6 or more seats)."""
    if k == 4:
        return [(0, 1, 2, 3), (0, 1, 3, 2), (0, 2, 1, 3)]
    if k >= 3 and all(k % d for d in range(2, int(k ** 0.5) + 1)):
        return [tuple(i * m % k for i in range(k)) for m in range(1, (k - 1) // 2 + 1)]
    return [tuple(range(k))]


def rotation(members: tuple[int, ...], game: int) -> tuple[int, ...]:
    """Seating of game ``game`` (0-based) of a table: blocks of k games, each the k cyclic
    rotations of one order of the members, so every block puts every member in every seat once.
    The blocks go through ``_seat_orders`` (partners change: with 4 seats every 3 blocks, with 5
    every 2, each pair has been partners equally often), then through the same orders reversed
    (who sits after whom changes). Three seats: the rotations, then those of the reversed order.
    Two seats simply alternate."""
    k = len(members)
    block, rot = divmod(game, k)
    if k <= 2:
        return tuple(members[(s + rot) % k] for s in range(k))
    orders = _seat_orders(k)
    order = orders[block % len(orders)]
    if (block // len(orders)) % 2:
        order = order[::-1]
    return tuple(members[order[(s + rot) % k]] for s in range(k))


def paired_opening(openings: list[Opening], match_id: str, number: int, block: int) -> tuple[Opening | None, str | None]:
    """With ``openings``: game ``number`` (1-based) belongs to block ``(number - 1) // block``,
    whose games all start from the same opening (the list repeats) on the same dice stream
    ``{match_id}|pair{k}`` (duplicate dice). Without: (None, None)."""
    if not openings:
        return None, None
    k = (number - 1) // block
    return openings[k % len(openings)], f"{match_id}|pair{k + 1}"


RECENT = 5
"""How many of the last games a match result keeps for displays."""


@dataclass
class MatchResult:
    """What a match's counted games add up to: aggregates of constant size, plus every record
    only when asked (``Match(keep_records=True)``; a 100,000-game match keeps none)."""

    match_id: str
    players: tuple[str, str]
    points: list[float] = field(default_factory=lambda: [0.0, 0.0])
    records: list[GameRecord] = field(default_factory=list)
    games: int = 0
    resumed: int = 0
    """Games played before this run (a resumed match): counted, but not in this run's pace."""
    trinomial: list[int] = field(default_factory=lambda: [0, 0, 0])
    """A's losses, draws and wins: the SPRT's data."""
    double_forfeits: int = 0
    """Games both engines forfeited (neither could start): 0 points each, not in the trinomial
    nor in a pair of the pentanomial (``arbiter.stats.contested``)."""
    pentanomial: list[int] = field(default_factory=lambda: [0, 0, 0, 0, 0])
    """With openings: A's results per finished pair of games (an opening with the seats swapped),
    [LL, LD+DL, LW+DD+WL, DW+WD, WW]: then the SPRT's data (fastchess and fishtest do so: a pair's
    two games are not independent)."""
    half_pairs: dict[int, float | None] = field(default_factory=dict)
    """Pair number -> A's points in the pair's game played so far (until its other game is);
    None for a double forfeit (the pair is then left out)."""
    reasons: Counter = field(default_factory=Counter)
    """How the games ended: reason -> games."""
    forfeits: Counter = field(default_factory=Counter)
    """(player, reason) -> games that player forfeited."""
    recent: deque = field(default_factory=lambda: deque(maxlen=RECENT))
    """The last few records."""
    started: float = field(default_factory=time.monotonic)
    sprt: dict | None = None
    """With ``Match(sprt=...)``: the last GSPRT result (``arbiter.sprt.sprt``) after each game."""

    @property
    def winner(self) -> int | None:
        if self.points[0] == self.points[1]:
            return None
        return 0 if self.points[0] > self.points[1] else 1


_settled_in: int | None = None


def settle_garbage_collector() -> None:
    """Before a process's first games: hide every object made so far (modules, rules tables, the
    tournament's plan) from Python's cyclic collector (``gc.freeze``). Its full collections then
    walk only what the games make, not the ~30,000 objects of the imports: a full collection
    took ~8 ms in a tournament worker, a pause that can fall between an engine's reply and the
    referee's reading of the clock. Once per process (a forked worker does it again)."""
    global _settled_in
    if _settled_in != os.getpid():
        _settled_in = os.getpid()
        gc.collect()
        gc.freeze()


class Series:
    """Games between a fixed set of players, one after another; the common core of every format.

    Each game is played with a *seating* (``seating[seat]`` = index of the player in that seat) and a
    dice stream (by default its own; games given the same stream get the same dice). Players are
    engines to start or reach (``EngineConfig``) or in-process functions (``InProcessPlayer``).
    Engines are started once and reused between games (checked with a ping) unless
    ``restart_each_game`` is set or one died. Every finished game is saved to the store before the
    next one starts.
    """

    def __init__(self, game: Game, configs: list[PlayerSpec], time_control: TimeControl, *,
                 store: ResultsStore | None = None, run_dir: Path = Path("runs"), margin: float = DEFAULT_MARGIN,
                 seed: bytes | None = None, match_id: str | None = None, on_event: EventHook | None = None,
                 adjudication: Adjudication | None = None):
        self.game, self.configs, self.tc = game, list(configs), time_control
        self.adjudication = adjudication
        self.store, self.margin, self.seed = store, margin, seed
        self.match_id = match_id or time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        self.run_dir = Path(run_dir).resolve() / self.match_id  # absolute: the sandbox hides it by its path
        self.on_event = on_event
        self.engines: list[Session | None] = [None] * len(configs)
        self.names = [c.name or f"engine{i + 1}" for i, c in enumerate(configs)]
        self.hidden = (str(store.path.resolve().parent),) if store is not None else ()
        """Folders the engines must not see (the results), besides their own logs."""
        self._last_used: dict[int, int] = {}  # engine index -> when it was last seated (retire_idle)
        self._reused: set[int] = set()  # engines of the current game kept from an earlier one
        settle_garbage_collector()

    def _reusable(self, index: int) -> Session | None:
        """The running engine for ``configs[index]`` if it may play another game (answers a ping)."""
        engine = self.engines[index]
        if engine is None:
            return None
        if engine.reusable:
            try:
                engine.ping()
                return engine
            except EngineFault:
                pass  # silent between games: start a fresh one rather than lose a game
        engine.stop()
        self.engines[index] = None
        return None

    def _start_engines(self, seating: list[int]) -> list[tuple[int, EngineFault]] | None:
        """Make sure every seated engine runs (fresh ones started by ``_greet``). Returns (seat,
        fault) for every seat whose engine failed (each is tried: one failing must not hand a
        broken opponent a win), None when all run."""
        fresh: list[int] = []
        self._reused = set()
        for index in dict.fromkeys(seating):
            if self._reusable(index) is None:
                fresh.append(index)
            else:
                self._reused.add(index)
        failures = self._greet(fresh)
        for index in failures:
            if self.engines[index].hello is None:
                self.engines[index].stop()
                self.engines[index] = None
        if not failures:
            return None
        return sorted((seat, failures[index]) for seat, index in enumerate(seating) if index in failures)

    def start_all(self) -> list[tuple[int, EngineFault]]:
        """Pre-flight: start every engine and shake hands with each before the first game, so that
        one that cannot start stops the event instead of handing its opponents wins. Returns
        (index, fault) per engine that failed (stopped again); the others stay up for game 1."""
        failures = self._greet([i for i in range(len(self.configs)) if self._reusable(i) is None])
        for index, fault in failures.items():
            engine, self.engines[index] = self.engines[index], None
            engine.stop()
            if hasattr(engine, "with_last_words"):
                failures[index] = engine.with_last_words(fault)
        return sorted(failures.items())

    def _greet(self, indices: list[int]) -> dict[int, EngineFault]:
        """Start these engines: spawn them all first, then shake hands with each that started
        (engine start-up dominates short matches). Returns the fault of each that failed.

        The games handed to the store are committed first: starting an engine is where an engine
        still running can make the referee abort (a new socket is one more epoll watch, a budget
        that engines sharing the referee's uid can exhaust: libzmq then aborts, SECURITY.md), so
        no finished game waits in the group-commit window then."""
        if indices and self.store is not None:
            self.store.sync()
        failures: dict[int, EngineFault] = {}
        for index in indices:
            self.engines[index] = open_session(self.configs[index], self.run_dir, hide=self.hidden)
            try:
                self.engines[index].launch()
            except EngineFault as fault:
                failures[index] = fault
        for index in indices:
            if index not in failures:
                try:
                    self.engines[index].handshake(self.game.name)
                except EngineFault as fault:
                    failures[index] = fault
        return failures

    def play_game(self, number: int, seating: list[int], dice_stream: str | None = None,
                  match_id: str | None = None, opening: Opening | None = None) -> GameRecord:
        """Play game ``number`` with ``seating``; save and return its record. ``match_id`` files
        the game under another match than the series' own (a tournament's pairings share engines);
        ``opening``: start from that position instead of the game's initial one."""
        if match_id is not None:
            self.match_id = match_id
        if len(seating) != self.game.num_seats:
            raise ValueError(f"{self.game.name} has {self.game.num_seats} seats; seating {seating} does not fit")
        stream = dice_stream or stream_name(self.match_id, number)
        dice = Dice(seed_for(self.seed, stream), stream)
        referee_args = dict(match_id=self.match_id, game_number=number, margin=self.margin,
                            players=[self.names[i] for i in seating], on_event=self.on_event,
                            adjudication=self.adjudication)
        failure = self._start_engines(seating)
        engines = [self.engines[i] for i in seating]
        for index, engine in enumerate(self.engines):  # kept for later games but idle now: frozen
            if engine is not None and index not in seating:
                engine.rest()

        def replace(seat: int) -> Session | None:
            """A reused engine failed its new_game (hung, died or babbled since its last game):
            one fresh start for it, as a silent engine between games always got."""
            index = seating[seat]
            if index not in self._reused:
                return None
            self._reused.discard(index)
            self.engines[index].stop()
            self.engines[index] = None
            reused, failure = self._reused, self._start_engines([index])
            self._reused = reused
            return None if failure else self.engines[index]

        referee = Referee(self.game, engines, self.tc, dice, replace_engine=replace, opening=opening, **referee_args)
        record = referee.play() if failure is None else referee.forfeit_unstarted(failure)
        if self.store:
            self.store.save_game(record)
        return record

    def close(self) -> None:
        for engine in self.engines:  # tell everyone first, so they exit in parallel
            if engine is not None:
                engine.request_quit()
        for engine in self.engines:
            if engine is not None:
                engine.stop()
        self.engines = [None] * len(self.engines)

    # --- for hosts that keep a series open across many games (tournament workers) ---------------

    def running(self) -> list[int]:
        """Indices (into ``configs``) of the engines that are running now."""
        return [i for i, e in enumerate(self.engines) if e is not None and e.alive()]

    def retire_idle(self, keep: int, seating: list[int]) -> list[int]:
        """Before a game with ``seating``: stop the least recently used engines not in it, so that
        at most ``keep`` (and never fewer than the seated ones) stay started. Returns the stopped
        indices. Keeping a few lets the next games of the same engines skip their start-up."""
        used = self._last_used
        for i in seating:
            used[i] = max(used.values(), default=0) + 1
        idle = sorted((used.get(i, 0), i) for i, e in enumerate(self.engines) if e is not None and i not in seating)
        stopped = [i for _, i in idle[:max(0, len(idle) + len(seating) - keep)]]
        for i in stopped:
            self.engines[i].stop()
            self.engines[i] = None
        return stopped

    def kill_now(self) -> None:
        """SIGKILL every engine's process group at once, without waiting or talking to anyone: for
        a host that must leave this instant (a signal handler); ``close`` is the orderly way."""
        for engine in list(self.engines):
            if engine is not None:
                engine.kill_now()


class Match:
    """Two engines, one two-seat game, one ``MatchFormat``."""

    def __init__(self, game: Game, configs: tuple[PlayerSpec, PlayerSpec], time_control: TimeControl,
                 fmt: MatchFormat, *, store: ResultsStore | None = None, run_dir: Path = Path("runs"),
                 margin: float = DEFAULT_MARGIN, seed: bytes | None = None, match_id: str | None = None,
                 on_event: EventHook | None = None, on_game: Callable[["MatchResult", GameRecord], None] | None = None,
                 sprt: tuple[float, float, float, float] | None = None, adjudication: Adjudication | None = None,
                 openings: list[Opening] = (), keep_records: bool = True):
        """``sprt`` = (elo0, elo1, alpha, beta): after each game a GSPRT of A against B on the
        games so far (trinomial, logistic Elo; with openings pentanomial on the finished pairs);
        the match stops when it accepts either hypothesis.
        ``openings`` (in the order games take them): games 2k-1 and 2k start from opening k (the
        list repeats when shorter), the second with the seats swapped and on the same dice.
        ``on_game(result, record)`` is called for each game once it is committed to the store."""
        if game.num_seats != 2:
            raise ValueError(f"a match is for two-seat games; {game.name} has {game.num_seats} seats")
        if openings and seed is None:  # a pair's games share their dice: one master seed for the match
            seed = os.urandom(32)
        self.series = Series(game, list(configs), time_control, store=store, run_dir=run_dir, margin=margin,
                             seed=seed, match_id=match_id, on_event=on_event, adjudication=adjudication)
        self.fmt, self.store, self.on_game, self.sprt = fmt, store, on_game, sprt
        self.openings = list(openings)
        self.keep_records = keep_records
        self.match_id = self.series.match_id
        self.names = tuple(self.series.names)

    def seating(self, number: int) -> list[int]:
        """Engine index per seat in game ``number``: the schedule's letter moves first (with
        openings, the second game of each pair swaps the first's seats whatever the schedule says)."""
        if self.openings and number % 2 == 0:
            return self.seating(number - 1)[::-1]
        return [0, 1] if self.fmt.schedule[number - 1] == "A" else [1, 0]

    def opening(self, number: int) -> tuple[Opening | None, str | None]:
        """Game ``number``'s opening and dice stream (None, None: initial position, own dice)."""
        return paired_opening(self.openings, self.match_id, number, 2)

    def _count(self, result: MatchResult, record: GameRecord, keep: bool = True) -> None:
        seating = self.seating(record.game_number)
        points = game_points(record.returns, seating.index(0), seating.index(1))
        result.points = [result.points[0] + points[0], result.points[1] + points[1]]
        result.games += 1
        counted = contested(record.returns)
        if counted:
            result.trinomial[int(round(points[0] * 2))] += 1
        else:
            result.double_forfeits += 1
        result.reasons[str(record.reason)] += 1
        for seat in record.forfeit_seats or ([] if record.forfeit_seat is None else [record.forfeit_seat]):
            if 0 <= seat < len(record.players):
                result.forfeits[(record.players[seat], str(record.reason))] += 1
        result.recent.append(record)
        if keep and self.keep_records:
            result.records.append(record)
        if self.openings:
            pair = (record.game_number + 1) // 2
            if pair not in result.half_pairs:
                result.half_pairs[pair] = points[0] if counted else None
            elif (first := result.half_pairs.pop(pair)) is not None and counted:
                result.pentanomial[int(round((first + points[0]) * 2))] += 1
        if self.sprt is not None:
            result.sprt = {**sprt(result.pentanomial, *self.sprt), "test": "pairs"} if self.openings else \
                {**sprt(result.trinomial, *self.sprt), "test": "games"}

    def _over(self, result: MatchResult) -> bool:
        if self.openings and result.games % 2:  # an opening's pair is finished first (both seatings)
            return False
        return (self.fmt.first_to is not None and max(result.points) >= self.fmt.first_to) or \
            (result.sprt is not None and bool(concluded(result.sprt)))

    def play(self, setup: dict | None = None, done: Iterable[GameRecord] = ()) -> MatchResult:
        """Play the match, or the rest of it after the games ``done`` (a resumed match). ``setup``
        is stored with the match for ``arbiter match --resume``. Interrupted (Ctrl-C, SIGTERM),
        the match is marked ``interrupted`` and the exception goes on.

        The result counts committed games only. With a store that commits in batches, whether to
        play on is decided on every game played (``played``): the match stops when the games
        played decide it, and those are committed before it is marked finished; a crash before
        that leaves it unfinished, and resuming plays the uncommitted games again."""
        result = MatchResult(self.match_id, self.names)
        played = MatchResult(self.match_id, self.names) if self.store else result
        for record in done:  # in game order
            self._count(result, record)
            if played is not result:
                self._count(played, record, keep=False)
        result.resumed = result.games
        series = self.series
        committed: deque[GameRecord] = deque()
        previous = None
        if self.store:
            self.store.begin_match(self.match_id, series.game.name, list(self.names), series.tc.text, self.fmt,
                                   setup)
            previous = self.store.on_commit
            mine = self.match_id

            def on_commit(records: list[GameRecord]) -> None:
                committed.extend(r for r in records if r.match_id == mine)
                if previous is not None:
                    previous(records)
            self.store.on_commit = on_commit

        def count_committed() -> None:
            while committed:
                record = committed.popleft()
                self._count(result, record)
                if self.on_game:
                    self.on_game(result, record)

        status = "interrupted"
        try:
            for number in range(played.games + 1, self.fmt.games + 1):
                count_committed()
                if self._over(played):
                    break
                opening, stream = self.opening(number)
                record = series.play_game(number, self.seating(number), stream, opening=opening)
                if played is result:
                    committed.append(record)
                else:
                    self._count(played, record, keep=False)
            status = "finished"
        finally:
            series.close()
            if self.store:
                self.store.sync()  # the games that decided the match count before it is marked finished
                self.store.on_commit = previous
            count_committed()
            if self.store:
                self.store.end_match(self.match_id, result.points, status)
        return result


@dataclass
class TableResult:
    """An n-seat series: every engine's wins and summed returns, and the records."""

    match_id: str
    players: tuple[str, ...]
    records: list[GameRecord] = field(default_factory=list)
    wins: list[int] = field(default_factory=list)
    """Games in which the engine's return was the best and not everyone's (a side's win counts for each of its seats)."""
    returns: list[float] = field(default_factory=list)


class TableMatch:
    """Three to five engines at one n-seat game: ``games`` games with the seats rotated (each
    block of n games seats every engine once in every seat; ``rotation``). ``openings``: every
    game of block k starts from opening k, on the block's shared dice."""

    def __init__(self, game: Game, configs: list[PlayerSpec], time_control: TimeControl, games: int, *,
                 store: ResultsStore | None = None, run_dir: Path = Path("runs"), margin: float = DEFAULT_MARGIN,
                 seed: bytes | None = None, match_id: str | None = None, on_event: EventHook | None = None,
                 on_game: Callable[["TableResult", GameRecord], None] | None = None, openings: list[Opening] = (),
                 adjudication: Adjudication | None = None):
        if len(configs) != game.num_seats:
            raise ValueError(f"{game.name} has {game.num_seats} seats; {len(configs)} engines do not fit")
        if openings and seed is None:  # a pair's games share their dice: one master seed for the match
            seed = os.urandom(32)
        self.series = Series(game, list(configs), time_control, store=store, run_dir=run_dir, margin=margin,
                             seed=seed, match_id=match_id, on_event=on_event, adjudication=adjudication)
        self.games, self.store, self.on_game, self.openings = games, store, on_game, list(openings)
        self.match_id = self.series.match_id
        self.names = tuple(self.series.names)

    def seating(self, number: int) -> list[int]:
        return list(rotation(tuple(range(len(self.names))), number - 1))

    def _count(self, result: TableResult, record: GameRecord) -> None:
        seating, returns = self.seating(record.game_number), record.returns
        index = {name: i for i, name in enumerate(self.names)}
        if len(index) == len(self.names) and sorted(record.players) == sorted(index):
            seating = [index[name] for name in record.players]  # as played (a game of an earlier version)
        for seat, engine in enumerate(seating):
            result.returns[engine] += returns[seat]
            result.wins[engine] += returns[seat] == max(returns) and min(returns) < max(returns)
        result.records.append(record)

    def play(self, setup: dict | None = None, done: list[GameRecord] = ()) -> TableResult:
        """Play the series, or the rest of it after ``done`` (as ``Match.play``)."""
        n = len(self.names)
        result = TableResult(self.match_id, self.names, wins=[0] * n, returns=[0.0] * n)
        for record in sorted(done, key=lambda r: r.game_number):
            self._count(result, record)
        series = self.series
        if self.store:
            self.store.begin_match(self.match_id, series.game.name, list(self.names), series.tc.text,
                                   f"games={self.games}", setup)
        status = "interrupted"
        try:
            for number in range(len(result.records) + 1, self.games + 1):
                opening, stream = paired_opening(self.openings, self.match_id, number, n)
                record = series.play_game(number, self.seating(number), stream, opening=opening)
                self._count(result, record)
                if self.on_game:
                    self.on_game(result, record)
            status = "finished"
        finally:
            series.close()
            if self.store:
                self.store.end_match(self.match_id, result.returns, status)
        return result
