"""``arbiter export`` / ``arbiter import``: text and CSV exports of real games, rebuilt into a new
database by replaying them through the rules, and refused when tampered with.

The games are played by real engine subprocesses (``Match``, a tournament for the three-seat
game) into a real SQLite file; export, import and verify run as the user runs them (the CLI in a
subprocess).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from arbiter.clock import parse_time_control
from arbiter.formats.match import Match, MatchFormat
from arbiter.games import load_game
from arbiter.hosting import EngineConfig
from arbiter.records.replay import replay
from arbiter.records.signing import keygen
from arbiter.records.store import ResultsStore, load_records
from arbiter.records.textexport import content_bytes, read_games, to_text

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
RANDOM = f"{PY} -m sample_engines.random_engine"
MISBEHAVE = f"{PY} {ROOT / 'tests' / 'engines' / 'misbehave.py'}"


def arbiter(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "arbiter.cli", *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "400", "PATH": "/usr/bin:/bin"})


@pytest.fixture(scope="module")
def results_db(tmp_path_factory) -> Path:
    """EinStein with dice set-ups and with the hidden simultaneous set-up, Smess, and two
    forfeits (a crash after some moves, an illegal move)."""
    tmp = tmp_path_factory.mktemp("export")
    db = tmp / "results.sqlite"
    store = ResultsStore(db)
    plays = [("einstein-dice", "einstein", {"setup": "random"}, RANDOM + " --seed 2", "games=2"),
             ("einstein-chosen", "einstein", {}, RANDOM + " --seed 3", "games=1"),
             ("smess", "smess", {}, RANDOM + " --seed 4", "games=2"),
             ("crash", "einstein", {"setup": "random"}, MISBEHAVE + " crash --after 2", "games=1"),
             ("illegal", "einstein", {}, MISBEHAVE + " illegal --after 1", "games=1")]
    try:
        for match_id, game, options, cmd_a, fmt in plays:
            configs = (EngineConfig(cmd_a, name="A", cwd=str(ROOT)),
                       EngineConfig(RANDOM + " --seed 1", name="B", cwd=str(ROOT)))
            Match(load_game(game, **options), configs, parse_time_control("60"), MatchFormat.parse(fmt),
                  store=store, run_dir=tmp, seed=b"export-tests", match_id=match_id).play()
    finally:
        store.close()
    reasons = {r.match_id: str(r.reason) for r in load_records(db)}
    assert reasons["crash"] == "crash" and reasons["illegal"] == "illegal_move" and reasons["smess"] == "normal"
    return db


def exported(db: Path, tmp_path: Path, fmt: str = "text", *extra: str) -> Path:
    out = tmp_path / f"games.{'txt' if fmt == 'text' else 'csv'}"
    run = arbiter("export", db, "--format", fmt, "-o", out, *extra)
    assert run.returncode == 0, run.stdout + run.stderr
    return out


def bare(record) -> dict:
    """What an export keeps of a record: everything but timings, engine info and chain/signature."""
    events = [(e.ply, e.seat, e.kind, e.move, e.roll, e.note) for e in record.events]
    keep = ("game_id", "match_id", "game_number", "game", "options", "players", "seat_roles", "time_control",
            "margin_ms", "returns", "reason", "detail", "forfeit_seat", "final_position", "dice_stream",
            "dice_commitment", "dice_seed")
    return {k: getattr(record, k) for k in keep} | {"events": events, "rolls": [(r.index, r.outcomes, r.value) for r in record.rolls]}


@pytest.mark.parametrize("fmt", ["text", "csv"])
def test_export_import_verify_roundtrip(results_db, tmp_path, fmt):
    path = exported(results_db, tmp_path, fmt)
    new = tmp_path / "new.sqlite"
    run = arbiter("import", path, "--db", new)
    assert run.returncode == 0, run.stdout + run.stderr
    originals = {r.game_id: r for r in load_records(results_db)}
    assert f"{len(originals)} game(s) rebuilt" in run.stdout
    check = arbiter("verify", new)
    assert check.returncode == 0, check.stdout
    assert check.stdout.startswith(f"{len(originals)} of {len(originals)} records consistent"), check.stdout  # piped: no blank line first
    imported = {r.game_id: r for r in load_records(new)}
    assert imported.keys() == originals.keys()
    for gid, original in originals.items():
        assert bare(imported[gid]) == bare(original), gid
        assert abs(imported[gid].ended_at - original.ended_at) < 1e-5
        assert imported[gid].match_seq >= 1  # chained anew in the new database
    assert any(r.rolls for r in originals.values()) and any(e.seat == -1 for r in originals.values() for e in r.events)
    # The rebuilt database exports to the same text, byte for byte.
    again = exported(new, tmp_path / "again", fmt)
    assert again.read_bytes() == path.read_bytes()


def block_of(text: str, match_id: str) -> tuple[int, list[str]]:
    """(first line number, lines) of the first game block of ``match_id`` in a text export."""
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith("[Event ")]
    for i in starts:
        end = next((j for j in range(i, len(lines)) if not lines[j].strip()), len(lines))
        if f'[Match "{match_id}"]' in lines[i:end]:
            return i + 1, lines[i:end]
    raise AssertionError(match_id)


def tamper(path: Path, match_id: str, change) -> int:
    """Apply ``change(lines of the block)`` to the first game of ``match_id``; the line number
    (1-based) of the line it changed."""
    text = path.read_text()
    first, block = block_of(text, match_id)
    k = change(block)
    lines = text.split("\n")
    lines[first - 1:first - 1 + len(block)] = block
    path.write_text("\n".join(lines))
    return first + k


def refused(path: Path, tmp_path: Path, *patterns: str) -> str:
    new = tmp_path / "tampered.sqlite"
    run = arbiter("import", path, "--db", new)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "REFUSED" in run.stderr and "nothing imported" in run.stderr
    for p in patterns:
        assert re.search(p, run.stderr), (p, run.stderr)
    assert not new.exists()  # nothing written
    return run.stderr


def test_an_illegal_move_is_named_with_its_line(results_db, tmp_path):
    path = exported(results_db, tmp_path)

    def change(block):
        k = next(i for i, line in enumerate(block) if not line.startswith("["))
        words = block[k].split(" ")
        words[0] = "a1a1"  # no piece ever moves onto its own square
        block[k] = " ".join(words)
        return k
    line = tamper(path, "smess", change)
    gid = next(r.game_id for r in load_records(results_db) if r.match_id == "smess")
    refused(path, tmp_path, rf"{re.escape(str(path))}:{line}: game {re.escape(gid)} \(smess game 1\)",
            r"move 1 'a1a1' .* is illegal")


def test_a_changed_result_is_named_with_its_line(results_db, tmp_path):
    path = exported(results_db, tmp_path)

    def change(block):
        k = next(i for i, line in enumerate(block) if line.startswith("[Result "))
        values = json.loads(block[k][len("[Result "):-1])
        block[k] = f"[Result {json.dumps([-v for v in values])}]"
        return k
    line = tamper(path, "einstein-chosen", change)
    refused(path, tmp_path, rf":{line}: game .*einstein-chosen game 1.*the file says the result is .* the moves give")


def test_a_changed_die_is_named_with_its_line(results_db, tmp_path):
    path = exported(results_db, tmp_path)

    def change(block):
        for k, line in enumerate(block):
            m = re.search(r"\((\d)\)", line) if not line.startswith("[") else None
            if m:
                other = "1" if m.group(1) != "1" else "2"
                block[k] = line[:m.start(1)] + other + line[m.end(1):]
                return k
        raise AssertionError("no die")
    line = tamper(path, "einstein-chosen", change)
    refused(path, tmp_path, rf":{line}: game .*einstein-chosen game 1.*: roll \d+ gives \(\d\) by the dice seed, "
                            rf"the file says \(\d\)")


def other_legal_last_move(path: Path, match_id: str) -> tuple[str, str]:
    """The last move of a forfeited game and another move legal in its place: a change the rules
    cannot see (the game did not end by the rules)."""
    record = next(r for r in load_records(path) if r.match_id == match_id)
    decisions = [i for i, e in enumerate(record.events) if e.seat >= 0]
    last = decisions[-1]
    state = None
    for step, state in replay(record.__class__(**{**{f: getattr(record, f) for f in record.__struct_fields__},
                                                    "events": record.events[:last]})):
        pass
    legal = [m for m in state.legal_moves(record.events[last].seat) if m != record.events[last].move]
    assert legal
    return record.events[last].move, legal[0]


def replace_last(block: list[str], old: str, new: str) -> None:
    """Replace the last occurrence of the move ``old`` in a block's move lines."""
    for k in range(len(block) - 1, -1, -1):
        words = block[k].split(" ")
        if not block[k].startswith("[") and old in words:
            j = len(words) - 1 - words[::-1].index(old)
            words[j] = new
            block[k] = " ".join(words)
            return
    raise AssertionError(old)


