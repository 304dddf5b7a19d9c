"""The cooperative match format: a pair of engines plays N games of a cooperative game together.

Both seats share one result (``Utility.IDENTICAL``: every seat's return is the team's score), so
there is no winner: what a cooperative series measures is the pair's *score distribution*. Game
``k`` (1-based) seats engine A in seat 0 when k is odd and engine B there when k is even, so each
engine plays each role equally often. Its dice are the stream ``coop|k`` under the series' master
seed (``arbiter coop --seed HEX``): two pairs run with the same master seed meet the same roll
sequence in game k, which makes their mean scores comparable game by game (the rolls are the
same; the decisions, and so the use each roll is put to, may differ).

Losses are counted apart: a game the rules declare lost (Catalonia's five-turn rule: returns of
0 with the game's own reason in ``detail``) and forfeits (an engine fault ends the game as a
loss for the pair, with the forfeit reason recorded; ``Game.forfeit_returns``). Both count in
the score distribution with the returns the record gives them.

``run_coop`` plays through the real referee (``arbiter.formats.match.Series``: engine subprocesses,
clocks, records in the results store); ``arbiter coop`` is its command line (``arbiter.cli``).
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from protocol.messages import TimeControl

from protocol.messages import EndReason

from ..games.base import Game, Utility
from ..hosting import EngineConfig, PlayerSpec
from ..records import GameRecord
from ..records.store import ResultsStore
from ..referee import DEFAULT_MARGIN, EventHook
from ..stats import mean_ci, mean_se
from .match import Series


def coop_stream(game_number: int) -> str:
    """The dice stream of game ``game_number`` of any cooperative series (shared across pairs)."""
    return f"coop|{game_number}"


def seating(game_number: int) -> list[int]:
    """Engine index per seat in game ``game_number`` (1-based): A first in odd games."""
    return [0, 1] if game_number % 2 else [1, 0]


@dataclass
class CoopGame:
    """One game of a series, as the format sees it."""

    number: int
    score: float
    """The team's result (seat 0's return; cooperative games give every seat the same)."""
    reason: EndReason
    detail: str
    players: list[str]
    """Player name by seat."""
    roles: list[str]
    """Seat roles (``white``, ``black``)."""
    game_id: str
    events: int
    forfeit_seat: int | None = None
    mean_ms: float | None = None
    """Mean referee-measured time per decision."""
    decisions: int = 0
    total_ms: float = 0.0
    """Decisions with a measured time, and their sum (a series' mean per decision is its totals')."""

    @property
    def forfeited(self) -> bool:
        return self.reason not in (EndReason.NORMAL, EndReason.ADJUDICATED)

    @property
    def lost_by_rule(self) -> bool:
        """Ended normally with nothing (e.g. the five-turn rule)."""
        return self.reason == EndReason.NORMAL and self.score <= 0


@dataclass
class CoopResult:
    """A series' score distribution and its losses."""

    match_id: str
    game: str
    players: tuple[str, str]
    """Engine A and engine B (A takes seat 0 in odd games)."""
    master_seed: str
    games: list[CoopGame] = field(default_factory=list)

    @property
    def scores(self) -> list[float]:
        return [g.score for g in self.games]

    @property
    def count(self) -> int:
        return len(self.games)

    @property
    def mean(self) -> float:
        return mean_se(self.scores)[0] if self.games else float("nan")

    @property
    def stderr(self) -> float:
        """Standard error of the mean (sample standard deviation / sqrt(n)); nan below 2 games."""
        return mean_se(self.scores)[1] if self.games else float("nan")

    def ci(self, confidence: float = 0.95) -> tuple[float, float]:
        """Student-t interval of the mean score."""
        if self.count < 2:
            return float("nan"), float("nan")
        _, low, high = mean_ci(self.scores, confidence)
        return low, high

    def median(self) -> float:
        s = sorted(self.scores)
        n = len(s)
        if not n:
            return float("nan")
        return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2

    @property
    def losses_by_rule(self) -> Counter:
        """Normal endings with nothing scored, by the game's reason (``detail``)."""
        return Counter(_rule_name(g.detail) for g in self.games if g.lost_by_rule)

    @property
    def five_turn_losses(self) -> int:
        """Catalonia's five-turn rule losses (no chain by the end of turn 5)."""
        return sum(1 for g in self.games if g.lost_by_rule and "five-turn" in g.detail)

    @property
    def forfeits(self) -> Counter:
        """Forfeits by reason (``time``, ``illegal_move``, ``crash``...)."""
        return Counter(g.reason for g in self.games if g.forfeited)

    @property
    def forfeit_count(self) -> int:
        return sum(self.forfeits.values())

    def mean_ms(self) -> float | None:
        """Mean time per decision over the series (not per game: long games weigh more)."""
        decisions = sum(g.decisions for g in self.games)
        return sum(g.total_ms for g in self.games) / decisions if decisions else None


