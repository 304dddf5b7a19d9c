#!/usr/bin/env python
"""Catalonia: the chain-building planner pair against the random pair, through the real referee.

Run from the repository root (it lowers its own priority by 10 unless ``--no-nice``)::

    .venv/bin/python bench/catalonia_scores.py --games 200          # ~20-30 minutes on 2 shared cores
    .venv/bin/python bench/catalonia_scores.py --games 10 --quick   # smoke

Each pair plays ``--games`` games as a cooperative series (``arbiter.formats.coop.run_coop``): engine
subprocesses over ZeroMQ, clocks, the referee's dice, records in a SQLite results file. One
engine command per pair, so both seats run the same program as two processes (the planner's two
copies coordinate only through the referee). Both series use the same master seed, so game k of
the planner pair and game k of the random pair start from the same dice stream (``coop|k``);
the paired difference per game is reported beside the two means. Every record is verified with
``arbiter.records.replay.verify`` at the end.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arbiter.clock import parse_time_control  # noqa: E402
from arbiter.formats.coop import CoopResult, run_coop  # noqa: E402
from arbiter.hosting import EngineConfig  # noqa: E402
from arbiter.games import load_game  # noqa: E402
from arbiter.records.replay import verify  # noqa: E402
from arbiter.stats import mean_se  # noqa: E402
from arbiter.records.store import ResultsStore  # noqa: E402

PY = sys.executable


def row(label: str, r: CoopResult) -> str:
    lo, hi = r.ci()
    ms = r.mean_ms()
    return (f"{label:<10} {r.count:>5} {r.mean:>9.1f} {r.stderr:>7.1f} {lo:>8.1f}–{hi:<8.1f} {r.median():>7.0f} "
            f"{min(r.scores):>6.0f} {max(r.scores):>6.0f} {r.five_turn_losses:>9} {r.forfeit_count:>8} "
            f"{ms if ms is not None else float('nan'):>8.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=200, help="games per pair (default 200)")
    parser.add_argument("--movetime", type=float, default=0.05, help="planner seconds per decision (default 0.05)")
    parser.add_argument("--tc", default="60", help="time control per engine and game (default 60 s)")
    parser.add_argument("--seed", default="c47a10a1a", help="hex master seed shared by both series")
    parser.add_argument("--option", action="append", default=[], help="game option KEY=VALUE")
    parser.add_argument("--db", default=None, help="results file (default: a temporary directory)")
    parser.add_argument("--quick", action="store_true", help="print less while running")
    parser.add_argument("--no-nice", action="store_true", help="do not lower the priority")
    args = parser.parse_args(argv)
    if not args.no_nice:
        os.nice(10)  # the engines inherit it: the machine is shared
    from arbiter.cli import _parse_options

    game = load_game("catalonia", **_parse_options(args.option))
    tc = parse_time_control(args.tc)
    master = bytes.fromhex(args.seed if len(args.seed) % 2 == 0 else "0" + args.seed)
    workdir = Path(args.db).parent if args.db else Path(tempfile.mkdtemp(prefix="catalonia-scores-"))
    db = Path(args.db) if args.db else workdir / "results.sqlite"
    pairs = [
        ("planner", EngineConfig(f"{PY} -m sample_engines.catalonia_planner --movetime {args.movetime}",
                                 name="planner", cwd=str(ROOT))),
        ("random", EngineConfig(f"{PY} -m sample_engines.random_engine", name="random", cwd=str(ROOT))),
    ]
    print(f"Catalonia cooperative scores: {args.games} games per pair, options {game.options}, tc {tc.text}, "
          f"planner movetime {args.movetime} s, master seed {master.hex()}, results {db}")
    store = ResultsStore(db)
    results: dict[str, CoopResult] = {}
    started = time.perf_counter()
    try:
        for label, config in pairs:
            t0 = time.perf_counter()

            def on_game(result, record, label=label):
                g = result.games[-1]
                if not args.quick or g.number % 25 == 0 or g.forfeited:
                    print(f"  {label} game {g.number}: score {g.score:g} [{g.reason}"
                          f"{': ' + g.detail if g.detail else ''}] running mean {result.mean:.1f}", flush=True)

            results[label] = run_coop(game, [config], tc, args.games, master_seed=master, store=store,
                                      run_dir=workdir, on_game=on_game)
            print(f"{label}: {args.games} games in {time.perf_counter() - t0:.0f} s", flush=True)
    finally:
        store.close()

    print()
    print(f"{'pair':<10} {'games':>5} {'mean':>9} {'s.e.':>7} {'95% CI':^17} {'median':>7} {'min':>6} {'max':>6} "
          f"{'five-turn':>9} {'forfeits':>8} {'ms/dec':>8}")
    for label, r in results.items():
        print(row(label, r))
    plan, rand = results["planner"], results["random"]
    diffs = [a.score - b.score for a, b in zip(plan.games, rand.games)]
    mean, se = mean_se(diffs)
    print(f"\npaired by game (same dice stream): planner − random = {mean:.1f} ± {se:.1f} (s.e.) over {len(diffs)} games; "
          f"planner ahead in {sum(d > 0 for d in diffs)}, equal in {sum(d == 0 for d in diffs)}")
    if not math.isnan(se) and se > 0:
        print(f"  t = {mean / se:.1f}")
    # Every record must replay cleanly through the rules and the revealed dice.
    from arbiter.records.store import load_records

    records = load_records(db)
    bad = [(r.game_id, p) for r in records for p in verify(r)]
    print(f"verified {len(records)} records: {'all consistent' if not bad else f'{len(bad)} problems: {bad[:3]}'}")
    print(f"total {time.perf_counter() - started:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
