"""``arbiter verify`` against tampered records of real games.

The games are played by real engine subprocesses through ``Match`` and read back from a real
SQLite results file; each test then changes one thing a cheat (or a bug) could change — a move,
a chance event, a roll's outcome count, an extra roll, the returns, the end reason, the final
position — and checks that verification names exactly that inconsistency. Each check in
``arbiter/replay.py`` has a test here that fails when the check is removed.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from arbiter.clock import parse_time_control
from arbiter.dice import Roll, derive_roll
from arbiter.hosting import EngineConfig
from arbiter.games import load_game
from arbiter.formats.match import Match, MatchFormat
from arbiter.records.replay import replay, verify
from arbiter.records.store import ResultsStore, load_records

ROOT = Path(__file__).resolve().parent.parent
RANDOM = f"{sys.executable} -m sample_engines.random_engine"
MISBEHAVE = f"{sys.executable} {ROOT / 'tests' / 'engines' / 'misbehave.py'}"


@pytest.fixture(scope="module")
def results_db(tmp_path_factory) -> Path:
    """One SQLite file with: two EinStein games with random (chance) set-ups, one with the
    simultaneous set-up, and one forfeited by an engine that crashes at its first request."""
    tmp = tmp_path_factory.mktemp("tamper")
    db = tmp / "results.sqlite"
    store = ResultsStore(db)
    plays = [("random-setup", {"setup": "random"}, RANDOM + " --seed 2", "games=2"),
             ("chosen-setup", {}, RANDOM + " --seed 3", "games=1"),
             ("forfeit", {}, MISBEHAVE + " crash --after 0", "games=1")]
    try:
        for match_id, options, cmd_a, fmt in plays:
            configs = (EngineConfig(cmd_a, name="A", cwd=str(ROOT)),
                       EngineConfig(RANDOM + " --seed 1", name="B", cwd=str(ROOT)))
            Match(load_game("einstein", **options), configs, parse_time_control("60"), MatchFormat.parse(fmt),
                  store=store, run_dir=tmp, seed=b"tamper-tests", match_id=match_id).play()
    finally:
        store.close()
    return db


def records(db: Path, match_id: str):
    """Fresh copies of a match's records, read back from the SQLite file."""
    found = [r for r in load_records(db) if r.match_id == match_id]
    assert found, match_id
    return found


def one(db: Path, match_id: str = "random-setup"):
    return records(db, match_id)[0]


def test_the_untouched_records_verify(results_db):
    all_records = load_records(results_db)
    assert len(all_records) == 4
    assert [verify(r) for r in all_records] == [[]] * 4
    (forfeit,) = records(results_db, "forfeit")
    assert forfeit.reason == "crash" and forfeit.events == [] and forfeit.forfeit_seat is not None


# --- chance events ---------------------------------------------------------------------------

def test_a_changed_die_is_named(results_db):
    record = one(results_db)
    event = next(e for e in record.events if e.kind == "chance" and len(e.move) == 1)
    true_die = event.move
    event.move = "6" if true_die != "6" else "5"
    problems = verify(record)
    assert problems == [f"event {event.ply}: roll {event.roll} gives {true_die}, the record says {event.move}"]


def test_a_changed_chance_setup_is_named(results_db):
    record = one(results_db)
    event = record.events[0]
    assert event.kind == "chance" and len(event.move) == 6  # a random set-up layout
    true_layout = event.move
    event.move = true_layout[::-1]
    assert verify(record) == [f"event 0: roll {event.roll} gives {true_layout}, the record says {event.move}"]


def test_a_changed_outcome_count_is_named(results_db):
    record = one(results_db)
    event = next(e for e in record.events if e.kind == "chance" and len(e.move) == 1)
    roll = record.rolls[event.roll]
    roll.outcomes = 7  # the value still indexes the real outcomes: only the count gives it away
    problems = verify(record)
    assert f"event {event.ply}: roll {event.roll} is missing or has the wrong number of outcomes" in problems


def test_a_chance_event_pointing_at_no_roll_is_named(results_db):
    record = one(results_db)
    event = next(e for e in record.events if e.kind == "chance")
    event.roll = len(record.rolls) + 5
    assert f"event {event.ply}: roll {event.roll} is missing or has the wrong number of outcomes" in verify(record)