def _rule_name(detail: str) -> str:
    return detail.split(":", 1)[0].strip() or "no score"


def _coop_game(record: GameRecord) -> CoopGame:
    times = [e.measured_ms for e in record.events if e.seat >= 0 and e.measured_ms is not None]
    return CoopGame(number=record.game_number, score=record.returns[0] if record.returns else 0.0,
                    reason=record.reason, detail=record.detail, players=list(record.players),
                    roles=list(record.seat_roles),
                    game_id=record.game_id, events=len(record.events), forfeit_seat=record.forfeit_seat,
                    mean_ms=sum(times) / len(times) if times else None, decisions=len(times), total_ms=sum(times))


def run_coop(game: Game, configs: list[PlayerSpec], tc: TimeControl, games: int, *,
             master_seed: bytes | None = None, store: ResultsStore | None = None, run_dir: Path = Path("runs"),
             margin: float = DEFAULT_MARGIN, match_id: str | None = None, on_event: EventHook | None = None,
             on_game: Callable[[CoopResult, GameRecord], None] | None = None, setup: dict | None = None,
             done: Iterable[GameRecord] = ()) -> CoopResult:
    """Play ``games`` games between the pair ``configs`` (one config: the same engine command
    runs in both seats, as two processes); seats swap every game; game k's dice are the stream
    ``coop|k`` under ``master_seed`` (fresh random when None; the result says which).

    A resumed series (``arbiter coop --resume``) passes its games so far as ``done`` (they count,
    the others are played) and the same ``match_id`` and master seed; ``setup`` is stored with
    the series for that. Interrupted, the series is marked ``interrupted`` and the exception goes on."""
    if game.game_type.utility is not Utility.IDENTICAL:
        raise ValueError(f"the coop format is for cooperative games; {game.name} is not one")
    if game.num_seats != 2:
        raise ValueError(f"the coop format is for two-seat games; {game.name} has {game.num_seats} seats")
    if games < 1:
        raise ValueError(f"a cooperative series needs at least one game, not {games}")
    configs = list(configs)
    if len(configs) == 1:
        configs = [_twin(configs[0], 1), _twin(configs[0], 2)]
    if len(configs) != 2:
        raise ValueError(f"a cooperative pair is one or two engines, not {len(configs)}")
    master = master_seed if master_seed is not None else os.urandom(16)
    series = Series(game, configs, tc, store=store, run_dir=run_dir, margin=margin, seed=master,
                    match_id=match_id, on_event=on_event)
    result = CoopResult(series.match_id, game.name, (series.names[0], series.names[1]), master.hex())
    result.games = sorted((_coop_game(r) for r in done), key=lambda g: g.number)
    played = {g.number for g in result.games}
    if store:
        store.begin_match(series.match_id, game.name, list(result.players), tc.text, f"coop games={games}", setup)
    status = "interrupted"
    try:
        for number in range(1, games + 1):
            if number in played:
                continue
            record = series.play_game(number, seating(number), dice_stream=coop_stream(number))
            result.games.append(_coop_game(record))
            if on_game:
                on_game(result, record)
        status = "finished"
    finally:
        series.close()
        if store:
            store.end_match(series.match_id, [result.mean, result.mean], status)
    return result


def _twin(config: EngineConfig, number: int) -> EngineConfig:
    """One of two processes of the same engine command, told apart by name."""
    from dataclasses import replace

    return replace(config, name=f"{config.name or 'engine'}#{number}", env=dict(config.env))
