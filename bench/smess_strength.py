#!/usr/bin/env python
"""Smess engine strength through the real referee: alpha-beta against random and greedy.

Run from the repository root (long runs: be nice to the other users of the machine)::

    nice -n 10 .venv/bin/python bench/smess_strength.py                       # 200 games each
    nice -n 10 .venv/bin/python bench/smess_strength.py --games 400 --movetime 0.05
    .venv/bin/python bench/smess_strength.py --games 10 --opponents greedy   # a quick look

Each match is an ``arbiter.formats.match.Match`` of ``games=N`` between engine subprocesses over the
real protocol, so the first move alternates (alpha-beta has seat 0 in odd-numbered games).
Alpha-beta runs with ``--movetime`` (default 0.05 s) under a sudden-death clock (``--tc``,
default 300 s per side, never the binding limit). Game options are the defaults unless given
with ``--option KEY=VALUE``. Prints per match: wins / draws / losses for alpha-beta with a 95 %
Wilson interval for the win rate, split by who moved first, end reasons, game length, the
alpha-beta search depth and time per move, and any forfeits. ``--json FILE`` saves the numbers.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arbiter.clock import parse_time_control  # noqa: E402
from arbiter.hosting import EngineConfig  # noqa: E402
from arbiter.games import load_game  # noqa: E402
from arbiter.formats.match import Match, MatchFormat  # noqa: E402
from arbiter.stats import wilson_interval  # noqa: E402

PY = sys.executable
OPPONENTS = {
    "random": f"{PY} -m sample_engines.random_engine --seed {{seed}}",
    "greedy": f"{PY} -m sample_engines.smess_greedy --seed {{seed}}",
}


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def parse_options(pairs: list[str]) -> dict:
    out = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def run_match(opponent: str, games: int, movetime: float, tc: str, options: dict, seed: int,
              run_dir: Path, verbose: bool) -> dict:
    game = load_game("smess", **options)
    ab = EngineConfig(f"{PY} -m sample_engines.smess_alphabeta --movetime {movetime} --seed {seed}",
                      name="alphabeta", cwd=str(ROOT))
    opp = EngineConfig(OPPONENTS[opponent].format(seed=seed), name=opponent, cwd=str(ROOT))
    started = time.monotonic()

    def on_game(result, record):
        if verbose:
            w = record.winner()
            who = record.players[w] if w is not None else "draw"
            print(f"  game {record.game_number:3}: {record.players[0]} first → {who:9} "
                  f"[{record.reason}{': ' + record.detail if record.detail else ''}] "
                  f"{len(record.events)} plies · {result.points[0]:g}-{result.points[1]:g}", flush=True)

    match = Match(game, (ab, opp), parse_time_control(tc), MatchFormat.parse(f"games={games}"),
                  run_dir=run_dir, on_game=on_game)
    result = match.play()
    elapsed = time.monotonic() - started

    wins = draws = losses = 0
    by_first = {"alphabeta first": Counter(), "alphabeta second": Counter()}
    ends: Counter = Counter()
    forfeits: list[str] = []
    plies, depths, ab_ms, opp_ms = [], [], [], []
    for record in result.records:
        ab_seat = record.players.index("alphabeta")
        w = record.winner()
        outcome = "draw" if w is None else ("win" if w == ab_seat else "loss")
        wins += outcome == "win"
        draws += outcome == "draw"
        losses += outcome == "loss"
        by_first["alphabeta first" if ab_seat == 0 else "alphabeta second"][outcome] += 1
        if record.reason == "normal":
            ends[record.final_position.split()[5] if len(record.final_position.split()) > 5 else "?"] += 1
        else:
            forfeits.append(f"game {record.game_number}: seat {record.forfeit_seat} {record.reason}: {record.detail}")
            ends[f"forfeit:{record.reason}"] += 1
        plies.append(len(record.events))
        for e in record.events:
            if e.measured_ms is None:
                continue
            if e.seat == ab_seat:
                ab_ms.append(e.measured_ms)
                if e.info is not None and e.info.depth:
                    depths.append(e.info.depth)
            else:
                opp_ms.append(e.measured_ms)
    n = len(result.records)
    lo, hi = wilson_interval(wins, n)
    return {
        "opponent": opponent, "games": n, "wins": wins, "draws": draws, "losses": losses,
        "win_rate": wins / n if n else 0.0, "win_rate_ci95": [round(lo, 4), round(hi, 4)],
        "score": (wins + 0.5 * draws) / n if n else 0.0,
        "by_first_move": {k: dict(v) for k, v in by_first.items()},
        "ends": dict(ends), "forfeits": forfeits,
        "mean_plies": sum(plies) / n if n else 0.0, "max_plies": max(plies, default=0),
        "alphabeta_mean_depth": sum(depths) / len(depths) if depths else 0.0,
        "alphabeta_mean_ms_per_move": sum(ab_ms) / len(ab_ms) if ab_ms else 0.0,
        "alphabeta_p99_ms_per_move": percentile(ab_ms, 0.99),
        "alphabeta_max_ms_per_move": max(ab_ms, default=0.0),
        "opponent_mean_ms_per_move": sum(opp_ms) / len(opp_ms) if opp_ms else 0.0,
        "seconds": round(elapsed, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=200, help="games per opponent (default 200)")
    parser.add_argument("--movetime", type=float, default=0.05, help="alpha-beta seconds per move (default 0.05)")
    parser.add_argument("--tc", default="300", help="referee time control (default 300 s sudden death)")
    parser.add_argument("--opponents", default="random,greedy", help="comma list: random, greedy")
    parser.add_argument("--option", action="append", default=[], help="smess option KEY=VALUE")
    parser.add_argument("--seed", type=int, default=1, help="engine seed (random tie-breaks)")
    parser.add_argument("--json", type=Path, help="save the results here")
    parser.add_argument("-q", "--quiet", action="store_true", help="no per-game lines")
    args = parser.parse_args(argv)
    opponents = [o.strip() for o in args.opponents.split(",") if o.strip()]
    bad = [o for o in opponents if o not in OPPONENTS]
    if bad:
        parser.error(f"unknown opponent(s) {', '.join(bad)}; known: {', '.join(OPPONENTS)}")
    options = parse_options(args.option)
    print(f"smess strength: {args.games} games per opponent, alpha-beta movetime {args.movetime} s, "
          f"tc {args.tc}, options {load_game('smess', **options).options}")
    print(f"machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}")
    results = []
    with tempfile.TemporaryDirectory(prefix="smess-strength-") as tmp:
        for opponent in opponents:
            print(f"alpha-beta vs {opponent}:", flush=True)
            r = run_match(opponent, args.games, args.movetime, args.tc, options, args.seed, Path(tmp),
                          not args.quiet)
            results.append(r)
            lo, hi = r["win_rate_ci95"]
            print(f"  => alpha-beta {r['wins']} wins, {r['draws']} draws, {r['losses']} losses in {r['games']} "
                  f"games: win rate {100 * r['win_rate']:.1f} % (95 % CI {100 * lo:.1f}-{100 * hi:.1f} %), "
                  f"score {100 * r['score']:.1f} %")
            print(f"     by first move: {r['by_first_move']}")
            print(f"     ends: {r['ends']}; mean {r['mean_plies']:.1f} plies (max {r['max_plies']}); "
                  f"alpha-beta depth {r['alphabeta_mean_depth']:.2f}, {r['alphabeta_mean_ms_per_move']:.1f} ms/move "
                  f"(p99 {r['alphabeta_p99_ms_per_move']:.0f}, max {r['alphabeta_max_ms_per_move']:.0f}); {opponent} {r['opponent_mean_ms_per_move']:.1f} ms/move; "
                  f"{r['seconds']:.0f} s")
            for f in r["forfeits"]:
                print(f"     FORFEIT {f}")
    if args.json:
        args.json.write_text(json.dumps({"movetime": args.movetime, "tc": args.tc, "options": options,
                                         "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