def test_an_extra_unused_roll_is_named(results_db):
    """A genuine extra roll (right seed, stream and index) that no event uses: the referee rolled
    and threw the result away, which is exactly what the dice must prevent."""
    record = one(results_db)
    n = len(record.rolls)
    seed = bytes.fromhex(record.dice_seed)
    record.rolls.append(Roll(n, 6, derive_roll(seed, record.dice_stream, n, 6)))
    assert verify(record) == [f"{n + 1} rolls recorded but events use {n}"]


def test_a_chance_event_where_a_decision_was_due_is_named(results_db):
    record = one(results_db)
    i = next(i for i, e in enumerate(record.events) if e.seat >= 0)
    del record.events[i]  # the die roll that follows now lands where the seat should move
    problems = verify(record)
    assert problems and problems[-1].startswith(f"event {i}: seat "), problems


def test_a_decision_where_a_roll_was_due_is_named(results_db):
    record = one(results_db)
    i = next(i for i, e in enumerate(record.events) if e.kind == "chance" and i > 2)
    del record.events[i]
    problems = verify(record)
    assert any(p.startswith(f"event {i}: a roll was due") for p in problems), problems


# --- decisions -------------------------------------------------------------------------------

def test_an_illegal_move_is_named(results_db):
    record = one(results_db)
    event = next(e for e in record.events if e.seat >= 0)
    event.move = "a1a1"
    (problem,) = verify(record)
    assert problem.startswith(f"event {event.ply}: seat {event.seat} move 'a1a1' is illegal")


def test_another_legal_move_changes_what_follows(results_db):
    """Replacing a late decision by another legal one passes every check at that event; what
    follows no longer fits (a later move is illegal, or the final position differs)."""
    record = one(results_db)
    before = {}  # event index -> the state in which that decision was made
    previous = load_game(record.game, **record.options).new_initial_state()
    for step, state in replay(record):
        if len(step) == 1 and step[0].seat >= 0:
            before[step[0].ply] = previous
        previous = state.clone()
    i, alternatives = max((i, [m for m in s.legal_moves(record.events[i].seat) if m != record.events[i].move])
                          for i, s in before.items() if len(s.legal_moves(record.events[i].seat)) > 1)
    record.events[i].move = alternatives[0]
    problems = verify(record)
    assert problems, "a changed move went unnoticed"
    assert any("is illegal" in p or "comes after the game ended" in p or "is not terminal" in p for p in problems) \
        or problems == ["the replayed final position differs from the recorded one"], problems


def test_a_decision_by_the_wrong_seat_is_named(results_db):
    record = one(results_db)
    event = next(e for e in record.events if e.seat >= 0)
    event.seat = 1 - event.seat
    problems = verify(record)
    assert problems == [f"event {event.ply}: seat {1 - event.seat} was to decide, the record has seat {event.seat}"]


def test_a_simultaneous_setup_by_one_seat_twice_is_named(results_db):
    record = one(results_db, "chosen-setup")
    first, second = record.events[0], record.events[1]
    assert first.kind == second.kind == "setup" and {first.seat, second.seat} == {0, 1}
    second.seat = first.seat
    problems = verify(record)
    assert problems == [f"event 0: seats [0, 1] decide together, the record has [{first.seat}]"]


def test_an_event_after_the_end_is_named(results_db):
    record = one(results_db)
    extra = record.events[-1].__copy__()
    extra.ply += 1
    record.events.append(extra)
    (problem,) = verify(record)
    assert problem.startswith(f"event {extra.ply} (") and "comes after the game ended" in problem


# --- the result ------------------------------------------------------------------------------

def test_changed_returns_are_named(results_db):
    record = one(results_db)
    true_returns = list(record.returns)
    record.returns = true_returns[::-1]
    assert verify(record) == [f"recorded returns {record.returns} differ from the rules' {true_returns}"]


def test_a_normal_end_before_the_end_is_named(results_db):
    record = one(results_db)
    last = max(i for i, e in enumerate(record.events) if e.seat >= 0)
    del record.events[last:]  # the winning move (and anything after it) cut off
    problems = verify(record)
    assert "the record says the game ended normally but the replayed position is not terminal" in problems


def test_a_forfeit_without_a_seat_is_named(results_db):
    (record,) = records(results_db, "forfeit")
    record.forfeit_seat = None
    assert verify(record) == ["reason 'crash' without a forfeiting seat"]
    normal = one(results_db)
    normal.reason = "time"  # a finished game passed off as a loss on time, with nobody to blame
    assert verify(normal) == ["reason 'time' without a forfeiting seat"]


