"""End to end: tournaments with real engine subprocesses, workers and SQLite.

* kill -9 of the tournament process at random moments (seeded, the seed printed) and twice on
  purpose between a game's SQLite commit and its export line, then ``resume``, ends with exactly
  the games (seats, dice, moves, results) of an uninterrupted run, each committed once and
  exported once, and leaves no engine process behind;
* duplicate dice: the two games of a pair really get the same rolls, seats swapped;
* three-seat, cooperative and solo games run through the same machinery (a small test game
  defined here is handed to the workers by its module path);
* reports export as text, JSON, CSV and a plot.
"""
from __future__ import annotations

import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import ClassVar

import psutil
import pytest

from arbiter import games as arbiter_games
from arbiter.games.base import CHANCE, TERMINAL, Game, GameType, IllegalMove, State, Utility
from arbiter.records.replay import verify
from arbiter.records.signing import keygen
from tournaments import api
from tournaments.config import parse_config
from tournaments.report import build_report, plot, render_text, to_json, write_csv
from tournaments.runner import db_marker
from tournaments.worker import DB_ENV

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def marked_processes(db: Path) -> list[psutil.Process]:
    """Live processes (workers' engines) started for the tournament database ``db``."""
    marker = db_marker(db)
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(DB_ENV) == marker and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.Error, OSError):
            pass
    return found


