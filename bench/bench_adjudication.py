"""What adjudication costs the referee per decision: EinStein games between two in-process players
(no processes, no sockets: the referee's own work is all that is timed) with no rules, and with a
ply limit and a resign rule that are judged after every decision but never end a game (both
players report the same positive score, so they never agree that one side is winning).

    .venv/bin/python bench/bench_adjudication.py [--games 400]

Prints microseconds per decision for each, best of ``--repeat`` runs taken in turns (the machine is shared).
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from arbiter.adjudication import Adjudication, Judge  # noqa: E402
from arbiter.clock import parse_time_control  # noqa: E402
from arbiter.dice import Dice  # noqa: E402
from arbiter.games import load_game  # noqa: E402
from arbiter.hosting import InProcessPlayer, InProcessSession  # noqa: E402
from arbiter.referee import Referee  # noqa: E402
from protocol.messages import Info  # noqa: E402


def player(seed: int) -> InProcessPlayer:
    rng = random.Random(seed)
    return InProcessPlayer(lambda request, game: (rng.choice(request.legal_moves), Info(score=0.5)),
                           name=f"p{seed}", wants_legal_moves=True, wants_state=False)


def run(games: int, rules: Adjudication | None) -> tuple[float, int]:
    """Seconds spent in ``Referee.play`` and decisions made over ``games`` games."""
    game, tc = load_game("einstein"), parse_time_control("inf")
    sessions = [InProcessSession(player(1)), InProcessSession(player(2))]
    for s in sessions:
        s.handshake("einstein")
    spent, decisions = 0.0, 0
    for n in range(1, games + 1):
        referee = Referee(game, sessions, tc, Dice(n.to_bytes(8, "big"), f"b|{n}"), match_id="b", game_number=n,
                          adjudication=rules)
        t0 = time.perf_counter()
        record = referee.play()
        spent += time.perf_counter() - t0
        assert record.reason == "normal", record.detail
        decisions += sum(1 for e in record.events if e.seat >= 0)
    return spent, decisions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cases = {"no rules": None,
             "ply limit + resign rule": Adjudication(max_plies=10_000, resign_moves=3, resign_score=0.4)}
    run(args.games // 4, None)  # warm up (imports, caches), then the cases take turns
    best: dict[str, tuple[float, int]] = {}
    for _ in range(args.repeat):
        for name, rules in cases.items():
            spent, decisions = run(args.games, rules)
            if name not in best or spent / decisions < best[name][0] / best[name][1]:
                best[name] = (spent, decisions)
    for name, (spent, decisions) in best.items():
        print(f"{name:<24} {spent / decisions * 1e6:8.1f} us per decision ({decisions} decisions, {args.games} games)")
    print(f"{'the judge alone':<24} {judge_alone(cases['ply limit + resign rule']):8.2f} us per decision "
          f"(Judge.see after each decision of a recorded game, as the referee calls it)")


def judge_alone(rules: Adjudication, rounds: int = 200) -> float:
    """Microseconds per decision of ``Judge.see`` alone, over one recorded game's steps."""
    game, tc = load_game("einstein"), parse_time_control("inf")
    sessions = [InProcessSession(player(1)), InProcessSession(player(2))]
    for s in sessions:
        s.handshake("einstein")
    record = Referee(game, sessions, tc, Dice(b"judge", "b|j"), match_id="b", game_number=1).play()
    state = game.new_initial_state()  # not terminal: every call judges fully
    decisions = sum(1 for e in record.events if e.seat >= 0)
    best = float("inf")
    for _ in range(rounds):
        judge, events = Judge(rules, game), []
        t0 = time.perf_counter()
        for event in record.events:  # the record grows as in play; judged after each decision
            events.append(event)
            if event.seat >= 0:
                judge.see(events, state)
        best = min(best, (time.perf_counter() - t0) / decisions)
    return best * 1e6
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
