"""Figures of tournament reports against what the stored records say, from real events (engine
subprocesses, SQLite): the numbers a user reads must be the ones an independent count of the
games gives."""
from __future__ import annotations

from pathlib import Path

import pytest

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


@pytest.fixture(scope="module")
def stopped(tmp_path_factory) -> Path:
    """An event of two engines that its SPRT stopped after a few games of a ``games=400`` match."""
    db = tmp_path_factory.mktemp("stopped") / "stopped.sqlite"
    play(SPRT_STOPPED.format(db=db, engine=DETERMINISTIC))
    return db


def test_a_match_not_played_to_its_end_shows_the_points_of_its_games(stopped):
    """A ``games=N`` match is released as one block: its score counted only whole blocks, so it
    read 0-0 until the last game was in (live, on the web page too), and for ever in an event the
    SPRT stopped."""
    db = stopped
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


def test_an_event_its_sprt_stopped_is_finished_with_no_game_to_go(stopped):
    """No game is started once the SPRT decided, yet the report (and the web page, which then
    kept the seed hidden and counted down to 400 games with an ETA) called the event in progress
    with hundreds of games to go."""
    from tournaments.web import TournamentSource

    report = build_report(stopped)
    t = report["tournament"]
    assert t["sprt_stop"]["verdict"] and t["games_played"] > 0
    assert t["finished"] and t["games_max_remaining"] == 0
    assert TournamentSource(stopped).summary()["tournament"]["seed"] == "9"


def test_the_web_views_standings_leave_out_the_rating_timeline_nobody_draws(stopped):
    """The live page draws the ratings table; the timeline (~50 rating fits, a quarter of the
    server's CPU under load, bench/web.md) was made at every making of the standings and sent to
    every browser unread. The exported report keeps it."""
    from tournaments.web import TournamentSource

    served = TournamentSource(stopped).summary()
    assert "rating_timeline" not in served and served["ratings"]["table"]
    assert build_report(stopped)["rating_timeline"]["games"]


def test_the_match_an_sprt_stopped_is_not_shown_as_playing(stopped):
    """The text report's match row of a stopped event said "playing", with winner "…", for ever."""
    from tournaments.report import render_text

    text = render_text(build_report(stopped))
    row = next(line for line in text[text.index("Matches"):].splitlines() if line.startswith("│ 1 "))
    assert "playing" not in row and "…" not in row and "stopped by the SPRT" in row, row


NOT_STARTED = """
name = "ghosts"
game = "einstein"
match = "games=2"
time_control = "10"
seed = 1
output = "{db}"
on_start_failure = "forfeit"
[[engines]]
name = "ghost"
command = "/nonexistent/engine"
[[engines]]
name = "wraith"
command = "{python} -c 'import sys; sys.exit(5)'"
[[engines]]
name = "random"
command = "{{python}} -m sample_engines.random_engine"
"""


def test_a_match_both_engines_could_not_start_is_lost_by_both_not_drawn(tmp_path):
    """Every game of it lost by both (0 points each, as the standings count the games): it was
    a drawn match, half a match point each to two engines that never played a game."""
    import sys

    from tournaments.report import render_text

    db = tmp_path / "ghosts.sqlite"
    play(NOT_STARTED.format(db=db, python=sys.executable))
    report = build_report(db)
    standings = {row["engine"]: row for row in report["standings"]}
    for name in ("ghost", "wraith"):
        row = standings[name]
        assert (row["W"], row["D"], row["L"], row["points"]) == (0, 0, 4, 0.0)
        assert (row["match_W"], row["match_D"], row["match_L"], row["match_points"]) == (0, 0, 2, 0.0)
    assert (standings["random"]["match_W"], standings["random"]["match_points"]) == (2, 2.0)
    (both,) = [m for m in report["matches"] if {m["A"], m["B"]} == {"ghost", "wraith"}]
    assert both["done"] and both["winner"] is None and both["decided_by"] == "lost by both"
    matches_table = render_text(report).split("Matches")[1].split("Results by end reason")[0]
    (line,) = [line for line in matches_table.splitlines() if "ghost" in line and "wraith" in line]
    assert "draw" not in line and "lost by both" in line


def decision_times(db: Path) -> list[float]:
    from arbiter.records.store import load_records

    return [e.measured_ms for r in load_records(db) for e in r.events if e.seat >= 0 and e.measured_ms is not None]


