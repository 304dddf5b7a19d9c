#!/usr/bin/env python
"""Catalonia chain finder benchmark: typical and worst time of the exact longest-chain search.

Run from the repository root::

    nice -n 10 .venv/bin/python bench/bench_catalonia_chains.py          # full (~3-5 minutes)
    nice -n 10 .venv/bin/python bench/bench_catalonia_chains.py --quick  # smoke (< 1 minute)

Every position is a legal Catalonia board (at most the 24 pieces of the two armies, pits on
empty squares). Families:

* ``game: random play``  -- every position where a chain is scored or looked for, from games
  played by uniformly random decisions (the referee's own calls of the finder).
* ``game: planner play`` -- the same from games of ``sample_engines.catalonia_planner`` in both
  seats: long chains in dense clusters, the positions good play actually produces.
* ``uniform``            -- all 24 pieces scattered uniformly, 0-20 random pits.
* ``dense box``          -- all 24 pieces packed into a 5x5, 4x6, 5x6 or 6x6 box (pits around
  some): many mutual defences, long chains far below the component size.
* ``hill-climbed``       -- adversarial: dense boxes mutated piece by piece (swap two pieces or
  move one a step or two) keeping every change that does not lower the search's node count,
  several restarts; plus the hardest positions found while developing the finder.

Time per position is the minimum wall time of three runs (the machine is shared; the minimum
filters out other processes' bursts), CPU time is reported beside it. "Typical" is the median
over the game positions; "worst" the maximum over everything.
"""
from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arbiter.games import CHANCE  # noqa: E402
from arbiter.games.catalonia import (PIECE_COUNTS, CataloniaGame, board_text, defence_graph,  # noqa: E402
                                     parse_board)
from arbiter.games.catalonia_chains import ChainStats, longest_chain  # noqa: E402

ARMY = [kind for kind, n in PIECE_COUNTS.items() for _ in range(n)]
HALL_OF_FAME = [
    # Hard positions met while developing the finder (adversarial searches against earlier versions).
    "8/4p1p1/1p1bNB2/1pPP1nP1/b1pnPL2/1NBg1P2/2GlPp2/8",
    "8/4p3/1lg1p3/2PP1b1p/1pNPGnB1/1bPpnB1p/2P1L1N1/2P5",
    "2p5/3l4/4p1g1/2Gpnp2/1BBPbbL1/P1pnPPN1/1Pp2P2/5N2",
    "8/2P5/1pp2NL1/p1lpPP2/1Gpbp1B1/1Pbnn3/3PN1g1/2BP4",
    "8/8/1ppBpnB1/1Lpgbnb1/1GNpNlp1/1PPPPPP1/8/8",
    "8/8/1ppp1n2/1BpBpp2/1NnPgG2/1PbbPl2/1PLNPP2/8",
    "8/1ppPP3/1NlGN3/1PBPgp2/1PnPnL2/2p1bB2/1b2pp2/8",
    "8/8/1P1pn3/p1pbPP2/1PlB1N2/1pLbPB2/1PGpgpN1/4n3",
    "8/3P4/1pL2p2/1bppP1p1/1NgnBBG1/1nPpPb1P/2PNl3/8",
    "8/5b2/1PPp2P1/1pbgNPp1/2PLnBp1/3pGp2/2lBn3/3P2N1",
    "5N2/3pn3/p1bLpln1/2gbPBB1/2pGN1p1/2PPPP1p/8/4P3",
    "4p3/5P2/2pBp3/1PgB1lp1/2pnNGPb/1nL1p1N1/2PPbP2/8",
    "8/P7/2pn1p2/2PBPp2/1PLNl1np/1P1bgNp1/p2bBG1P/8",
    "8/2pp4/3nB1p1/1NB1n1pL/2bPNPb1/lpGP1P2/1PgP4/7p",
]


# --- measuring -------------------------------------------------------------------------------


def measure(board: list[int], pits: int, repeats: int = 3) -> tuple[float, float, int, int]:
    """(min wall ms, min cpu ms, nodes, chain length) of the finder on one position."""
    _, succ, white = defence_graph(board, pits)
    stats = ChainStats()
    walls, cpus = [], []
    chain: tuple[int, ...] = ()
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        chain = longest_chain(succ, white, stats=stats)
        walls.append((time.perf_counter() - w0) * 1000)
        cpus.append((time.process_time() - c0) * 1000)
    return min(walls), min(cpus), stats.nodes, len(chain)


def nodes_of(board: list[int], pits: int) -> int:
    _, succ, white = defence_graph(board, pits)
    stats = ChainStats()
    longest_chain(succ, white, stats=stats)
    return stats.nodes


# --- position families -------------------------------------------------------------------------


def game_positions(rng: random.Random, games: int, planner_movetime: float | None) -> list[tuple[list[int], int]]:
    """Boards after each movement phase of whole games (random dice, random or planner play)."""
    game = CataloniaGame()
    planner = None
    if planner_movetime is not None:
        from sample_engines.catalonia_planner import Planner
        planner = Planner(planner_movetime)
    out = []
    for _ in range(games):
        s = game.new_initial_state()
        while not s.is_terminal():
            if s.current_player() == CHANCE:
                s.apply_chance(rng.choice(s.chance_outcomes()))
                continue
            movement_ends = s.decision_kind() == "move" and s.step in ("black", "white-second")
            move = planner.choose(s)[0] if planner else rng.choice(s.legal_moves())
            s.apply(move)
            if movement_ends:
                out.append((s.board(), s.pits()))
    return out


