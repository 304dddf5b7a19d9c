"""Tamper-evident records, dice secrecy and storage errors, on real matches, SQLite files and disks.

One signed 4-game match between real engine subprocesses is played once; each tamper test edits a
copy of its database (or export) the way a hostile entrant with file access would, and checks
that ``arbiter verify`` fails *and names the game* (and, for a column, the column).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import msgspec
import pytest

from arbiter import cli
from arbiter.clock import parse_time_control
from arbiter.dice import seed_for
from arbiter.formats.match import Match, MatchFormat
from arbiter.games import load_game
from arbiter.hosting import EngineConfig
from arbiter.records import from_json, to_json
from arbiter.records.record import record_hash, signed_bytes
from arbiter.records.signing import SECRET_NAME, KeyFileError, keygen, load_signer
from arbiter.records.store import ResultsStore, chain_statement

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
RANDOM = f"{PY} -m sample_engines.random_engine"


def play(db: Path, games: int = 4, signer=None, seed: bytes | None = b"\x01" * 16, on_game=None,
         store: ResultsStore | None = None) -> tuple[ResultsStore, list]:
    store = store or ResultsStore(db, signer=signer)
    configs = (EngineConfig(command=RANDOM, name="A"), EngineConfig(command=RANDOM, name="B"))
    match = Match(load_game("einstein"), configs, parse_time_control("60"), MatchFormat.parse(f"games={games}"),
                  store=store, run_dir=db.parent, seed=seed, on_game=on_game)
    result = match.play()
    return store, result.records


def verify_cli(path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "arbiter.cli", "verify", str(path), *extra], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "300"})


@pytest.fixture(scope="module")
def signed(tmp_path_factory):
    """(folder with the pristine results.sqlite and results.jsonl, public key, game ids in order)."""
    base = tmp_path_factory.mktemp("signed")
    secret, public = keygen(base / "keys")
    store, records = play(base / "results.sqlite", signer=load_signer(secret))
    store.close()
    assert store.problem is None
    return base, public, [r.game_id for r in records]


@pytest.fixture
def copy(signed, tmp_path):
    base, public, ids = signed
    for name in ("results.sqlite", "results.jsonl"):
        shutil.copy(base / name, tmp_path / name)
    return tmp_path, public, ids


def sql(db: Path, statement: str, args: tuple = ()) -> None:
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(statement, args)
    conn.close()


def test_a_signed_match_verifies_with_its_key_and_names_the_key_without_it(copy):
    folder, public, ids = copy
    ok = verify_cli(folder / "results.sqlite", "--public-key", str(public))
    assert ok.returncode == 0, ok.stdout
    assert "4 of 4 records consistent" in ok.stdout and "0 tamper problem(s)" in ok.stdout
    assert "signatures checked against key" in ok.stdout
    export = verify_cli(folder / "results.jsonl", "--public-key", str(public))
    assert export.returncode == 0, export.stdout
    plain = verify_cli(folder / "results.sqlite")
    assert plain.returncode == 0 and "signatures not checked" in plain.stdout, plain.stdout
    # The chain is what the format says: each record links to the SHA-256 of the previous one as stored.
    conn = sqlite3.connect(folder / "results.sqlite")
    rows = [r[0].encode() for r in conn.execute("SELECT record FROM games ORDER BY rowid")]
    count, head = conn.execute("SELECT chain_count, chain_head FROM matches").fetchone()
    conn.close()
    recs = [from_json(r) for r in rows]
    assert [r.match_seq for r in recs] == [1, 2, 3, 4] and recs[0].prev_hash == ""
    assert all(recs[i + 1].prev_hash == record_hash(rows[i]) for i in range(3))
    assert (count, head) == (4, record_hash(rows[-1]))


def test_an_edited_returns_column_is_named_with_its_game(copy):
    folder, public, ids = copy
    db = folder / "results.sqlite"
    with sqlite3.connect(db) as con:
        (returns,) = con.execute("SELECT returns FROM games WHERE game_id = ?", (ids[1],)).fetchone()
    flipped = json.dumps(json.loads(returns)[::-1])  # the loser's row now says it won
    assert flipped != returns
    sql(db, "UPDATE games SET returns = ? WHERE game_id = ?", (flipped, ids[1]))
    for extra in ((), ("--public-key", str(public))):  # found with or without the key
        out = verify_cli(db, *extra)
        assert out.returncode == 1, out.stdout
        assert f"game {ids[1]}" in out.stdout and "indexed column returns" in out.stdout, out.stdout


@pytest.mark.parametrize("column,value", [("reason", "time"), ("forfeit_seat", 1), ("plies", 3),
                                          ("players", '["B", "A"]')])
def test_every_indexed_column_is_compared(copy, column, value):
    folder, _, ids = copy
    sql(folder / "results.sqlite", f"UPDATE games SET {column} = ? WHERE game_id = ?", (value, ids[2]))
    out = verify_cli(folder / "results.sqlite")
    assert out.returncode == 1 and f"game {ids[2]}" in out.stdout and f"column {column}" in out.stdout, out.stdout


@pytest.mark.parametrize("column,value", [("detail", "B lost on time"), ("dice_stream", "another"), ("event_seq", 7),
                                          ("seats", "[[99, 0, 0.0, null, 0, 0.0, null, 0, 0.0, 0, 0.0, 0.0, 0.0, null, null]]"),
                                          ("ms", b"\x00" * 8)])
def test_an_edited_summary_is_named_with_its_game(copy, column, value):
    """A tournament's report reads its times, details and dice streams from ``game_summaries``, not
    from the records: an edit there is tampering with the results as much as one of an indexed column."""
    folder, _, ids = copy
    db = folder / "results.sqlite"
    assert verify_cli(db).returncode == 0
    sql(db, f"UPDATE game_summaries SET {column} = ? WHERE game_id = ?", (value, ids[2]))
    out = verify_cli(db)
    assert out.returncode == 1 and f"game {ids[2]}" in out.stdout, out.stdout
    assert f"game_summaries column {column}" in out.stdout, out.stdout


def test_export_never_signs_a_record_edited_after_the_game(copy, tmp_path):
    """A signed export is what proves an imported game is the referee's (docs/records.md): signing
    one of a record whose own signature fails would launder the edit (the import then verifies
    clean). Here the first game's seats are swapped in its record and its column, as a tamperer would."""
    folder, public, ids = copy
    db, secret = folder / "results.sqlite", public.with_name(SECRET_NAME)
    clean = subprocess.run([PY, "-m", "arbiter.cli", "export", str(db), "--key", str(secret), "-o",
                            str(tmp_path / "clean.txt")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert clean.returncode == 0 and (tmp_path / "clean.txt").exists(), clean.stdout
    with sqlite3.connect(db) as con:
        record, players = con.execute("SELECT record, players FROM games WHERE game_id = ?", (ids[0],)).fetchone()
    swapped = json.dumps(json.loads(players)[::-1], separators=(",", ":"))
    edited = record.replace(json.dumps(json.loads(players), separators=(",", ":")), swapped, 1)
    assert edited != record
    sql(db, "UPDATE games SET record = ?, players = ? WHERE game_id = ?", (edited, swapped, ids[0]))
    other, _ = keygen(tmp_path / "other")
    for key, why in ((secret, "it was edited after the game"), (other, "is signed with key")):
        out = subprocess.run([PY, "-m", "arbiter.cli", "export", str(db), "--key", str(key), "-o",
                              str(tmp_path / "signed.txt")], cwd=ROOT, capture_output=True, text=True, timeout=120,
                             env={**os.environ, "COLUMNS": "300"})
        assert out.returncode == 2 and f"game {ids[0]}" in out.stderr and why in out.stderr, out.stderr
        assert not (tmp_path / "signed.txt").exists() and not (tmp_path / "signed.txt.part").exists()
    unsigned = subprocess.run([PY, "-m", "arbiter.cli", "export", str(db), "-o", str(tmp_path / "plain.txt")],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert unsigned.returncode == 0  # without a key the export vouches for nothing (its import says so)


@pytest.mark.parametrize("table", ["matches", "games", "game_summaries"])
def test_a_damaged_page_is_one_line_not_a_traceback(copy, table):
    """A results file with a page overwritten (a disk error, a careless edit) cannot be verified:
    verify says which file and what SQLite found, exit 2, never a traceback nor 'consistent'."""
    folder, _, _ = copy
    db = folder / "results.sqlite"
    with sqlite3.connect(db) as con:
        (page,), = con.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,))
        (size,), = con.execute("PRAGMA page_size")
    with open(db, "r+b") as f:
        f.seek((page - 1) * size)
        f.write(b"\0" * size)
    out = verify_cli(db)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    assert f"error: {db}: " in out.stderr and "malformed" in out.stderr, out.stderr


def test_a_deleted_game_is_named_as_a_gap_and_a_deleted_last_game_by_the_match_row(copy):
    folder, _, ids = copy
    db = folder / "results.sqlite"
    sql(db, "DELETE FROM games WHERE game_id = ?", (ids[1],))
    out = verify_cli(db)
    assert out.returncode == 1
    assert f"1 record(s) missing after game {ids[0]}" in out.stdout and f"before game {ids[2]}" in out.stdout, \
        out.stdout
    sql(db, "DELETE FROM games WHERE game_id = ?", (ids[3],))
    out = verify_cli(db)
    assert "the last 1 record(s) are missing" in out.stdout and f"ending with game {ids[2]}" in out.stdout, out.stdout


def test_reordered_export_lines_are_named(copy):
    folder, _, ids = copy
    path = folder / "results.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1], lines[2] = lines[2], lines[1]
    path.write_bytes(b"".join(lines))
    out = verify_cli(path)
    assert out.returncode == 1 and "reordered" in out.stdout and f"game {ids[1]}" in out.stdout, out.stdout
    # In the database the stored order is the commit order: a row taken out and put back last moves.
    db = folder / "results.sqlite"
    sql(db, "CREATE TABLE moved AS SELECT * FROM games WHERE game_id = ?", (ids[1],))
    sql(db, "DELETE FROM games WHERE game_id = ?", (ids[1],))
    sql(db, "INSERT INTO games SELECT * FROM moved")
    out = verify_cli(db)
    assert out.returncode == 1 and "reordered" in out.stdout and f"game {ids[1]}" in out.stdout, out.stdout


def test_results_files_are_readable_by_their_owner_only(tmp_path):
    """Looked at while the store is open: its write-ahead log exists only then."""
    store, _ = play(tmp_path / "results.sqlite")
    try:
        for name in ("results.sqlite", "results.sqlite-wal", "results.jsonl", "results.sqlite.matches.lock"):
            assert (tmp_path / name).stat().st_mode & 0o077 == 0, name
    finally:
        store.close()


def test_an_edited_record_is_named_by_its_signature_and_by_the_chain(copy):
    folder, public, ids = copy
    db = folder / "results.sqlite"
    conn = sqlite3.connect(db)
    (raw,) = conn.execute("SELECT record FROM games WHERE game_id = ?", (ids[1],)).fetchone()
    conn.close()
    record = from_json(raw)
    record.detail = "edited by an engine"  # not a column: only the chain and signature can tell
    sql(db, "UPDATE games SET record = ? WHERE game_id = ?", (to_json(record).decode(), ids[1]))
    signed = verify_cli(db, "--public-key", str(public))
    assert signed.returncode == 1 and f"game {ids[1]}" in signed.stdout and "signature does not match" in signed.stdout
    unsigned = verify_cli(db)
    assert unsigned.returncode == 1 and f"game {ids[1]}" in unsigned.stdout and "was edited" in unsigned.stdout


def test_a_chain_re_signed_with_another_key_is_refused(copy, tmp_path):
    """The forger recomputes every hash, signature and chain row with a key of their own."""
    folder, public, ids = copy
    db = folder / "results.sqlite"
    secret, _ = keygen(tmp_path / "forger")
    forger = load_signer(secret)
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT rowid, record FROM games ORDER BY rowid").fetchall()
    prev = ""
    with conn:
        for rowid, raw in rows:
            record = from_json(raw)
            if record.game_id == ids[0]:
                record.returns = list(reversed(record.returns))
            record.prev_hash, record.key_id = prev, forger.key_id
            record.signature = forger.sign(signed_bytes(record))
            data = to_json(record)
            prev = record_hash(data)
            conn.execute("UPDATE games SET record = ?, returns = ? WHERE rowid = ?",
                         (data.decode(), json.dumps(record.returns), rowid))
        conn.execute("UPDATE matches SET chain_head = ?, chain_signature = ?",
                     (prev, forger.sign(chain_statement("match", from_json(rows[0][1]).match_id, len(rows), prev))))
    conn.close()
    out = verify_cli(db, "--public-key", str(public))
    assert out.returncode == 1 and f"game {ids[0]}" in out.stdout and f"signed with key {forger.key_id}" in out.stdout
    assert "not signed by" in out.stdout, out.stdout


def test_unsigned_records_are_chained_and_verify_says_they_are_unsigned(tmp_path, signed):
    _, public, _ = signed
    store, records = play(tmp_path / "results.sqlite", games=2)
    store.close()
    out = verify_cli(tmp_path / "results.sqlite")
    assert out.returncode == 0 and "hash-chained but unsigned" in out.stdout, out.stdout
    assert [r.match_seq for r in records] == [1, 2] and records[1].prev_hash
    keyed = verify_cli(tmp_path / "results.sqlite", "--public-key", str(public))
    assert keyed.returncode == 1 and f"game {records[0].game_id}" in keyed.stdout and "not signed" in keyed.stdout


def test_records_from_before_chaining_still_load_and_verify(copy):
    folder, _, ids = copy
    line = (folder / "results.jsonl").read_bytes().splitlines()[0]
    old = {k: v for k, v in json.loads(line).items()
           if k not in ("match_seq", "prev_hash", "event_id", "event_seq", "event_prev_hash", "key_id", "signature")}
    path = folder / "old.json"
    path.write_text(json.dumps(old))
    assert from_json(path.read_bytes()).match_seq == 0
    out = verify_cli(path)
    assert out.returncode == 0 and "carry no chain" in out.stdout, out.stdout


def test_keys_secret_file_is_0600_and_a_readable_one_is_refused(tmp_path):
    secret, public = keygen(tmp_path)
    assert secret.stat().st_mode & 0o777 == 0o600
    with pytest.raises(KeyFileError, match="exists"):
        keygen(tmp_path)
    secret.chmod(0o640)
    with pytest.raises(KeyFileError, match="chmod 600"):
        load_signer(secret)


def test_keygen_with_an_empty_name_or_a_file_for_out_is_refused(tmp_path):
    """``arbiter keygen "$NAME"`` with NAME unset made the referee's signing key instead of a CURVE
    pair (exit 0); ``--out`` naming a file said only ``[Errno 17] File exists``."""
    (tmp_path / "file").write_text("kept")

    def keygen_cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([PY, "-m", "arbiter.cli", "keygen", *args], cwd=tmp_path, capture_output=True,
                              text=True, timeout=60, env={**os.environ, "COLUMNS": "300", "PYTHONPATH": str(ROOT)})
    for args, words in (([""], "error: an empty key NAME (leave it out for the referee's signing key)"),
                        (["alice", "--out", "file"], "error: --out file: a file, not a folder for the key files"),
                        (["--out", "file"], "error: --out file: a file, not a folder for the key files")):
        out = keygen_cli(*args)
        assert out.returncode == 2 and out.stderr.startswith(words), (args, out.stdout + out.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"] and (tmp_path / "file").read_text() == "kept"


# --- dice secrecy ----------------------------------------------------------------------------------

def arbiter(tmp_path: Path, *args: str, stdin: str | None = None, env: dict | None = None):
    db = tmp_path / f"{uuid.uuid4().hex[:6]}.sqlite"
    out = subprocess.run([PY, "-m", "arbiter.cli", "match", "--game", "einstein", "--engine", RANDOM, "--engine",
                          RANDOM, "--format", "games=1", "--tc", "60", "--quiet", "--db", str(db), *args],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, input=stdin,
                         env={**os.environ, "COLUMNS": "300", **(env or {})})
    export = db.with_suffix(".jsonl")
    seeds = [json.loads(line)["dice_seed"] for line in export.read_text().splitlines()] if export.exists() else []
    return out, seeds


def test_a_seed_from_a_file_the_environment_or_stdin_gives_the_dice_of_seed(tmp_path):
    """A game's dice seed derives from the master seed and its stream (which names the match, fresh
    per run): each run's revealed seed must be the one the master seed gives for its stream."""
    hexseed = "00112233445566778899aabbccddeeff"

    def ns(**kw):
        return argparse.Namespace(**{"seed": None, "seed_file": None, **kw})
    seed_file = tmp_path / "seed"
    seed_file.write_text(hexseed + "\n")
    seed_file.chmod(0o600)
    assert cli.read_seed(ns(seed_file=str(seed_file)))[0] == bytes.fromhex(hexseed)
    os.environ[cli.SEED_ENV] = hexseed
    assert cli.read_seed(ns()) == (bytes.fromhex(hexseed), cli.SEED_ENV)
    assert cli.SEED_ENV not in os.environ  # read once, never inherited by what starts later
    # End to end: one real match per source.
    for name, args, stdin, env in (("--seed", ["--seed", hexseed], None, None),
                                   ("file", ["--seed-file", str(seed_file)], None, None),
                                   ("stdin", ["--seed-file", "-"], hexseed, None),
                                   ("env", [], None, {cli.SEED_ENV: hexseed})):
        folder = tmp_path / name
        folder.mkdir()
        out, _ = arbiter(folder, *args, stdin=stdin, env=env)
        assert out.returncode == 0, out.stdout + out.stderr
        assert ("warning" in out.stderr and "non-competitive" in out.stderr) == (name == "--seed"), out.stderr
        record = json.loads(next(folder.glob("*.jsonl")).read_text().splitlines()[0])
        assert bytes.fromhex(record["dice_seed"]) == seed_for(bytes.fromhex(hexseed), record["dice_stream"]), name


def test_a_seed_file_readable_by_others_is_refused(tmp_path):
    seed_file = tmp_path / "seed"
    seed_file.write_text("abcd")
    seed_file.chmod(0o644)
    out, _ = arbiter(tmp_path, "--seed-file", str(seed_file))
    assert out.returncode == cli.EXIT_USAGE and "chmod 600" in out.stderr, out.stderr
    out, _ = arbiter(tmp_path, "--seed-file", str(seed_file), "--seed", "abcd")
    assert out.returncode == cli.EXIT_USAGE and "not both" in out.stderr


def test_an_empty_seed_argument_is_refused_not_replaced_by_fresh_randomness(tmp_path):
    """``--seed "$SEED"`` with SEED unset: before, the match was played on fresh randomness, exit 0,
    as if no seed had been asked for (its games not the ones the operator meant to reproduce)."""
    for args, words in ((["--seed", ""], "the seed from --seed is empty"),
                        (["--seed-file", ""], "--seed-file: an empty argument, not a file")):
        out, seeds = arbiter(tmp_path, *args)
        assert out.returncode == cli.EXIT_USAGE and words in out.stderr, out.stdout + out.stderr
        assert seeds == [] and not list(tmp_path.glob("*.sqlite")), args


# --- storage errors ---------------------------------------------------------------------------------

@pytest.fixture
def tiny_disk(tmp_path):
    """A 1 MB tmpfs (root only; skipped where it cannot be mounted) and a way to fill it."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")

    def fill():
        with open(mnt / "junk", "wb", buffering=0) as f:
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError:
                pass

    try:
        yield mnt, fill, lambda: (mnt / "junk").unlink()
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_a_full_disk_mid_match_keeps_the_game_and_saves_it_once_there_is_room(tiny_disk, tmp_path):
    mnt, fill, free = tiny_disk
    seen = []  # games counted: on_game comes once a game is committed

    def on_game(result, record):
        seen.append(record.game_number)

    store = ResultsStore(mnt / "results.sqlite", retry_delay=0.01)
    save = store.save_game

    def save_game(record):
        saved = save(record)
        if record.game_number == 1:
            fill()  # game 2 cannot be saved ...
        if record.game_number == 2:
            assert not saved and store.pending and store.error and "full" in store.error
            assert seen == [1]  # ... nor counted ...
            free()  # ... until game 3 is, and game 2 goes first
        return saved
    store.save_game = save_game
    store, records = play(mnt / "results.sqlite", games=3, on_game=on_game, store=store)
    store.close()
    assert seen == [1, 2, 3] and store.problem is None
    conn = sqlite3.connect(mnt / "results.sqlite")
    saved = [(n, json.loads(r)["match_seq"]) for n, r in conn.execute("SELECT game_number, record FROM games "
                                                                     "ORDER BY rowid")]
    conn.close()
    assert saved == [(1, 1), (2, 2), (3, 3)]
    ok = verify_cli(mnt / "results.sqlite")
    assert ok.returncode == 0, ok.stdout
    assert len((mnt / "results.jsonl").read_text().splitlines()) == 3  # no torn or doubled export line


def test_a_disk_that_stays_full_exits_4_naming_the_file_and_the_fallback(tiny_disk, request, monkeypatch, capsys):
    mnt, fill, _ = tiny_disk
    fallback_dir = Path(tempfile.mkdtemp(prefix="fallback-"))  # short: the engines' sockets go in it too
    request.addfinalizer(lambda: shutil.rmtree(fallback_dir, ignore_errors=True))
    monkeypatch.setattr("tempfile.tempdir", str(fallback_dir))
    opened = []

    def open_full(args, group_window=0.0):  # the database opens fine, then the disk fills before the first game
        store = ResultsStore(args.db, retry_delay=0.01)
        fill()
        opened.append(store)
        return store

    monkeypatch.setattr(cli, "open_store", open_full)
    db = mnt / "results.sqlite"
    code = cli.main(["match", "--game", "einstein", "--engine", RANDOM, "--engine", RANDOM, "--format", "games=2",
                     "--tc", "60", "--quiet", "--db", str(db)])
    out = capsys.readouterr().err
    assert code == cli.EXIT_STORAGE == 4, out
    fallbacks = list(fallback_dir.glob("results.sqlite.unsaved-*.jsonl"))
    assert len(fallbacks) == 1, out
    assert not list(mnt.glob("*.unsaved-*")), "an empty or cut fallback left on the full disk"
    assert f"2 game(s) could not be saved ({db}: database or disk is full); they were written to {fallbacks[0]}" \
        in out, out
    records = [from_json(line) for line in fallbacks[0].read_bytes().splitlines()]
    assert [(r.game_number, r.match_seq) for r in records] == [(1, 1), (2, 2)]
    assert records[1].prev_hash == record_hash(to_json(records[0]))
    assert verify_cli(fallbacks[0]).returncode == 0


def test_a_locked_database_is_retried_then_saved_in_order(tmp_path):
    """Another process holding the write lock: the save fails after its retries, the game waits,
    and the next save commits both, chained in order."""
    db = tmp_path / "results.sqlite"
    store = ResultsStore(db, retry_delay=0.01)
    store.db.execute("PRAGMA busy_timeout = 50")
    _, records = play(db, games=1, store=store)
    blocker = sqlite3.connect(db)
    blocker.execute("BEGIN IMMEDIATE")
    late = msgspec.structs.replace(records[0], game_id="g2", game_number=2)
    assert store.save_game(late) is False and "locked" in store.error and store.pending == [late]
    blocker.rollback()
    blocker.close()
    third = msgspec.structs.replace(records[0], game_id="g3", game_number=3)
    assert store.save_game(third) is True and not store.pending
    store.close()
    assert [r.match_seq for r in ResultsStore(db).games()] == [1, 2, 3]


def test_a_tournament_whose_disk_fills_stops_with_the_unsaved_game_in_a_fallback(tiny_disk, tmp_path, monkeypatch):
    from tournaments import api
    from tournaments.config import parse_config

    mnt, fill, _ = tiny_disk
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    cfg = parse_config(f"""
name = "full"
game = "einstein"
match = "games=2"
time_control = "60"
seed = "s"
concurrency = 1
output = "{mnt / 'full.sqlite'}"
""" + "".join(f'[[engines]]\nname = "e{i}"\ncommand = "{{python}} -m sample_engines.random_engine"\n'
              for i in range(3)), "full.toml")
    opened = api.start(cfg)
    played = []

    def on_game(runner, spec, record):
        played.append(record.game_id)
        fill()  # the first game is saved; the next one cannot be

    _, summary = api.play(opened, on_game=on_game)
    opened.db.close()
    assert summary.storage_error and "full" in summary.storage_error and not summary.finished
    assert len(played) == 1 and summary.committed == 1
    problem = opened.db.store.problem
    assert problem and "1 game(s) could not be saved" in problem, problem
    (fallback,) = tmp_path.glob("full.sqlite.unsaved-*.jsonl")
    (record,) = [from_json(line) for line in fallback.read_bytes().splitlines()]
    assert record.event_id == "full" and record.event_seq == 2


def test_keygen_command_and_a_key_others_may_read_is_refused_before_any_engine_starts(tmp_path, capsys):
    assert cli.main(["keygen", "--out", str(tmp_path / "k")]) == 0
    out = capsys.readouterr().out
    assert load_signer(tmp_path / "k" / "referee.key").key_id in out
    assert cli.main(["keygen", "--out", str(tmp_path / "k")]) == cli.EXIT_USAGE  # never overwrites a key
    (tmp_path / "k" / "referee.key").chmod(0o644)
    capsys.readouterr()
    code = cli.main(["match", "--game", "einstein", "--engine", "/nonexistent/engine", "--engine",
                     "/nonexistent/engine", "--key", str(tmp_path / "k" / "referee.key"), "--db",
                     str(tmp_path / "r.sqlite")])
    assert code == cli.EXIT_USAGE and "chmod 600" in capsys.readouterr().err
    assert not (tmp_path / "r.sqlite").exists()


def test_packed_games_saved_together_are_stored_as_records_saved_one_by_one(signed, tmp_path):
    """A tournament's workers pack each record (its JSON plus the indexed columns) so that the
    director saves a batch without decoding it: the chain fields are spliced into the JSON's
    tail. The stored bytes, chains, signatures and summaries must be exactly those of the same
    records saved one by one as decoded records."""
    from arbiter.records import GameRecord
    from arbiter.records.store import CHAIN_FIELDS, pack

    assert GameRecord.__struct_fields__[-len(CHAIN_FIELDS):] == CHAIN_FIELDS  # the tail the splice replaces
    base, _, _ = signed
    records = list(ResultsStore(base / "results.sqlite").games())  # chained and signed already: pack resets that
    secret, public = keygen(tmp_path / "keys")
    one = ResultsStore(tmp_path / "one.sqlite", signer=load_signer(secret), event_id="ev")
    for r in records:
        assert one.save_game(msgspec.structs.replace(r))
    one.close()
    packed = [pack(r) for r in records]
    together = ResultsStore(tmp_path / "together.sqlite", signer=load_signer(secret), event_id="ev")
    assert together.save_games(packed[:1]) and together.save_games(packed[1:])
    together.close()
    assert [p.match_seq for p in packed] == [1, 2, 3, 4] and all(p.signature for p in packed)
    assert packed[2].record().prev_hash == packed[2].prev_hash  # the decoded form carries the chain

    def rows(name: str) -> list:
        conn = sqlite3.connect(tmp_path / name)
        try:
            return [list(conn.execute(q)) for q in (
                "SELECT game_id, match_id, game_number, game, players, returns, reason, forfeit_seat, plies,"
                " ended_at, record FROM games ORDER BY rowid", "SELECT * FROM game_summaries ORDER BY rowid",
                "SELECT match_id, chain_count, chain_head, chain_signature FROM matches", "SELECT * FROM events")]
        finally:
            conn.close()

    assert rows("one.sqlite") == rows("together.sqlite")
    assert (tmp_path / "one.jsonl").read_bytes() == (tmp_path / "together.jsonl").read_bytes()
    ok = verify_cli(tmp_path / "together.sqlite", "--public-key", str(public))
    assert ok.returncode == 0 and "4 of 4 records consistent" in ok.stdout, ok.stdout


def test_a_results_path_that_is_a_folder_is_named_so(tmp_path):
    """``--db FOLDER`` (arbiter match/coop/solo): the store says it is a folder and which file name
    would do, instead of SQLite's "unable to open database file"."""
    import pytest

    from arbiter.records.store import ResultsStore

    with pytest.raises(IsADirectoryError, match=f"{tmp_path} is a folder: name the results file"):
        ResultsStore(tmp_path)


SLOW = f"{PY} {ROOT / 'tests' / 'engines' / 'misbehave.py'} slow --after 999 --delay 0.005"


def _pull_the_database_away(tmp_path: Path, cmd: list[str], db: Path, replace: bool) -> subprocess.CompletedProcess:
    """Run ``cmd``; once 3 games are in the export, delete the database (and its -wal, -shm) from
    under it, as an operator's ``rm`` or a clean-up script would; with ``replace``, put another
    database in its place."""
    import time

    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(tmp_path)})
    export = db.with_suffix(".jsonl")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None and not (
            export.exists() and len(export.read_bytes().splitlines()) >= 3):
        time.sleep(0.02)
    for path in db.parent.glob(db.name + "*"):
        if not path.name.endswith(".lock"):
            path.unlink()
    if replace:
        with sqlite3.connect(db) as other:
            other.execute("CREATE TABLE notes(text)")
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


