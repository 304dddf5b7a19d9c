"""Figures of tournament reports against what the stored records say, from real events (engine
subprocesses, SQLite): the numbers a user reads must be the ones an independent count of the
games gives."""
from __future__ import annotations

from pathlib import Path

from tournaments import api
from tournaments.config import parse_config
from tournaments.report import build_report

ROOT = Path(__file__).resolve().parent.parent
DETERMINISTIC = ROOT / "tests" / "engines" / "deterministic.py"


def play(text: str, source: str = "t.toml") -> None:
    opened = api.start(parse_config(text, source))
    try:
        api.play(opened)
    finally:
        opened.db.close()


def games_of(db: Path) -> list[tuple[str, int, list[str], list[float]]]:
    import json
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        return [(mid, num, json.loads(players), json.loads(returns)) for mid, num, players, returns in
                conn.execute("SELECT match_id, game_number, players, returns FROM games")]
    finally:
        conn.close()


SPRT_STOPPED = """
name = "stopped"
game = "einstein"
match = "games=400"
time_control = "10+0.1"
seed = 9
duplicate_dice = true
output = "{db}"
concurrency = 2
[sprt]
elo0 = 0
elo1 = 150
stop = true
[[engines]]
name = "A"
command = "{{python}} {engine} a"
[[engines]]
name = "B"
command = "{{python}} {engine} b"
"""


def test_a_match_not_played_to_its_end_shows_the_points_of_its_games(tmp_path):
    """A ``games=N`` match is released as one block: its score counted only whole blocks, so it
    read 0-0 until the last game was in (live, on the web page too), and for ever in an event the
    SPRT stopped."""
    db = tmp_path / "stopped.sqlite"
    play(SPRT_STOPPED.format(db=db, engine=DETERMINISTIC))
    report = build_report(db)
    assert report["tournament"]["sprt_stop"]["verdict"]
    games = games_of(db)
    (match,) = report["matches"]
    a, b = match["A"], match["B"]
    points = [0.0, 0.0]
    for _, _, players, returns in games:
        ra, rb = returns[players.index(a)], returns[players.index(b)]
        points[0] += 1.0 if ra > rb else 0.5 if ra == rb else 0.0
        points[1] += 1.0 if rb > ra else 0.5 if ra == rb else 0.0
    assert match["games"] == len(games) > 0
    assert match["points"] == points and sum(points) == len(games)
