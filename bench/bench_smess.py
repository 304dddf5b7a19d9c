#!/usr/bin/env python
"""Smess move-generation speed: perft, playouts and the alpha-beta engine's search rate.

Run from the repository root::

    .venv/bin/python bench/bench_smess.py           # full run (~1 minute)
    .venv/bin/python bench/bench_smess.py --quick   # smoke (a few seconds)

Measured, single process, best of ``--repeat`` runs:

1. ``perft(d)`` from the start position (``arbiter.games.smess.perft``: make/unmake on a list
   board, bulk-counting the last ply): leaf positions per second, and positions actually made
   (interior nodes) per second.
2. The same tree walked through the engine fast path of the state (``clone`` +
   ``apply_move_ints`` with every end rule and the repetition table, ``moves_ints`` at every
   node): positions per second.
3. Uniformly random games to the end (default options) through the fast path and through the
   string interface (``legal_moves`` + ``apply`` with full validation): plies and games per second.
4. The alpha-beta engine (``sample_engines.smess_alphabeta.Searcher``) from the start position:
   search nodes per second (quiescence nodes included) at a fixed depth.
"""
from __future__ import annotations

import argparse
import platform
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arbiter.games.smess import SmessGame, generate_moves, perft  # noqa: E402
from sample_engines.smess_alphabeta import Searcher  # noqa: E402


def best_of(repeat: int, fn):
    """(result, best seconds) of ``repeat`` calls."""
    best = float("inf")
    result = None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return result, best


def interior_nodes(state, depth: int) -> int:
    """Positions made by ``perft(depth)`` (every node above the bulk-counted last ply)."""
    rb = state.game.board_def
    total = 0

    def walk(board, side, d):
        nonlocal total
        if d <= 1:
            return
        for frm, to in generate_moves(board, side, rb):
            if abs(board[to]) == 3:
                continue
            v, w = board[frm], board[to]
            nv = v + v if abs(v) == 1 and rb.promotes[side][to] else v
            board[to], board[frm] = nv, 0
            total += 1
            if sum(1 for x in board if x) > 2:
                walk(board, 1 - side, d - 1)
            board[frm], board[to] = v, w

    walk(state.board(), state.side_to_move(), depth)
    return total


def fast_path_tree(state, depth: int) -> tuple[int, int]:
    """(leaves, positions made) of the tree walked with clone + apply_move_ints, and
    moves_ints at every interior node."""
    if depth == 0 or state.is_terminal():
        return (1 if depth == 0 else 0), 0
    leaves = made = 0
    for frm, to in state.moves_ints():
        child = state.clone()
        child.apply_move_ints(frm, to)
        n, m = fast_path_tree(child, depth - 1)
        leaves += n
        made += m + 1
    return leaves, made


def playouts(game, seconds: float, strings: bool, seed: int = 1) -> tuple[int, int, float]:
    rng = random.Random(seed)
    start = game.new_initial_state()
    games = plies = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        s = start.clone()
        if strings:
            while not s.is_terminal():
                s.apply(rng.choice(s.legal_moves()))
                plies += 1
        else:
            while not s.is_terminal():
                s.apply_move_ints(*rng.choice(s.moves_ints()))
                plies += 1
        games += 1
    return games, plies, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small depths and short runs")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    max_perft = 4 if args.quick else 5
    tree_depth = 3 if args.quick else 4
    seconds = 1.0 if args.quick else 5.0
    search_depth = 3 if args.quick else 4

    game = SmessGame()
    start = game.new_initial_state()
    print(f"machine: {platform.processor() or platform.machine()}, Python {platform.python_version()} "
          f"({platform.python_implementation()})")
    print(f"board: {game.board_def.describe()}")
    print(f"start: {start.to_text()}")
    print()
    print("1. perft from the start (make/unmake, last ply bulk-counted)")
    print(f"   {'depth':>5} {'leaves':>12} {'made':>10} {'seconds':>9} {'leaves/s':>12} {'made/s':>10}")
    for d in range(1, max_perft + 1):
        n, dt = best_of(args.repeat, lambda d=d: perft(start, d))
        made = interior_nodes(start, d)
        print(f"   {d:>5} {n:>12,} {made:>10,} {dt:>9.4f} {n / dt:>12,.0f} {made / dt if made else 0:>10,.0f}")
    print()
    print("2. the same tree through the state fast path (clone + apply_move_ints + moves_ints per node)")
    (n, made), dt = best_of(args.repeat, lambda: fast_path_tree(start, tree_depth))
    print(f"   depth {tree_depth}: {n:,} leaves, {made:,} positions made in {dt:.3f} s = "
          f"{made / dt:,.0f} positions/s")
    print()
    print(f"3. uniformly random games to the end ({seconds:g} s each, default options)")
    for label, strings in (("fast path (moves_ints/apply_move_ints)", False),
                           ("string interface (legal_moves/apply)", True)):
        g, p, dt = playouts(game, seconds, strings)
        print(f"   {label:<40} {p / dt:>10,.0f} plies/s {g / dt:>8,.1f} games/s  ({p / g:.1f} plies/game)")
    print()
    print(f"4. alpha-beta engine search from the start, depth {search_depth}")
    searcher = Searcher(game)
    searcher.note_game_position("bench", start)
    t = time.perf_counter()
    frm, to, info = searcher.choose(start, budget=None, max_depth=search_depth)
    dt = time.perf_counter() - t
    move = game.board_def.move_name(frm, to)
    print(f"   best {move}, score {info.score}, {info.nodes:,} nodes in {dt:.2f} s = {info.nodes / dt:,.0f} nodes/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
