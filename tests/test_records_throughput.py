"""Results in throughput mode: `arbiter match` commits the games of a short window together.

* kill -9 of `arbiter match` at random moments (seeded, the seed printed), once on purpose between
  a batch's SQLite commit and its export lines and once half-way through writing them, then
  ``--resume``, ends with exactly the games of an uninterrupted run of the same match, each
  committed once and exported once; the match's points count exactly the committed games;
* the export is repaired from its tail (a torn line cut, committed games appended), and the
  aggregate display prints no line per game.
"""
from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from arbiter.clock import parse_time_control
from arbiter.formats.match import Match, MatchFormat
from arbiter.games import load_game
from arbiter.hosting import EngineConfig
from arbiter.records.store import ResultsStore
from tests.test_tournament_run import TORN_WRITER

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
RANDOM = "{python} -m sample_engines.random_engine"

ENGINE = ROOT / "tests" / "engines" / "deterministic.py"

KILL_IN_EXPORT = """
# Run `arbiter match`, but SIGKILL the process when the committer opens the export for its
# N-th batch: after that batch's SQLite commit, before its lines are written ("commit") or
# half-way through writing them ("torn").
import os, signal, sys
from arbiter.records import store

mode, after = sys.argv[1], int(sys.argv[2])
opened = 0

""" + TORN_WRITER + """
original_open = store.open_private

def opener(path):
    global opened
    f = original_open(path)
    if str(path).endswith(".jsonl"):
        opened += 1
        if opened == after:
            if mode == "commit":
                os.kill(os.getpid(), signal.SIGKILL)
            return Torn(f)
    return f

store.open_private = opener
from arbiter.cli import main
sys.exit(main(sys.argv[3:]))
"""


def games_of(db: Path) -> dict[int, dict]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT game_number, record FROM games").fetchall()
    finally:
        conn.close()
    out = {}
    for num, rec in rows:
        r = json.loads(rec)
        assert num not in out, f"game {num} committed twice"
        out[num] = {"players": r["players"], "returns": r["returns"], "reason": r["reason"],
                    "rolls": r["rolls"], "moves": [(e["seat"], e["move"]) for e in r["events"]]}
    return out


def status_of(db: Path) -> str | None:
    conn = sqlite3.connect(db)
    try:
        row = conn.execute("SELECT status FROM matches").fetchone()
    finally:
        conn.close()
    return row[0] if row else None


