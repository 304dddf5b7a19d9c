#!/usr/bin/env python
"""The referee's per-decision overhead (issue 13): median and p99 over ipc, real engines.

    .venv/bin/python bench/bench_hotpath.py                       # 5 rounds x 60 games
    .venv/bin/python bench/bench_hotpath.py --rounds 2 --games 30 # quick
    .venv/bin/python bench/bench_hotpath.py --profile prof.out    # plus a cProfile of one match
    .venv/bin/python bench/bench_hotpath.py --pin 0               # referee and engines on core 0

Two ``sample_engines.random_engine`` subprocesses play EinStein (tc 180) through ``Match`` with
the defaults of ``arbiter match`` (sandbox auto, ponder false: engines watched through their
control group's CPU counter). Per decision = from the start of reading the reply that completed
a decision to the end of sending the next request (bench_foundation.py's instrumentation of
``EngineSession._read_one`` / ``_send``): everything the referee does between an engine's answer
and the next engine's question -- decode, checks, clocks, rules, dice, the record, the next
request, encode and the zmq send call. The engines' own time is outside that span. Split into
read (recv + decode + checks), logic and send (encode + zmq send).
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(ROOT), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

from bench_foundation import instrumented_referee, overheads_from_timeline  # noqa: E402

from arbiter.clock import parse_time_control  # noqa: E402
from arbiter.formats.match import Match, MatchFormat  # noqa: E402
from arbiter.games import load_game  # noqa: E402
from arbiter.hosting import EngineConfig, pin_process  # noqa: E402


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def one_match(games: int, seed: int, run_dir: Path) -> Match:
    engines = tuple(EngineConfig([sys.executable, "-m", "sample_engines.random_engine", "--seed", str(seed + i)],
                                 name=n, cwd=str(ROOT)) for i, n in enumerate("AB"))
    return Match(load_game("einstein"), engines, parse_time_control("180"), MatchFormat.parse(f"games={games}"),
                 run_dir=run_dir, seed=f"hot{seed}".encode())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--games", type=int, default=60, help="games per round (one match)")
    ap.add_argument("--pin", type=int, metavar="CORE",
                    help="run the referee and its engines on this core (arbiter match --pin CORE)")
    ap.add_argument("--profile", help="cProfile one more match of --games games into this file; print the top")
    args = ap.parse_args()
    la = os.getloadavg()
    if args.pin is not None:
        pin_process((args.pin,))
    per: dict[str, list[float]] = {"total": [], "read": [], "logic": [], "send": []}
    with tempfile.TemporaryDirectory(prefix="bench-hot-") as d:
        for r in range(args.rounds):
            match = one_match(args.games, 2 * r, Path(d))
            with instrumented_referee() as (timeline, _games):
                result = match.play()
            bad = [rec for rec in result.records if rec.reason != "normal"]
            if bad:
                print(f"round {r}: {len(bad)} abnormal endings, the first: {bad[0].reason}: {bad[0].detail}")
            for k, v in overheads_from_timeline(timeline).items():
                per[k].extend(v)
        if args.profile:
            match = one_match(args.games, 99, Path(d))
            prof = cProfile.Profile()
            t = time.perf_counter()
            prof.runcall(match.play)
            wall = time.perf_counter() - t
            prof.dump_stats(args.profile)
            print(f"profile: {args.games} games in {wall:.2f} s under cProfile -> {args.profile}")
            pstats.Stats(args.profile).sort_stats("tottime").print_stats(25)
    lb = os.getloadavg()
    n = len(per["total"])
    print(f"referee overhead per decision, random vs random over ipc, {args.rounds} x {args.games} games, "
          f"{'pinned to core ' + str(args.pin) + ', ' if args.pin is not None else ''}"
          f"{n} decisions (load average {la[0]:.2f} -> {lb[0]:.2f})")
    print(f"{'part':<8} {'median us':>10} {'p90 us':>8} {'p99 us':>8} {'mean us':>8}")
    for k, v in per.items():
        print(f"{k:<8} {pct(v, 0.5):>10.1f} {pct(v, 0.9):>8.1f} {pct(v, 0.99):>8.1f} {sum(v) / len(v):>8.1f}")
    total = pct(per["total"], 0.5)
    print(f"median {total:.1f} us, p99 {pct(per['total'], 0.99):.1f} us (target median <= 60 us: "
          f"{'met' if total <= 60 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
