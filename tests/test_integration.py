"""End-to-end: real engine subprocesses over real ZeroMQ sockets, a real SQLite file, real clocks."""
from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from arbiter.clock import parse_time_control
from arbiter.dice import Dice
from arbiter.hosting import TOKEN_ENV, EngineConfig, EngineSession
from arbiter.games import load_game
from arbiter.formats.match import Match, MatchFormat
from arbiter.referee import Referee
from arbiter.records.replay import verify
from arbiter.records.store import ResultsStore, load_records

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
RANDOM = f"{PY} -m sample_engines.random_engine"


def misbehave(mode: str, after: int = 2) -> str:
    return f"{PY} {ROOT / 'tests' / 'engines' / 'misbehave.py'} {mode} --after {after}"


RUN_MARK = "ARBITER_TEST_RUN"
os.environ[RUN_MARK] = uuid.uuid4().hex  # passed to every engine this test run starts:
# The operator's way to name variables engines inherit; added to, not replaced: `make coverage`
# names COVERAGE_PROCESS_CONFIG there, and every test worker imports this module.
os.environ["ARBITER_PASS_ENV"] = ",".join(filter(None, (os.environ.get("ARBITER_PASS_ENV"), RUN_MARK)))


def engine_processes() -> list[psutil.Process]:
    """Every live process that a referee in this test run started (it carries the engine token)."""
    found = []
    for proc in psutil.process_iter():
        try:
            env = proc.environ()
            if TOKEN_ENV in env and env.get(RUN_MARK) == os.environ[RUN_MARK] \
                    and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.Error, OSError):
            pass
    return found


@pytest.fixture(autouse=True)
def no_engines_left_behind():
    yield
    left = engine_processes()
    assert not left, f"engine processes left behind: {[p.cmdline() for p in left]}"


def run_match(tmp_path, cmd_a, cmd_b, tc="60", fmt="games=1", match_id=None, **config):
    game = load_game("einstein")
    store = ResultsStore(tmp_path / "results.sqlite")
    configs = (EngineConfig(cmd_a, name="A", cwd=str(ROOT), **config), EngineConfig(cmd_b, name="B", cwd=str(ROOT)))
    match = Match(game, configs, parse_time_control(tc), MatchFormat.parse(fmt), store=store, run_dir=tmp_path,
                  seed=b"test-seed", match_id=match_id)
    try:
        return match.play()
    finally:
        store.close()


def test_olympiad_match_is_played_recorded_and_verifiable(tmp_path):
    result = run_match(tmp_path, RANDOM + " --seed 1", RANDOM + " --seed 2", tc="180", fmt="olympiad")
    assert max(result.points) == 4 or len(result.records) == 7
    assert 4 <= len(result.records) <= 7
    for record, first in zip(result.records, "ABBAABB"):
        assert record.players[0] == first  # seat 0 moves first
        assert record.reason == "normal"
        assert verify(record) == []
        decisions = [e for e in record.events if e.seat >= 0]
        assert decisions[0].kind == "setup" and decisions[1].kind == "setup"
        assert all(e.measured_ms is not None and e.measured_ms >= 0 for e in decisions)
        assert all(e.reported_ms is not None for e in decisions)
    # Durable: the same games are in SQLite and in the JSON Lines export.
    db = sqlite3.connect(tmp_path / "results.sqlite")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    rows = db.execute("SELECT game_number, reason FROM games ORDER BY game_number").fetchall()
    assert [r[0] for r in rows] == list(range(1, len(result.records) + 1))
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert [json.loads(line)["game_id"] for line in lines] == [r.game_id for r in result.records]
    assert [r.game_id for r in load_records(tmp_path / "results.sqlite")] == [r.game_id for r in result.records]


def test_between_games_only_an_engine_quiet_for_a_while_is_pinged(tmp_path, monkeypatch):
    from arbiter.hosting import session as session_module

    pings = []
    orig = EngineSession._request

    def counting(self, message, timeout, what):
        if what == "pong":
            pings.append(self.name)
        return orig(self, message, timeout, what)

    monkeypatch.setattr(EngineSession, "_request", counting)
    result = run_match(tmp_path, RANDOM + " --seed 1", RANDOM + " --seed 2", tc="180", fmt="games=3")
    assert [r.reason for r in result.records] == ["normal"] * 3
    assert pings == []  # both had just answered: no round trip before games 2 and 3
    monkeypatch.setattr(session_module, "RECENT_ANSWER", 0.0)
    result = run_match(tmp_path, RANDOM + " --seed 1", RANDOM + " --seed 2", tc="180", fmt="games=3", match_id="m2")
    assert [r.reason for r in result.records] == ["normal"] * 3
    assert sorted(pings) == ["A", "A", "B", "B"]  # quiet too long (here: at all): pinged before games 2 and 3


