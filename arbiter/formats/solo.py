"""The solo evaluation format: an engine plays a suite of N seeded games of a one-seat game.

Seed ``k`` of a suite is the dice stream ``suite|k`` under the suite's master seed, so every
engine run with the same master seed (``arbiter solo --seed HEX``) gets exactly the same dice for
seed k: the same set-up, and the same sequence of rolls (which the engines' different decisions
then put to different uses). That makes the comparison of two engines *paired*: per seed, who won,
tested with an exact sign test on the seeds where only one of them won (``arbiter.stats``).

``run_suite`` plays through the referee: engine subprocesses, or a Python ``decide`` function
in-process (``arbiter.hosting.InProcessPlayer``, for quick measurements), on the same dice and
with the same records either way.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from protocol.messages import EndReason, TimeControl

from ..games.base import Game, Utility
from ..hosting import PlayerSpec
from ..records import GameRecord
from ..records.store import ResultsStore
from ..referee import DEFAULT_MARGIN, EventHook
from ..stats import PairedComparison, paired_comparison, wilson_interval
from .match import Series


def suite_stream(seed_index: int) -> str:
    """The dice stream of seed ``seed_index`` (shared by every engine of a suite)."""
    return f"suite|{seed_index}"


@dataclass
class SeedResult:
    returns: float
    reason: EndReason
    detail: str
    events: int
    game_id: str
    mean_ms: float | None = None
    decisions: int = 0
    total_ms: float = 0.0
    """Decisions with a measured time, and their sum (a suite's mean per decision is its totals')."""


@dataclass
class SuiteResult:
    """One engine's results over a suite, keyed by seed index."""

    engine: str
    game: str
    master_seed: str
    results: dict[int, SeedResult] = field(default_factory=dict)

    @property
    def games(self) -> int:
        return len(self.results)

    @property
    def wins(self) -> int:
        return sum(1 for r in self.results.values() if r.returns > 0)

    @property
    def forfeits(self) -> int:
        return sum(1 for r in self.results.values() if r.reason not in (EndReason.NORMAL, EndReason.ADJUDICATED))

    @property
    def win_rate(self) -> float:
        return self.wins / self.games if self.games else 0.0

    def ci(self, confidence: float = 0.95) -> tuple[float, float]:
        """Wilson interval of the win rate."""
        return wilson_interval(self.wins, self.games, confidence)

    def returns_by_seed(self) -> dict[int, float]:
        return {k: r.returns for k, r in self.results.items()}

    def mean_ms(self) -> float | None:
        """Mean time per decision over the suite (not per game: long games weigh more)."""
        decisions = sum(r.decisions for r in self.results.values())
        return sum(r.total_ms for r in self.results.values()) / decisions if decisions else None


def compare(a: SuiteResult, b: SuiteResult) -> PairedComparison:
    """Paired comparison of two suites on their common seeds (a win is a positive return)."""
    if a.master_seed != b.master_seed:
        raise ValueError("the suites were played with different master seeds: their seeds had "
                         "different dice and cannot be paired")
    return paired_comparison(a.returns_by_seed(), b.returns_by_seed())


def _seed_list(seeds: int | Iterable[int]) -> list[int]:
    if isinstance(seeds, int):
        if seeds < 1:
            raise ValueError(f"a suite needs at least one seed, not {seeds}")
        return list(range(seeds))
    return list(seeds)


def _seed_result(record: GameRecord) -> SeedResult:
    times = [e.measured_ms for e in record.events if e.seat >= 0 and e.measured_ms is not None]
    return SeedResult(returns=record.returns[0] if record.returns else -1.0, reason=record.reason,
                      detail=record.detail, events=len(record.events), game_id=record.game_id,
                      mean_ms=sum(times) / len(times) if times else None, decisions=len(times), total_ms=sum(times))


def run_suite(game: Game, config: PlayerSpec, tc: TimeControl, seeds: int | Iterable[int], master_seed: bytes,
              *, store: ResultsStore | None = None, run_dir: Path = Path("runs"), margin: float = DEFAULT_MARGIN,
              match_id: str | None = None, on_event: EventHook | None = None,
              on_game: Callable[[int, GameRecord], None] | None = None, setup: dict | None = None,
              done: Iterable[GameRecord] = ()) -> SuiteResult:
    """Play ``config``'s engine on every seed through the referee; one game per seed. A resumed
    suite (``arbiter solo --resume``) passes its games so far as ``done`` (their seeds are not
    played again) with the same ``match_id`` and master seed; ``setup`` is stored for that.
    Interrupted, the suite is marked ``interrupted`` and the exception goes on."""
    if game.game_type.utility is not Utility.SOLO:
        raise ValueError(f"the solo format is for one-seat games; {game.name} has {game.num_seats} seats")
    seed_list = _seed_list(seeds)
    series = Series(game, [config], tc, store=store, run_dir=run_dir, margin=margin, seed=master_seed,
                    match_id=match_id, on_event=on_event)
    result = SuiteResult(series.names[0], game.name, master_seed.hex())
    for record in sorted(done, key=lambda r: r.game_number):
        result.results[record.game_number] = _seed_result(record)
    if store:
        store.begin_match(series.match_id, game.name, [series.names[0]], tc.text, f"solo seeds={len(seed_list)}",
                          setup)
    status = "interrupted"
    try:
        for k in seed_list:
            if k in result.results:
                continue
            record = series.play_game(k, [0], dice_stream=suite_stream(k))
            result.results[k] = _seed_result(record)
            if on_game:
                on_game(k, record)
        status = "finished"
    finally:
        series.close()
        if store:
            store.end_match(series.match_id, [float(result.wins)], status)
    return result