def test_a_forfeit_with_the_winner_and_loser_swapped_is_named(results_db, tmp_path):
    """The returns of a game one seat forfeited were not checked against the forfeit: the
    forfeiter could be recorded as the winner and the record passed (only a chain caught it).
    Also at an A&A table, where the forfeiting seat's whole alliance loses."""
    (record,) = records(results_db, "forfeit")
    true_returns = list(record.returns)
    record.returns = true_returns[::-1]
    assert verify(record) == [f"recorded returns {record.returns} differ from the {true_returns} of a forfeit by "
                              f"seat {record.forfeit_seat}"]

    from arbiter.formats.match import TableMatch

    db = tmp_path / "table.sqlite"
    store = ResultsStore(db)
    aa = f"{sys.executable} -m sample_engines.aachess_random"
    configs = [EngineConfig(cmd, name=name, cwd=str(ROOT)) for cmd, name in
               ((aa, "ally1"), (MISBEHAVE + " crash --after 0", "axis"), (aa, "ally2"))]
    try:
        TableMatch(load_game("aachess", seats=3, max_rounds=1), configs, parse_time_control("60"), 3, store=store,
                   run_dir=tmp_path, seed=b"tamper-tests", match_id="table").play()
    finally:
        store.close()
    table = load_records(db)[0]
    assert (table.reason, table.forfeit_seat, table.returns) == ("crash", 1, [1.0, -1.0, 1.0])
    assert verify(table) == []
    table.returns = [-1.0, 1.0, -1.0]  # the crashed alliance credited with the win
    assert verify(table) == ["recorded returns [-1.0, 1.0, -1.0] differ from the [1.0, -1.0, 1.0] of a forfeit by seat 1"]


def test_a_changed_final_position_is_named(results_db):
    for record in (one(results_db), records(results_db, "forfeit")[0]):
        assert record.final_position
        record.final_position = record.final_position.replace("/", "/1", 1)
        assert verify(record) == ["the replayed final position differs from the recorded one"]


def test_an_illegal_simultaneous_setup_is_named(results_db):
    record = one(results_db, "chosen-setup")
    event = record.events[1]
    event.move = "111111"
    (problem,) = verify(record)
    assert problem.startswith(f"event 0: seat {event.seat} setup '111111' is illegal"), problem


# --- the same through `arbiter verify` / `arbiter show` and every record file format ----------

def said(capsys) -> str:
    """What the command printed on stdout and stderr, with rich's line wrapping undone."""
    out, err = capsys.readouterr()
    return " ".join((out + err).split())


def test_arbiter_verify_reads_sqlite_jsonl_and_json_and_names_the_tampered_game(results_db, tmp_path, capsys):
    from arbiter.cli import EXIT_OK, EXIT_USAGE, EXIT_VERIFY_FAILED, main
    from arbiter.records import to_json

    assert main(["verify", str(results_db), "-v"]) == EXIT_OK
    assert "4 of 4 records consistent" in said(capsys)
    records_ = load_records(results_db)
    records_[1].returns = records_[1].returns[::-1]
    jsonl = tmp_path / "games.jsonl"
    jsonl.write_bytes(b"".join(to_json(r) + b"\n" for r in records_) + b"\n")  # a blank line is allowed
    assert main(["verify", str(jsonl)]) == EXIT_VERIFY_FAILED
    out = said(capsys)
    assert f"INCONSISTENT {records_[1].game_id}" in out and "recorded returns" in out
    assert "3 of 4 records consistent" in out
    single = tmp_path / "one.json"
    single.write_bytes(to_json(records_[0]))
    assert main(["verify", str(single)]) == EXIT_OK
    assert [r.game_id for r in load_records(jsonl, records_[2].game_id)] == [records_[2].game_id]
    assert main(["verify", str(jsonl), "--game-id", "no-such-game"]) == EXIT_VERIFY_FAILED  # nothing verified
    capsys.readouterr()
    (tmp_path / "bad.jsonl").write_text('{"not": "a record"}\n')
    assert main(["verify", str(tmp_path / "bad.jsonl")]) == EXIT_USAGE
    assert "bad.jsonl:1: not a game record" in said(capsys)
    assert main(["verify", str(tmp_path / "missing.jsonl")]) == EXIT_USAGE
    assert "no such file" in said(capsys)


