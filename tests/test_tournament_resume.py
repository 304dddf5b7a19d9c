"""Resuming a tournament: what ``resume`` must refuse, detect and repair.

A changed tournament file is refused; a stored pairing that the re-derived schedule contradicts
stops the run; the JSON Lines export is repaired exactly (a torn last line cut, committed games
missing from it appended, nothing else touched). Real games through real workers and engines,
a real SQLite file.
"""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tournaments import api
from tournaments.api import TournamentStateError
from tournaments.config import load_config
from tournaments.db import TournamentDB
from tournaments.runner import Runner, TournamentError

ROOT = Path(__file__).resolve().parent.parent

TOML = """\
name = "resume-test"
game = "einstein"
format = "round_robin"
match = "games=2"
time_control = "60"
seed = "resume-tests"
concurrency = 2
output = "{db}"

[[engines]]
name = "r1"
command = "{{python}} -m sample_engines.random_engine --seed 1"

[[engines]]
name = "r2"
command = "{{python}} -m sample_engines.random_engine --seed 2"

[[engines]]
name = "r3"
command = "{{python}} -m sample_engines.random_engine --seed 3"
"""


def write_toml(tmp_path: Path, text: str = TOML) -> Path:
    db = tmp_path / "t.sqlite"
    path = tmp_path / "t.toml"
    path.write_text(text.format(db=db))
    return path


@pytest.fixture(scope="module")
def played(tmp_path_factory) -> Path:
    """A finished tournament (3 engines, 3 pairings x 2 games); tests work on copies of it."""
    tmp = tmp_path_factory.mktemp("played")
    opened = api.start(load_config(write_toml(tmp)))
    try:
        _, summary = api.play(opened)
    finally:
        opened.db.close()
    assert summary.finished and summary.committed == 6
    return tmp


def copy_of(played: Path, tmp_path: Path) -> Path:
    for name in ("t.sqlite", "t.jsonl"):
        shutil.copy(played / name, tmp_path / name)
    return tmp_path / "t.sqlite"


def committed_lines(db: Path) -> list[bytes]:
    """Each committed record's JSON line, in commit order: what the export must hold."""
    conn = sqlite3.connect(db)
    try:
        return [rec.encode() + b"\n" for (rec,) in conn.execute("SELECT record FROM games ORDER BY rowid")]
    finally:
        conn.close()


def exported_lines(db: Path) -> list[bytes]:
    """The export as the run wrote it (commit order), checked to hold every committed game once."""
    lines = TournamentDB.jsonl_path(db).read_bytes().splitlines(keepends=True)
    assert lines == committed_lines(db)  # every committed game once, in commit order
    return lines


def resume_and_close(target: Path) -> None:
    api.resume(target).db.close()


# --- a changed file is refused -------------------------------------------------------------------

@pytest.mark.parametrize("old, new, what", [
    ('time_control = "60"', 'time_control = "30"', "time_control"),
    ('match = "games=2"', 'match = "games=4"', "match"),
    ('name = "r3"', 'name = "r4"', r"engines \(names or order\)"),
    ('format = "round_robin"', 'format = "double_round_robin"', "format"),
    ('seed = "resume-tests"', 'seed = "another-seed"', "seed"),
    ('seed = "resume-tests"', 'seed = "resume-tests"\nmargin_ms = 5\nduplicate_dice = true',
     "duplicate_dice, margin_ms"),
])
def test_a_changed_tournament_file_is_refused_naming_what_changed(tmp_path, old, new, what):
    """Before: the same list for every change ('the game, format, engines, openings, seed or time
    control changed'), naming keys that had not changed and not margin_ms or duplicate_dice."""
    toml = write_toml(tmp_path)
    api.start(load_config(toml)).db.close()
    resume_and_close(toml)  # unchanged: fine
    toml.write_text(toml.read_text().replace(old, new))
    with pytest.raises(TournamentStateError, match=f"does not describe the tournament stored in .*: {what} changed$"):
        api.resume(toml)
    # The refusal released the database: the unchanged file still resumes.
    toml.write_text(toml.read_text().replace(new, old))
    resume_and_close(toml)


