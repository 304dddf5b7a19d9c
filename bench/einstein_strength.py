"""Strength benchmark: the expectimax EinStein engine against the uniformly random engine.

Plays N games through the real referee (``arbiter.formats.match.Match``, format ``games=N``: the first
move alternates, expectimax moves first in odd games), with real engine subprocesses, a real
time control (default ``180``: 3 minutes sudden death per side) and a ResultsStore in a temporary
directory, then prints the win rate with a 95% Wilson interval, the rates when moving first and
second, the mean game length and the expectimax engine's time per move.

Usage (from the repository root):
    .venv/bin/python bench/einstein_strength.py [--games 400] [--movetime 0.1] [--seed 1]

The master seed fixes the dice of every game (and the random engine's choices), so a run with
the same options replays the same rolls.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arbiter.clock import parse_time_control  # noqa: E402
from arbiter.hosting import EngineConfig  # noqa: E402
from arbiter.games import load_game  # noqa: E402
from arbiter.formats.match import Match, MatchFormat  # noqa: E402
from arbiter.records.store import ResultsStore  # noqa: E402
from arbiter.stats import wilson_interval  # noqa: E402

EXPECTIMAX, RANDOM = "expectimax", "random"


def summarise(records) -> dict:
    games = wins = first_games = first_wins = plies = 0
    move_ms: list[float] = []
    engine_ms: list[int] = []
    depths: list[int] = []
    forfeits: dict[str, int] = {}
    for r in records:
        me = r.players.index(EXPECTIMAX)
        won = r.winner() == me
        games += 1
        wins += won
        if me == 0:
            first_games += 1
            first_wins += won
        if r.reason != "normal":
            key = f"{r.reason} by {r.players[r.forfeit_seat] if r.forfeit_seat is not None else '?'}"
            forfeits[key] = forfeits.get(key, 0) + 1
        plies += sum(1 for e in r.events if e.seat >= 0 and e.kind == "move")
        for e in r.events:
            if e.seat == me and e.kind == "move":
                if e.measured_ms is not None:
                    move_ms.append(e.measured_ms)
                if e.reported_ms is not None:
                    engine_ms.append(e.reported_ms)
                if e.info is not None and e.info.depth:
                    depths.append(e.info.depth)
    second_games, second_wins = games - first_games, wins - first_wins
    return {
        "games": games, "wins": wins, "rate": wins / games if games else 0.0, "ci": wilson_interval(wins, games),
        "first": (first_wins, first_games), "second": (second_wins, second_games),
        "mean_plies": plies / games if games else 0.0,
        "ms_per_move": sum(move_ms) / len(move_ms) if move_ms else 0.0,
        "max_ms": max(move_ms) if move_ms else 0.0,
        "engine_ms_per_move": sum(engine_ms) / len(engine_ms) if engine_ms else 0.0,
        "mean_depth": sum(depths) / len(depths) if depths else 0.0,
        "moves": len(move_ms), "forfeits": forfeits,
    }


def report(s: dict, elapsed: float) -> str:
    lo, hi = s["ci"]
    fw, fg = s["first"]
    sw, sg = s["second"]
    lines = [
        f"games            {s['games']}",
        f"expectimax wins  {s['wins']}",
        f"win rate         {s['rate']:.1%}  (95% Wilson CI {lo:.1%} .. {hi:.1%})",
        f"moving first     {fw}/{fg} = {fw / fg if fg else 0:.1%}",
        f"moving second    {sw}/{sg} = {sw / sg if sg else 0:.1%}",
        f"mean plies       {s['mean_plies']:.1f}  (moves by both sides, set-ups excluded)",
        f"expectimax move  {s['ms_per_move']:.1f} ms mean (referee-measured; engine-reported "
        f"{s['engine_ms_per_move']:.1f} ms; max {s['max_ms']:.0f} ms; {s['moves']} moves; "
        f"mean search depth {s['mean_depth']:.2f})",
        f"forfeits         {s['forfeits'] or 'none'}",
        f"wall time        {elapsed:.0f} s",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="expectimax vs random EinStein strength benchmark")
    parser.add_argument("--games", type=int, default=400)
    parser.add_argument("--movetime", type=float, default=0.1, help="expectimax seconds per move (cap)")
    parser.add_argument("--seed", type=int, default=1, help="master seed (dice and the random engine)")
    parser.add_argument("--tc", default="180", help="time control (default 180: 3 min sudden death)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the results store in this directory")
    parser.add_argument("--progress", type=int, default=25, help="print a line every N games (0: never)")
    args = parser.parse_args(argv)

    py = sys.executable
    configs = (
        EngineConfig(f"{py} -m sample_engines.einstein_expectimax --movetime {args.movetime} --seed {args.seed}",
                     name=EXPECTIMAX, cwd=str(ROOT)),
        EngineConfig(f"{py} -m sample_engines.random_engine --seed {args.seed}", name=RANDOM, cwd=str(ROOT)),
    )
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="einstein-strength-") as tmp:
        out = args.keep or Path(tmp)
        store = ResultsStore(out / "results.sqlite")

        def on_game(result, record):
            n = len(result.records)
            if args.progress and (n % args.progress == 0 or n == args.games):
                wins = result.points[0]
                print(f"  {n:4d} games: expectimax {wins:g} ({wins / n:.1%}), {time.monotonic() - started:.0f} s",
                      flush=True)

        match = Match(load_game("einstein"), configs, parse_time_control(args.tc), MatchFormat.parse(f"games={args.games}"),
                      store=store, run_dir=out, seed=f"einstein-strength-{args.seed}".encode(),
                      match_id=f"strength-{args.seed}", on_game=on_game)
        print(f"expectimax (--movetime {args.movetime}) vs random: {args.games} games, tc {args.tc}, "
              f"seed {args.seed}, results in {out}", flush=True)
        try:
            result = match.play()
        finally:
            store.close()
    print(report(summarise(result.records), time.monotonic() - started))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
