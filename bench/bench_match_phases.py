#!/usr/bin/env python
"""Where one `arbiter match` spends its wall time, per game, by the referee's steps (issue 13).

    .venv/bin/python bench/bench_match_phases.py [--games 600] [-- EXTRA MATCH FLAGS, e.g. --sandbox none]

Runs `arbiter match --quiet` of two random EinStein engines in this process, with the referee's
and the engine sessions' steps wrapped in ``perf_counter_ns`` (inclusive times: a step's line
contains the steps it calls; each wrapper adds ~1 us per call). ``wait_any(t)`` is the blocking
wait for an engine's reply, ``wait_any(0)`` the look before it. Printed: the run's games/s (the
wrappers slow it by a few per cent), then per step its time per game, per call and its calls per
game.
"""
from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arbiter import cli, dice, referee  # noqa: E402
from arbiter.formats import match  # noqa: E402
from arbiter.hosting import session  # noqa: E402

SPENT: collections.Counter = collections.Counter()
CALLS: collections.Counter = collections.Counter()


def timed(function, key: str):
    clock = time.perf_counter_ns

    def wrapper(*args, **kwargs):
        started = clock()
        try:
            return function(*args, **kwargs)
        finally:
            SPENT[key] += clock() - started
            CALLS[key] += 1
    return wrapper


def instrument() -> None:
    steps = {referee.Referee: ["play", "_start_engines", "_finish", "_decide", "_roll", "_request_for", "_collect",
                               "_rest_earlier_deciders", "_add", "_announce_result"],
             match.Series: ["play_game"],
             session.EngineSession: ["ask", "poll_reply", "rest", "watch", "start_game", "new_game", "tell", "ping",
                                     "_send", "_read_one"],
             dice.Dice: ["prefetch", "roll"]}
    for cls, names in steps.items():
        for name in names:
            setattr(cls, name, timed(getattr(cls, name), f"{cls.__name__}.{name}"))
    wait_any = referee.wait_any
    blocking, look = timed(wait_any, "wait_any(t)"), timed(wait_any, "wait_any(0)")
    referee.wait_any = lambda engines, timeout_ms: (look if timeout_ms == 0 else blocking)(engines, timeout_ms)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, default=600)
    ap.add_argument("extra", nargs="*", help="more `arbiter match` flags (after --)")
    args = ap.parse_args()
    instrument()
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="bench-phases-") as folder:
        started = time.perf_counter()
        try:
            cli.main(["match", "--game", "einstein", "--quiet", "--tc", "180", "--format", f"games={args.games}",
                      "--db", str(Path(folder) / "results" / "m.sqlite"), *args.extra,
                      "--engine", f"{py} -m sample_engines.random_engine --seed 9",
                      "--engine", f"{py} -m sample_engines.random_engine --seed 10"])
        except SystemExit:
            pass
        wall = time.perf_counter() - started
    games = CALLS["Series.play_game"]
    print(f"bench_match_phases {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}: {games} games, "
          f"{CALLS['Referee._decide'] / max(games, 1):.1f} decisions a game, {games / wall:.0f} games/s "
          f"(start-up included)")
    for key, ns in sorted(SPENT.items(), key=lambda kv: -kv[1]):
        print(f"  {key:32s} {ns / games / 1000:8.1f} us/game {ns / CALLS[key] / 1000:8.1f} us/call "
              f"{CALLS[key] / games:6.1f} calls/game")


if __name__ == "__main__":
    main()