def wait_none_left(db: Path, timeout: float = 8.0) -> None:
    deadline = time.monotonic() + timeout
    while (left := marked_processes(db)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"engine processes left behind: {[p.cmdline() for p in left]}"


def cli(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "tournaments", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=kw.pop("timeout", 180), **kw)


def games_of(db: Path) -> dict[tuple[str, int], dict]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT match_id, game_number, record FROM games").fetchall()
    finally:
        conn.close()
    out = {}
    for mid, num, rec in rows:
        r = json.loads(rec)
        assert (mid, num) not in out, f"game {(mid, num)} committed twice"
        out[(mid, num)] = {"players": r["players"], "returns": r["returns"], "reason": r["reason"],
                           "stream": r["dice_stream"], "rolls": r["rolls"], "seed": r["dice_seed"],
                           "moves": [(e["seat"], e["move"]) for e in r["events"]]}
    return out


DETERMINISTIC_ENGINE = """
import random, sys, time
from protocol.kit import run_engine

def decide(request, game):
    # A pure function of the game (match id and number come in new_game) and the position:
    # the same moves however engine processes are reused, restarted or killed.
    rng = random.Random(f"{sys.argv[1]}|{game.match_id}|{game.game_number}|{request.ply}|{request.position}")
    time.sleep(0.003)  # a little thinking, so that kills land in the middle of games
    return rng.choice(request.legal_moves)

run_engine(decide, name="det-" + sys.argv[1], wants_legal_moves=True)
"""

TORN_WRITER = """\
class Torn:
    def __init__(self, f):
        self.f = f
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        self.f.close()
    def __getattr__(self, name):  # tell, flush, fileno, truncate: the real file's
        return getattr(self.f, name)
    def write(self, data):
        cut = len(data) // 2
        if data[cut - 1:cut] == b"\\n":  # two lines of one length: the half would end a line
            cut += 1
        self.f.write(data[:cut])
        self.f.flush()
        os.fsync(self.f.fileno())
        os.kill(os.getpid(), signal.SIGKILL)
"""
"""The kill hooks' export file: writes half of what it is given (never ending on a line's end),
syncs it and SIGKILLs the process."""

KILL_IN_EXPORT = """
# Run the tournament command line, but SIGKILL the process inside ResultsStore.save_games after
# the SQLite commit of the batch that holds its N-th game (N = 0: its first batch of several
# games): before the batch's export lines are written ("commit") or half-way through writing
# them ("torn"). The batch's size goes to the file named by KILL_REPORT first.
import os, signal, sys
from arbiter.records import store

exports = 0

""" + TORN_WRITER + """
original_open, original_save = store.open_private, store.ResultsStore.save_games
saves = batch = 0

def save_games(self, records):
    global saves, batch
    saves, batch = saves + len(records), len(records)
    return original_save(self, records)

def due():
    return batch >= 2 if after == 0 else saves >= after

def opener(path):
    global exports
    f = original_open(path)
    if str(path).endswith(".jsonl") and due():  # the export of the batch holding this run's n-th game
        exports += 1
        if exports == 1:
            with open(os.environ["KILL_REPORT"], "w") as report:
                report.write(str(batch))
            if mode == "commit":
                os.kill(os.getpid(), signal.SIGKILL)
            return Torn(f)
    return f

if __name__ == "__main__":  # not again in a spawned process (a LocalCluster's workers)
    mode, after = sys.argv[1], int(sys.argv[2])
    store.open_private = opener  # how the store opens its export for appending
    store.ResultsStore.save_games = save_games
    from tournaments.cli import main
    sys.exit(main(sys.argv[3:]))
"""


def killed_in_export(proc: subprocess.Popen, out: str, db: Path, at_least: int, mode: str, report: Path,
                     several: bool = False) -> int:
    """Check what a run the hook killed in its export window left: the batch committed to SQLite,
    its export lines missing ("commit") or half written ("torn"). Returns the games."""
    assert proc.returncode == -signal.SIGKILL, out
    batch = int(report.read_text())
    committed = len(games_of(db))
    exported = db.with_suffix(".jsonl").read_bytes()
    assert committed >= at_least and batch >= (2 if several else 1), (committed, at_least, batch, out)
    lines = exported.count(b"\n")
    if mode == "torn":
        assert not exported.endswith(b"\n") and committed - batch <= lines < committed  # half of it written
    else:
        assert (exported.endswith(b"\n") or not exported) and lines == committed - batch  # the batch's lines missing
    return committed


KILL_TOML = """\
name = "kill-test"
game = "einstein"
format = "swiss"        # later rounds are paired from results: resume must re-derive them
rounds = 3
match = "bo3"
time_control = "60"
seed = "resume-me"
duplicate_dice = true
concurrency = 2
output = "{db}"
key_file = "{key}"      # every record signed; resume must continue the match and event chains

[game_options]
setup = "random"
""" + "".join(f"""
[[engines]]
name = "d{i}"
command = "{{{{python}}}} {{engine}} {i}"
cwd = "{{engine_dir}}"
""" for i in range(5))


def test_kill_9_at_random_moments_then_resume_equals_an_uninterrupted_run(tmp_path):
    # The engine in a folder of its own, started there: engines see their own folder (its /tmp
    # shown again in the sandbox), never the results folder (hidden), where it would not start.
    (tmp_path / "engine").mkdir()
    engine = tmp_path / "engine" / "det_engine.py"
    engine.write_text(DETERMINISTIC_ENGINE)
    key, public = keygen(tmp_path / "keys")
    results = tmp_path / "results"  # hidden from engines: not the engine's folder's parent
    straight_db = results / "straight.sqlite"
    (tmp_path / "straight.toml").write_text(KILL_TOML.format(db=straight_db, engine=engine, key=key, engine_dir=engine.parent))
    run = cli("run", str(tmp_path / "straight.toml"), "--quiet", "--no-report")
    assert run.returncode == 0, run.stdout + run.stderr
    wait_none_left(straight_db)
    expected = games_of(straight_db)
    assert len(expected) >= 12  # 3 rounds x 2 matches x 2-3 games (one engine has a bye)
    assert all(g["moves"] for g in expected.values()), "games not played (engines that could not start?)"

    killed_db = results / "killed.sqlite"
    toml = tmp_path / "killed.toml"
    toml.write_text(KILL_TOML.format(db=killed_db, engine=engine, key=key, engine_dir=engine.parent))
    hook = tmp_path / "kill_in_export.py"
    hook.write_text(KILL_IN_EXPORT)
    seed = int(os.environ.get("KILL_TEST_SEED", random.randrange(2**32)))
    print(f"kill test seed: {seed} (rerun with KILL_TEST_SEED={seed})")
    rng = random.Random(seed)
    log = [f"seed {seed}"]
    # First two deterministic kills inside the window between a game's SQLite commit and its
    # export line (the line never written; half of it written), then kills at random moments.
    windows = [("commit", 2), ("torn", 2)]
    for attempt in range(10):
        # Resume by database or by file (the file also starts it if it was killed before it existed).
        args = ["run", str(toml)] if attempt == 0 else \
            ["resume", str(killed_db) if attempt % 2 and killed_db.exists() else str(toml)]
        args += ["--quiet", "--no-report"]
        argv = [PY, str(hook), windows[attempt][0], str(windows[attempt][1]), *args] if attempt < len(windows) else \
            [PY, "-m", "tournaments", *args]
        before = len(games_of(killed_db)) if killed_db.exists() else 0
        report = tmp_path / "kill-report"
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env={**os.environ, "KILL_REPORT": str(report)})
        delay = None if attempt < len(windows) else rng.uniform(0.3, 2.5) if attempt < 6 else None
        try:
            out, _ = proc.communicate(timeout=delay or 120)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)  # kill -9: no cleanup in the tournament process itself
            proc.communicate()
            assert delay is not None, f"attempt {attempt} did not end by itself: {log}"
            log.append(f"killed after {delay:.2f}s with {len(games_of(killed_db)) if killed_db.exists() else 0} games")
            wait_none_left(killed_db)  # the workers died with it and took their engines along
            continue
        if attempt < len(windows):
            # The hook killed the process itself, right after the SQLite commit of its 2nd game's batch.
            committed = killed_in_export(proc, out, killed_db, before + windows[attempt][1], windows[attempt][0], report)
            log.append(f"killed in the export window ({windows[attempt][0]}) with {committed} games")
            wait_none_left(killed_db)
            continue
        assert proc.returncode == 0, out
        log.append("finished")
        break
    assert log[-1] == "finished", log
    print("kill log:", log)  # shown with pytest -s
    got = games_of(killed_db)
    assert sorted(got) == sorted(expected), log
    for key, want in expected.items():
        assert got[key] == want, (key, log)
    # The JSON Lines export holds every game exactly once (a torn line would have been cut).
    lines = (results / "killed.jsonl").read_text().splitlines()
    ids = [json.loads(line)["game_id"] for line in lines]
    assert len(ids) == len(set(ids)) == len(got)
    # Resuming a finished tournament plays nothing more.
    again = cli("resume", str(killed_db), "--quiet", "--no-report")
    assert again.returncode == 0 and "0 games played in this run" in again.stdout, again.stdout
    assert len(games_of(killed_db)) == len(expected)
    # However often it was killed, every match chain and the event chain run unbroken through all
    # the games, each signed: in the database and in the export.
    for path in (killed_db, results / "killed.jsonl"):
        checked = subprocess.run([PY, "-m", "arbiter.cli", "verify", str(path), "--public-key", str(public)],
                                 cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "300"})
        assert checked.returncode == 0 and f"event kill-test: {len(expected)} record(s)" in checked.stdout, \
            checked.stdout


