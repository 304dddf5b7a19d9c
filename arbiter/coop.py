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

``run_coop`` plays through the real referee (``arbiter.match.Series``: engine subprocesses,
clocks, records in the results store); ``cli`` is ``arbiter coop``.
"""
from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from protocol.messages import TimeControl

from .engine import EngineConfig
from .games.base import Game, Utility
from .match import Series
from .records import GameRecord
from .referee import DEFAULT_MARGIN, EventHook
from .stats import mean_ci, mean_se
from .store import ResultsStore


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
    reason: str
    """``normal`` or the forfeit reason."""
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

    @property
    def forfeited(self) -> bool:
        return self.reason != "normal"

    @property
    def lost_by_rule(self) -> bool:
        """Ended normally with nothing (e.g. the five-turn rule)."""
        return self.reason == "normal" and self.score <= 0


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

    @property
    def stdev(self) -> float:
        se = self.stderr
        return se * math.sqrt(self.count) if self.count > 1 else float("nan")

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
        times = [g.mean_ms for g in self.games if g.mean_ms is not None]
        return sum(times) / len(times) if times else None


def _rule_name(detail: str) -> str:
    return detail.split(":", 1)[0].strip() or "no score"


def _coop_game(record: GameRecord) -> CoopGame:
    times = [e.measured_ms for e in record.events if e.seat >= 0 and e.measured_ms is not None]
    return CoopGame(number=record.game_number, score=record.returns[0] if record.returns else 0.0,
                    reason=record.reason, detail=record.detail, players=list(record.players),
                    roles=list(record.seat_roles),
                    game_id=record.game_id, events=len(record.events), forfeit_seat=record.forfeit_seat,
                    mean_ms=sum(times) / len(times) if times else None)


def run_coop(game: Game, configs: list[EngineConfig], tc: TimeControl, games: int, *,
             master_seed: bytes | None = None, store: ResultsStore | None = None, run_dir: Path = Path("runs"),
             margin: float = DEFAULT_MARGIN, match_id: str | None = None, on_event: EventHook | None = None,
             on_game: Callable[[CoopResult, GameRecord], None] | None = None) -> CoopResult:
    """Play ``games`` games between the pair ``configs`` (one config: the same engine command
    runs in both seats, as two processes); seats swap every game; game k's dice are the stream
    ``coop|k`` under ``master_seed`` (fresh random when None; the result says which)."""
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
    if store:
        store.begin_match(series.match_id, game.name, list(result.players), tc.text, f"coop games={games}")
    try:
        for number in range(1, games + 1):
            record = series.play_game(number, seating(number), dice_stream=coop_stream(number))
            result.games.append(_coop_game(record))
            if on_game:
                on_game(result, record)
    finally:
        series.close()
        if store:
            store.end_match(series.match_id, [result.mean, result.mean])
    return result


def _twin(config: EngineConfig, number: int) -> EngineConfig:
    """One of two processes of the same engine command, told apart by name."""
    from dataclasses import replace

    return replace(config, name=f"{config.name or 'engine'}#{number}", env=dict(config.env))


# --- the command line ---------------------------------------------------------------------------


def cli(args, console) -> int:
    """``arbiter coop``: a pair of engines plays ``--games`` games; per-game lines and a summary."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .cli import EXIT_ENGINE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, _engine_config, _guess_name, _parse_options
    from .clock import parse_time_control
    from .games import OptionError, load_game

    try:
        game = load_game(args.game, **_parse_options(args.option))
        tc = parse_time_control(args.tc)
        if game.game_type.utility is not Utility.IDENTICAL:
            raise ValueError(f"the coop format is for cooperative games; {game.name} is not one "
                             f"(use 'arbiter match')")
        if len(args.engine) not in (1, 2):
            raise ValueError(f"give one --engine (it plays both seats) or two (a pair), not {len(args.engine)}")
        if args.count < 1:
            raise ValueError(f"--games must be at least 1, not {args.count}")
        master = bytes.fromhex(args.seed) if args.seed else os.urandom(16)
    except (OptionError, ValueError) as exc:
        console.print(f"[red]error:[/] {exc}")
        return EXIT_USAGE
    names = list(args.name or []) + [None, None]
    if len(args.engine) == 1:
        base = names[0] or _guess_name(args.engine[0])
        configs = [_engine_config(args.engine[0], f"{base}#1", False),
                   _engine_config(args.engine[0], f"{base}#2", False)]
    else:
        labels = [names[i] or _guess_name(cmd) for i, cmd in enumerate(args.engine)]
        if labels[0] == labels[1]:
            labels = [f"{labels[0]}#1", f"{labels[1]}#2"]
        configs = [_engine_config(cmd, labels[i], False) for i, cmd in enumerate(args.engine)]
    store = ResultsStore(args.db)
    console.print(f"coop series: {game.name} {game.options}, {configs[0].name} + {configs[1].name}, "
                  f"{args.count} games, tc {tc.text}, master seed [bold]{master.hex()}[/] (give --seed "
                  f"{master.hex()} to replay the same dice), results → {args.db}")
    try:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("{task.fields[mean]}"), TimeElapsedColumn(), console=console,
                      disable=args.quiet, transient=True) as progress:
            task = progress.add_task("games", total=args.count, mean="")

            def on_game(result: CoopResult, record: GameRecord) -> None:
                g = result.games[-1]
                console.print(game_line(g, args.count), highlight=False, markup=False)
                se = result.stderr
                progress.update(task, advance=1, mean=f"mean {result.mean:.1f}"
                                + (f" ± {se:.1f}" if not math.isnan(se) else ""))

            result = run_coop(game, configs, tc, args.count, master_seed=master, store=store,
                              run_dir=Path(args.db).parent, margin=args.margin / 1000, on_game=on_game)
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]: finished games are saved")
        return EXIT_INTERRUPTED
    finally:
        store.close()
    console.print(summary_table(result))
    console.print(distribution_table(result))
    not_started = [g for g in result.games if g.detail.startswith("engine did not start")]
    return EXIT_ENGINE if not_started and len(not_started) == result.count else EXIT_OK


