"""Catalonia through the real referee: engine subprocesses, the coop format, forfeits, records."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from arbiter.clock import parse_time_control
from arbiter.formats.coop import coop_stream, run_coop
from arbiter.hosting import EngineConfig
from arbiter.games import load_game
from arbiter.records.replay import replay, verify
from arbiter.records.store import ResultsStore, load_records

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
RANDOM = f"{PY} -m sample_engines.random_engine"
# A fixed effort (what 20 ms allows here), not a time: the same games however slow the machine
# (make coverage traces the engines, ~3x slower; at 20 ms they then lost by the five-turn rule).
PLANNER = f"{PY} -m sample_engines.catalonia_planner --movetime 2 --evaluations 150"
SEED = bytes.fromhex("c0ffee")


def misbehave(mode: str, after: int = 2) -> str:
    return f"{PY} {ROOT / 'tests' / 'engines' / 'misbehave.py'} {mode} --after {after}"


def config(command: str, name: str) -> EngineConfig:
    return EngineConfig(command, name=name, cwd=str(ROOT))


def coop(tmp_path, commands, games=2, tc="60", **options):
    game = load_game("catalonia", **options)
    store = ResultsStore(tmp_path / "results.sqlite")
    configs = [config(cmd, name) for cmd, name in commands]
    try:
        return run_coop(game, configs, parse_time_control(tc), games, master_seed=SEED, store=store,
                        run_dir=tmp_path)
    finally:
        store.close()


def test_planner_pair_plays_full_games_through_the_referee(tmp_path):
    result = coop(tmp_path, [(PLANNER, "planner")], games=2)
    assert result.players == ("planner#1", "planner#2")
    assert [g.players for g in result.games] == [["planner#1", "planner#2"], ["planner#2", "planner#1"]]
    for g, record in zip(result.games, load_records(tmp_path / "results.sqlite")):
        assert g.reason == "normal" and "turn limit (15 turns)" in g.detail, g.detail
        assert record.returns[0] == record.returns[1] == g.score > 0
        assert record.dice_stream == coop_stream(g.number)
        assert verify(record) == []
        kinds = {e.kind for e in record.events}
        assert {"move", "chance"} <= kinds
        decisions = [e for e in record.events if e.seat >= 0]
        assert all(e.measured_ms is not None and e.info is not None for e in decisions)
        # The record shows every phase: replaying it gives the per-turn scores and the chains.
        *_, (events, state) = replay(record)
        assert len(state.turn_scores()) == 15 and state.total_score() == g.score
        assert any("chain of" in line for line in state.log())
        # ... and the record itself carries it, event by event, without a replay.
        notes = "\n".join(e.note for e in record.events if e.note)
        assert notes.count("chain of") == sum(1 for line in state.log() if "chain of" in line)
        assert "the bomb hits" in notes or "no bomb" in notes
    assert result.count == 2 and result.forfeit_count == 0 and result.five_turn_losses == 0
    assert result.mean == sum(g.score for g in result.games) / 2


def test_random_pair_losses_by_the_five_turn_rule_are_counted(tmp_path):
    result = coop(tmp_path, [(RANDOM + " --seed 1", "r1"), (RANDOM + " --seed 2", "r2")], games=6,
                  turns=20, random=False)
    assert result.five_turn_losses >= 1
    for g in result.games:
        assert g.reason == "normal"
        if g.lost_by_rule:
            assert g.score == 0 and "five-turn rule" in g.detail and g.events >= 10  # five turns of two moves, and any bomb targets in them
    for record in load_records(tmp_path / "results.sqlite"):
        assert record.options == {"turns": 20, "random": False, "max_pits": 20}
        assert verify(record) == []


@pytest.mark.parametrize("mode, reason, detail", [
    ("illegal", "illegal_move", "zz99"),
    ("crash", "crash", "exited with code 7"),
])
def test_misbehaving_engine_forfeits_a_loss_for_the_pair(tmp_path, mode, reason, detail):
    result = coop(tmp_path, [(misbehave(mode), "bad"), (RANDOM, "good")], games=2)
    for g, record in zip(result.games, load_records(tmp_path / "results.sqlite")):
        bad_seat = record.players.index("bad")
        assert record.reason == reason and detail in record.detail
        assert record.forfeit_seat == bad_seat
        assert record.returns == [0.0, 0.0]  # both lose: cooperative
        assert g.forfeited and not g.lost_by_rule
        assert verify(record) == []
    assert result.forfeits == {reason: 2} and result.mean == 0.0


def test_hanging_engine_loses_on_time_for_both(tmp_path):
    result = coop(tmp_path, [(misbehave("hang", after=1), "hang"), (RANDOM, "good")], games=1, tc="1")
    record = load_records(tmp_path / "results.sqlite")[0]
    assert record.reason == "time" and record.players[record.forfeit_seat] == "hang"
    assert record.returns == [0.0, 0.0] and result.forfeits == {"time": 1}
    assert verify(record) == []


def test_same_master_seed_same_dice(tmp_path):
    a = coop(tmp_path / "a", [(RANDOM + " --seed 3", "x"), (RANDOM + " --seed 4", "y")], games=1)
    b = coop(tmp_path / "b", [(RANDOM + " --seed 3", "x"), (RANDOM + " --seed 4", "y")], games=1)
    ra = load_records(tmp_path / "a" / "results.sqlite")[0]
    rb = load_records(tmp_path / "b" / "results.sqlite")[0]
    assert ra.match_id != rb.match_id and ra.dice_seed == rb.dice_seed
    assert [e.move for e in ra.events] == [e.move for e in rb.events]
    assert a.scores == b.scores


def test_coop_refuses_competitive_games(tmp_path):
    with pytest.raises(ValueError, match="cooperative"):
        run_coop(load_game("einstein"), [config(RANDOM, "r")], parse_time_control("60"), 1, run_dir=tmp_path)


def test_cli_coop_show_and_verify(tmp_path):
    db = tmp_path / "r.sqlite"
    env = {**os.environ, "COLUMNS": "160"}
    run = subprocess.run([PY, "-m", "arbiter.cli", "coop", "--game", "catalonia", "--engine", PLANNER,
                          "--games", "2", "--seed", "0a0b", "--tc", "60", "--db", str(db), "--quiet"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "game 1/2: catalonia_planner#1 (white) + catalonia_planner#2 (black)" in run.stdout
    assert "game 2/2: catalonia_planner#2 (white)" in run.stdout
    assert "mean score" in run.stdout and "score distribution" in run.stdout
    show = subprocess.run([PY, "-m", "arbiter.cli", "show", str(db)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert show.returncode == 0, show.stderr
    for text in ("roll →", "since the previous decision", "scores", "chain this turn", "becomes a pit"):
        assert text in show.stdout, text
    ok = subprocess.run([PY, "-m", "arbiter.cli", "verify", str(tmp_path / "r.jsonl")], cwd=ROOT,
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and "2 of 2 records consistent" in ok.stdout, ok.stdout
    bad = subprocess.run([PY, "-m", "arbiter.cli", "coop", "--game", "einstein", "--engine", RANDOM, "--db",
                          str(db)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "cooperative" in bad.stderr


def test_the_score_distribution_gives_each_score_one_range():
    """Its ranges were rounded ends of fractional buckets: "1937–2034", "2034–2131" (a score of 2034
    in which?). Each range now holds the whole scores its bucket counts."""
    from types import SimpleNamespace

    from rich.console import Console

    from arbiter.cli import coop_distribution_table

    scores = [0, 0] + list(range(1937, 2716, 7)) + [2716]  # buckets 97.5 wide: ends at .5
    console = Console(width=100, record=True)
    console.print(coop_distribution_table(SimpleNamespace(scores=scores)))
    rows = [line.strip("│ ").split("│") for line in console.export_text().splitlines() if line.startswith("│")]
    ranges = [[int(x) for x in label.strip().split("–")] for label, *_ in rows[1:]]
    counted = {s: sum(lo <= s <= hi for lo, hi in ranges) for s in scores if s > 0}
    assert rows[0][0].strip() == "0" and int(rows[0][1]) == 2
    assert set(counted.values()) == {1}, ranges  # every score in exactly one range
    assert all(a[1] + 1 == b[0] for a, b in zip(ranges, ranges[1:])), ranges  # and the ranges meet, not overlap
    assert sum(int(count) for _, count, *_ in rows[1:]) == len(scores) - 2
    for (lo, hi), (_, count, *_) in zip(ranges, rows[1:]):
        assert int(count) == sum(lo <= s <= hi for s in scores), (lo, hi)