def test_a_legal_changed_move_is_caught_by_the_digest(results_db, tmp_path):
    path = exported(results_db, tmp_path)
    old, new = other_legal_last_move(results_db, "crash")

    def change(block):
        replace_last(block, old, new)
        return next(i for i, line in enumerate(block) if line.startswith("[Digest "))
    line = tamper(path, "crash", change)
    refused(path, tmp_path, rf":{line}: game .*crash game 1.*edited after export")


def test_csv_tampering_names_the_row_line(results_db, tmp_path):
    path = exported(results_db, tmp_path, "csv")
    lines = path.read_text().split("\n")
    k = next(i for i, line in enumerate(lines) if ",smess,1," in line)
    lines[k] = lines[k].replace(",normal,", ",time,", 1)
    path.write_text("\n".join(lines))
    refused(path, tmp_path, rf"{re.escape(str(path))}:{k + 1}: game .*smess game 1.*says time, but the game ended "
                            rf"normally")


def test_signed_export_rejects_a_consistent_rewrite(results_db, tmp_path):
    secret, public = keygen(tmp_path / "keys")
    other_secret, other_public = keygen(tmp_path / "other")
    path = exported(results_db, tmp_path, "text", "--key", secret)
    ok = arbiter("import", path, "--db", tmp_path / "a.sqlite", "--public-key", public, "--key", secret)
    assert ok.returncode == 0 and "export signatures checked" in ok.stdout, ok.stdout
    assert arbiter("verify", tmp_path / "a.sqlite", "--public-key", public).returncode == 0
    wrong = arbiter("import", path, "--db", tmp_path / "b.sqlite", "--public-key", other_public)
    assert wrong.returncode == 1 and "not with" in wrong.stderr
    # A rewrite that keeps the game legal and recomputes the digest: only the signature tells.
    old, new = other_legal_last_move(results_db, "crash")
    games = read_games(path.read_text(), str(path))
    g = next(g for g in games if g.tags["Match"] == "crash")
    text = path.read_text()
    first, block = block_of(text, "crash")
    replace_last(block, old, new)
    last = max(i for i, s in enumerate(g.steps) if not s.chance)
    steps = [(s.chance, new if i == last else s.text) for i, s in enumerate(g.steps)]
    digest = hashlib.sha256(content_bytes(g.tags, steps)).hexdigest()
    d = next(i for i, line in enumerate(block) if line.startswith("[Digest "))
    block[d] = f'[Digest "{digest}"]'
    lines = text.split("\n")
    lines[first - 1:first - 1 + len(block)] = block
    path.write_text("\n".join(lines))
    unchecked = arbiter("import", path, "--db", tmp_path / "c.sqlite")
    assert unchecked.returncode == 0 and "signatures not checked" in unchecked.stdout
    checked = arbiter("import", path, "--db", tmp_path / "d.sqlite", "--public-key", public)
    signature_line = first + next(i for i, line in enumerate(block) if line.startswith("[Signature "))
    assert checked.returncode == 1 and f":{signature_line}: game " in checked.stderr
    assert "signature does not match the digest" in checked.stderr