@pytest.mark.parametrize("replace", [False, True])
def test_a_database_deleted_or_replaced_mid_match_is_a_storage_error_not_a_success(tmp_path, replace):
    """Before, SQLite went on committing into the deleted file (still open): exit 0, the match "won",
    and no database left at all (or a stranger's in its place, holding none of it). Now every
    commit checks that the path still names the file opened: the games from then on go to the
    fallback file, exit 4 says so, and the export plus the fallback hold every game."""
    db = tmp_path / "m.sqlite"
    done = _pull_the_database_away(tmp_path, [PY, "-m", "arbiter.cli", "match", "--game", "einstein", "--engine", SLOW,
                                              "--engine", RANDOM, "--seed", "ab", "--format", "games=30", "--tc", "60",
                                              "--quiet", "--db", str(db)], db, replace)
    assert done.returncode == 4 and "Traceback" not in done.stderr, done.stderr
    assert f"{db}: deleted, moved or replaced while" in done.stderr, done.stderr
    (fallback,) = tmp_path.glob("m.sqlite.unsaved-*.jsonl")
    numbers = {from_json(line).game_number for path in (db.with_suffix(".jsonl"), fallback)
               for line in path.read_bytes().splitlines()}
    assert numbers == set(range(1, 31))


def test_a_database_deleted_mid_tournament_stops_it_with_exit_4(tmp_path):
    db = tmp_path / "t.sqlite"
    path = tmp_path / "t.toml"
    path.write_text(f'game = "einstein"\nmatch = "games=30"\ntime_control = "60"\nseed = 1\nconcurrency = 1\n'
                    f'output = "{db}"\n[[engines]]\nname = "slow"\ncommand = "{SLOW}"\n'
                    f'[[engines]]\nname = "random"\ncommand = "{RANDOM}"\n')
    done = _pull_the_database_away(tmp_path, [PY, "-m", "tournaments", "run", str(path), "-q", "--no-report"], db, False)
    assert done.returncode == 4 and "Traceback" not in done.stderr, done.stderr
    assert f"{db}: deleted, moved or replaced while" in done.stderr, done.stderr


