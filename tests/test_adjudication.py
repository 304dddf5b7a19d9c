"""Adjudication with real engine subprocesses: the ply limit and the resign rule end games with
reason ``adjudicated`` and the rule in ``detail``; ``verify`` re-judges the record by the rules it
carries; bad rules are refused before anything starts (exit 2 naming the setting)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from arbiter.adjudication import Adjudication
from arbiter.clock import parse_time_control
from arbiter.formats.match import Series
from arbiter.games import load_game
from arbiter.hosting import EngineConfig
from arbiter.records import from_json, to_json
from arbiter.records.replay import verify
from tournaments.config import ConfigError, parse_config

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
SCORER = f"{PY} {ROOT / 'tests' / 'engines' / 'scorer.py'}"
RANDOM = f"{PY} -m sample_engines.random_engine"


def play(tmp_path, options: list[dict], rules: Adjudication, seatings=([0, 1],), game: str = "einstein"):
    """Games between scorer engines with ``options`` (one dict per engine) under ``rules``."""
    configs = [EngineConfig(SCORER, name=f"e{i}", cwd=str(ROOT), options=o) for i, o in enumerate(options)]
    # a fixed match id: the dice stream and the engines' per-game randomness derive from it, so every
    # run plays the same games (with a fresh id, a game could end by the rules before a rule triggers)
    series = Series(load_game(game), configs, parse_time_control("60"), run_dir=tmp_path, seed=b"adjudication",
                    adjudication=rules, match_id="adjudication-test")
    try:
        return [series.play_game(n, list(seating)) for n, seating in enumerate(seatings, 1)]
    finally:
        series.close()


def decisions(record) -> list:
    return [e for e in record.events if e.seat >= 0]


def test_ply_limit_ends_an_unfinished_game_as_a_draw(tmp_path):
    (record,) = play(tmp_path, [{}, {}], Adjudication(max_plies=5))
    assert (record.reason, record.returns, record.forfeit_seat) == ("adjudicated", [0.0, 0.0], None)
    assert record.detail == "ply limit: 5 decisions played"
    assert len(decisions(record)) == 5 and record.events[-1].seat >= 0  # stopped right after the 5th
    assert not load_game("einstein").from_text(record.final_position).is_terminal()
    assert record.adjudication == Adjudication(max_plies=5)
    assert verify(record) == []
    again = from_json(to_json(record))  # the rules travel with the record
    assert again.adjudication == record.adjudication and verify(again) == []


def test_resign_rule_gives_the_game_to_the_side_both_engines_say_is_ahead(tmp_path):
    rules = Adjudication(resign_moves=3, resign_score=400)
    records = play(tmp_path, [{"score": 500}, {"score": "-500"}], rules, seatings=([0, 1], [1, 0]))
    for record, a_seat in zip(records, (0, 1)):
        assert record.reason == "adjudicated" and record.forfeit_seat is None, record.detail
        assert record.returns[a_seat] == 1.0 and record.returns[1 - a_seat] == -1.0  # engine 0 reported +500
        assert record.detail == (f"resign rule: seat {1 - a_seat} reported a score of -400 or less and seat {a_seat} "
                                 f"400 or more for 3 consecutive moves each")
        counts = [0, 0]  # the game ends at the first decision after which each seat has made 3
        for i, event in enumerate(decisions(record)):
            counts[event.seat] += 1
            if min(counts) >= 3:
                assert i == len(decisions(record)) - 1
        assert min(counts) == 3
        assert verify(record) == []


def test_resign_rule_counts_consecutive_scored_moves_only(tmp_path):
    """Engine 0 reports nothing for its first 2 decisions: its run of 3 ends at its 5th."""
    (record,) = play(tmp_path, [{"score": 900, "from_move": 3}, {"score": -900}],
                     Adjudication(resign_moves=3, resign_score=400))
    assert (record.reason, record.returns) == ("adjudicated", [1.0, -1.0]), record.detail
    mine = [e for e in decisions(record) if e.seat == 0]
    assert len(mine) == 5 and [e.info.score for e in mine] == [None, None, 900.0, 900.0, 900.0]
    assert verify(record) == []


@pytest.mark.parametrize("options", [
    [{"score": 500}, {"score": 500}],              # both say they are winning: no agreement
    [{"score": 500}, {"score": -300}],             # the loser's score is not past the threshold
    [{"score": 500}, {"score": -500, "silent": True}],  # no score from one side
])
def test_resign_rule_needs_both_engines_to_agree_past_the_threshold(tmp_path, options):
    (record,) = play(tmp_path, options, Adjudication(max_plies=12, resign_moves=2, resign_score=400))
    if record.reason == "normal":  # the game may end by the rules first; never by the resign rule
        assert len(decisions(record)) <= 12
    else:
        assert (record.reason, record.detail, record.returns) == ("adjudicated", "ply limit: 12 decisions played",
                                                                  [0.0, 0.0])
    assert verify(record) == []


def test_verify_rejudges_adjudicated_records(tmp_path):
    (resigned,) = play(tmp_path, [{"score": 500}, {"score": -500}], Adjudication(resign_moves=2, resign_score=100))
    assert verify(resigned) == []
    flipped = msgspec.structs.replace(resigned, returns=[-1.0, 1.0])
    assert any("the rules give [1.0, -1.0]" in p for p in verify(flipped))
    stricter = msgspec.structs.replace(resigned, adjudication=Adjudication(resign_moves=9, resign_score=100))
    assert "the record says the game was adjudicated but its rules do not end it there" in verify(stricter)
    unruled = msgspec.structs.replace(resigned, adjudication=msgspec.UNSET)
    assert "the record says the game was adjudicated but holds no rules" in verify(unruled)
    earlier = msgspec.structs.replace(resigned, adjudication=Adjudication(max_plies=2))
    assert any("end the game after event" in p and "the record goes on" in p for p in verify(earlier))
    as_forfeit = msgspec.structs.replace(resigned, reason="time", forfeit_seat=1)
    assert any("end the game before the 'time'" in p for p in verify(as_forfeit))


def test_ply_limit_in_a_cooperative_game_keeps_the_points_so_far(tmp_path):
    (record,) = play(tmp_path, [{}, {}], Adjudication(max_plies=3), game="catalonia")
    assert record.reason == "adjudicated" and record.returns[0] == record.returns[1]
    state = load_game("catalonia").from_text(record.final_position)
    assert record.returns == state.truncated_returns()
    assert verify(record) == []


# --- bad rules: refused before any engine starts ----------------------------------------------


@pytest.mark.parametrize("flags, words", [
    (["--resign-moves", "3"], "--resign-score: the resign rule needs both"),
    (["--resign-score", "300"], "--resign-moves: the resign rule needs both"),
    (["--resign-moves", "3", "--resign-score", "-5"], "--resign-score"),
    (["--max-plies", "-1"], "--max-plies: must be at least 1"),
    (["--max-plies", "many"], "--max-plies: invalid int value"),
    # not finite: a rule that never fires, stored as null: every record then failed verify ("not a game record")
    (["--resign-moves", "3", "--resign-score", "nan"], "--resign-score: must be a finite number, not nan"),
    (["--resign-moves", "3", "--resign-score", "inf"], "--resign-score: must be a finite number, not inf"),
])
def test_bad_adjudication_flags_exit_2_naming_the_flag(tmp_path, flags, words):
    run = subprocess.run([PY, "-m", "arbiter.cli", "match", "--game", "einstein", "--engine", RANDOM,
                          "--engine", RANDOM, "--db", str(tmp_path / "r.sqlite"), "--quiet", *flags],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run.stdout + run.stderr
    assert words in " ".join((run.stdout + run.stderr).split())
    assert not (tmp_path / "r.sqlite").exists()


TOURNAMENT = """
game = "{game}"
{extra}
[adjudication]
{rules}

