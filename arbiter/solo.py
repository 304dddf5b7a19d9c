"""The solo evaluation format: an engine plays a suite of N seeded games of a one-seat game.

Seed ``k`` of a suite is the dice stream ``suite|k`` under the suite's master seed, so every
engine run with the same master seed (``arbiter solo --seed HEX``) gets exactly the same dice for
seed k: the same set-up, and the same sequence of rolls (which the engines' different decisions
then put to different uses). That makes the comparison of two engines *paired*: per seed, who won,
tested with an exact sign test on the seeds where only one of them won (``arbiter.stats``).

``run_suite`` plays through the real referee (engine subprocesses, clocks, records in the
results store); ``play_local`` plays one seed in-process with a Python ``decide`` function, on
the same dice, and returns a record that ``arbiter.replay.verify`` accepts (for quick
measurements; no clocks).
"""
from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from protocol.messages import NewGame, Request, TimeControl

from .dice import Dice, seed_for
from .engine import EngineConfig
from .games.base import CHANCE, Game, IllegalMove, Utility
from .match import Series
from .records import Event, GameRecord
from .referee import DEFAULT_MARGIN
from .stats import PairedComparison, paired_comparison, wilson_interval
from .store import ResultsStore


def suite_stream(seed_index: int) -> str:
    """The dice stream of seed ``seed_index`` (shared by every engine of a suite)."""
    return f"suite|{seed_index}"


@dataclass
class SeedResult:
    returns: float
    reason: str
    detail: str
    events: int
    game_id: str
    mean_ms: float | None = None


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
        return sum(1 for r in self.results.values() if r.reason != "normal")

    @property
    def win_rate(self) -> float:
        return self.wins / self.games if self.games else 0.0

    def ci(self, confidence: float = 0.95) -> tuple[float, float]:
        """Wilson interval of the win rate."""
        return wilson_interval(self.wins, self.games, confidence)

    def returns_by_seed(self) -> dict[int, float]:
        return {k: r.returns for k, r in self.results.items()}

    def mean_ms(self) -> float | None:
        times = [r.mean_ms for r in self.results.values() if r.mean_ms is not None]
        return sum(times) / len(times) if times else None


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
                      mean_ms=sum(times) / len(times) if times else None)


def run_suite(game: Game, config: EngineConfig, tc: TimeControl, seeds: int | Iterable[int], master_seed: bytes,
              *, store: ResultsStore | None = None, run_dir: Path = Path("runs"), margin: float = DEFAULT_MARGIN,
              match_id: str | None = None,
              on_game: Callable[[int, GameRecord], None] | None = None) -> SuiteResult:
    """Play ``config``'s engine on every seed through the referee; one game per seed."""
    if game.game_type.utility is not Utility.SOLO:
        raise ValueError(f"the solo format is for one-seat games; {game.name} has {game.num_seats} seats")
    seed_list = _seed_list(seeds)
    series = Series(game, [config], tc, store=store, run_dir=run_dir, margin=margin, seed=master_seed,
                    match_id=match_id)
    result = SuiteResult(series.names[0], game.name, master_seed.hex())
    if store:
        store.begin_match(series.match_id, game.name, [series.names[0]], tc.text, f"solo seeds={len(seed_list)}")
    try:
        for k in seed_list:
            record = series.play_game(k, [0], dice_stream=suite_stream(k))
            result.results[k] = _seed_result(record)
            if on_game:
                on_game(k, record)
    finally:
        series.close()
        if store:
            store.end_match(series.match_id, [float(result.wins)])
    return result


Decide = Callable[[Request, NewGame], str]


def play_local(game: Game, decide: Decide, seed_index: int, master_seed: bytes, *, name: str = "local",
               match_id: str = "local") -> GameRecord:
    """Play one seed in-process, mirroring the referee: same dice stream, same requests (the
    ``position``/``state`` a seat may see), every roll and decision recorded. No clocks."""
    stream = suite_stream(seed_index)
    dice = Dice(seed_for(master_seed, stream), stream)
    state = game.new_initial_state()
    tc = TimeControl(text="inf", kind="unlimited")
    record = GameRecord(game_id=f"{match_id}.{seed_index}.{uuid.uuid4().hex[:6]}", match_id=match_id,
                        game_number=seed_index, game=game.name, options=dict(game.options), players=[name],
                        seat_roles=list(game.seat_roles), time_control=tc.text, margin_ms=0,
                        started_at=time.time(), dice_stream=stream, dice_commitment=dice.commitment)
    new_game = NewGame(game_id=record.game_id, game=game.name, options=record.options, seat=0, seats=[name],
                       seat_roles=record.seat_roles, time_control=tc, dice_commitment=dice.commitment,
                       match_id=match_id, game_number=seed_index)
    seq = 0
    while not state.is_terminal():
        if state.current_player() == CHANCE:
            outcomes = state.chance_outcomes()
            outcome = outcomes[dice.roll(len(outcomes))]
            state.apply_chance(outcome)
            record.events.append(Event(ply=len(record.events), seat=-1, kind="chance", move=str(outcome),
                                       roll=len(dice.rolls) - 1))
            continue
        seat = state.current_player()
        seq += 1
        kind = state.decision_kind(seat)
        request = Request(game_id=record.game_id, seq=seq, kind=kind, seat=seat, position=state.observation(seat),
                          state=state.observation_data(seat), ply=len(record.events))
        started = time.perf_counter()
        move = decide(request, new_game)
        elapsed = (time.perf_counter() - started) * 1000
        try:
            state.check_move(move, seat)
        except IllegalMove as exc:
            record.returns = game.forfeit_returns(seat)
            record.reason, record.detail, record.forfeit_seat = "illegal_move", f"{kind} {move!r}: {exc}", seat
            break
        state.apply(move)
        record.events.append(Event(ply=len(record.events), seat=seat, kind=kind, move=move,
                                   measured_ms=round(elapsed, 3)))
    else:
        record.returns = list(state.returns())
        record.reason, record.detail = "normal", state.end_detail()
    record.ended_at = time.time()
    record.final_position = state.to_text()
    record.rolls = list(dice.rolls)
    record.dice_seed = dice.seed.hex()
    return record


