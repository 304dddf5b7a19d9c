#!/usr/bin/env python
"""The referee's own logic per decision, without any transport (issue 13).

    .venv/bin/python bench/bench_referee_logic.py [--games 500] [--rounds 3]

Two in-process random players (``InProcessPlayer``: Python functions asked through the same
requests an engine gets, no process, no socket) play EinStein through ``Referee``. Printed: wall
time per decision over whole games, the roll before each move, the request, the reply's checks,
clocks, records, the players' own choice and game start and end included. What
``bench_hotpath.py`` measures over real engines minus this is the transport (zmq send and
receive, waking another process).
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arbiter.clock import parse_time_control  # noqa: E402
from arbiter.dice import Dice  # noqa: E402
from arbiter.games import load_game  # noqa: E402
from arbiter.hosting.session import InProcessPlayer, InProcessSession  # noqa: E402
from arbiter.referee import Referee  # noqa: E402


def players() -> list[InProcessSession]:
    sessions = []
    for seed in (1, 2):
        rng = random.Random(seed)
        player = InProcessPlayer(decide=lambda request, game, rng=rng: rng.choice(request.legal_moves),
                                 wants_legal_moves=True, wants_state=False)
        session = InProcessSession(player)
        session.handshake()
        sessions.append(session)
    return sessions


def per_decision_us(games: int) -> float:
    game, sessions, tc = load_game("einstein"), players(), parse_time_control("180")
    decisions, started = 0, time.perf_counter()
    for number in range(games):
        record = Referee(game, sessions, tc, Dice(os.urandom(32), f"bench|{number}"), match_id="bench",
                         game_number=number).play()
        decisions += sum(1 for e in record.events if e.seat >= 0)
    return (time.perf_counter() - started) / decisions * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    per_decision_us(50)  # warm-up
    runs = [per_decision_us(args.games) for _ in range(args.rounds)]
    print(f"referee logic per decision (in-process players, {args.games} EinStein games x {args.rounds}; "
          f"load average {os.getloadavg()[0]:.2f}): " + ", ".join(f"{r:.1f}" for r in runs)
          + f" us; best {min(runs):.1f} us")


if __name__ == "__main__":
    main()