def test_seeded_random_engines_restarted_every_game_are_reproducible(tmp_path):
    """The sample random engine keeps one RNG for its whole life; with ``restart = true`` each
    game gets a fresh process, so two runs of the same file play identical games."""
    text = """
game = "einstein"
match = "games=2"
seed = 3
restart = true
concurrency = 2
output = "{db}"
[[engines]]
name = "r1"
command = "{{python}} -m sample_engines.random_engine --seed 1"
[[engines]]
name = "r2"
command = "{{python}} -m sample_engines.random_engine --seed 2"
"""
    runs = []
    for name in ("one", "two"):
        db = tmp_path / f"{name}.sqlite"
        opened = api.start(parse_config(text.format(db=db), "t.toml"))
        _, summary = api.play(opened)
        opened.db.close()
        assert summary.finished
        wait_none_left(db)
        runs.append(games_of(db))
    assert runs[0] == runs[1] and len(runs[0]) >= 2


def test_pinned_workers_each_run_their_games_on_a_core_of_their_own(tmp_path):
    db = tmp_path / "pin.sqlite"
    engine = f"{{python}} {ROOT / 'tests' / 'engines' / 'where.py'}"
    text = f"""
game = "einstein"
match = "games=2"
seed = 4
pin = true
concurrency = 2
output = "{db}"
[[engines]]
name = "w1"
command = "{engine}"
[[engines]]
name = "w2"
command = "{engine}"
[[engines]]
name = "w3"
command = "{engine}"
"""
    opened = api.start(parse_config(text, "t.toml"))
    _, summary = api.play(opened)
    opened.db.close()
    assert summary.finished
    wait_none_left(db)
    conn = sqlite3.connect(db)
    records = [json.loads(r) for (r,) in conn.execute("SELECT record FROM games")]
    conn.close()
    cores_per_game = [{e["info"]["comment"] for e in r["events"] if e["seat"] >= 0} for r in records]
    usable = sorted(os.sched_getaffinity(0))
    assert len(cores_per_game) == 6 and all(len(c) == 1 for c in cores_per_game), cores_per_game  # one core a game
    used = set().union(*cores_per_game)
    assert used <= {str(c) for c in usable[:2]} and len(used) == min(2, len(usable)), used  # a core per worker