def game_line(g: CoopGame, total: int) -> str:
    """One progress line: who sat where, the score and how the game ended."""
    how = g.reason if g.forfeited else "normal"
    if g.forfeited and g.forfeit_seat is not None:
        how += f" by {g.players[g.forfeit_seat]}"
    detail = f": {g.detail}" if g.detail else ""
    seats = " + ".join(f"{p} ({r})" for p, r in zip(g.players, g.roles))
    return f"game {g.number}/{total}: {seats} → score {g.score:g} [{how}{detail}] in {g.events} events"


def summary_table(result: CoopResult, table_class=None):
    if table_class is None:
        from rich.table import Table as table_class
    table = table_class(title=f"coop series {result.match_id}: {result.game}, master seed {result.master_seed}")
    for col in ("pair", "games", "mean score", "std. error", "95% CI", "median", "min", "max",
                "rule losses", "forfeits", "avg ms/decision"):
        table.add_column(col, justify="left" if col == "pair" else "right")
    lo, hi = result.ci()
    ms = result.mean_ms()
    rule = ", ".join(f"{n} {why}" for why, n in sorted(result.losses_by_rule.items())) or "0"
    forfeits = ", ".join(f"{n} {why}" for why, n in sorted(result.forfeits.items())) or "0"
    scores = result.scores
    table.add_row(" + ".join(result.players), str(result.count), f"{result.mean:.2f}",
                  "-" if math.isnan(result.stderr) else f"{result.stderr:.2f}",
                  "-" if math.isnan(lo) else f"{lo:.1f} – {hi:.1f}", f"{result.median():g}",
                  f"{min(scores):g}" if scores else "-", f"{max(scores):g}" if scores else "-",
                  rule, forfeits, f"{ms:.1f}" if ms is not None else "-")
    return table


def distribution_table(result: CoopResult, table_class=None, buckets: int = 8):
    """The score distribution as a small histogram (count per score range)."""
    if table_class is None:
        from rich.table import Table as table_class
    table = table_class(title="score distribution")
    table.add_column("score")
    table.add_column("games", justify="right")
    table.add_column("")
    scores = result.scores
    if not scores:
        return table
    zero = sum(1 for s in scores if s <= 0)
    positive = sorted(s for s in scores if s > 0)
    rows = [("0", zero)]
    if positive:
        lo, hi = positive[0], positive[-1]
        width = max(1.0, (hi - lo + 1) / buckets)
        counts = Counter(min(buckets - 1, int((s - lo) // width)) for s in positive)
        for b in range(buckets):
            start = lo + b * width
            if start > hi:
                break
            rows.append((f"{start:.0f}–{min(hi, start + width - 1):.0f}", counts.get(b, 0)))
    most = max(n for _, n in rows) or 1
    for label, n in rows:
        table.add_row(label, str(n), "█" * round(20 * n / most))
    return table
