#!/usr/bin/env python
"""The tournament's live terminal display: the director's CPU per game with it and without.

    .venv/bin/python bench/bench_live_display.py [--games 1000]

One round robin of two random EinStein engines (``--games`` games, concurrency 2) is played
twice in this process through ``tournaments.api`` -- once with the live display drawing into a
terminal-like string, once quiet -- and the director thread's CPU time per committed game is
printed for each, with the number of redraws.
"""
from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402

from tournaments import api  # noqa: E402
from tournaments import cli as tcli  # noqa: E402
from tournaments.config import parse_config  # noqa: E402

CONFIG = """name = "live"
game = "einstein"
format = "round_robin"
match = "games={games}"
seed = 5
concurrency = 2
output = "{db}"
[[engines]]
name = "e0"
command = "{{python}} -m sample_engines.random_engine --seed 0"
[[engines]]
name = "e1"
command = "{{python}} -m sample_engines.random_engine --seed 1"
"""


def run(folder: Path, games: int, mode: str) -> tuple[float, int, float]:
    opened = api.start(parse_config(CONFIG.format(games=games, db=folder / f"{mode}.sqlite"), "live.toml"))
    drawn = [0]
    render = tcli.Display.render

    def counting(self, runner):
        drawn[0] += 1
        return render(self, runner)

    tcli.Display.render = counting
    display = tcli.Display(Console(file=io.StringIO(), force_terminal=True, width=120), mode)
    try:
        cpu, wall = time.thread_time(), time.monotonic()
        with display:
            _, summary = api.play(opened, on_progress=display.progress, on_game=display.game)
        cpu, wall = time.thread_time() - cpu, time.monotonic() - wall
    finally:
        tcli.Display.render = render
        opened.db.close()
    return cpu / summary.committed * 1000, drawn[0], summary.committed / wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=1000)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        for mode in ("live", "quiet"):
            ms, drawn, rate = run(Path(d), a.games, mode)
            print(f"{mode:5s}: director CPU {ms:.3f} ms per game, {drawn} redraws, {rate:.0f} games/s")


if __name__ == "__main__":
    main()