def scatter(rng: random.Random, squares: list[int], pit_count: int = 0) -> tuple[list[int], int]:
    board = [0] * 64
    codes = ARMY + [-k for k in ARMY]
    for code, sq in zip(codes, rng.sample(squares, len(codes))):
        board[sq] = code
    empty = [sq for sq in range(64) if not board[sq]]
    pits = 0
    for sq in rng.sample(empty, min(pit_count, len(empty))):
        pits |= 1 << sq
    return board, pits


def box(rank0: int, file0: int, height: int, width: int) -> list[int]:
    return [r * 8 + f for r in range(rank0, rank0 + height) for f in range(file0, file0 + width)]


BOXES = [box(1, 1, 5, 5), box(2, 1, 4, 6), box(1, 1, 6, 5), box(1, 1, 6, 6), box(2, 2, 5, 5)]


def uniform_positions(rng: random.Random, n: int) -> list[tuple[list[int], int]]:
    return [scatter(rng, list(range(64)), rng.randint(0, 20)) for _ in range(n)]


def dense_positions(rng: random.Random, n: int) -> list[tuple[list[int], int]]:
    return [scatter(rng, rng.choice(BOXES), rng.choice((0, 0, 6, 12))) for _ in range(n)]


def hill_climb(rng: random.Random, restarts: int, steps: int) -> list[tuple[list[int], int]]:
    """Positions that make the search expand many nodes (local search on the node count)."""
    found = []
    for _ in range(restarts):
        board, pits = scatter(rng, rng.choice(BOXES))
        score = nodes_of(board, pits)
        for _ in range(steps):
            b = board[:]
            occupied = [sq for sq in range(64) if b[sq]]
            if rng.random() < 0.5:
                x, y = rng.sample(occupied, 2)
                b[x], b[y] = b[y], b[x]
            else:
                x = rng.choice(occupied)
                r, f = divmod(x, 8)
                near = [t for t in range(64) if not b[t] and not (pits >> t) & 1
                        and abs(t // 8 - r) <= 2 and abs(t % 8 - f) <= 2]
                if not near:
                    continue
                t = rng.choice(near)
                b[t], b[x] = b[x], 0
            n = nodes_of(b, pits)
            if n >= score:
                board, score = b, n
        found.append((board, pits))
    return found


# --- report --------------------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))] if s else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer positions (smoke test)")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    size = dict(random_games=40, planner_games=3, uniform=200, dense=200, restarts=3, steps=60) if args.quick \
        else dict(random_games=400, planner_games=24, uniform=2000, dense=2000, restarts=12, steps=300)

    print("Catalonia chain finder benchmark")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, "
          f"python {platform.python_version()}, load average {os.getloadavg()[0]:.2f} (shared machine)")
    t0 = time.perf_counter()
    families: list[tuple[str, list[tuple[list[int], int]]]] = [
        ("game: random play", game_positions(rng, size["random_games"], None)),
        ("game: planner play", game_positions(rng, size["planner_games"], 0.02)),
        ("uniform", uniform_positions(rng, size["uniform"])),
        ("dense box", dense_positions(rng, size["dense"])),
        ("hill-climbed", hill_climb(rng, size["restarts"], size["steps"])
         + [parse_board(text) for text in HALL_OF_FAME]),
    ]
    print(f"positions generated in {time.perf_counter() - t0:.0f} s\n")
    header = (f"{'family':<20} {'positions':>9} {'median ms':>10} {'p90 ms':>8} {'p99 ms':>8} {'worst ms':>9} "
              f"{'worst cpu ms':>12} {'worst nodes':>11} {'mean chain':>10}")
    print(header)
    print("-" * len(header))
    game_walls: list[float] = []
    worst = (0.0, 0.0, 0, "", "")
    for name, positions in families:
        walls, cpus, nodes, lengths = [], [], [], []
        for board, pits in positions:
            wall, cpu, n, length = measure(board, pits)
            walls.append(wall)
            cpus.append(cpu)
            nodes.append(n)
            lengths.append(length)
            if wall > worst[0]:
                worst = (wall, cpu, n, name, board_text(board, pits))
        if name.startswith("game"):
            game_walls += walls
        print(f"{name:<20} {len(positions):>9} {statistics.median(walls):>10.3f} {pct(walls, 0.9):>8.3f} "
              f"{pct(walls, 0.99):>8.2f} {max(walls):>9.2f} {max(cpus):>12.2f} {max(nodes):>11} "
              f"{statistics.mean(lengths):>10.1f}")
    typical = statistics.median(game_walls)
    print()
    print(f"typical (median over game positions): {typical:.3f} ms   target < 1 ms: "
          f"{'MET' if typical < 1 else 'NOT MET'}")
    print(f"worst (all positions): {worst[0]:.1f} ms wall, {worst[1]:.1f} ms cpu, {worst[2]} nodes "
          f"({worst[3]}): {worst[4]}   target < 50 ms: {'MET' if worst[0] < 50 else 'NOT MET'}")
    print(f"total run time {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