def test_what_may_change_between_runs_is_accepted(tmp_path):
    toml = write_toml(tmp_path)
    api.start(load_config(toml)).db.close()
    toml.write_text(toml.read_text().replace("concurrency = 2", "concurrency = 1")
                    .replace("--seed 3", "--seed 3 "))
    opened = api.resume(toml)
    try:
        assert opened.cfg.concurrency == 1 and opened.seed == "resume-tests"
    finally:
        opened.db.close()


OPTIONS_TOML = TOML.replace(
    'name = "r3"\ncommand = "{{python}} -m sample_engines.random_engine --seed 3"\n',
    'name = "deep"\ncommand = "{{python}} -m sample_engines.einstein_expectimax"\noptions = {{ depth = 3 }}\n'
    'args = {{ movetime = 0.05 }}\nlimits = {{ memory_mb = 1024 }}\n')
assert "deep" in OPTIONS_TOML


@pytest.mark.parametrize("old, new, what", [
    ("depth = 3", "depth = 0", "engine 'deep' options.depth"),
    ("options = {{ depth = 3 }}", "options = {{}}", "engine 'deep' options.depth"),
    ("movetime = 0.05", "movetime = 0.05, seed = 7", "engine 'deep' args.seed"),
    ('seed = "resume-tests"', 'seed = "resume-tests"\nrestart = true',
     "engine 'deep' restart, engine 'r1' restart, engine 'r2' restart"),
    ("depth = 3 }}", "depth = 3 }}\nponder = true", "engine 'deep' ponder"),
])
def test_a_changed_engine_option_is_refused_naming_the_engine_and_key(tmp_path, old, new, what):
    """Before: an engine's options, args, restart and ponder were not in the fingerprint: a file
    edited to depth = 0 resumed silently, one engine name then covering two strengths."""
    toml = write_toml(tmp_path, OPTIONS_TOML)
    api.start(load_config(toml)).db.close()
    resume_and_close(toml)  # unchanged: fine
    text = toml.read_text()
    old, new = old.replace("{{", "{").replace("}}", "}"), new.replace("{{", "{").replace("}}", "}")
    assert old in text
    toml.write_text(text.replace(old, new))
    with pytest.raises(TournamentStateError, match=f"does not describe the tournament stored in .*: {what} changed$"):
        api.resume(toml)
    toml.write_text(text)
    resume_and_close(toml)


def test_an_engines_limits_and_command_may_change_between_runs(tmp_path):
    """Limits (memory, processes, ...) change no honest engine's play: a resume may raise them,
    as it may move the engine's program."""
    toml = write_toml(tmp_path, OPTIONS_TOML)
    api.start(load_config(toml)).db.close()
    toml.write_text(toml.read_text().replace("memory_mb = 1024", "memory_mb = 2048, processes = 64")
                    .replace("-m sample_engines.einstein_expectimax", "-m  sample_engines.einstein_expectimax"))
    opened = api.resume(toml)
    try:
        deep = opened.cfg.engines[2]
        assert deep.limits.memory_mb == 2048 and deep.options == {"depth": 3}
    finally:
        opened.db.close()


def test_an_event_with_engine_options_resumes_whatever_fingerprint_it_stored(tmp_path):
    """Real games (the engine's options accepted at its handshake); the stored fingerprint set to
    what an older version would have stored: the resume re-derives both sides from the stored file's
    text and the file, so an event started before engine settings counted resumes unchanged."""
    toml = write_toml(tmp_path, OPTIONS_TOML)
    opened = api.start(load_config(toml))
    try:
        opened.db.set_meta(fingerprint="older-format")
        _, summary = api.play(opened)
    finally:
        opened.db.close()
    assert summary.finished and summary.committed == 6
    resume_and_close(toml)
    toml.write_text(toml.read_text().replace("depth = 3", "depth = 2"))
    with pytest.raises(TournamentStateError, match="engine 'deep' options.depth changed$"):
        api.resume(toml)


# --- a contradicted pairing is detected ---------------------------------------------------------