def test_usage_errors(results_db, tmp_path):
    path = exported(results_db, tmp_path)
    (tmp_path / "exists.sqlite").write_bytes(b"")
    run = arbiter("import", path, "--db", tmp_path / "exists.sqlite")
    assert run.returncode == 2 and "exists" in run.stderr
    (tmp_path / "junk.txt").write_text("hello\n")
    run = arbiter("import", tmp_path / "junk.txt", "--db", tmp_path / "x.sqlite")
    assert run.returncode == 2 and "neither a text export" in run.stderr
    run = arbiter("export", tmp_path / "missing.sqlite")
    assert run.returncode == 2 and "missing.sqlite" in run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    # The export is written beside the database as NAME.jsonl: a file of that name is not overwritten
    # (it was, even the half-built import's was written there), nor is a database named .jsonl made
    # (its export lines went into the database itself).
    (tmp_path / "new.jsonl").write_text("someone's\n")
    run = arbiter("import", path, "--db", tmp_path / "new")
    assert run.returncode == 2 and "new.jsonl exists" in run.stderr, run.stderr
    assert (tmp_path / "new.jsonl").read_text() == "someone's\n" and not (tmp_path / "new").exists()
    run = arbiter("import", path, "--db", tmp_path / "r.jsonl")
    assert run.returncode == 2 and "written beside it as .jsonl" in run.stderr, run.stderr
    # An export does not replace results: `export results.sqlite -o results.sqlite` replaced the
    # database with its own text.
    before = results_db.read_bytes()
    for target in (results_db, results_db.with_suffix(".jsonl")):
        run = arbiter("export", results_db, "-o", target)
        assert run.returncode == 2 and "name another one" in run.stderr, run.stderr
    assert results_db.read_bytes() == before
    run = arbiter("demo", "--db", tmp_path / "r.jsonl", "--quiet")
    assert run.returncode == 2 and "would be its own export" in run.stderr, run.stderr
    assert not (tmp_path / "r.jsonl").exists()
    assert "Traceback" not in run.stdout + run.stderr


