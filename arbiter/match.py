"""Matches: a series of games between the same engines under one format.

Formats (text syntax, used by ``arbiter match --format``):

- ``olympiad``      — the EinStein olympiad match: ``bo7:ABBAABB``.
- ``boN[:SCHEDULE]`` — best of N, first to ⌊N/2⌋+1 wins; SCHEDULE says who moves first in each
  game (A = the first engine given, B = the second); default alternates ABAB...
- ``games=N``       — exactly N games, first move alternating A, B, A, ...

"Moves first" means taking seat 0 (seat 0 makes the first decision in every game).
"""
from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from protocol.messages import TimeControl

from .dice import Dice, seed_for
from .engine import CRASH, Engine, EngineConfig, EngineFault
from .games.base import Game
from .records import GameRecord
from .referee import DEFAULT_MARGIN, EventHook, Referee
from .store import ResultsStore


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
        m = re.fullmatch(r"bo(\d+)(?::([ab]+))?", t)
        if m:
            n = int(m.group(1))
            schedule = (m.group(2) or "ab" * n)[:n].upper()
            if n < 1 or len(schedule) != n:
                raise ValueError(f"format {text!r}: the schedule must have one letter (A/B) per game ({n})")
            return cls(n, n // 2 + 1, schedule)
        m = re.fullmatch(r"games=(\d+)", t)
        if m and int(m.group(1)) > 0:
            n = int(m.group(1))
            return cls(n, None, ("AB" * n)[:n])
        raise ValueError(f"format {text!r}: expected 'olympiad', 'boN', 'boN:ABBA...' or 'games=N'")


@dataclass
class MatchResult:
    match_id: str
    players: tuple[str, str]
    points: list[float] = field(default_factory=lambda: [0.0, 0.0])
    records: list[GameRecord] = field(default_factory=list)

    @property
    def winner(self) -> int | None:
        if self.points[0] == self.points[1]:
            return None
        return 0 if self.points[0] > self.points[1] else 1


def game_points(record: GameRecord, seat_of: list[int]) -> list[float]:
    """Points of players A and B in one game: 1 win, ½ draw, 0 loss."""
    ra, rb = record.returns[seat_of[0]], record.returns[seat_of[1]]
    if ra == rb:
        return [0.5, 0.5]
    return [1.0, 0.0] if ra > rb else [0.0, 1.0]


class Match:
    """Two engines, one game, one format. Engines are reused between games unless configured
    (``restart_each_game``) or unless one crashed."""

    def __init__(self, game: Game, configs: tuple[EngineConfig, EngineConfig], time_control: TimeControl,
                 fmt: MatchFormat, *, store: ResultsStore | None = None, run_dir: Path = Path("runs"),
                 margin: float = DEFAULT_MARGIN, seed: bytes | None = None, match_id: str | None = None,
                 on_event: EventHook | None = None, on_game: Callable[["MatchResult", GameRecord], None] | None = None):
        if game.num_seats != 2:
            raise ValueError(f"a match is for two-seat games; {game.name} has {game.num_seats} seats")
        self.game, self.configs, self.tc, self.fmt = game, configs, time_control, fmt
        self.store, self.margin, self.seed = store, margin, seed
        self.match_id = match_id or time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        self.run_dir = Path(run_dir) / self.match_id
        self.on_event, self.on_game = on_event, on_game
        self.engines: list[Engine | None] = [None, None]
        self.names = tuple(c.name or f"engine{i + 1}" for i, c in enumerate(configs))

    def _engine(self, player: int) -> Engine:
        """A running engine for player A (0) or B (1), starting one if needed; raises EngineFault."""
        engine = self.engines[player]
        if engine is not None and not engine.config.restart_each_game and engine.alive():
            try:
                engine.ping()
            except EngineFault:
                engine.stop()  # silent between games: start a fresh one rather than lose a game
                engine = None
        elif engine is not None:
            engine.stop()
            engine = None
        if engine is None:
            engine = Engine(self.configs[player], self.run_dir)
            self.engines[player] = engine
            try:
                engine.start(self.game.name)
            except EngineFault:
                engine.stop()
                self.engines[player] = None
                raise
        return engine

    def play(self) -> MatchResult:
        result = MatchResult(self.match_id, self.names)
        if self.store:
            self.store.begin_match(self.match_id, self.game.name, list(self.names), self.tc.text, self.fmt)
        try:
            for number in range(1, self.fmt.games + 1):
                if self.fmt.first_to is not None and max(result.points) >= self.fmt.first_to:
                    break
                first = 0 if self.fmt.schedule[number - 1] == "A" else 1
                seat_of = [0, 1] if first == 0 else [1, 0]  # seat_of[player] = seat
                record = self._play_game(number, seat_of)
                points = game_points(record, seat_of)
                result.points = [result.points[0] + points[0], result.points[1] + points[1]]
                result.records.append(record)
                if self.store:
                    self.store.save_game(record)
                if self.on_game:
                    self.on_game(result, record)
        finally:
            for engine in self.engines:
                if engine is not None:
                    engine.stop()
            if self.store:
                self.store.end_match(self.match_id, result.points)
        return result

    def _play_game(self, number: int, seat_of: list[int]) -> GameRecord:
        players_by_seat = [None, None]
        for player, seat in enumerate(seat_of):
            players_by_seat[seat] = player
        dice = Dice(seed_for(self.seed, self.match_id, number), self.match_id, number)
        engines: list[Engine] = []
        for seat, player in enumerate(players_by_seat):
            try:
                engines.append(self._engine(player))
            except EngineFault as fault:
                return self._forfeit_unstarted(number, seat, players_by_seat, dice, fault)
        referee = Referee(self.game, engines, self.tc, dice, match_id=self.match_id, game_number=number,
                          players=[self.names[p] for p in players_by_seat], margin=self.margin,
                          on_event=self.on_event)
        return referee.play()

    def _forfeit_unstarted(self, number: int, seat: int, players_by_seat: list[int], dice: Dice,
                           fault: EngineFault) -> GameRecord:
        """The record of a game lost because an engine would not start."""
        now = time.time()
        return GameRecord(
            game_id=f"{self.match_id}.{number}.{uuid.uuid4().hex[:6]}", match_id=self.match_id, game_number=number,
            game=self.game.name, options=dict(self.game.options), players=[self.names[p] for p in players_by_seat],
            seat_roles=list(self.game.seat_roles), time_control=self.tc.text, margin_ms=int(self.margin * 1000),
            started_at=now, ended_at=now, returns=self.game.forfeit_returns(seat), reason=fault.reason or CRASH,
            detail=f"engine did not start: {fault.detail}", forfeit_seat=seat,
            dice_commitment=dice.commitment, dice_seed=dice.seed.hex())