[[engines]]
name = "a"
command = "{{python}} -m sample_engines.random_engine"

[[engines]]
name = "b"
command = "{{python}} -m sample_engines.random_engine"
"""


@pytest.mark.parametrize("game, rules, key, words", [
    ("catalonia", "resign_moves = 3\nresign_score = 100", "adjudication.resign_moves",
     "the resign rule is for two-seat zero-sum games; catalonia is 2-seat identical"),
    ("einstein", "resign_moves = 3", "adjudication.resign_score", "needs both"),
    ("einstein", "max_plies = -4", "adjudication.max_plies", "at least 1"),
    ("einstein", 'max_plies = "40"', "adjudication.max_plies", "expected an integer"),
    ("einstein", "max_ply = 40", "adjudication.max_ply", "did you mean 'max_plies'"),
])
def test_bad_adjudication_tables_name_the_key(game, rules, key, words):
    with pytest.raises(ConfigError) as info:
        parse_config(TOURNAMENT.format(game=game, extra="", rules=rules), "t.toml")
    assert f": {key}: " in str(info.value) and words in str(info.value), str(info.value)


def test_adjudication_table_is_read_and_changes_the_fingerprint():
    cfg = parse_config(TOURNAMENT.format(game="einstein", extra="", rules="max_plies = 40\nresign_moves = 4\n"
                                                                          "resign_score = 2.5"), "t.toml")
    assert cfg.adjudication == Adjudication(max_plies=40, resign_moves=4, resign_score=2.5)
    plain = TOURNAMENT.format(game="einstein", extra="", rules="").replace("[adjudication]", "")
    assert parse_config(plain, "t.toml").adjudication is None
    assert parse_config(plain, "t.toml").fingerprint() != cfg.fingerprint()


def test_tournament_with_a_ply_limit_adjudicates_and_reports(tmp_path):
    text = TOURNAMENT.format(game="einstein", extra=f'match = "games=2"\noutput = "{tmp_path / "t.sqlite"}"\n'
                                                    f'concurrency = 1\nseed = 5\n', rules="max_plies = 4")
    (tmp_path / "t.toml").write_text(text)
    run = subprocess.run([PY, "-m", "tournaments", "run", str(tmp_path / "t.toml"), "-q"], cwd=ROOT,
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "adjudicated" in run.stdout  # the report's terminations table
    from arbiter.records.store import load_records

    records = load_records(tmp_path / "t.sqlite")
    assert len(records) == 2
    assert all(r.reason == "adjudicated" and r.returns == [0.0, 0.0] and verify(r) == [] for r in records)
