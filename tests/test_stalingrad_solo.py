"""Stalingrad through the real referee and the solo format: hidden information in real requests,
whole games with engine subprocesses, replay of records, shared dice, and the statistics helpers.

Run as a script (``python tests/test_stalingrad_solo.py record OUT.jsonl``) this file is a
recording engine: it plays random legal decisions and writes every request it receives to OUT.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))

import pytest  # noqa: E402

from arbiter.clock import parse_time_control  # noqa: E402
from arbiter.hosting import EngineConfig  # noqa: E402
from arbiter.games import load_game  # noqa: E402
from arbiter.records.replay import verify  # noqa: E402
from arbiter.formats.solo import compare, run_suite, suite_stream  # noqa: E402
from arbiter.hosting import InProcessPlayer  # noqa: E402
from arbiter.stats import mean_ci, mean_se, paired_comparison, wilson_interval  # noqa: E402
from arbiter.records.store import ResultsStore, load_records  # noqa: E402

PY = sys.executable
RANDOM = f"{PY} -m sample_engines.stalingrad_random"
PLANNER = f"{PY} -m sample_engines.stalingrad_planner"
MASTER = b"stalingrad-test"


def suite(tmp_path, command: str, seeds, name: str, **options):
    game = load_game("stalingrad", **options)
    store = ResultsStore(tmp_path / f"{name}.sqlite")
    try:
        result = run_suite(game, EngineConfig(command, name=name, cwd=str(ROOT)), parse_time_control("60"), seeds,
                           MASTER, store=store, run_dir=tmp_path)
    finally:
        store.close()
    records = {r.game_number: r for r in load_records(tmp_path / f"{name}.sqlite")}
    return result, records


# --- hidden information ------------------------------------------------------------------------


def test_no_request_ever_shows_a_face_down_counter(tmp_path):
    # The recording engine prints every request it gets (its stdout is its log: the sandbox lets
    # it write nowhere else that outlives it).
    result, records = suite(tmp_path, f"{PY} {Path(__file__)} record", 6, "recorder")
    assert result.forfeits == 0, [r.detail for r in result.results.values()]
    requests = [json.loads(line[4:]) for log in tmp_path.glob("*/engine-recorder-*.log")
                for line in log.read_text().splitlines() if line.startswith("REQ ")]
    by_game: dict[str, list] = {}
    for req in requests:
        by_game.setdefault(req["game_id"], []).append(req)
    checked = 0
    for record in records.values():
        seen = by_game[record.game_id]
        decisions = []  # (observation, true state) before each decision, replayed from the record
        game = load_game("stalingrad")
        state = game.new_initial_state()
        for e in record.events:
            if e.seat < 0:
                outcomes = state.chance_outcomes()
                state.apply_chance(outcomes[record.rolls[e.roll].value])
                continue
            decisions.append((state.observation(0), state.clone()))
            state.apply(e.move)
        assert len(decisions) == len(seen)
        for (observation, truth), req in zip(decisions, seen):
            assert req["position"] == observation
            face_down = [a for a in range(2, 13) if truth.s_type[a] >= 0 and not truth.s_up[a]]
            soviet_field = next(f for f in req["position"].split() if f.startswith("soviet="))
            for a in face_down:
                assert f"{a}:?" in soviet_field.split("=", 1)[1].split(",")
                assert f"{a}:{truth.ed.soviet_codes[truth.s_type[a]]}?" not in req["position"]
            pool = next(f for f in req["position"].split() if f.startswith("pool="))
            assert pool == "pool=-" or set(pool[5:].split(",")) == {"?"}
            state_data = req["state"]
            assert isinstance(state_data["pool"], int)
            for entry in state_data["soviet"]:
                if not entry["revealed"]:
                    assert set(entry) == {"area", "revealed"}, entry
                    assert entry["area"] in face_down
            assert sum(state_data["unseen"].values()) == len(face_down) + len(truth.pool)
            checked += 1
        assert verify(record) == []
    assert checked >= 30


# --- whole games through the referee, replay, shared dice ----------------------------------------


def test_whole_games_through_the_referee_replay_and_verify(tmp_path):
    result, records = suite(tmp_path, PLANNER, [0, 1, 2], "planner")
    assert result.games == 3 and result.forfeits == 0
    for k, record in records.items():
        assert record.reason == "normal" and record.detail
        assert record.dice_stream == suite_stream(k)
        kinds = {e.kind for e in record.events}
        assert {"chance", "deploy", "movement_plan"} <= kinds
        assert verify(record) == []
        # deterministic: the same seed played in-process gives the same game, event by event
        from sample_engines.stalingrad_planner import make_decider
        played = {}
        run_suite(load_game("stalingrad"), InProcessPlayer(make_decider(0), name="local"), parse_time_control("inf"),
                  [k], MASTER, run_dir=tmp_path, on_game=played.__setitem__)
        local = played[k]
        assert [e.move for e in local.events] == [e.move for e in record.events]
        assert local.final_position == record.final_position and verify(local) == []
    # a tampered record is caught
    record = records[0]
    first_plan = next(e for e in record.events if e.kind == "movement_plan" and e.move != "-")
    first_plan.move = "I1:2-4-7"
    assert any("illegal" in p for p in verify(record))


def test_two_engines_on_the_same_seeds_get_the_same_dice(tmp_path):
    a, records_a = suite(tmp_path, RANDOM, 4, "random")
    b, records_b = suite(tmp_path, PLANNER, 4, "planner")
    for k in range(4):
        ra, rb = records_a[k], records_b[k]
        assert ra.dice_seed == rb.dice_seed and ra.dice_commitment == rb.dice_commitment
        # the same set-up draws, the same first infiltration roll
        assert [e.move for e in ra.events[:8] if e.seat < 0] == [e.move for e in rb.events[:8] if e.seat < 0]
        n = min(len(ra.rolls), len(rb.rolls))
        assert all(x.value == y.value for x, y in zip(ra.rolls[:n], rb.rolls[:n]) if x.outcomes == y.outcomes)
    c = compare(a, b)
    assert c.n == 4 and c.both + c.a_only + c.b_only + c.neither == 4
    with pytest.raises(ValueError, match="different master seeds"):
        a.master_seed = "00"
        compare(a, b)


def test_cli_solo_compares_engines(tmp_path):
    """Piped (no terminal, no COLUMNS), the tables are printed whole: at rich's 80 columns the
    names were cut ("stalingrad…" twice) and so were the numbers."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    run = subprocess.run([PY, "-m", "arbiter.cli", "solo", "--game", "stalingrad", "--engine", RANDOM,
                          "--engine", PLANNER, "--name", "random-suite-engine", "--name", "planning-suite-engine",
                          "--seeds", "3", "--seed", "ab12", "--db", str(tmp_path / "r.sqlite"), "--quiet"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "master seed ab12" in run.stdout and "Wilson" in run.stdout and "paired comparison" in run.stdout
    assert "…" not in run.stdout.replace("% …", ""), run.stdout  # the interval's own "…" aside
    assert "│ random-suite-engine " in run.stdout and "│ planning-suite-engine " in run.stdout, run.stdout
    assert "(none below 5 seeds)" in run.stdout, run.stdout  # 3 common seeds: no interval, as reports
    bad = subprocess.run([PY, "-m", "arbiter.cli", "solo", "--game", "stalingrad", "--engine", RANDOM,
                          "--option", "max_turns=0", "--db", str(tmp_path / "r.sqlite")],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "max_turns" in bad.stderr


# --- statistics ----------------------------------------------------------------------------------


def test_wilson_interval():
    lo, hi = wilson_interval(5, 10)
    assert math.isclose(lo, 0.2366, abs_tol=1e-4) and math.isclose(hi, 0.7634, abs_tol=1e-4)
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and math.isclose(hi, 0.2775, abs_tol=1e-4)
    assert wilson_interval(10, 10)[1] == 1.0 and wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="successes <= n"):
        wilson_interval(11, 10)