@pytest.mark.parametrize("fmt", ["text", "csv"])
def test_an_export_given_where_records_are_read_is_named_an_export(results_db, tmp_path, fmt):
    """`arbiter verify games.txt` (or show, export) said "not a game record: Expected `object`, got
    `array`" (a CSV: "JSON is malformed: invalid character"), and `show --list` first counted its
    lines as games; each now says it is an export and how to rebuild its records."""
    path = exported(results_db, tmp_path, fmt)
    kind = "a text export" if fmt == "text" else "a CSV export"
    for argv in (("verify", path), ("show", path), ("show", path, "--list"), ("show", path, "einstein"),
                 ("export", path, "--format", "csv")):
        run = arbiter(*argv)
        assert run.returncode == 2 and run.stdout == "", (argv, run.stdout, run.stderr)
        assert run.stderr == (f"error: {path}: {kind} (arbiter export), not game records: `arbiter import {path} "
                              f"--db NEW.sqlite` rebuilds them\n"), (argv, run.stderr)


@pytest.mark.parametrize("content", [b"garbage\nmore\n", b"\x1f\x8b\x08\x00\x00\x00", b"  <html>\n"])
def test_a_file_that_is_neither_a_database_nor_records_is_named_so(tmp_path, content):
    """A log, a gzipped export or a web page given where records are read was said to be "not a
    game record: JSON is malformed: invalid character (byte 0)", as if a record were damaged; each
    command now says the file is neither kind, and how it begins."""
    path = tmp_path / "results.sqlite"
    path.write_bytes(content)
    for argv in (("verify", path), ("show", path), ("show", path, "--list"), ("export", path, "--format", "csv")):
        run = arbiter(*map(str, argv))
        assert run.returncode == 2 and run.stdout == "", (argv, run.stdout, run.stderr)
        assert run.stderr == (f"error: {path}: neither a results database (SQLite) nor game records (JSON Lines): "
                              f"it begins {content.lstrip()[:12]!r}\n"), (argv, run.stderr)


