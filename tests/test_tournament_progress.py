"""Progress of long tournament runs: standings and ratings every ``rating_interval`` games with
the rate and ETA, and the report's ratings over time (JSON, CSV, plot), from real tournaments
(engine subprocesses, SQLite); a three-seat tournament also goes through export, import and verify.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from arbiter.records.store import load_records

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def run(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200", "PATH": "/usr/bin:/bin"})


EINSTEIN = """
name = "progress"
game = "einstein"
format = "round_robin"
match = "games=2"
time_control = "60"
seed = 7
output = "{db}"
concurrency = 2
rating_interval = 2
[[engines]]
name = "expectimax"
command = "{{python}} -m sample_engines.einstein_expectimax"
options = {{ depth = 1, movetime = 0 }}
[[engines]]
name = "random1"
command = "{{python}} -m sample_engines.random_engine --seed 1"
[[engines]]
name = "random2"
command = "{{python}} -m sample_engines.random_engine --seed 2"
"""

BLOCK = re.compile(r"── (\d+) of ≤ (\d+) games · [\d.]+ games/s · elapsed [\d:]+ · ETA ≤ [\d:?]+ ──")
ROW = re.compile(r"^\s*\d+\. (\S+)\s+.*?(Elo|OpenSkill μ)\s+([+-]?\d+\.\d)", re.M)


def blocks(output: str) -> list[tuple[int, int, dict[str, float]]]:
    """(games done, total, {engine: rating}) of every periodic block printed."""
    found = []
    parts = BLOCK.split(output)
    for k in range(1, len(parts), 3):
        body = parts[k + 2].split("\n\n")[0]
        rows = {m.group(1): float(m.group(3)) for m in ROW.finditer(body.split("──")[0])}
        found.append((int(parts[k]), int(parts[k + 1]), rows))
    return found


def test_rating_interval_blocks_and_the_ratings_over_time(tmp_path):
    db = tmp_path / "progress.sqlite"
    (tmp_path / "t.toml").write_text(EINSTEIN.format(db=db))
    done = run("tournaments", "run", tmp_path / "t.toml", "--no-report")
    assert done.returncode == 0, done.stdout + done.stderr
    printed = blocks(done.stdout)
    assert [(n, total) for n, total, _ in printed] == [(2, 6), (4, 6), (6, 6)], done.stdout
    assert set(printed[-1][2]) == {"expectimax", "random1", "random2"}  # early blocks may have no fit yet
    report_json, png, csv_dir = tmp_path / "r.json", tmp_path / "timeline.png", tmp_path / "csv"
    rep = run("tournaments", "report", db, "-q", "--json", report_json, "--plot-timeline", png, "--csv", csv_dir)
    assert rep.returncode == 0, rep.stdout + rep.stderr
    report = json.loads(report_json.read_text())
    timeline = report["rating_timeline"]
    assert timeline["measure"] == "Elo" and timeline["every"] == 2 and timeline["games"] == [2, 4, 6]
    # The console said, after each 2 games, what the report computes from the commit order.
    for i, (_, _, rows) in enumerate(printed):
        for engine, series in timeline["ratings"].items():
            if series[i] is None:  # no estimate yet (every first mover won): none printed either
                assert engine not in rows
            else:
                assert abs(series[i] - rows[engine]) < 0.051, (engine, i)
    final = {r["engine"]: r["elo"] for r in report["ratings"]["table"]}
    assert all(abs(timeline["ratings"][e][-1] - final[e]) < 1e-6 for e in final)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (csv_dir / "rating_timeline.csv").read_text().splitlines()[0] == "games,expectimax,random1,random2"
    # --rating-interval overrides the file (0: never); -q prints nothing either way.
    again = run("tournaments", "run", tmp_path / "t.toml", "--overwrite", "--no-report", "--rating-interval", "3")
    assert [(n, t) for n, t, _ in blocks(again.stdout)] == [(3, 6), (6, 6)], again.stdout
    off = run("tournaments", "run", tmp_path / "t.toml", "--overwrite", "--no-report", "--rating-interval", "0")
    assert off.returncode == 0 and not blocks(off.stdout)


def test_rating_interval_must_not_be_negative(tmp_path):
    (tmp_path / "t.toml").write_text(EINSTEIN.format(db=tmp_path / "x.sqlite").replace("rating_interval = 2",
                                                                                      "rating_interval = -1"))
    bad = run("tournaments", "run", tmp_path / "t.toml")
    assert bad.returncode == 2 and "rating_interval" in bad.stderr and "Traceback" not in bad.stdout + bad.stderr
    flag = run("tournaments", "run", tmp_path / "t.toml", "--rating-interval", "-2")
    assert flag.returncode == 2 and "--rating-interval" in flag.stderr


AACHESS = """
name = "aa3"
game = "aachess"
format = "round_robin"
games = 3
time_control = "60"
seed = 3
output = "{db}"
concurrency = 2
rating_interval = 1
[game_options]
seats = 3
max_rounds = 1
variant = "ryof"
[[engines]]
name = "r0"
command = "{{python}} -m sample_engines.aachess_random --seed 0"
[[engines]]
name = "r1"
command = "{{python}} -m sample_engines.aachess_random --seed 1"
[[engines]]
name = "r2"
command = "{{python}} -m sample_engines.aachess_random --seed 2"
"""


def test_three_seat_tournament_exports_imports_and_verifies(tmp_path):
    db = tmp_path / "aa3.sqlite"
    (tmp_path / "t.toml").write_text(AACHESS.format(db=db))
    done = run("tournaments", "run", tmp_path / "t.toml", "--no-report")
    assert done.returncode == 0, done.stdout + done.stderr
    assert [n for n, _, rows in blocks(done.stdout)] == [1, 2, 3] and "OpenSkill μ" in done.stdout
    for fmt in ("text", "csv"):
        out, new = tmp_path / f"aa3.{fmt}", tmp_path / f"imported-{fmt}.sqlite"
        exp = run("tournaments", "export", db, "--format", fmt, "-o", out)
        assert exp.returncode == 0, exp.stdout + exp.stderr
        imp = run("arbiter.cli", "import", out, "--db", new)
        assert imp.returncode == 0, imp.stdout + imp.stderr
        ver = run("arbiter.cli", "verify", new, "-v")
        assert ver.returncode == 0 and "3 of 3 records consistent" in ver.stdout, ver.stdout
        assert "event aa3: 3 record(s)" in ver.stdout  # the event chain is rebuilt, in the original order
        originals = {r.game_id: r for r in load_records(db)}
        for r in load_records(new):
            o = originals[r.game_id]
            assert len(r.players) == 3 and r.players == o.players and r.returns == o.returns
            assert [(e.seat, e.kind, e.move, e.roll) for e in r.events] == \
                   [(e.seat, e.kind, e.move, e.roll) for e in o.events]
            assert r.rolls == o.rolls and r.final_position == o.final_position and r.event_seq == o.event_seq
    assert any(r.rolls for r in load_records(db))  # the variant rolls dice
    rep = run("tournaments", "report", db, "-q", "--json", "-")
    assert json.loads(rep.stdout)["rating_timeline"]["measure"] == "OpenSkill μ"


def test_ratings_over_time_skip_points_without_an_estimate(tmp_path):
    """Games all won by the first mover cannot pin the first-move term (the fit is singular):
    those points have no rating (null), later points do; the console block shows scores only."""
    from tournaments.config import parse_config
    from tournaments.report import quick_ratings, rating_timeline

    cfg = parse_config(EINSTEIN.format(db=tmp_path / "x.sqlite"), "t.toml", check_paths=False)
    names = [e.name for e in cfg.engines]
    one = [{"seating": [0, 1], "returns": [1.0, -1.0], "seq": 1}]
    assert quick_ratings(cfg, names, one) == ("Elo", {})
    more = one + [{"seating": [1, 0], "returns": [1.0, -1.0], "seq": 2},
                  {"seating": [1, 2], "returns": [-1.0, 1.0], "seq": 3},
                  {"seating": [2, 0], "returns": [-1.0, 1.0], "seq": 4}]
    timeline = rating_timeline(cfg, names, more, every=1)
    assert timeline["games"] == [1, 2, 3, 4]
    assert all(timeline["ratings"][e][:2] == [None, None] for e in names)
    assert all(v is not None for e in names for v in timeline["ratings"][e][2:])


SEARCHERS = """
name = "cpu-share"
game = "einstein"
format = "round_robin"
match = "games=2"
time_control = "60"
seed = 7
output = "{db}"
[[engines]]
name = "a"
command = "{{python}} -m sample_engines.einstein_expectimax"
args = {{ movetime = 0.03 }}
[[engines]]
name = "b"
command = "{{python}} -m sample_engines.einstein_expectimax"
args = {{ movetime = 0.03 }}
"""


def test_the_referee_cpu_share_counts_the_engines_cpu(tmp_path):
    """Two engines searching 30 ms a move use far more CPU than the referee: the closing line's
    share must say so (sandboxed engines are killed at their end and reaped in their namespace, so
    the operating system's accounting of children missed them: it printed ~60 %)."""
    toml = tmp_path / "t.toml"
    toml.write_text(SEARCHERS.format(db=tmp_path / "t.sqlite"))
    done = run("tournaments", "run", toml, "--quiet", "--no-report")
    assert done.returncode == 0, done.stdout + done.stderr
    share = int(re.search(r"referee CPU share (\d+)%", done.stdout).group(1))
    assert share < 30, done.stdout


def test_live_standings_score_an_alliance_win_whole_and_a_game_all_lost_as_nothing():
    """As the report counts them: each seat of a winning alliance has won (not 1/k of a win),
    all equal is a draw, a game every seat lost (forfeits on both sides) gives nobody anything."""
    from types import SimpleNamespace

    from tournaments.cli import live_standings
    from tournaments.director import GameResult

    results = {("m", 1): GameResult((0, 1, 2), (1.0, -1.0, 1.0)), ("m", 2): GameResult((0, 1, 2), (-1.0,) * 3),
               ("m", 3): GameResult((2, 0, 1), (0.0, 0.0, 0.0))}
    runner = SimpleNamespace(cfg=SimpleNamespace(kind="table"), names=["a", "b", "c"], results=results)
    assert {name: (games, score) for name, games, score, _ in live_standings(runner)} == \
        {"a": (3, 1.5 / 3), "b": (3, 0.5 / 3), "c": (3, 1.5 / 3)}


def on_a_narrow_terminal(args: list, columns: int = 60) -> str:
    """What ``python -m ARGS`` shows on a pseudo-terminal ``columns`` wide (stdout and stderr),
    escape sequences removed."""
    import fcntl
    import pty
    import struct
    import termios

    master, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen([PY, "-m", *map(str, args)], cwd=ROOT, stdin=subprocess.DEVNULL, stdout=terminal,
                            stderr=terminal, env={**env, "TERM": "xterm"})
    os.close(terminal)
    shown = b""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the terminal's last user is gone
            break
        if not data:
            break
        shown += data
    os.close(master)
    assert proc.wait(timeout=60) == 0, shown.decode(errors="replace")
    return re.sub(r"\x1b(\[[0-9;?]*[A-Za-z]|\][^\x07]*\x07|[()][A-Z0-9])", "", shown.decode()).replace("\r", "")


def test_report_and_live_progress_fit_a_narrow_terminal(tmp_path):
    """Before: the report was drawn 120 columns wide whatever the terminal (every table row wrapped
    on a 60-column one), and the live status line, cropped at the terminal's edge, lost its elapsed
    time and ETA (they came last)."""
    db = tmp_path / "progress.sqlite"
    (tmp_path / "t.toml").write_text(EINSTEIN.format(db=db).replace("rating_interval = 2", "rating_interval = 0"))
    live = on_a_narrow_terminal(["tournaments", "run", tmp_path / "t.toml", "--no-report"])
    assert re.search(r"^ETA ≤ [\d:?]+ · elapsed [\d:]+ · ", live, re.M), live
    shown = on_a_narrow_terminal(["tournaments", "report", db])
    lines = shown.splitlines()
    assert max(len(line) for line in lines) <= 60, shown
    assert [line for line in lines if "expectimax" in line and "random1" not in line]  # names whole, not cut
    assert "…" not in shown  # values wrapped, never cut short
    piped = run("tournaments", "report", db)  # not a terminal: as wide as before (COLUMNS=200 here)
    assert piped.returncode == 0 and max(len(line) for line in piped.stdout.splitlines()) > 60


def test_rating_interval_block_breaks_ties_as_the_report_ranks_and_aligns_its_columns():
    """Before: of two engines with equal scores the first named came first, whatever their ratings
    (here a, OpenSkill μ 22.0, above c, μ 30.5: the report ranks c first), and the percentages
    drifted ('2/4  50%' above '0/4  0%')."""
    from types import SimpleNamespace

    from rich.console import Console

    from tournaments.cli import Display
    from tournaments.config import parse_config
    from tournaments.director import GameResult
    from tournaments.report import quick_ratings

    cfg = parse_config(AACHESS.format(db="t.sqlite"), "t.toml", check_paths=False)
    first, second, third = (0, 1, 2), (1, 2, 0), (2, 0, 1)
    won = {0: (1.0, -1.0, -1.0), 1: (-1.0, 1.0, -1.0)}  # by seat
    games = [(first, won[0]), (second, won[1]), (third, won[0]), (first, won[0])]  # a, c, c, a
    results = {("m", k): GameResult(seating, returns) for k, (seating, returns) in enumerate(games)}
    runner = SimpleNamespace(cfg=cfg, names=["a", "b", "c"], results=results, played=4,
                             plan=SimpleNamespace(played=0, max_remaining=5), summary=SimpleNamespace(committed=4))
    mu = {name: value[0] for name, value in quick_ratings(cfg, runner.names, [
        {"seating": list(s), "returns": list(r)} for s, r in games])[1].items()}
    assert mu["c"] > mu["a"] + 5
    rows = Display(Console(), "lines").ratings_block(runner).splitlines()[1:]
    assert [row.split()[1] for row in rows] == ["c", "a", "b"], rows
    assert [row.split()[2:4] for row in rows] == [["2/4", "50%"], ["2/4", "50%"], ["0/4", "0%"]]
    assert len({row.index("%") for row in rows}) == 1 and len({row.index("μ") for row in rows}) == 1, rows
