"""Forfeit reasons the integration tests do not reach: a failed send (engine gone: ``crash``;
connection gone but process alive: ``disconnect``), silence under an unlimited clock (``stall``)
and a wrong answer to ``new_game`` (``protocol_error``). Real engine subprocesses, real sockets."""
from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import msgspec
import pytest

from arbiter import referee as referee_module
from arbiter.clock import parse_time_control
from arbiter.dice import Dice
from arbiter.hosting import EngineConfig, EngineSession
from arbiter.games import load_game
from arbiter.referee import Referee
from arbiter.records.replay import verify

ROOT = Path(__file__).resolve().parent.parent
RANDOM = f"{sys.executable} -m sample_engines.random_engine"


def misbehave(mode: str, after: int = 2) -> str:
    return f"{sys.executable} {ROOT / 'tests' / 'engines' / 'misbehave.py'} {mode} --after {after}"


def play(tmp_path, commands: list[str], tc: str = "60"):
    """One EinStein game between engines started from ``commands``; (record, seconds it took)."""
    engines = [EngineSession(EngineConfig(cmd, name=f"e{i}", cwd=str(ROOT)), tmp_path)
               for i, cmd in enumerate(commands)]
    try:
        for e in engines:
            e.launch()
            e.handshake()
        t0 = time.monotonic()
        record = Referee(load_game("einstein"), engines, parse_time_control(tc), Dice(b"forfeits", "f|1"),
                         match_id="f", game_number=1).play()
        return record, time.monotonic() - t0
    finally:
        for e in engines:
            e.stop()


def test_send_to_an_engine_that_exited_is_a_crash(tmp_path):
    # Seat 0 replies to its first move request, then exits; the slow opponent gives the referee
    # time to see the peer leave, so the next request to seat 0 usually cannot be sent. (In a
    # sandbox the exit reaches the referee's socket a moment later, and the request may be
    # accepted and lost; then the referee finds the process gone while it waits: a crash too.)
    record, _ = play(tmp_path, [misbehave("exit_after_reply", after=1), misbehave("slow", after=99)])
    assert (record.reason, record.forfeit_seat) == ("crash", 0), record.detail
    assert "engine process exited with code 0" in record.detail
    assert record.returns == [-1.0, 1.0]
    assert verify(record) == []


def test_send_to_a_live_engine_that_closed_its_connection_is_a_disconnect(tmp_path):
    record, _ = play(tmp_path, [misbehave("close_after_reply", after=1), misbehave("slow", after=99)])
    assert (record.reason, record.forfeit_seat) == ("disconnect", 0), record.detail
    # found by the failed send, or first by the socket monitor's watcher: a disconnect either way
    assert "cannot send to the engine" in record.detail or "socket disconnected" in record.detail
    assert verify(record) == []


def test_silence_under_an_unlimited_clock_is_a_stall(tmp_path, monkeypatch):
    monkeypatch.setattr(referee_module, "UNLIMITED_STALL", 0.4)
    record, took = play(tmp_path, [RANDOM, misbehave("hang", after=1)], tc="inf")
    assert (record.reason, record.forfeit_seat) == ("stall", 1), record.detail
    assert "no reply within 400 ms" in record.detail
    assert took < 5, took  # the stall timeout, not the clock (there is none), ended the game
    assert verify(record) == []


def test_a_reply_read_after_the_deadline_forfeits_on_time_naming_the_real_allowance(tmp_path, monkeypatch):
    # The referee is descheduled between its deadline check and reading the replies (as on an
    # overloaded machine): the replies arrive in time but are read too late, so the clock's own
    # check, not the watchdog, drops the flag, and the record must say what was allowed.
    orig, delayed = referee_module.wait_any, []

    def late_wait_any(sessions, timeout_ms):
        if not delayed:
            delayed.append(True)
            time.sleep(0.25)
        return orig(sessions, timeout_ms)

    monkeypatch.setattr(referee_module, "wait_any", late_wait_any)
    record, _ = play(tmp_path, [RANDOM, RANDOM], tc="st=0.05")
    assert record.reason == "time", record.detail
    # the set-up asks both seats at once: both replies were read late, and both seats forfeit
    assert "took " in record.detail and "no reply" not in record.detail, record.detail
    assert "allowed 50 ms + 50 ms margin" in record.detail
    assert verify(record) == []


def test_the_referees_own_freezing_is_not_charged_to_the_engine(tmp_path, monkeypatch):
    # Freezing an engine after its reply is the referee's work (a psutil tree walk, or a control
    # group sweep, slower on a loaded machine); made slow here, it must not flag a fast engine.
    from arbiter.hosting.process import EngineProcess

    orig = EngineProcess.freeze

    def slow_freeze(self, frozen):
        if frozen and not self._frozen:
            time.sleep(0.12)
        orig(self, frozen)

    monkeypatch.setattr(EngineProcess, "freeze", slow_freeze)
    record, _ = play(tmp_path, [RANDOM, RANDOM], tc="st=0.05")
    assert record.reason == "normal", record.detail
    assert max(e.measured_ms for e in record.events if e.seat >= 0) < 100
    assert verify(record) == []


