"""A&A Chess: the heuristic sample engine against the random one, through the real referee.

Usage: nice -n 10 python bench/aachess_games.py [--games 50] [--max-rounds 8] [--variant cof]

Plays ``--games`` games with the heuristic engine as the Allies (seat 0) and as many as the Axis
(seat 1), 2 seats, engine subprocesses over ZeroMQ, each game with its own referee dice stream;
prints wins/draws/losses per side, how the games ended and in which round (count per round),
and the slowest heuristic decision. Then the benchmark line: one full 2-seat game between the
sample engines (heuristic Axis vs random Allies), with the referee's own time = wall time minus
the engines' measured time (every request's send-to-reply time, which includes IPC).
Results are recorded by hand in ``bench/aachess.md``.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arbiter.clock import parse_time_control  # noqa: E402
from arbiter.hosting import EngineConfig  # noqa: E402
from arbiter.games.aachess import AAChessGame  # noqa: E402
from arbiter.formats.match import Series  # noqa: E402

PY = sys.executable


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=50, help="games per side")
    ap.add_argument("--max-rounds", type=int, default=8)
    ap.add_argument("--variant", default="cof")
    ap.add_argument("--run-dir", default="/tmp/aachess-bench")
    args = ap.parse_args(argv)
    game = AAChessGame(seats=2, max_rounds=args.max_rounds, variant=args.variant)
    configs = [EngineConfig(f"{PY} -m sample_engines.aachess_heuristic", name="heuristic", cwd=str(ROOT)),
               EngineConfig(f"{PY} -m sample_engines.aachess_random", name="random", cwd=str(ROOT))]
    series = Series(game, configs, parse_time_control("600"), run_dir=Path(args.run_dir), seed=b"aachess-bench")
    sides = {0: "Allies", 1: "Axis"}
    tally = {side: {"win": 0, "draw": 0, "loss": 0, "other": 0} for side in sides.values()}
    details: dict[str, dict[str, int]] = {side: {} for side in sides.values()}
    rounds: dict[str, dict[int, int]] = {side: {} for side in sides.values()}
    slowest = {side: 0.0 for side in sides.values()}
    number = 0
    started = time.monotonic()
    try:
        for heuristic_seat in (0, 1):
            side = sides[heuristic_seat]
            for _ in range(args.games):
                number += 1
                seating = [0, 1] if heuristic_seat == 0 else [1, 0]
                record = series.play_game(number, seating)
                if record.reason != "normal":
                    tally[side]["other"] += 1
                    print(f"game {number}: {record.reason} {record.detail}", flush=True)
                    continue
                r = record.returns[heuristic_seat]
                tally[side]["win" if r > 0 else "draw" if r == 0 else "loss"] += 1
                key = re.sub(r"income \d+ ", "income ", record.detail.split(" at ")[0]) if r else "round limit"
                details[side][key] = details[side].get(key, 0) + 1
                last = json.loads(record.final_position)["round"]
                rounds[side][last] = rounds[side].get(last, 0) + 1
                slowest[side] = max([slowest[side]] + [(e.measured_ms or 0) / 1000 for e in record.events
                                                       if e.seat == heuristic_seat])
            print(f"heuristic as {side}: {tally[side]}  ({details[side]}); games ending in round: "
                  f"{dict(sorted(rounds[side].items()))}; slowest heuristic decision {slowest[side] * 1000:.0f} ms",
                  flush=True)
        # The benchmark lines: one full game each way, referee time excluding engine time.
        for seating, label in (([1, 0], "heuristic Axis vs random Allies"), ([0, 1], "heuristic Allies vs random Axis")):
            number += 1
            t0 = time.monotonic()
            record = series.play_game(number, seating)
            wall = time.monotonic() - t0
            engine_s = sum(e.measured_ms or 0 for e in record.events if e.seat >= 0) / 1000
            decisions = sum(1 for e in record.events if e.seat >= 0)
            rolls = sum(1 for e in record.events if e.seat < 0)
            print(f"benchmark: 1 full 2-seat game ({label}, {args.variant}, max_rounds {args.max_rounds}): "
                  f"{record.detail}; {decisions} decisions, {rolls} rolls; wall {wall:.2f} s, "
                  f"engines {engine_s:.2f} s, referee {wall - engine_s:.2f} s "
                  f"({(wall - engine_s) / max(decisions, 1) * 1000:.1f} ms per decision)", flush=True)
    finally:
        series.close()
    print(f"total {time.monotonic() - started:.0f} s for {number} games")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