def test_a_reused_engine_that_stops_answering_between_games_is_replaced_not_forfeited(tmp_path):
    # It answered its last move a moment ago, so no ping checks it before game 2: its new_game
    # does, times out, and the series starts a fresh process for the seat (once).
    result = run_match(tmp_path, misbehave("hang_after_game"), RANDOM, tc="60", fmt="games=2", ready_timeout=1.0)
    assert [r.reason for r in result.records] == ["normal", "normal"], [r.detail for r in result.records]
    logs = sorted(tmp_path.rglob("engine-A-*.log"))
    assert len(logs) == 2, logs  # two processes played for A


def test_tampered_record_fails_verification(tmp_path):
    result = run_match(tmp_path, RANDOM, RANDOM)
    record = result.records[0]
    assert verify(record) == []
    chance = next(e for e in record.events if e.seat == -1 and e.kind == "chance" and e.move in "123456")
    roll = record.rolls[chance.roll]
    roll.value = (roll.value + 1) % roll.outcomes
    problems = verify(record)
    assert any(f"roll {roll.index}" in p for p in problems), problems


def test_hanging_engine_loses_on_time_within_deadline_plus_margin(tmp_path):
    game = load_game("einstein")
    engines = [EngineSession(EngineConfig(misbehave("hang", after=2), name="hang", cwd=str(ROOT)), tmp_path),
               EngineSession(EngineConfig(RANDOM, name="random", cwd=str(ROOT)), tmp_path)]
    tc = parse_time_control("1")
    try:
        for e in engines:
            e.launch()
            e.handshake()
        timestamps = []
        referee = Referee(game, engines, tc, Dice(b"s", "m|1"), match_id="m", game_number=1, margin=0.05,
                          on_event=lambda rec, st, ev, clocks: timestamps.append(time.monotonic()))
        record = referee.play()
        ended = time.monotonic()
    finally:
        for e in engines:
            e.stop()
    assert record.reason == "time" and record.forfeit_seat == 0
    assert record.returns == [-1.0, 1.0]
    # Seat 0 had used almost nothing; the flag fell ~1.05 s after its last request, not later.
    hung_for = ended - timestamps[-1]
    assert 1.0 <= hung_for < 1.0 + 0.05 + 0.5, hung_for  # slack: a loaded 2-core CI machine
    assert verify(record) == []


@pytest.mark.parametrize("mode, reason, detail", [
    ("crash", "crash", "exited with code 7"),
    ("illegal", "illegal_move", "zz99"),
    ("garbage", "protocol_error", "not msgpack"),
    ("deep", "protocol_error", "invalid message: nested too deeply"),  # was a RecursionError ending the match
    ("wrong_type", "protocol_error", "expected reply, got ready"),
    ("oversize", "disconnect", "disconnected"),
])
def test_misbehaving_engine_forfeits_with_precise_reason(tmp_path, mode, reason, detail):
    result = run_match(tmp_path, misbehave(mode), RANDOM, fmt="games=2")
    for record in result.records:
        bad_seat = record.players.index("A")
        assert record.reason == reason, record.detail
        assert detail in record.detail
        assert record.forfeit_seat == bad_seat
        assert record.returns[bad_seat] == -1.0
        assert verify(record) == []
    assert result.points == [0.0, 2.0]


def test_an_illegal_move_is_quoted_cut_in_game_over(tmp_path):
    """The detail quotes the move, cut: a 400 KB move was quoted whole (1.6 MB, each byte written
    \\x01), a game_over no engine with ZMQ_MAXMSGSIZE at the 1 MiB limit could receive, and as much
    in every record. (Moves are at most 4096 characters now; four of them quoted are still too many.)"""
    from protocol.codec import DETAIL_LIMIT

    result = run_match(tmp_path, misbehave("huge_illegal", after=0), RANDOM)
    record = result.records[0]
    assert record.reason == "illegal_move", record.detail[:200]
    assert record.detail.startswith("setup '\\x01\\x01") and record.detail.endswith("...")
    assert len(record.detail) == DETAIL_LIMIT