def test_a_relative_output_path_works_from_any_folder(tmp_path):
    """The sandbox gets every folder it hides as an absolute path: a relative output (the usual
    ``runs/x.sqlite``) once made every engine fail to start (bubblewrap resolved the log folder
    against its new root)."""
    (tmp_path / "event.toml").write_text("""
game = "einstein"
match = "games=2"
seed = 5
concurrency = 1
output = "runs/rel.sqlite"
[[engines]]
name = "r1"
command = "{python} -m sample_engines.random_engine --seed 1"
[[engines]]
name = "r2"
command = "{python} -m sample_engines.random_engine --seed 2"
""")
    run = subprocess.run([PY, "-m", "tournaments", "run", "event.toml", "--quiet"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    games = games_of(tmp_path / "runs" / "rel.sqlite")
    assert len(games) >= 2 and {g["reason"] for g in games.values()} == {"normal"}, games


def test_duplicate_dice_pairs_get_identical_rolls_and_reports_export(tmp_path):
    db = tmp_path / "dup.sqlite"
    text = f"""
name = "dup"
game = "einstein"
match = "games=4"
seed = 11
duplicate_dice = true
concurrency = 2
output = "{db}"
[game_options]
setup = "random"
[sprt]
elo0 = -10
elo1 = 10
[[engines]]
name = "a"
command = "{{python}} -m sample_engines.random_engine --seed 1"
[[engines]]
name = "b"
command = "{{python}} -m sample_engines.random_engine --seed 2"
"""
    opened = api.start(parse_config(text, str(tmp_path / "dup.toml")))
    runner, summary = api.play(opened)
    opened.db.close()
    assert summary.finished and summary.committed == 4
    wait_none_left(db)
    games = games_of(db)
    by_stream: dict[str, list] = {}
    for key, g in sorted(games.items()):
        by_stream.setdefault(g["stream"], []).append(g)
    assert len(by_stream) == 2
    for stream, (g1, g2) in by_stream.items():
        assert g1["players"] == g2["players"][::-1]  # seats swapped
        assert g1["seed"] == g2["seed"]
        common = min(len(g1["rolls"]), len(g2["rolls"]))
        assert common >= 3 and g1["rolls"][:common] == g2["rolls"][:common]  # roll i identical in both
    from arbiter.records.store import load_records

    assert all(verify(r) == [] for r in load_records(db))

    report = build_report(db)
    assert report["tournament"]["games_played"] == 4 and report["tournament"]["finished"]
    (row,) = report["sprt"]
    assert sum(row["pentanomial"]) == 2 and sum(row["trinomial"]) == 4
    text_report = render_text(report)
    for words in ("Standings", "Crosstable", "Ratings", "first-move advantage", "GSPRT", "end reason"):
        assert words in text_report
    data = json.loads(to_json(report))
    assert {r["engine"] for r in data["standings"]} == {"a", "b"}
    files = {p.name for p in write_csv(report, tmp_path / "csv")}
    assert {"standings.csv", "crosstable.csv", "ratings.csv", "los.csv", "terminations.csv", "sprt.csv"} <= files
    png = plot(report, tmp_path / "ratings.png")
    assert png.read_bytes()[:4] == b"\x89PNG"
    svg = plot(report, tmp_path / "ratings.svg")
    assert b"<svg" in svg.read_bytes()[:500]
    from tournaments.cli import main

    assert main(["report", str(db), "--quiet", "--json", str(tmp_path / "r.json"), "--csv", str(tmp_path / "c"),
                 "--plot", str(tmp_path / "p.png")]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["tournament"]["name"] == "dup"
    assert (tmp_path / "c" / "standings.csv").exists() and (tmp_path / "p.png").exists()
    # Starting again over the same database is refused (resume continues a tournament).
    (tmp_path / "dup.toml").write_text(text)
    assert main(["run", str(tmp_path / "dup.toml"), "--quiet"]) == 2


# --- a tiny dice game for 1, 2 (cooperative) and 3 seats ----------------------------------------

class RaceState(State):
    """Each seat in turn: a die roll, then 'take' (add the die) or 'safe' (add 3). Two turns each."""

    def __init__(self, game: "Race"):
        self.game = game
        self.totals = [0] * game.num_seats
        self.step = 0  # even: roll; odd: decide
        self.die_value = 0

    def _seat(self) -> int:
        return (self.step // 2) % self.game.num_seats

    def current_player(self) -> int:
        if self.step >= 2 * 2 * self.game.num_seats:
            return TERMINAL
        return CHANCE if self.step % 2 == 0 else self._seat()

    def legal_moves(self, seat=None):
        return ["take", "safe"]

    def apply(self, move: str) -> None:
        if move not in ("take", "safe"):
            raise IllegalMove(move)
        self.totals[self._seat()] += self.die_value if move == "take" else 3
        self.step += 1

    def chance_outcomes(self):
        return [1, 2, 3, 4, 5, 6]

    def apply_chance(self, outcome) -> None:
        self.die_value = int(outcome)
        self.step += 1

    def returns(self):
        utility = self.game.game_type.utility
        if utility is Utility.SOLO:
            return [float(self.totals[0] - 7)]
        if utility is Utility.IDENTICAL:
            return [float(sum(self.totals))] * self.game.num_seats
        best = max(self.totals)
        return [1.0 if t == best else -1.0 for t in self.totals]

    def to_text(self) -> str:
        return json.dumps([self.totals, self.step, self.die_value])

    def clone(self):
        c = RaceState(self.game)
        c.totals, c.step, c.die_value = list(self.totals), self.step, self.die_value
        return c


class Race(Game):
    game_type: ClassVar[GameType] = GameType(name="race3", min_seats=3, max_seats=3, utility=Utility.GENERAL_SUM,
                                             chance=True, simultaneous=False, hidden_information=False)
    seat_roles: tuple[str, ...] = ("s0", "s1", "s2")

    def new_initial_state(self):
        return RaceState(self)

    def from_text(self, text: str):
        s = RaceState(self)
        s.totals, s.step, s.die_value = json.loads(text)
        return s

    def forfeit_returns(self, seat: int) -> list[float]:
        if self.game_type.utility is Utility.IDENTICAL:
            return [-1.0] * self.num_seats
        return super().forfeit_returns(seat)


class RaceCoop(Race):
    game_type: ClassVar[GameType] = GameType(name="race_coop", min_seats=2, max_seats=2, utility=Utility.IDENTICAL,
                                             chance=True, simultaneous=False, hidden_information=False)
    seat_roles: tuple[str, ...] = ("s0", "s1")


class RaceSolo(Race):
    game_type: ClassVar[GameType] = GameType(name="race_solo", min_seats=1, max_seats=1, utility=Utility.SOLO,
                                             chance=True, simultaneous=False, hidden_information=False)
    seat_roles: tuple[str, ...] = ("solo",)


@pytest.fixture
def race_games(monkeypatch):
    for cls in (Race, RaceCoop, RaceSolo):
        monkeypatch.setitem(arbiter_games.GAME_CLASSES, cls.name, f"{__name__}:{cls.__name__}")


def small(game: str, db: Path, extra: str, engines: int) -> str:
    text = f'name = "{game}"\ngame = "{game}"\nseed = 5\nconcurrency = 2\noutput = "{db}"\n{extra}\n'
    for i in range(engines):
        text += (f'[[engines]]\nname = "e{i}"\n'
                 f'command = "{{python}} -m sample_engines.random_engine --seed {i}"\n')
    return text


@pytest.mark.parametrize("game, extra, engines, expected_games", [
    ("race3", "games = 3", 3, 3),
    ("race_coop", "games = 2\nself_pairs = true\nduplicate_dice = true", 2, 6),
    ("race_solo", "games = 4", 2, 8),
])
def test_multiseat_cooperative_and_solo_tournaments(tmp_path, race_games, game, extra, engines, expected_games):
    import io

    from rich.console import Console

    from tournaments.cli import Display

    db = tmp_path / f"{game}.sqlite"
    opened = api.start(parse_config(small(game, db, extra, engines), "t.toml"))
    screen = io.StringIO()
    display = Display(Console(file=screen, force_terminal=True, width=120), "live")
    with display:  # the live progress display, rendered into a string
        _, summary = api.play(opened, on_progress=display.progress, on_game=display.game)
    opened.db.close()
    assert "games/s" in screen.getvalue() and "ETA" in screen.getvalue() and "e0" in screen.getvalue()
    assert summary.finished and summary.committed == expected_games
    wait_none_left(db)
    report = build_report(db)
    text = render_text(report)
    assert "end reason" in text
    games = games_of(db)
    assert all(g["reason"] == "normal" for g in games.values())
    if game == "race3":
        assert "OpenSkill" in text and len(report["seats"]) == 3
        seats = {tuple(g["players"]) for g in games.values()}
        assert len(seats) == 3 and all(sorted(s) == ["e0", "e1", "e2"] for s in seats)
    elif game == "race_coop":
        assert {t["team"] for t in report["teams"]} == {"e0 + e0", "e0 + e1", "e1 + e1"}
        streams = {}
        for (mid, num), g in games.items():  # the common suite: game 1 and 2 of every team share dice
            streams.setdefault(g["stream"], set()).add(json.dumps(g["rolls"]))
        assert len(streams) == 1 and all(len(v) == 1 for v in streams.values())
    else:
        assert [r["games"] for r in report["standings"]] == [4, 4]
        (pair,) = report["paired"]
        assert pair["seeds"] == 4
        by_engine: dict[str, list] = {}
        for g in games.values():
            by_engine.setdefault(g["players"][0], []).append((g["stream"], json.dumps(g["rolls"][:1])))
        assert sorted(by_engine["e0"]) == sorted(by_engine["e1"])  # same seeds, same first roll
    assert plot(report, tmp_path / "p.svg").exists()


def test_the_live_display_redraws_at_its_refresh_rate_not_per_game(tmp_path, monkeypatch):
    """A redraw reads every committed result: drawn per game, a long fast event spends its
    director's CPU on the screen. At most one redraw per ``LIVE_REFRESH`` (plus the last state on
    exit, so the screen ends showing every game)."""
    import io

    from rich.console import Console

    from tournaments import cli as tcli

    db = tmp_path / "live.sqlite"
    text = small("einstein", db, 'format = "round_robin"\nmatch = "games=40"', 2)
    opened = api.start(parse_config(text, "t.toml"))
    drawn = []
    render = tcli.Display.render
    monkeypatch.setattr(tcli.Display, "render", lambda self, runner: drawn.append(runner.played) or render(self, runner))
    screen = io.StringIO()
    display = tcli.Display(Console(file=screen, force_terminal=True, width=120), "live")
    started = time.monotonic()
    with display:
        _, summary = api.play(opened, on_progress=display.progress, on_game=display.game)
    took = time.monotonic() - started
    opened.db.close()
    assert summary.committed == 40
    shown = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", screen.getvalue())  # without the terminal's colours
    assert drawn[-1] == 40 and "games 40 done" in shown
    assert len(drawn) <= 2 + took / tcli.LIVE_REFRESH, (len(drawn), took)
    assert len(drawn) < 40, drawn
