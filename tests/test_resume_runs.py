"""``arbiter coop --resume`` and ``arbiter solo --resume``: a series or run stopped with Ctrl-C
continues from its results database and ends with exactly the games an uninterrupted run plays
(same seats, dice and results), on the master seed it started with, checked or stored.

Real referee processes, real engine subprocesses, a real SIGINT, real SQLite files."""
from __future__ import annotations

import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from arbiter.records.store import count_records, load_records
from arbiter.records.replay import verify

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
RANDOM = f"{PY} -m sample_engines.random_engine"
STALINGRAD = f"{PY} -m sample_engines.stalingrad_random"


def arbiter(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "arbiter.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, **kw)


def games_in(db: Path) -> int:
    """Games committed so far (0 while the database is not made yet)."""
    try:
        return count_records(db) if db.exists() else 0
    except (OSError, ValueError, sqlite3.Error):
        return 0


def interrupted(*args: str, after: int, sig: int = signal.SIGINT, meanwhile=None) -> subprocess.CompletedProcess:
    """Run the command; Ctrl-C (SIGINT) it, or send ``sig``, once ``after`` games are in its
    database (calling ``meanwhile()`` first, while it runs)."""
    db = Path(args[args.index("--db") + 1])
    proc = subprocess.Popen([PY, "-m", "arbiter.cli", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while games_in(db) < after and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    if meanwhile is not None:
        meanwhile()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def seed_file(tmp_path: Path, text: str = "5eed" * 8, name: str = "seed.hex") -> Path:
    path = tmp_path / name
    path.write_text(text)
    path.chmod(0o600)
    return path


def played(db: Path) -> dict:
    """What must not depend on an interruption: per (player, game number) the seats, dice, result."""
    return {(r.players[0], r.game_number): (r.players, r.rolls, r.returns, r.reason, r.final_position)
            for r in load_records(db)}


def status(db: Path) -> list[str | None]:
    conn = sqlite3.connect(db)
    try:
        return [s for (s,) in conn.execute("SELECT status FROM matches ORDER BY started_at, rowid")]
    finally:
        conn.close()


def test_an_interrupted_coop_series_resumes_to_the_games_of_an_uninterrupted_one(tmp_path):
    seed = seed_file(tmp_path)
    common = ("coop", "--game", "catalonia", "--engine", RANDOM, "--games", "80", "--tc", "10",
              "--seed-file", str(seed), "--quiet")
    whole = arbiter(*common, "--db", str(tmp_path / "whole.sqlite"))
    assert whole.returncode == 0, whole.stdout + whole.stderr

    db = tmp_path / "cut.sqlite"
    cut = interrupted(*common, "--db", str(db), after=3)
    assert cut.returncode == 130, cut.stdout + cut.stderr
    first = games_in(db)
    assert 3 <= first < 80 and status(db) == ["interrupted"]
    assert "arbiter coop --resume " in cut.stderr and f"--db {db}" in cut.stderr.replace("\n", "")

    # The operator's seed is not stored: resuming needs it again, and a wrong one is refused.
    missing = arbiter("coop", "--resume", "--db", str(db))
    assert missing.returncode == 2 and "give the same one" in missing.stderr, missing.stderr
    wrong = arbiter("coop", "--resume", "--db", str(db), "--seed-file", str(seed_file(tmp_path, "0bad", "other.hex")))
    assert wrong.returncode == 2 and "is not the master seed this run was started with" in wrong.stderr, wrong.stderr
    assert games_in(db) == first  # nothing played by the refused attempts

    resumed = arbiter("coop", "--resume", "--db", str(db), "--seed-file", str(seed), "--quiet")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"(resumed after {first} game(s))" in resumed.stdout.replace("\n", "")
    assert played(db) == played(tmp_path / "whole.sqlite")
    assert all(verify(r) == [] for r in load_records(db)) and status(db) == ["finished"]

    again = arbiter("coop", "--resume", "--db", str(db), "--seed-file", str(seed))
    assert again.returncode == 2 and "no unfinished coop series" in again.stderr


def test_a_solo_run_resumes_every_suite_on_a_stored_master_seed(tmp_path):
    """No seed given: the referee draws the master seed and keeps it with the run, so the suites
    of engines not reached before Ctrl-C still get the dice of the first (the pairing holds)."""
    db = tmp_path / "r.sqlite"
    cut = interrupted("solo", "--game", "stalingrad", "--engine", STALINGRAD, "--engine", STALINGRAD + " --seed 9",
                      "--seeds", "40", "--tc", "10", "--db", str(db), "--quiet", after=2)
    assert cut.returncode == 130, cut.stdout + cut.stderr
    first = games_in(db)
    assert first < 80 and status(db)[0] == "interrupted" and status(db)[1] != "finished"
    assert "[normal" in cut.stdout  # the quiet lines keep their bracketed reason (rich markup off)

    seeded = arbiter("solo", "--resume", "--db", str(db), "--seed", "00ff")
    assert seeded.returncode == 2 and "drawn by the referee and is stored" in seeded.stderr
    match = arbiter("match", "--resume", "--db", str(db))  # a solo run is not a match
    assert match.returncode == 2 and "no unfinished match" in match.stderr, match.stderr
    assert "none was started by `arbiter match`" in match.stderr, match.stderr

    resumed = arbiter("solo", "--resume", "--db", str(db))  # the bars, drawn once at the end (not a terminal)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "master seed from the results database" in resumed.stdout
    records = load_records(db)
    assert len(records) == 80 and status(db) == ["finished", "finished"]
    for name in {r.players[0] for r in records}:  # the wins of the whole suite, as the bar's 40/40 (was: this run's)
        won = sum(r.returns[0] > 0 for r in records if r.players[0] == name)
        assert re.search(rf"{re.escape(name)} .* 40/40 won {won}/40", resumed.stdout), resumed.stdout
    by_engine: dict[str, dict[int, list]] = {}
    for r in records:
        by_engine.setdefault(r.players[0], {})[r.game_number] = r.dice_commitment
    a, b = by_engine.values()
    assert sorted(a) == sorted(b) == list(range(40)) and a == b  # every seed on the same dice for both
    assert "paired comparison on common seeds" in resumed.stdout

    by_id = arbiter("solo", "--resume", records[-1].match_id, "--db", str(db))
    assert by_id.returncode == 2 and "is finished; nothing to resume" in by_id.stderr
    latest = arbiter("solo", "--resume", "--db", str(db))  # the run, all its suites: not one engine's
    assert latest.returncode == 2 and "is finished (80 games;" in " ".join(latest.stderr.split()), latest.stderr


def test_a_coop_series_killed_with_kill_9_resumes_with_a_whole_export(tmp_path):
    """kill -9 mid-series (the export's last line may be torn, the series not marked at all): the
    resumed series repairs the JSON Lines export, keeps the drawn master seed, and ends with every
    game once, in both the database and the export."""
    db = tmp_path / "r.sqlite"
    refused = []

    def resume_while_it_runs():  # the series is still being played: a resume would play its games twice
        refused.append(arbiter("coop", "--resume", "--db", str(db), "--quiet"))

    killed = interrupted("coop", "--game", "catalonia", "--engine", RANDOM, "--games", "300", "--tc", "10",
                         "--db", str(db), "--quiet", after=3, sig=signal.SIGKILL, meanwhile=resume_while_it_runs)
    assert killed.returncode == -signal.SIGKILL
    assert refused[0].returncode == 2 and "is being played by another process right now" in refused[0].stderr, \
        refused[0].stdout + refused[0].stderr
    with open(tmp_path / "r.jsonl", "ab") as export:  # as if killed in the middle of an append
        export.write(b'{"game_id": "torn')
    resumed = arbiter("coop", "--resume", "--db", str(db), "--quiet")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "repaired: a torn last line cut" in resumed.stdout and "master seed from the results database" in resumed.stdout
    for path in (db, tmp_path / "r.jsonl"):
        assert sorted(r.game_number for r in load_records(path)) == list(range(1, 301))
        checked = arbiter("verify", str(path))
        assert checked.returncode == 0 and checked.stderr == "", checked.stdout + checked.stderr


def test_a_match_resumed_with_another_master_seed_is_refused(tmp_path):
    """Before: `arbiter match --resume` took any seed it was given and played the rest of a seeded
    match on other dice than the uninterrupted match would have (coop and solo checked it)."""
    db = tmp_path / "m.sqlite"
    cut = interrupted("match", "--game", "einstein", "--engine", f"{RANDOM} --seed 1", "--engine",
                      f"{RANDOM} --seed 2", "--tc", "60", "--format", "games=400", "--seed-file",
                      str(seed_file(tmp_path)), "--db", str(db), "--quiet", after=3, sig=signal.SIGKILL)
    assert cut.returncode == -signal.SIGKILL
    before = games_in(db)
    wrong = arbiter("match", "--resume", "--db", str(db), "--quiet", "--seed-file",
                    str(seed_file(tmp_path, "0bad" * 8, "other.hex")))
    assert wrong.returncode == 2 and "Traceback" not in wrong.stderr, wrong.stderr
    assert "the seed from" in wrong.stderr and "is not the master seed this match was started with" in wrong.stderr
    assert games_in(db) == before and status(db) == [None]  # nothing played, nothing marked
    right = arbiter("match", "--resume", "--db", str(db), "--quiet", "--seed-file", str(seed_file(tmp_path)))
    assert right.returncode == 0, right.stderr
    assert games_in(db) == 400 and status(db) == ["finished"]
    assert all(verify(r) == [] for r in load_records(db))


def test_a_setting_given_again_with_resume_is_refused_not_silently_replaced(tmp_path):
    """Before: `arbiter match --resume --tc 10 --format games=5` (coop and solo alike) played on
    with the stored time control and format, exit 0, saying nothing of the flags it dropped."""
    db = tmp_path / "m.sqlite"
    cut = interrupted("match", "--game", "einstein", "--engine", RANDOM, "--engine", RANDOM, "--tc", "60",
                      "--format", "games=400", "--db", str(db), "--quiet", after=3)
    assert cut.returncode == 130, cut.stderr
    before = games_in(db)
    refused = arbiter("match", "--resume", "--db", str(db), "--quiet", "--tc", "10", "--format", "games=5")
    assert refused.returncode == 2 and refused.stderr.startswith("error: --tc, --format: a resumed match keeps the "
                                                                 "settings it was started with"), refused.stderr
    seeded = arbiter("match", "--resume", "--db", str(db), "--quiet", "--seed-file", str(seed_file(tmp_path)))
    assert seeded.returncode == 2 and "started without a master seed" in seeded.stderr, seeded.stderr  # was taken
    assert games_in(db) == before and status(db) == ["interrupted"]  # nothing played, nothing marked
    coop_db = tmp_path / "c.sqlite"
    cut = interrupted("coop", "--game", "catalonia", "--engine", RANDOM, "--games", "300", "--tc", "60",
                      "--db", str(coop_db), "--quiet", after=2)
    assert cut.returncode == 130, cut.stderr
    refused = arbiter("coop", "--resume", "--db", str(coop_db), "--quiet", "--game", "catalonia", "--games", "5")
    assert refused.returncode == 2 and refused.stderr.startswith("error: --game, --games: a resumed coop series "
                                                                 "keeps the settings"), refused.stderr
    resumed = arbiter("match", "--resume", "--db", str(db), "--quiet", "--sandbox", "auto")  # hosting flags: as given
    assert resumed.returncode == 0, resumed.stderr
    assert games_in(db) == 400 and status(db) == ["finished"]