@pytest.mark.parametrize("seat", [0, 1])
def test_an_answer_other_than_ready_to_new_game_is_a_protocol_error(tmp_path, seat):
    commands = [RANDOM, RANDOM]
    commands[seat] = misbehave("not_ready")
    record, _ = play(tmp_path, commands)
    assert (record.reason, record.forfeit_seat) == ("protocol_error", seat), record.detail
    assert record.detail == "expected ready, got pong"
    assert record.events == []
    assert verify(record) == []


def test_a_wrong_answers_type_is_named_as_on_the_wire(tmp_path):
    """The detail (sent to the engine in game_over) names the type an engine author sent,
    ``game_over``, not the referee's class name (it said "gameover")."""
    record, _ = play(tmp_path, [misbehave("game_over_for_ready"), RANDOM])
    assert (record.reason, record.forfeit_seat) == ("protocol_error", 0), record.detail
    assert record.detail == "expected ready, got game_over"


def test_every_seat_is_told_of_the_game_at_once(tmp_path):
    """``new_game`` goes to all seats before the referee waits for any ``ready``: two engines that
    take 1 s each to get ready start the game after ~1 s, not 2 s (the slack, 0.9 s, is for the
    game itself on a loaded machine)."""
    slow = f"{sys.executable} {ROOT / 'tests' / 'engines' / 'misbehave.py'} slow_ready --after 99 --delay 1.0"
    record, took = play(tmp_path, [slow, slow])
    assert record.reason == "normal", record.detail
    assert 1.0 <= took < 1.9, took


def test_both_seats_failing_new_game_both_forfeit(tmp_path):
    """Neither wins by the other's fault while failing itself (seat 1 once won this game)."""
    record, _ = play(tmp_path, [misbehave("not_ready"), misbehave("not_ready")])
    assert (record.reason, record.forfeit_seat, record.forfeit_seats) == ("protocol_error", 0, [0, 1]), record.detail
    assert record.returns == [-1.0, -1.0] and record.winner() is None
    assert record.detail == ("seat 0 (e0): protocol_error: expected ready, got pong; "
                             "seat 1 (e1): protocol_error: expected ready, got pong")
    assert verify(record) == []
    tampered = msgspec.structs.replace(record, returns=[-1.0, 1.0])
    assert verify(tampered) == ["recorded returns [-1.0, 1.0] differ from the [-1.0, -1.0] of a forfeit by seats [0, 1]"]


def test_an_engine_speaking_another_protocol_version_loses_every_game_unstarted(tmp_path):
    """The handshake refuses it (reject), the series records each game as lost before it began."""
    from arbiter.formats.match import Match, MatchFormat

    configs = (EngineConfig(misbehave("old_protocol"), name="old", cwd=str(ROOT)),
               EngineConfig(RANDOM, name="random", cwd=str(ROOT)))
    result = Match(load_game("einstein"), configs, parse_time_control("60"), MatchFormat.parse("games=2"),
                   run_dir=tmp_path, seed=b"old").play()
    assert result.points == [0.0, 2.0]
    for record in result.records:
        assert (record.reason, record.players[record.forfeit_seat]) == ("not_started", "old")
        assert record.detail == "protocol_error: engine speaks protocol version 999"
        assert record.events == [] and verify(record) == []


def test_errors_and_pings_from_an_engine_are_not_answers(tmp_path):
    record, _ = play(tmp_path, [misbehave("chatty", after=0), RANDOM])
    assert record.reason == "normal", record.detail
    decisions = sum(1 for e in record.events if e.seat == 0)
    assert record.dropped_messages == decisions  # each error noted and dropped; each ping answered
    assert verify(record) == []


def test_a_time_forfeit_names_the_answer_dropped_for_its_seq(tmp_path):
    # A reply that echoes the wrong seq is dropped; the engine then loses on time. The detail says
    # what was dropped and what was awaited: "no reply" alone leaves its author guessing.
    record, _ = play(tmp_path, [misbehave("wrong_seq", after=1), RANDOM], tc="1")
    assert (record.reason, record.forfeit_seat) == ("time", 0), record.detail
    found = re.search(r"no reply within \d+ ms \(.*\); dropped 1 message that did not echo the request's "
                      r"game_id '(.+)' and seq (\d+): a reply with game_id '(.+)' and seq (\d+)$", record.detail)
    assert found, record.detail
    assert found[1] == found[3] and int(found[4]) == int(found[2]) + 1, record.detail
    assert record.dropped_messages == 1
    assert verify(record) == []