def test_mean_with_standard_error_and_interval():
    mean, se = mean_se([1.0, 2.0, 3.0, 4.0])
    assert mean == 2.5 and math.isclose(se, math.sqrt(5 / 3 / 4))
    m, lo, hi = mean_ci([1.0, 2.0, 3.0, 4.0])
    assert m == 2.5 and math.isclose(hi - m, 3.182446 * se, rel_tol=1e-5) and math.isclose(m - lo, hi - m)
    assert math.isnan(mean_se([1.0])[1])


def test_paired_comparison_on_common_seeds():
    a = {k: 1.0 for k in range(10)}
    b = {k: (1.0 if k < 2 else -1.0) for k in range(10)}
    b[99] = 1.0  # not common: ignored
    c = paired_comparison(a, b)
    assert (c.n, c.both, c.a_only, c.b_only, c.neither) == (10, 2, 8, 0, 0)
    assert math.isclose(c.p_value, 2 / 2 ** 8)  # exact two-sided sign test on 8 discordant seeds
    assert math.isclose(c.rate_diff, 0.8) and c.rate_low < 0.8 < c.rate_high
    assert math.isclose(c.mean_diff, 1.6)
    same = paired_comparison(a, a)
    assert same.p_value == 1.0 and same.rate_diff == same.rate_low == same.rate_high == 0.0
    with pytest.raises(ValueError, match="no seed in common"):
        paired_comparison({1: 1.0}, {2: 1.0})


# --- the recording engine (run as a script) ------------------------------------------------------


def _recording_engine() -> int:
    from protocol.kit import run_engine
    from sample_engines.stalingrad_random import make_decider

    decide_randomly = make_decider(7)

    def decide(request, new_game):
        print("REQ " + json.dumps({"game_id": request.game_id, "kind": request.kind, "position": request.position,
                                   "state": request.state, "legal_moves": request.legal_moves}), flush=True)
        return decide_randomly(request, new_game)

    return run_engine(decide, name="recorder", games=["stalingrad"], wants_legal_moves=True, wants_state=True)


if __name__ == "__main__" and sys.argv[1:] == ["record"]:
    raise SystemExit(_recording_engine())