def test_arbiter_show_replays_and_reports_an_inconsistent_record(results_db, tmp_path, capsys):
    from arbiter.cli import EXIT_OK, EXIT_USAGE, main
    from arbiter.records import to_json

    record = one(results_db)
    assert main(["show", str(results_db), "--game-id", record.game_id]) == EXIT_OK
    out = said(capsys)
    assert "roll →" in out and f"result {record.returns}" in out
    event = next(e for e in record.events if e.seat >= 0)
    event.move = "a1a1"
    path = tmp_path / "tampered.json"
    path.write_bytes(to_json(record))
    assert main(["show", str(path)]) == EXIT_OK
    assert "record inconsistent:" in said(capsys)
    assert main(["show", str(results_db), "--all"]) == EXIT_OK
    assert said(capsys).count("result [") == 4
    assert main(["show", str(results_db), "--game-id", "nope"]) == EXIT_USAGE
    assert main(["show"]) == EXIT_USAGE


def test_the_results_store_reads_back_by_match_and_by_game(results_db):
    store = ResultsStore(results_db)
    try:
        assert [r.game_number for r in store.games("random-setup")] == [1, 2]
        assert len(list(store.games())) == 4
        first = next(store.games("chosen-setup"))
        assert store.game(first.game_id) == first
        assert store.game("no-such-game") is None
    finally:
        store.close()


def test_verify_workers_leave_termination_and_ctrl_c_to_the_command():
    """``arbiter`` turns SIGTERM into Ctrl-C; verify's forked replay workers must not inherit that
    (each printed a KeyboardInterrupt traceback when the pool was terminated at the end)."""
    import signal

    from arbiter.cli import _sigterm_as_interrupt, replay_pool

    previous = signal.signal(signal.SIGTERM, _sigterm_as_interrupt)  # as `arbiter` installs it
    try:
        pool = replay_pool(2)
        try:
            seen = pool.map(signal.getsignal, [signal.SIGTERM, signal.SIGINT] * 4, chunksize=1)
        finally:
            pool.close()  # as verify ends it: the workers ignore SIGTERM, which terminate() sends
            pool.join()
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert seen == [signal.SIG_IGN, signal.SIG_IGN] * 4


@pytest.mark.parametrize("signame", ["SIGHUP", "SIGTERM", "SIGINT"])
def test_verify_stopped_by_a_signal_to_its_whole_group_says_interrupted_once(tmp_path, signame):
    """The terminal hangs up (or Ctrl-C, or ``kill -- -PGID``) while ``arbiter verify`` replays: the
    signal reaches its forked replay workers too. Before, a hang-up made each worker print a
    KeyboardInterrupt traceback (they inherited the command's SIGHUP handler), and SIGTERM killed
    them and left verify waiting for ever; now the command alone answers: "interrupted", 130.
    The replays are slowed (the CLI's code, a real process)."""
    import os
    import signal
    import subprocess

    db = tmp_path / "m.sqlite"
    made = subprocess.run([sys.executable, "-m", "arbiter.cli", "match", "--game", "einstein", "--engine", RANDOM,
                           "--engine", RANDOM, "--format", "games=4", "--tc", "10", "--quiet", "--db", str(db)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    slowed = ("import sys, time\nimport arbiter.cli as cli\nfast = cli._replay_check\n"
              "def slow(raw):\n"
              "    print('replaying', file=sys.stderr, flush=True)\n"
              "    time.sleep(0.5)\n"
              "    return fast(raw)\n"
              "cli._replay_check = slow\n"
              "import arbiter.records.audit as audit\nstored = audit.open_stored\n"
              "def many(path):  # replayed by the pool from 200 records on: these 4 count as 200\n"
              "    rows, heads, total = stored(path)\n"
              "    return rows, heads, max(total, 200)\n"
              "audit.open_stored = many\n"
              f"sys.exit(cli.main(['verify', {str(db)!r}]))\n")
    proc = subprocess.Popen([sys.executable, "-c", slowed], cwd=ROOT, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    assert proc.stderr.readline().strip() == "replaying"
    os.killpg(proc.pid, getattr(signal, signame))  # a hang-up, as Ctrl-C, goes to the whole foreground group
    err = proc.communicate(timeout=15)[1]  # SIGTERM: the pool waited for its killed worker for ever
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == "interrupted", err