def test_text_format_quotes_moves_with_blanks(results_db):
    """A move with blanks or brackets is a JSON string; a bare word stays bare."""
    record = next(iter(load_records(results_db)))
    text = "".join(to_text([record]))
    assert text.startswith("[Event ")
    (g,) = read_games(text, "x")
    assert [s.text for s in g.steps] == [e.move for e in record.events]
    from arbiter.records.textexport import _word

    assert _word("2 arm : Russia > Caucasus") == '"2 arm : Russia > Caucasus"' and _word("a5b4") == "a5b4"
    assert _word("") == '""' and _word("(x)") == '"(x)"'


def test_export_streams_each_events_chain_first_and_leaves_no_file_on_a_bad_record(results_db, tmp_path):
    """``export`` reads a database a batch of records at a time (before: every record in memory,
    ~2 GB at 100,000 games) in the order an import re-chains them: each event's games in chain
    order, then the games of no event as saved, even when the event's were saved after them. A
    record that does not decode, met half-way, is named and leaves no half-written file."""
    import msgspec

    from arbiter.records.store import records_in_chain_order

    db = tmp_path / "mixed.sqlite"
    plain = load_records(results_db)
    for event_id, part in (("", plain[:3]), ("ev", plain[3:])):
        store = ResultsStore(db, event_id=event_id)
        for r in part:
            store.save_game(msgspec.structs.replace(r, game_id=r.game_id + "x", match_id=f"{event_id}{r.match_id}",
                                                    match_seq=0, prev_hash="", event_seq=0, event_prev_hash=""))
        store.close()
    want = sorted(load_records(db), key=lambda r: (r.event_seq == 0, r.event_id, r.event_seq))
    got = list(records_in_chain_order(db))
    assert [r.game_id for r in got] == [r.game_id for r in want] and got[0].event_id == "ev"
    assert [msgspec.json.encode(r) for r in got] == [msgspec.json.encode(r) for r in want]

    out = tmp_path / "games.txt"
    for damage, said in (('{"format": 1}', "not a game record"), ('{"format": 1', "a stored record is damaged")):
        with sqlite3.connect(db) as con:
            con.execute("UPDATE games SET record = ? WHERE rowid = 2", (damage,))
        run = arbiter("export", db, "--format", "text", "-o", out)
        assert run.returncode == 2 and said in run.stderr, run.stdout + run.stderr
        assert not out.exists() and not Path(f"{out}.part").exists()
        # Exported to stdout (a pipe, a redirection): the games before the damaged one, and the
        # error on stderr alone, never inside the text a script reads (it was on stdout).
        piped = arbiter("export", db, "--format", "text")
        assert piped.returncode == 2 and said in piped.stderr and "error:" not in piped.stdout, piped.stdout
    tournament = subprocess.run([PY, "-m", "tournaments", "report", str(tmp_path / "none.sqlite"), "--json", "-"],
                                cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert tournament.returncode == 2 and tournament.stdout == "" and "no such file" in tournament.stderr


def test_an_import_refused_half_way_leaves_nothing_and_a_killed_imports_half_is_not_continued(
        results_db, tmp_path, monkeypatch):
    """Import saves a batch at a time (it held every rebuilt record: 524 MB for 20,000 games)
    into a database under an ``.importing-PID`` name, renamed when every game fitted: a game
    refused after batches were saved leaves no file; a file of that kind from another running
    process is not touched, those of a process that is gone (an import killed with -9) are
    removed, and one of this process id is started again, not continued."""
    from arbiter.records import textexport

    monkeypatch.setattr(textexport, "IMPORT_BATCH", 2)
    path = exported(results_db, tmp_path)
    good = path.read_text()

    def change(block):
        k = next(i for i, line in enumerate(block) if line.startswith("[Result "))
        block[k] = f"[Result {json.dumps([-v for v in json.loads(block[k][len('[Result '):-1])])}]"
        return k
    tamper(path, "crash", change)  # the sixth game of seven: three batches of two are saved before it
    folder = tmp_path / "out"
    folder.mkdir()
    with pytest.raises(textexport.TextImportError, match="the result is"):
        textexport.import_games(read_games(path.read_text(), str(path)), folder / "new.sqlite")
    assert list(folder.iterdir()) == []

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()  # a process id nobody has now
    (folder / "new.importing-1.sqlite").write_bytes(b"another import's: its process (init) is running")
    (folder / "new.importing-1x.sqlite").write_bytes(b"the user's")
    (folder / f"new.importing-{os.getpid()}.sqlite").write_bytes(b"the half of a killed import")
    for tail in (".sqlite", ".sqlite-wal", ".jsonl"):  # an import killed with -9: its process is gone
        (folder / f"new.importing-{gone}{tail}").write_bytes(b"the half of a killed import")
    count, _, problem = textexport.import_games(read_games(good, "good"), folder / "new.sqlite")
    assert (count, problem) == (7, None)
    assert sorted(p.name for p in folder.iterdir()) == ["new.importing-1.sqlite", "new.importing-1x.sqlite",
                                                        "new.jsonl", "new.sqlite"]
    assert [bare(r) for r in load_records(folder / "new.sqlite")] == [bare(r) for r in load_records(results_db)]


def test_an_export_that_stops_being_utf8_half_way_is_named_and_imports_nothing(results_db, tmp_path):
    """The file is read as its games are rebuilt (never whole): bytes that are not UTF-8 after
    the first games are met once games were saved, and still leave no database."""
    path = exported(results_db, tmp_path)
    path.write_bytes(path.read_bytes() + b"\n" * 70_000 + b"[Event \"\xff\xfe\"]\n")  # past the first read
    new = tmp_path / "new.sqlite"
    run = arbiter("import", path, "--db", new)
    assert run.returncode == 2 and "not UTF-8 text; nothing imported" in run.stderr, run.stdout + run.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("new")) == []