def test_a_stored_pairing_that_the_schedule_contradicts_stops_the_run(tmp_path, played):
    db_path = copy_of(played, tmp_path)
    opened = api.resume(db_path)
    try:
        runner = Runner(opened.cfg, opened.db, opened.seed)
        assert runner.load().finished  # as stored: consistent
        pairings = opened.db.pairings()
        assert len(pairings) == 3
        key, (_, _, _, engines) = sorted(pairings.items())[0]
        with opened.db.db:
            opened.db.db.execute("UPDATE tournament_pairings SET engines = ? WHERE pairing = ?",
                                 (json.dumps(engines[::-1]), key))
        with pytest.raises(TournamentError, match=f"the schedule differs .*pairings {key}"):
            Runner(opened.cfg, opened.db, opened.seed).load()
        with opened.db.db:
            opened.db.db.execute("UPDATE tournament_pairings SET round = round + 1 WHERE pairing = ?", (key,))
            opened.db.db.execute("UPDATE tournament_pairings SET engines = ? WHERE pairing = ?",
                                 (json.dumps(engines), key))
        with pytest.raises(TournamentError, match="the schedule differs"):
            Runner(opened.cfg, opened.db, opened.seed).load()
    finally:
        opened.db.close()


# --- the JSON Lines export is repaired exactly ---------------------------------------------------