# --- the command line ---------------------------------------------------------------------------


def cli(args, console) -> int:
    """``arbiter solo``: each engine plays the same seeded suite; a summary and paired comparisons."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from .cli import EXIT_ENGINE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, _engine_config, _guess_name, _parse_options
    from .clock import parse_time_control
    from .games import OptionError, load_game

    try:
        game = load_game(args.game, **_parse_options(args.option))
        tc = parse_time_control(args.tc)
        if not args.engine:
            raise ValueError("give at least one --engine command")
        if args.count < 1:
            raise ValueError(f"--seeds must be at least 1, not {args.count}")
        if game.game_type.utility is not Utility.SOLO:
            raise ValueError(f"the solo format is for one-seat games; {game.name} has {game.num_seats} seats")
        master = bytes.fromhex(args.seed) if args.seed else os.urandom(16)
    except (OptionError, ValueError) as exc:
        console.print(f"[red]error:[/] {exc}")
        return EXIT_USAGE
    names = list(args.name or [])
    names += [None] * (len(args.engine) - len(names))
    names = [n or _guess_name(cmd) for n, cmd in zip(names, args.engine)]
    names = [f"{n}#{i + 1}" if names.count(n) > 1 else n for i, n in enumerate(names)]
    configs = [_engine_config(cmd, names[i], False) for i, cmd in enumerate(args.engine)]
    store = ResultsStore(args.db)
    console.print(f"solo suite: {game.name}, {args.count} seeds, tc {tc.text}, master seed [bold]{master.hex()}[/] "
                  f"(give --seed {master.hex()} to replay the same dice), results → {args.db}")
    suites: list[SuiteResult] = []
    try:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[score]}"),
                      TimeElapsedColumn(), console=console, disable=args.quiet) as progress:
            for config in configs:
                task = progress.add_task(config.name, total=args.count, score="")
                wins = [0, 0]

                def on_game(k, record, task=task, wins=wins):
                    wins[0] += record.returns and record.returns[0] > 0
                    wins[1] += 1
                    progress.update(task, advance=1, score=f"won {wins[0]}/{wins[1]}")
                    if args.quiet:
                        console.print(f"{record.players[0]} seed {k}: {'won' if record.returns[0] > 0 else 'lost'} "
                                      f"[{record.reason}{': ' + record.detail if record.detail else ''}]")
                suites.append(run_suite(game, config, tc, args.count, master, store=store,
                                        run_dir=Path(args.db).parent, margin=args.margin / 1000, on_game=on_game))
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]: finished games are saved")
        return EXIT_INTERRUPTED
    finally:
        store.close()
    console.print(summary_table(suites, Table))
    if len(suites) > 1:
        console.print(comparison_table(suites, Table))
    not_started = [s for s in suites if all(r.detail.startswith("engine did not start") for r in s.results.values())]
    return EXIT_ENGINE if not_started else EXIT_OK


def summary_table(suites: list[SuiteResult], table_class=None):
    if table_class is None:
        from rich.table import Table as table_class
    table = table_class(title=f"solo suite: {suites[0].game}, master seed {suites[0].master_seed}")
    for col in ("engine", "games", "wins", "win rate", "95% CI (Wilson)", "forfeits", "avg ms/decision"):
        table.add_column(col, justify="left" if col == "engine" else "right")
    for s in suites:
        lo, hi = s.ci()
        ms = s.mean_ms()
        table.add_row(s.engine, str(s.games), str(s.wins), f"{s.win_rate:.1%}", f"{lo:.1%} – {hi:.1%}",
                      str(s.forfeits), f"{ms:.1f}" if ms is not None else "-")
    return table


def comparison_table(suites: list[SuiteResult], table_class=None):
    if table_class is None:
        from rich.table import Table as table_class
    table = table_class(title="paired comparison on common seeds (same dice)")
    for col in ("A", "B", "seeds", "both won", "A only", "B only", "neither", "sign test p",
                "win-rate diff A−B (95% CI)"):
        table.add_column(col, justify="left" if col in ("A", "B") else "right")
    for i in range(len(suites)):
        for j in range(i + 1, len(suites)):
            c = compare(suites[i], suites[j])
            table.add_row(suites[i].engine, suites[j].engine, str(c.n), str(c.both), str(c.a_only), str(c.b_only),
                          str(c.neither), f"{c.p_value:.3g}",
                          f"{c.rate_diff:+.1%} ({c.rate_low:+.1%} … {c.rate_high:+.1%})")
    return table