def test_a_move_over_4096_characters_is_a_protocol_error(tmp_path):
    """Before: a legal move padded with spaces (A&A Chess reads past them) was recorded and passed
    on to the opponent in ``last_moves``; three of 1 MB made the opponent's next request larger
    than its ZMQ_MAXMSGSIZE, and the opponent, not the padder, lost by disconnection."""
    result = run_match(tmp_path, misbehave("padded", after=2), RANDOM)
    record = result.records[0]
    assert (record.reason, record.players[record.forfeit_seat]) == ("protocol_error", "A"), record.detail
    assert record.detail == "invalid message: Expected `str` of length <= 4096 - at `$.move`"
    assert max(len(e.move) for e in record.events) < 10
    assert verify(record) == []


def test_each_games_record_counts_its_own_dropped_messages(tmp_path):
    """``chatty`` sends an ``error`` (dropped, counted) before each of its replies: every game's
    record counts that game's, not also those of the engine's earlier games."""
    result = run_match(tmp_path, misbehave("chatty"), RANDOM, fmt="games=3")
    for record in result.records:
        chatty = record.players.index("A")
        decisions = sum(1 for e in record.events if e.seat == chatty)
        assert record.dropped_messages == decisions, (record.game_number, record.dropped_messages, decisions)


def test_stale_and_foreign_replies_are_dropped(tmp_path):
    result = run_match(tmp_path, misbehave("stale", after=0), RANDOM)
    record = result.records[0]
    assert record.reason == "normal", record.detail
    assert record.dropped_messages >= 2
    assert verify(record) == []


def test_engine_without_hello_stalls_and_is_killed(tmp_path):
    result = run_match(tmp_path, misbehave("no_hello"), RANDOM, handshake_timeout=1.0)
    record = result.records[0]
    assert record.reason == "not_started" and record.detail.startswith("stall: no hello"), record.detail
    assert record.returns[record.players.index("A")] == -1.0


def test_a_hello_without_the_secret_is_named_at_the_stall(tmp_path):
    """Dropped unread, as any message without the seat's secret; an author who forgot the secret
    was told only "no hello", about an engine that had said hello."""
    result = run_match(tmp_path, misbehave("no_secret"), RANDOM, handshake_timeout=1.0)
    detail = result.records[0].detail
    assert detail.startswith("stall: no hello within the 1 s allowed: 1 hello(s) without the engine's session "
                             "secret were dropped"), detail
    assert "ARBITER_SECRET_FILE" in detail


def test_an_invalid_hello_carrying_the_secret_is_answered_malformed(tmp_path):
    """A spawned engine's hello with a field of the wrong type is its own (it carries the secret):
    it is told what is wrong at once, not left to a silent handshake timeout."""
    t0 = time.monotonic()
    result = run_match(tmp_path, misbehave("bad_hello"), RANDOM, match_id="badhello", handshake_timeout=5.0)
    record = result.records[0]
    assert record.reason == "not_started", record.detail
    assert record.detail == "protocol_error: invalid message: Expected `bool`, got `int` - at `$.wants_state`"
    assert time.monotonic() - t0 < 4.5
    log = next((tmp_path / "badhello").glob("engine-A-*.log")).read_text()
    assert "code=<ErrorCode.MALFORMED" in log and "$.wants_state" in log, log


def test_another_message_carrying_the_secret_is_answered_not_dropped(tmp_path):
    """A first message that carries the seat's secret but is not a hello (a ready, say) is the
    engine's own, as SPEC.md says: it is answered with an error naming it, not dropped unread to
    end in "no hello within the 5 s allowed"."""
    t0 = time.monotonic()
    result = run_match(tmp_path, misbehave("secret_not_hello"), RANDOM, match_id="nothello", handshake_timeout=5.0)
    record = result.records[0]
    assert record.reason == "not_started", record.detail
    assert record.detail == "protocol_error: expected hello, got ready", record.detail
    assert time.monotonic() - t0 < 4.5
    log = next((tmp_path / "nothello").glob("engine-A-*.log")).read_text()
    assert "code=<ErrorCode.UNEXPECTED" in log and "expected hello, got ready" in log, log


def test_engine_for_another_game_is_rejected(tmp_path):
    result = run_match(tmp_path, misbehave("wrong_game"), RANDOM)
    record = result.records[0]
    assert record.reason == "not_started", record.detail
    assert record.detail.startswith("protocol_error: engine does not play einstein"), record.detail


def test_double_forked_grandchild_is_killed(tmp_path):
    marker = uuid.uuid4().hex
    result = run_match(tmp_path, misbehave("double_fork", after=1000) + f" --marker {marker}", RANDOM,
                       match_id="fork")
    assert result.records[0].reason == "normal"
    log = next((tmp_path / "fork").glob("engine-A-*.log")).read_text()
    assert "grandchild started" in log  # it did escape its parent's session...
    left = [p for p in psutil.process_iter(["cmdline", "status"])
            if marker in (p.info["cmdline"] or []) and p.info["status"] != psutil.STATUS_ZOMBIE]
    assert not left, left  # ...and is gone all the same