def test_a_torn_last_line_is_cut_and_its_game_appended_whole(tmp_path, played):
    """A crash in the middle of appending the last game: half its line (game id included) is in
    the file. Repair cuts exactly that half and appends the whole line again."""
    db_path = copy_of(played, tmp_path)
    jsonl = TournamentDB.jsonl_path(db_path)
    want = exported_lines(db_path)
    torn = want[-1][: len(want[-1]) // 2]
    assert b'"game_id"' in torn
    jsonl.write_bytes(b"".join(want[:-1]) + torn)
    db = TournamentDB(db_path)
    try:
        assert db.repair_export() == (True, 1)
        assert jsonl.read_bytes() == b"".join(want)
        assert db.repair_export() == (False, 0)  # repaired: nothing more to do
    finally:
        db.close()
    jsonl.write_bytes(b"".join(want[:-1]) + torn)
    resume_and_close(db_path)  # resume repairs on open
    assert jsonl.read_bytes() == b"".join(want)


def test_a_torn_line_of_a_game_already_exported_is_only_cut(tmp_path, played):
    db_path = copy_of(played, tmp_path)
    jsonl = TournamentDB.jsonl_path(db_path)
    want = exported_lines(db_path)
    jsonl.write_bytes(b"".join(want) + want[2][:40])  # e.g. a duplicate append cut short
    resume_and_close(db_path)
    assert jsonl.read_bytes() == b"".join(want)


def test_committed_games_missing_from_the_export_are_appended(tmp_path, played):
    db_path = copy_of(played, tmp_path)
    jsonl = TournamentDB.jsonl_path(db_path)
    want = exported_lines(db_path)
    jsonl.write_bytes(b"".join(want[:2] + want[3:5]))  # two lines lost
    db = TournamentDB(db_path)
    try:
        assert db.repair_export() == (False, 6)  # game 3 lost before others: written anew, in commit order
        assert db.store.moved_export == jsonl.with_name(jsonl.name + ".before-repair")
    finally:
        db.close()
    assert jsonl.read_bytes() == b"".join(want)
    jsonl.write_bytes(b"".join(want[:4]))  # the last two lost: appended
    db = TournamentDB(db_path)
    try:
        assert db.repair_export() == (False, 2) and db.store.moved_export is None
    finally:
        db.close()
    assert jsonl.read_bytes() == b"".join(want)
    jsonl.unlink()  # the whole export lost
    resume_and_close(db_path)
    assert jsonl.read_bytes() == b"".join(committed_lines(db_path))


# --- what resume refuses to open -----------------------------------------------------------------

def test_resume_refuses_what_is_not_a_tournament(tmp_path):
    with pytest.raises(TournamentStateError, match="no such file"):
        api.resume(tmp_path / "nothing.sqlite")
    plain = tmp_path / "results.sqlite"
    from arbiter.records.store import ResultsStore

    ResultsStore(plain).close()  # an `arbiter match` results file: SQLite, but no tournament in it
    with pytest.raises(TournamentStateError, match="is not a tournament database"):
        api.resume(plain)
    TournamentDB(plain).close()  # the refusal released the lock
    damaged = tmp_path / "event.sqlite"  # named a database, and not one: it was read as TOML ("g.sqlite:1: TOML
    damaged.write_bytes(b"\x1f\x8b\x08\x00 zipped")  # syntax error"), or as text it could not decode
    with pytest.raises(TournamentStateError, match=r"event.sqlite: not a database \(it begins b'\\x1f\\x8b"):
        api.resume(damaged)


def test_resume_of_a_file_whose_output_is_not_a_tournament_changes_nothing(tmp_path):
    """Before: ``resume t.toml`` whose output named an `arbiter match` database added the
    tournament tables to it before refusing, and for a text file it said ``output t.toml: file is
    not a database``, naming the tournament file instead of the output."""
    from arbiter.records.store import ResultsStore

    toml = write_toml(tmp_path)
    db = tmp_path / "t.sqlite"
    ResultsStore(db).close()  # an `arbiter match` results file where the tournament's should be
    before = db.read_bytes()
    with pytest.raises(TournamentStateError, match=f"{toml}: output {db} is not a tournament database"):
        api.resume(toml)
    assert db.read_bytes() == before
    db.unlink()
    db.write_text("notes\n")
    with pytest.raises(TournamentStateError, match=f"output {db} is not a tournament database"):
        api.resume(toml)
    assert db.read_text() == "notes\n"


def test_resume_of_a_file_never_started_starts_it_and_a_held_database_is_refused(tmp_path):
    from tournaments.db import TournamentLocked

    toml = write_toml(tmp_path)
    opened = api.resume(toml)  # killed before its database existed: resume starts it
    try:
        assert opened.db.meta()["seed"] == "resume-tests"
        with pytest.raises(TournamentLocked, match="in use by another tournament process"):
            api.resume(toml)
        with pytest.raises(TournamentLocked):
            api.resume(tmp_path / "t.sqlite")
    finally:
        opened.db.close()
    resume_and_close(tmp_path / "t.sqlite")


def test_a_symbolic_link_to_a_running_tournament_finds_it_locked(tmp_path):
    """Before: ``resume LINK.sqlite`` (a symbolic link to a running tournament's database) took
    LINK.sqlite.lock, played the same games as the running process, killed its engines as 'left
    behind by an earlier run' and wrote a second export, LINK.jsonl."""
    from tournaments.db import TournamentLocked

    toml = write_toml(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    link = tmp_path / "elsewhere" / "link.sqlite"
    opened = api.resume(toml)
    try:
        link.symlink_to(tmp_path / "t.sqlite")
        with pytest.raises(TournamentLocked, match="in use by another tournament process"):
            api.resume(link)
        linked = tmp_path / "linked.toml"
        linked.write_text(toml.read_text().replace(str(tmp_path / "t.sqlite"), str(link)))
        with pytest.raises(TournamentLocked, match="in use by another tournament process"):
            api.resume(linked)
    finally:
        opened.db.close()
    resumed = api.resume(link)
    resumed.db.close()
    assert resumed.db.path == tmp_path / "t.sqlite"
    assert sorted(p.name for p in (tmp_path / "elsewhere").iterdir()) == ["link.sqlite"]


# --- the same through the command line ------------------------------------------------------------

def said(capsys) -> str:
    """What the command printed on stdout and stderr, with rich's line wrapping undone."""
    out, err = capsys.readouterr()
    return " ".join((out + err).split())


def test_the_command_line_checks_runs_refuses_and_reports(tmp_path, capsys):
    from tournaments.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, main

    toml = write_toml(tmp_path)
    assert main(["check", str(toml)]) == EXIT_OK
    out = said(capsys)
    assert f"{toml}: resume-test: einstein" in out and out.count("round ") == 3 and "r1 vs r2" in out
    verdict = out.index(f"{toml}: ok — every engine started and said hello (r1, r2, r3)")
    assert verdict > out.index("r3: random 1"), out  # the verdict once the engines answered, not before
    # Not a terminal: one line per finished game, then the summary and the report.
    assert main(["run", str(toml), "--concurrency", "1"]) == EXIT_OK
    out = said(capsys)
    assert out.count("[") >= 6 and "game 2:" in out and "6 games played in this run (6 in all)" in out
    assert "Standings" in out
    db = tmp_path / "t.sqlite"
    assert main(["report", str(db), "--json", "-"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["tournament"]["games_played"] == 6
    assert main(["report", str(db), "--text", str(tmp_path / "r.txt"), "--quiet"]) == EXIT_OK
    assert "Standings" in (tmp_path / "r.txt").read_text() and "wrote" in said(capsys)
    # Not a tournament database: an error message, not a traceback.
    assert main(["report", str(tmp_path / "none.sqlite")]) == EXIT_USAGE
    assert "none.sqlite: no such file" in said(capsys)
    assert main(["report", str(tmp_path / "[final]" / "none.sqlite")]) == EXIT_USAGE
    assert "[final]/none.sqlite: no such file" in said(capsys)  # printed whole, not read as rich markup
    assert main(["report", str(toml)]) == EXIT_USAGE
    assert "is not a tournament database" in said(capsys)
    from arbiter.records.store import ResultsStore

    ResultsStore(tmp_path / "match.sqlite").close()
    assert main(["report", str(tmp_path / "match.sqlite")]) == EXIT_USAGE
    assert "is not a tournament database (no such table: tournament_meta)" in said(capsys)
    # A contradicted pairing: the run stops with the reason, and nothing is played.
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE tournament_pairings SET round = round + 5")
        conn.execute("DELETE FROM games WHERE game_number = 2")
    conn.close()
    assert main(["resume", str(db), "--quiet"]) == EXIT_FAILED
    assert "tournament failed: the schedule differs" in said(capsys)
    toml.write_text(toml.read_text().replace('time_control = "60"', 'time_control = "30"'))
    assert main(["resume", str(toml), "--quiet"]) == EXIT_USAGE
    assert "does not describe the tournament" in said(capsys)
    (tmp_path / "broken.toml").write_text("game = \n")
    assert main(["check", str(tmp_path / "broken.toml")]) == EXIT_USAGE


def test_resume_says_it_killed_engines_an_earlier_run_left_behind(tmp_path, capsys):
    """Before: the line was never printed (it had ended up after a ``return``); the process was
    killed without a word."""
    import os
    import subprocess
    import sys

    from tournaments.cli import EXIT_OK, main
    from tournaments.runner import db_marker
    from tournaments.worker import DB_ENV

    toml = write_toml(tmp_path)
    api.start(load_config(toml)).db.close()  # killed before its first game, say
    db = tmp_path / "t.sqlite"
    leftover = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                                env={**os.environ, DB_ENV: db_marker(db)})
    try:
        assert main(["resume", str(db), "--quiet", "--no-report"]) == EXIT_OK
        leftover.wait(timeout=10)  # gone (the resume reaped it: no exit status is left to see)
    finally:
        leftover.kill()
    assert "killed 1 engine process(es) left behind by an earlier run" in said(capsys)


def test_resume_that_starts_a_tournament_says_starting(tmp_path, capsys, monkeypatch):
    """Before: ``resume t.toml`` from another folder than the run's (a relative ``output``) said
    'resuming tournament' while it started a new one there, from no games."""
    from tournaments.cli import EXIT_OK, main

    toml = tmp_path / "t.toml"
    toml.write_text(TOML.format(db="runs/t.sqlite").replace('match = "games=2"', 'match = "games=1"'))
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(toml), "--quiet", "--no-report"]) == EXIT_OK
    assert "starting tournament resume-test" in said(capsys)
    assert main(["resume", str(toml), "--quiet", "--no-report"]) == EXIT_OK
    assert "resuming tournament resume-test" in said(capsys)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert main(["resume", str(toml), "--quiet", "--no-report"]) == EXIT_OK
    out = said(capsys)
    assert "starting tournament resume-test" in out and "3 games played in this run (3 in all)" in out
    assert f"there was no database at {tmp_path / 'elsewhere' / 'runs' / 't.sqlite'}" in out


def test_report_from_saved_summaries_equals_the_report_from_every_decision(tmp_path, played):
    """Reports read each game's summary (saved with it) instead of parsing every record; a
    database whose games have none (saved before summaries) gets the same numbers the slow way."""
    from tournaments.report import build_report

    db_path = copy_of(played, tmp_path)
    fast = build_report(db_path)
    conn = sqlite3.connect(db_path)
    with conn:
        (summarised,), = conn.execute("SELECT count(*) FROM game_summaries")
        conn.execute("DELETE FROM game_summaries")
    conn.close()
    assert summarised == 6
    slow = build_report(db_path)
    for a, b in zip(fast["engine_stats"], slow["engine_stats"], strict=True):
        assert a.keys() == b.keys()
        for key in a:  # sums taken per game, then per engine: equal up to rounding
            assert a[key] == (pytest.approx(b[key], rel=1e-12) if isinstance(b[key], float) else b[key]), key
    assert any(row["decisions"] > 0 and row["ms_median"] is not None for row in fast["engine_stats"])
    assert fast["standings"] == slow["standings"]


def test_names_in_brackets_are_printed_whole(tmp_path, capsys):
    """Engine and event names such as "r1 [beta]" reach every table and line as written (rich
    would read "[beta]" as a style and drop it: two engines "Bot [a]" and "Bot [b]" looked alike)."""
    import subprocess
    import sys

    from tournaments.cli import EXIT_OK, main

    text = TOML.replace('"resume-test"', '"final [a] olympiad"').replace('name = "r1"', 'name = "r1 [beta]"') \
        .replace('name = "r2"', 'name = "r2 [v2]"')
    toml = write_toml(tmp_path, text)
    assert main(["check", str(toml)]) == EXIT_OK
    out = said(capsys)
    assert "final [a] olympiad: einstein" in out and "r1 [beta] vs r2 [v2]" in out
    assert main(["run", str(toml)]) == EXIT_OK
    out = said(capsys)
    assert "tournament final [a] olympiad" in out and out.count("r1 [beta] vs") >= 2
    standings = out[out.index("Standings"):]
    assert "r1 [beta]" in standings and "r2 [v2]" in standings
    root = Path(__file__).resolve().parent.parent
    engine = f"{sys.executable} -m sample_engines.random_engine"
    match = subprocess.run([sys.executable, "-m", "arbiter.cli", "match", "--game", "einstein", "--engine", engine,
                            "--engine", engine, "--name", "Bot [a]", "--name", "Bot [b]", "--format", "games=2",
                            "--quiet", "--db", str(tmp_path / "m.sqlite")], cwd=root, capture_output=True, text=True)
    assert match.returncode == 0, match.stdout + match.stderr
    summary = " ".join(match.stdout.split())
    assert "Bot [a] vs Bot [b]" in summary and summary.count("Bot [a]") >= 4


def test_an_export_without_its_database_is_not_discarded_by_a_start(tmp_path, played):
    """Before: with the database gone (deleted, or moved without its export), `run` and `resume FILE`
    started the tournament afresh and silently replaced the `.jsonl` beside it, the only copy of
    the games of the earlier run."""
    toml = write_toml(tmp_path)
    export = tmp_path / "t.jsonl"
    shutil.copy(played / "t.jsonl", export)
    before = export.read_bytes()
    for command in ("run", "resume"):
        proc = subprocess.run([sys.executable, "-m", "tournaments", command, str(toml), "-q", "--no-report"],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
        out = " ".join((proc.stdout + proc.stderr).split())
        assert proc.returncode == 2 and "Traceback" not in out, out
        assert f"{export} holds 6 game(s) of an earlier run" in out and "move it away" in out, out
        assert export.read_bytes() == before and not (tmp_path / "t.sqlite").exists()
    proc = subprocess.run([sys.executable, "-m", "tournaments", "run", str(toml), "-q", "--no-report", "--overwrite"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(exported_lines(tmp_path / "t.sqlite")) == 6


def test_an_export_missing_early_games_is_written_anew_in_commit_order(tmp_path, played):
    """Before: an export that lost games committed before others it holds (deleted or cut while the
    run was appending to it) got them appended at its end, so `arbiter verify` of the export called
    the chains reordered. Now it is written anew in commit order, the old file kept beside it."""
    db = copy_of(played, tmp_path)
    export = TournamentDB.jsonl_path(db)
    old = export.read_bytes().splitlines(keepends=True)[2:]  # the first two games' lines lost
    export.write_bytes(b"".join(old))
    write_toml(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "tournaments", "resume", str(db), "-q", "--no-report"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 0 and "0 games played in this run" in out, out
    aside = export.with_name(export.name + ".before-repair")
    assert f"written anew in commit order, the old one kept as {aside}" in out, out
    assert len(exported_lines(db)) == 6 and aside.read_bytes() == b"".join(old)
    check = subprocess.run([sys.executable, "-m", "arbiter.cli", "verify", str(export)], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0 and "0 tamper problem(s)" in check.stdout, check.stdout + check.stderr


def test_an_interruption_between_a_commit_and_its_counting_reports_every_saved_game(tmp_path):
    """Before: Ctrl-C (or SIGTERM) arriving just after a batch was committed, before it was counted,
    made `interrupted: N games saved` say fewer games than the database held."""
    opened = api.start(load_config(write_toml(tmp_path)))

    def ctrl_c(runner, spec, game):  # called for each game of a batch once the batch is committed
        raise KeyboardInterrupt

    try:
        summary = Runner(opened.cfg, opened.db, opened.seed, on_game=ctrl_c).run()
    finally:
        opened.db.close()
    conn = sqlite3.connect(tmp_path / "t.sqlite")
    try:
        (saved,), = conn.execute("SELECT count(*) FROM games")
    finally:
        conn.close()
    assert summary.interrupted and not summary.finished
    assert saved >= 1 and summary.played_total == saved


class _CommitThenCtrlC:
    """The store's SQLite connection, but the first commit is followed by a KeyboardInterrupt:
    Ctrl-C arriving just after a transaction committed, before the store forgot its games."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn, self.armed = conn, True

    def commit(self) -> None:
        self.conn.commit()
        if self.armed:
            self.armed = False
            raise KeyboardInterrupt

    def __enter__(self):
        return self.conn.__enter__()

    def __exit__(self, *exc):
        return self.conn.__exit__(*exc)

    def __getattr__(self, name):
        return getattr(self.conn, name)


@pytest.mark.parametrize("where", ["after the commit", "during the export's fsync"])
def test_a_save_stopped_by_ctrl_c_is_mended_at_close_not_repeated(tmp_path, played, monkeypatch, where):
    """Before: a save interrupted between its commit and its bookkeeping, or after the export's
    write, was done again when the store closed: the export got the games' lines twice (a soak
    run's tournament export held 41 lines for 40 games, and its resume accepted them), or the
    games were committed a second time."""
    from arbiter.records.store import ResultsStore, load_records

    records = load_records(played / "t.sqlite")
    db = tmp_path / "r.sqlite"
    store = ResultsStore(db)
    assert store.save_games(records[:2])
    if where == "after the commit":
        store.db = _CommitThenCtrlC(store.db)
    else:
        real_fsync, calls = os.fsync, []

        def fsync(fd: int) -> None:
            real_fsync(fd)
            calls.append(fd)
            if len(calls) == 1:
                raise KeyboardInterrupt

        monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(KeyboardInterrupt):
        store.save_games(records[2:4])
    if isinstance(store.db, _CommitThenCtrlC):
        store.db = store.db.conn
    monkeypatch.undo()
    store.close()
    want = [r.game_id for r in records[:4]]
    conn = sqlite3.connect(db)
    try:
        assert [g for (g,) in conn.execute("SELECT game_id FROM games ORDER BY rowid")] == want
    finally:
        conn.close()
    export = db.with_suffix(".jsonl")
    assert [json.loads(line)["game_id"] for line in export.read_bytes().splitlines()] == want
    assert not list(tmp_path.glob("*.unsaved-*")) and store.error is None
    again = ResultsStore(db)
    try:
        assert again.repair_export() == (False, 0)
    finally:
        again.close()
    for target in (db, export):
        check = subprocess.run([sys.executable, "-m", "arbiter.cli", "verify", str(target)], cwd=ROOT,
                               capture_output=True, text=True, timeout=120)
        assert check.returncode == 0 and "0 tamper problem(s)" in check.stdout, check.stdout + check.stderr


def test_a_match_given_a_tournaments_database_is_refused_and_changes_nothing(tmp_path, played):
    """Before: ``arbiter match --db EVENT.sqlite`` added its games to the tournament's database and
    export (the event's report ignored them; its export and database then held games of no event)."""
    db = copy_of(played, tmp_path)
    before = (db.read_bytes(), db.with_suffix(".jsonl").read_bytes())
    engine = f"{sys.executable} -m sample_engines.random_engine"
    for command in (["match", "--game", "einstein"], ["coop", "--game", "catalonia"]):
        done = subprocess.run([sys.executable, "-m", "arbiter.cli", *command, "--engine", engine, "--engine", engine,
                               "--tc", "10", "--quiet", "--db", str(db)], cwd=ROOT, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "holds a tournament's games (event" in " ".join(done.stderr.split()), done.stderr
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM games").fetchone() == (6,)
    conn.close()
    assert db.with_suffix(".jsonl").read_bytes() == before[1]


# --- an event resumes with the planning rules it was started under ------------------------------

SWISS = """\
name = "swiss-rules"
game = "einstein"
format = "swiss"
rounds = 5
match = "games=1"
time_control = "60"
seed = "s1"
concurrency = 1
output = "{db}"
""" + "".join(f'\n[[engines]]\nname = "r{i}"\ncommand = "{{{{python}}}} -m sample_engines.random_engine --seed {i}"\n'
              for i in range(1, 7))


def test_a_swiss_event_started_before_the_look_ahead_resumes_pairing_as_it_started(tmp_path):
    """Swiss rounds are paired again from the results on every resume. The look-ahead pairs some
    events differently (this one: 6 engines, 5 rounds, whose rounds 4 and 5 needed repeats
    without it), so an event started before it must go on without it, or the rounds it had
    paired would come out otherwise ('the schedule differs') and later ones would not be the
    event it started as. Its database has no planning_rules: it is interrupted in round 3, resumed
    by the command, and finishes with the pairings of the rules it started under; a new event is
    started under the look-ahead."""
    from tournaments.director import PLANNING_RULES, Director, ScheduleSpec

    toml = write_toml(tmp_path, SWISS)
    opened = api.start(load_config(toml))
    assert opened.db.meta()["planning_rules"] == str(PLANNING_RULES) == "3"
    with opened.db.db:  # as an event started before the look-ahead: no planning_rules
        opened.db.db.execute("DELETE FROM tournament_meta WHERE key = 'planning_rules'")

    def stop_in_round_3(runner, spec, game):
        if runner.played >= 7:
            raise KeyboardInterrupt

    try:
        _, summary = api.play(opened, on_game=stop_in_round_3)
    finally:
        opened.db.close()
    assert summary.interrupted and not summary.finished
    resumed = subprocess.run([sys.executable, "-m", "tournaments", "resume", str(toml)], cwd=ROOT,
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    db = TournamentDB(tmp_path / "t.sqlite")
    try:
        cfg, meta = api.config_from_db(db, check_paths=False)
        results = db.results(cfg.tid, [e.name for e in cfg.engines])
        stored = set(db.pairings())
        assert "planning_rules" not in meta
    finally:
        db.close()
    assert len(results) == 15
    plans = {rules: Director(ScheduleSpec.from_config(cfg, meta["seed"], rules)).plan(results) for rules in (1, 2)}
    assert plans[1].finished and stored == {st.pairing.key for st in plans[1].pairings}
    assert stored != {st.pairing.key for st in plans[2].pairings}  # the look-ahead would have paired it otherwise
    assert plans[1].notes == [f"round {r}: the repeat rule had to be relaxed to pair every engine" for r in (4, 5)]
    from tournaments.report import build_report

    report = build_report(tmp_path / "t.sqlite")  # the report plans it again: under the same rules
    assert report["tournament"]["finished"] and len(report["matches"]) == 15