def test_an_export_deleted_mid_match_is_written_again_whole(tmp_path):
    """``rm results.jsonl`` while the match runs. Before, the next game's append made a new file
    holding only the games from then on (27 of 30), exit 0, without a word; now the export, gone
    or replaced, is written again from the database: every game, in commit order."""
    import time

    db = tmp_path / "m.sqlite"
    export = tmp_path / "m.jsonl"
    proc = subprocess.Popen([PY, "-m", "arbiter.cli", "match", "--game", "einstein", "--engine", SLOW, "--engine",
                             RANDOM, "--seed", "ab", "--format", "games=30", "--tc", "60", "--quiet", "--db", str(db)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None and not (
            export.exists() and len(export.read_bytes().splitlines()) >= 3):
        time.sleep(0.02)
    export.unlink()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert [from_json(line).game_number for line in export.read_bytes().splitlines()] == list(range(1, 31))
    assert verify_cli(export).returncode == 0


def test_the_message_names_the_export_and_its_own_error_for_games_missing_from_it(tmp_path):
    """Games committed but not exported, and later a game the database refused: before, the
    message blamed the export's missing games on the database's error ("... missing from the export
    (results.sqlite: database is locked)"); now each part names its own file and error."""
    db = tmp_path / "results.sqlite"
    export = tmp_path / "gone" / "results.jsonl"  # its folder is not there: every append fails
    store = ResultsStore(db, export, retry_delay=0.01)
    store.db.execute("PRAGMA busy_timeout = 50")
    _, records = play(db, games=1, store=store)
    assert store.unexported and not store.pending
    blocker = sqlite3.connect(db)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        assert store.save_game(msgspec.structs.replace(records[0], game_id="g2", game_number=2)) is False
        store.close()
    finally:
        blocker.rollback()
        blocker.close()
    problem = store.problem
    assert f"1 game(s) could not be saved ({db}: database is locked)" in problem, problem
    assert f"1 committed game(s) are missing from the export ({export}: " in problem, problem