def test_engine_over_tcp(tmp_path):
    result = run_match(tmp_path, RANDOM, RANDOM, endpoint="tcp://127.0.0.1:*")
    assert result.records[0].reason == "normal"
    assert verify(result.records[0]) == []


def test_remote_engine_connects_over_tcp(tmp_path):
    import socket
    import subprocess

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    remote = subprocess.Popen([PY, "-m", "sample_engines.random_engine", "--endpoint", f"tcp://127.0.0.1:{port}"],
                              cwd=ROOT)
    try:
        game = load_game("einstein")
        configs = (EngineConfig(None, name="remote", endpoint=f"tcp://127.0.0.1:{port}"),
                   EngineConfig(RANDOM, name="local", cwd=str(ROOT)))
        result = Match(game, configs, parse_time_control("60"), MatchFormat.parse("games=2"), run_dir=tmp_path).play()
        assert [r.reason for r in result.records] == ["normal", "normal"]
        assert remote.wait(5) == 0  # the referee's quit ended it
    finally:
        remote.kill()


def test_master_seed_reproduces_a_game_exactly(tmp_path):
    a = run_match(tmp_path / "a", RANDOM + " --seed 5", RANDOM + " --seed 6", match_id="fixed")
    b = run_match(tmp_path / "b", RANDOM + " --seed 5", RANDOM + " --seed 6", match_id="fixed")
    c = run_match(tmp_path / "c", RANDOM + " --seed 5", RANDOM + " --seed 6", match_id="other")
    ra, rb, rc = a.records[0], b.records[0], c.records[0]
    assert ra.dice_seed == rb.dice_seed != rc.dice_seed
    assert [e.move for e in ra.events] == [e.move for e in rb.events]
    assert ra.rolls == rb.rolls