def test_solo_and_coop_summaries_give_the_mean_time_per_decision(tmp_path):
    """'avg ms/decision' of ``arbiter solo`` and ``arbiter coop`` was the mean of each game's
    mean: a short game weighed as much as a long one, so it was not the mean per decision that
    the tournament report (and the web page) gives for the same games."""
    import sys

    from arbiter.formats.coop import run_coop
    from arbiter.formats.solo import run_suite
    from arbiter.games import load_game
    from arbiter.hosting import EngineConfig
    from arbiter.records.store import ResultsStore
    from arbiter.clock import parse_time_control

    engine = f"{sys.executable} -m sample_engines.stalingrad_random"
    store = ResultsStore(tmp_path / "solo.sqlite")
    try:
        suite = run_suite(load_game("stalingrad"), EngineConfig(engine, name="random", cwd=str(ROOT)),
                          parse_time_control("60"), 4, b"solo", store=store, run_dir=tmp_path)
    finally:
        store.close()
    times = decision_times(tmp_path / "solo.sqlite")
    assert suite.mean_ms() == pytest.approx(sum(times) / len(times), rel=1e-12)

    engine = f"{sys.executable} -m sample_engines.random_engine"
    store = ResultsStore(tmp_path / "coop.sqlite")
    try:
        series = run_coop(load_game("catalonia"), [EngineConfig(engine, name="a", cwd=str(ROOT)),
                                                   EngineConfig(engine, name="b", cwd=str(ROOT))],
                          parse_time_control("60"), 3, master_seed=b"coop", store=store, run_dir=tmp_path)
    finally:
        store.close()
    times = decision_times(tmp_path / "coop.sqlite")
    assert series.mean_ms() == pytest.approx(sum(times) / len(times), rel=1e-12)


def test_a_resumed_match_gives_the_pace_of_the_games_it_played(tmp_path):
    """``arbiter match --resume`` divided every game of the match, those of the earlier run too,
    by the time of the resumed run: its games/s was too high (3 games before, 1 now: 4 per the
    new run's seconds)."""
    import sys
    import time

    from arbiter.cli import match_lines
    from arbiter.clock import parse_time_control
    from arbiter.formats.match import Match, MatchFormat
    from arbiter.games import load_game
    from arbiter.hosting import EngineConfig
    from arbiter.records.store import ResultsStore, load_records

    engines = tuple(EngineConfig(f"{sys.executable} -m sample_engines.random_engine --seed {k}", name=f"r{k}",
                                 cwd=str(ROOT)) for k in (1, 2))
    fmt, game, tc = MatchFormat.parse("games=4"), load_game("einstein"), parse_time_control("10")
    store = ResultsStore(tmp_path / "first.sqlite")
    try:
        first = Match(game, engines, tc, fmt, store=store, run_dir=tmp_path).play()
    finally:
        store.close()
    done = sorted(load_records(tmp_path / "first.sqlite"), key=lambda r: r.game_number)[:3]
    store = ResultsStore(tmp_path / "resumed.sqlite")
    try:
        resumed = Match(game, engines, tc, fmt, store=store, run_dir=tmp_path, match_id=first.match_id).play(done=done)
    finally:
        store.close()
    assert resumed.games == 4
    resumed.started = time.monotonic() - 10  # the resumed run took 10 s for its one game
    assert " · 0.1 games/s" in match_lines(resumed)[0]


SELF_PAIR = """
name = "selfpair"
game = "catalonia"
games = 2
self_pairs = true
time_control = "30+1"
seed = 6
output = "{db}"
[[engines]]
name = "random"
command = "{{python}} -m sample_engines.random_engine"
"""


def test_an_engine_paired_with_itself_has_the_clock_of_both_its_seats(tmp_path):
    """A cooperative self-pair plays both seats, each on its own clock: the report kept one clock
    per game (the seat that decided last), so the other seat's clock never entered the mean and a
    lower one never the minimum."""
    import json
    import sqlite3

    db = tmp_path / "selfpair.sqlite"
    play(SELF_PAIR.format(db=db))
    conn = sqlite3.connect(db)
    records = [json.loads(r) for (r,) in conn.execute("SELECT record FROM games")]
    conn.close()
    clocks = []
    for record in records:
        last = {}
        for event in record["events"]:
            if event["seat"] >= 0 and event.get("clock_ms") is not None:
                last[event["seat"]] = event["clock_ms"]
        clocks += last.values()
    assert len(clocks) == 2 * len(records) == 4
    (row,) = build_report(db)["engine_stats"]
    assert row["clock_left_min_ms"] == min(clocks)
    assert row["clock_left_mean_ms"] == pytest.approx(sum(clocks) / len(clocks))


LOST_ON_TIME = """
name = "flag"
game = "einstein"
match = "games=2"
time_control = "1"
seed = 3
output = "{db}"
[[engines]]
name = "slow"
command = "{{python}} {slow} slow --after 1 --delay 0.4"
[[engines]]
name = "random"
command = "{{python}} -m sample_engines.random_engine"
"""


def test_an_engine_that_lost_on_time_ended_with_an_empty_clock(tmp_path):
    """The clock left at a game's end was read from the engine's last event; a game lost on time
    has none for the decision that ran out, so the report showed the clock before it (~200 ms
    here) as the engine's lowest."""
    db = tmp_path / "flag.sqlite"
    play(LOST_ON_TIME.format(db=db, slow=ROOT / "tests" / "engines" / "misbehave.py"))
    games = games_of(db)
    report = build_report(db)
    slow = next(r for r in report["engine_stats"] if r["engine"] == "slow")
    assert slow["forfeits"] == {"time": len(games)} and len(games) == 2, slow["forfeits"]
    assert slow["clock_left_min_ms"] == 0 and slow["clock_left_mean_ms"] == 0, slow