def test_kill_9_in_throughput_mode_then_resume_equals_an_uninterrupted_run(tmp_path):
    engine = ENGINE
    results = tmp_path / "results"
    db = results / "killed.sqlite"
    hook = tmp_path / "kill_in_export.py"
    hook.write_text(KILL_IN_EXPORT)
    start = ["match", "--game", "einstein", "--engine", f"{{python}} {engine} 1", "--engine",
             f"{{python}} {engine} 2", "--name", "d1", "--name", "d2", "--format", "bo101", "--tc", "60",
             "--seed", "ab", "--quiet", "--db", str(db)]
    resume = ["match", "--resume", "--db", str(db), "--seed", "ab", "--quiet"]
    seed = int(os.environ.get("KILL_TEST_SEED", random.randrange(2**32)))
    print(f"kill test seed: {seed} (rerun with KILL_TEST_SEED={seed})")
    rng = random.Random(seed)
    windows = [("commit", 2), ("torn", 2)]
    log = [f"seed {seed}"]
    for attempt in range(12):
        args = start if attempt == 0 else resume
        argv = [PY, str(hook), *windows[attempt], *args] if attempt < len(windows) else \
            [PY, "-m", "arbiter.cli", *args]
        argv = [str(a) for a in argv]
        before = len(games_of(db)) if db.exists() else 0
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        delay = None if attempt < len(windows) else rng.uniform(2.0, 4.5) if attempt < 7 else None
        try:
            out, _ = proc.communicate(timeout=delay or 180)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.communicate()
            log.append(f"killed after {delay:.2f}s with {len(games_of(db))} games")
            if db.exists() and status_of(db) == "finished":  # killed on its way out, the match over
                log.append("finished")
                break
            continue
        if attempt < len(windows):
            assert proc.returncode == -signal.SIGKILL, out
            committed = len(games_of(db))
            exported = (results / "killed.jsonl").read_bytes()
            assert committed > before, (committed, before, out)
            lines = exported.split(b"\n")
            if windows[attempt][0] == "commit":
                assert exported.endswith(b"\n") and len(lines) - 1 < committed  # the batch's lines are missing
            else:
                assert not exported.endswith(b"\n") and len(lines) - 1 < committed  # ... and half written
            log.append(f"killed in the export window ({windows[attempt][0]}) with {committed} games")
            continue
        assert proc.returncode == 0, out
        log.append("finished")
        break
    assert log[-1] == "finished", log
    print("kill log:", log)
    got = games_of(db)
    conn = sqlite3.connect(db)
    (match_id, status, points, names), = conn.execute("SELECT match_id, status, points, players FROM matches")
    conn.close()
    assert status == "finished"
    # The stored points are those of the committed games, each counted once.
    a_points = sum(g["returns"][g["players"].index("d1")] > 0 for g in got.values()) + \
        0.5 * sum(g["returns"][0] == g["returns"][1] for g in got.values())
    assert json.loads(points)[0] == a_points and max(json.loads(points)) == 51
    assert sorted(got) == list(range(1, len(got) + 1))
    # The export holds every committed game exactly once, in commit order (a torn line cut).
    ids = [json.loads(line)["game_id"] for line in (results / "killed.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)) == len(got)

    # The same match (same id, seed and engines) played straight through, in throughput mode too.
    store = ResultsStore(tmp_path / "straight.sqlite", group_window=0.1)
    configs = tuple(EngineConfig(f"{PY} {engine} {i}", name=n)
                    for i, n in zip((1, 2), json.loads(names)))
    match = Match(load_game("einstein"), configs, parse_time_control("60"), MatchFormat.parse("bo101"),
                  store=store, run_dir=tmp_path / "logs", seed=bytes.fromhex("ab"), match_id=match_id,
                  keep_records=False)
    try:
        result = match.play()
    finally:
        store.close()
    expected = games_of(tmp_path / "straight.sqlite")
    assert result.games == len(expected) and result.points == json.loads(points)
    assert sorted(got) == sorted(expected), log
    for key, want in expected.items():
        assert got[key] == want, (key, log)
    checked = subprocess.run([PY, "-m", "arbiter.cli", "verify", str(db)], cwd=ROOT, capture_output=True,
                             text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout


def test_a_long_quiet_match_prints_an_aggregate_not_a_line_per_game(tmp_path):
    proc = subprocess.run([PY, "-m", "arbiter.cli", "match", "--game", "einstein", "--engine", RANDOM,
                           "--engine", RANDOM, "--format", "games=40", "--tc", "10", "--quiet",
                           "--db", str(tmp_path / "r.sqlite")], cwd=ROOT, capture_output=True, text=True,
                          timeout=180, env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "game 1:" not in out and "│ 1 " not in out  # no line, no table row for early games
    assert "the last 5 of 40 games" in out and "games 40 ·" in out and "games/s" in out
    assert "ended: normal 40" in out
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 40


def test_export_repair_reads_the_tail_and_falls_back_to_a_full_scan_on_a_gap(tmp_path):
    """Group commit: games counted through ``on_commit``; then the export mended after damage."""
    db = tmp_path / "r.sqlite"
    seen: list[str] = []
    store = ResultsStore(db, group_window=0.05, on_commit=lambda recs: seen.extend(r.game_id for r in recs))
    configs = tuple(EngineConfig(command=RANDOM.replace("{python}", PY), name=n) for n in "AB")
    counted = []
    match = Match(load_game("einstein"), configs, parse_time_control("60"), MatchFormat.parse("games=6"),
                  store=store, run_dir=tmp_path, seed=b"\x01" * 16,
                  on_game=lambda result, record: counted.append((record.game_id, record.game_id in seen)))
    try:
        records = match.play().records
    finally:
        store.close()
    assert seen == [r.game_id for r in records] and len(seen) == 6
    assert all(committed for _, committed in counted)  # displayed only once committed
    jsonl = db.with_suffix(".jsonl")
    want = jsonl.read_bytes().splitlines(keepends=True)
    assert len(want) == 6
    for damaged, result in ((b"".join(want[:-2]) + want[-2][:30], (True, 2)),  # torn, one more lost
                            (b"".join(want), (False, 0)),
                            (b"".join(want[:2] + want[3:]), (False, 6)),  # a gap: the full scan finds it,
                                                                          # and writes the export anew in order
                            (b"", (False, 6))):
        jsonl.write_bytes(damaged)
        store = ResultsStore(db)
        try:
            assert store.repair_export() == result
        finally:
            store.close()
        got = jsonl.read_bytes().splitlines(keepends=True)
        assert got == want


def test_finished_games_are_committed_before_an_engine_is_started_again(tmp_path):
    """Group commit holds a finished game up to 0.1 s; starting an engine is where an engine still
    running can make the referee abort (SECURITY.md, "Per-user kernel budgets"), so the series
    commits first. An engine restarted every game notes, as it starts, what the database holds:
    every game before it, each time."""
    db, notes = tmp_path / "r.sqlite", tmp_path / "notes"
    counter = f"{{python}} {ROOT / 'tests' / 'engines' / 'count_at_start.py'} {db} {notes}"
    run = subprocess.run([sys.executable, "-m", "arbiter.cli", "match", "--game", "einstein", "--engine", RANDOM,
                          "--engine", counter, "--restart", "--sandbox", "none", "--format", "games=10",
                          "--quiet", "--seed", "ab", "--db", str(db)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert notes.read_text().split() == [str(n) for n in range(10)]  # the pre-flight start plays game 1