def test_cli_match_show_and_verify(tmp_path):
    import subprocess

    db = tmp_path / "r.sqlite"
    env = {**os.environ, "COLUMNS": "120"}
    run = subprocess.run([PY, "-m", "arbiter.cli", "match", "--game", "einstein", "--engine", RANDOM,
                          "--engine", RANDOM, "--tc", "30+1", "--format", "bo3", "--db", str(db), "--quiet"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "match" in run.stdout
    show = subprocess.run([PY, "-m", "arbiter.cli", "show", str(db)], cwd=ROOT, capture_output=True, text=True)
    assert show.returncode == 0 and "setup" in show.stdout and "roll" in show.stdout, show.stdout + show.stderr
    ok = subprocess.run([PY, "-m", "arbiter.cli", "verify", str(tmp_path / "r.jsonl")], cwd=ROOT,
                        capture_output=True, text=True)
    assert ok.returncode == 0 and "consistent" in ok.stdout, ok.stdout + ok.stderr
    bad = subprocess.run([PY, "-m", "arbiter.cli", "match", "--game", "einstein", "--engine", RANDOM,
                          "--engine", RANDOM, "--tc", "40/", "--db", str(db)], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 2 and "40/" in bad.stderr


def test_the_readme_demo_plays_its_olympiad_match(tmp_path):
    """``make demo`` (the README's first command) runs ``arbiter demo``: an olympiad match of the
    sample engines, with the live display, saved and verifiable. (It once failed at its start:
    the demo built its own argument set and missed an option ``match`` had gained.)"""
    import sqlite3
    import subprocess

    db = tmp_path / "results.sqlite"
    run = subprocess.run([PY, "-m", "arbiter.cli", "demo", "--db", str(db)], cwd=ROOT,
                         env={**os.environ, "COLUMNS": "120"}, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "expectimax" in run.stdout and ("match won by" in run.stdout or "match drawn" in run.stdout), run.stdout
    conn = sqlite3.connect(db)
    games = conn.execute("SELECT COUNT(*) FROM games").fetchone()[0]
    conn.close()
    assert 4 <= games <= 7  # best of 7, first to 4
    ok = subprocess.run([PY, "-m", "arbiter.cli", "verify", str(db)], cwd=ROOT, capture_output=True, text=True)
    assert ok.returncode == 0 and "consistent" in ok.stdout, ok.stdout + ok.stderr


def test_engines_die_when_the_referee_is_killed(tmp_path):
    import signal
    import subprocess

    referee = subprocess.Popen([PY, "-m", "arbiter.cli", "match", "--game", "einstein", "--engine", misbehave("hang", 0),
                                "--engine", RANDOM, "--tc", "inf", "--db", str(tmp_path / "r.sqlite"), "--quiet"],
                               cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    def engines() -> set[str]:  # an engine is a tree of processes (its sandbox too) with one token
        return {p.environ()[TOKEN_ENV] for p in engine_processes()}

    deadline = time.monotonic() + 20
    while len(engines()) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(engines()) == 2
    referee.send_signal(signal.SIGKILL)
    referee.wait()
    deadline = time.monotonic() + 5
    while engine_processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert engine_processes() == []


def test_event_hooks_run_once_the_next_request_is_out(tmp_path):
    """A hook's few microseconds cost more between a reply and the next request (caches cold after
    an engine's search; the live feed's hook cost ~19 us a decision there): every hook of a game
    that goes on runs with the next decision already asked, each event once and in order."""
    game = load_game("einstein")
    engines = [EngineSession(EngineConfig(RANDOM, name=f"random{i}", cwd=str(ROOT)), tmp_path) for i in (1, 2)]
    seen: list[tuple[int, bool, bool]] = []  # (ply, game over, the acting seats asked already)

    def hook(record, state, event, clocks):
        over = state.is_terminal()
        asked = not over and all(engines[s].pending is not None for s in state.acting_seats())
        seen.append((event.ply, over, asked))
    try:
        for e in engines:
            e.launch()
            e.handshake()
        record = Referee(game, engines, parse_time_control("60"), Dice(b"s", "m|1"), match_id="m", game_number=1,
                         on_event=hook).play()
    finally:
        for e in engines:
            e.stop()
    assert record.reason == "normal", record.detail
    assert [ply for ply, _, _ in seen] == list(range(len(record.events)))
    assert all(asked for _, over, asked in seen if not over)
    assert seen[-1][1]  # the last ones when the game ended


def test_deferred_hook_work_runs_while_engines_think_and_is_never_charged_to_them(tmp_path):
    """A hook's slow work (the live feed's drawing) is done after the next request is out; a reply
    that arrives meanwhile is timed from when the work began, so the engine is not charged for it."""
    game = load_game("einstein")
    tc = parse_time_control("60")
    engines = [EngineSession(EngineConfig(RANDOM, name=f"random{i}", cwd=str(ROOT)), tmp_path) for i in (1, 2)]
    calls: list[tuple[int, int]] = []  # (plies when the work ran, plies when it was asked for)
    asked: list[int] = []

    def slow_work() -> bool:
        calls.append((len(referee.record.events), asked[-1]))
        time.sleep(0.03)  # far longer than a random engine's reply
        return True

    def hook(record, state, event, clocks):
        asked.append(len(record.events))
        return slow_work
    try:
        for e in engines:
            e.launch()
            e.handshake()
        referee = Referee(game, engines, tc, Dice(b"s", "m|1"), match_id="m", game_number=1, on_event=hook)
        record = referee.play()
    finally:
        for e in engines:
            e.stop()
    assert record.reason == "normal", record.detail
    decisions = [e for e in record.events if e.seat >= 0]
    moves = [e.ply for e in decisions if e.kind != "setup"]  # the set-up is asked before any event
    assert [ran for ran, _ in calls] == moves  # once per request, right after it: not once per event
    assert all(ran == wanted for ran, wanted in calls)  # the position did not move on before it ran
    # charged the work, every decision would take >= 30 ms; an engine descheduled on a busy machine
    # can take that long once (CI: one reply took 59.7 ms)
    slow = [e.measured_ms for e in decisions if e.measured_ms >= 30]
    assert len(slow) <= len(decisions) // 10, [e.measured_ms for e in decisions]


def test_a_reply_sent_before_its_request_is_dropped(tmp_path):
    """``seq`` could be guessed: an engine sent its set-up with ``ready``, once for each seq the
    set-up request could have, and the one that matched was taken as the answer, charged 0 ms. The
    numbers now grow by random steps: the replies sent ahead are stale, and the engine's own
    answer, 60 ms later, is the one that counts."""
    result = run_match(tmp_path, misbehave("presend") + " --delay 0.06", RANDOM)
    record = result.records[0]
    assert record.reason == "normal", record.detail
    setup = next(e for e in record.events if e.kind == "setup" and record.players[e.seat] == "A")
    assert setup.measured_ms >= 60, setup
    assert record.dropped_messages == 3
    assert verify(record) == []