def test_an_export_stopped_by_ctrl_c_leaves_no_part_file(results_db, tmp_path):
    """Ctrl-C (or ``kill PID``) while ``arbiter export DB -o FILE`` writes: before, FILE.part stayed
    behind (2 of 3 interrupts a second into a 3,000-game export); now it goes, as on an error.
    The export is slowed after its first game (the CLI's own code, in a real process, real signal)."""
    import signal
    import time

    out = tmp_path / "games.txt"
    slowed = ("import sys, time\nimport arbiter.records.textexport as t\nfrom arbiter.cli import main\n"
              "fast = t.to_text\n"
              "def slow(*args):\n"
              "    for i, chunk in enumerate(fast(*args)):\n"
              "        if i == 1:\n"
              "            print('writing', file=sys.stderr, flush=True)\n"
              "            time.sleep(30)\n"
              "        yield chunk\n"
              "t.to_text = slow\n"
              f"sys.exit(main(['export', {str(results_db)!r}, '-o', {str(out)!r}]))\n")
    for sig in (signal.SIGINT, signal.SIGTERM):
        proc = subprocess.Popen([PY, "-c", slowed], cwd=ROOT, stderr=subprocess.PIPE, text=True)
        assert proc.stderr.readline().strip() == "writing"
        time.sleep(0.1)
        proc.send_signal(sig)
        err = proc.communicate(timeout=30)[1]
        assert proc.returncode == 130 and "Traceback" not in err, err
        assert list(tmp_path.iterdir()) == [], list(tmp_path.iterdir())
