"""Whole A&A Chess games between engine subprocesses through the real referee (Series.play_game),
ended by victory or the round limit, with records verified by replay."""
from __future__ import annotations

import sys
from pathlib import Path


from arbiter.clock import parse_time_control
from arbiter.hosting import EngineConfig
from arbiter.games.aachess import AAChessGame
from arbiter.formats.match import Series
from arbiter.records.replay import replay, verify

ROOT = Path(__file__).resolve().parent.parent
RANDOM = f"{sys.executable} -m sample_engines.aachess_random"
HEURISTIC = f"{sys.executable} -m sample_engines.aachess_heuristic"


def play(tmp_path, game, commands, seed=b"aachess-test"):
    configs = [EngineConfig(c, name=f"e{i}", cwd=str(ROOT)) for i, c in enumerate(commands)]
    # A fixed match id: the dice stream (match id | game number) and so the whole game are reproducible.
    series = Series(game, configs, parse_time_control("600"), run_dir=tmp_path, seed=seed, match_id="aachess")
    try:
        return series.play_game(1, list(range(len(commands))))
    finally:
        series.close()


def check(record, game):
    assert record.reason == "normal", (record.reason, record.detail)
    assert verify(record) == []
    kinds = {e.kind for e in record.events}
    assert {"purchase", "combat_move", "noncombat_move", "place"} <= kinds
    assert record.detail and (record.detail.startswith("round limit") or "win" in record.detail or "Axis" in record.detail
                              or "Allies" in record.detail)
    state = game.from_text(record.final_position)
    assert state.is_terminal()
    return state


def test_two_seat_game_heuristic_against_random(tmp_path):
    game = AAChessGame(seats=2, max_rounds=4)
    record = play(tmp_path, game, [RANDOM + " --seed 3", HEURISTIC])
    state = check(record, game)
    assert record.seat_roles == ["RU+UK+US", "GE+JP"]
    # The heuristic (seat 1, the Axis) beats the random Allies on income before the round limit.
    assert state.result == "Axis" and record.returns == [-1.0, 1.0], (state.result, record.detail)
    assert record.detail.startswith("Axis income") and state.round < 4
    assert record.winner() == 1
    # The show command's renderer follows the game: purchases, battle rounds, income.
    text = "\n".join(st.render() for _, st in replay(record))
    assert "buys" in text and "income" in text and "round 1:" in text


def test_five_seat_game_between_engine_subprocesses(tmp_path):
    game = AAChessGame(seats=5, max_rounds=2, variant="ryof")
    record = play(tmp_path, game, [RANDOM + f" --seed {i}" for i in range(5)])
    check(record, game)
    assert sorted({e.seat for e in record.events if e.seat >= 0}) == [0, 1, 2, 3, 4]
    assert len(record.returns) == 5


def test_two_seat_game_with_weapons_development(tmp_path):
    game = AAChessGame(seats=2, max_rounds=3, research=True)
    record = play(tmp_path, game, [RANDOM + " --seed 5", HEURISTIC], seed=b"aachess-research")
    state = check(record, game)
    research = [e for e in record.events if e.kind == "research"]
    assert research and {e.seat for e in research} == {0, 1}
    assert any(e.move != "-" for e in research)  # dice were bought and rolled by the referee
    text = "\n".join(st.render() for _, st in replay(record))
    assert "research di" in text
    assert isinstance(state.to_data()["tech"], dict)


def test_a_resumed_table_counts_each_game_by_the_seating_it_was_played_with(tmp_path):
    """A table match resumed with games played under another seating (an earlier version's
    rotation) credits each game's returns to the engines that sat in its seats, from the record,
    not to those today's rotation would have seated there. The crashing engine's alliance loses
    every game, so a wrong attribution changes the totals."""
    from arbiter.formats.match import TableMatch
    from arbiter.records.store import ResultsStore, load_records

    misbehave = f"{sys.executable} {ROOT / 'tests' / 'engines' / 'misbehave.py'} crash --after 0"
    configs = [EngineConfig(c, name=f"e{i}", cwd=str(ROOT))
               for i, c in enumerate([RANDOM + " --seed 1", RANDOM + " --seed 2", RANDOM + " --seed 3", misbehave])]
    game = AAChessGame(seats=4, max_rounds=1)

    class Earlier(TableMatch):
        def seating(self, number):
            return super().seating(number)[::-1]

    store = ResultsStore(tmp_path / "t.sqlite")
    try:
        Earlier(game, configs, parse_time_control("60"), 4, store=store, run_dir=tmp_path, seed=b"t",
                match_id="table").play()
    finally:
        store.close()
    done = load_records(tmp_path / "t.sqlite")
    assert [r.players for r in done][0] == ["e3", "e2", "e1", "e0"]
    result = TableMatch(game, configs, parse_time_control("60"), 4, run_dir=tmp_path, seed=b"t",
                        match_id="table").play(done=done)
    expected = [sum(r.returns[r.players.index(f"e{i}")] for r in done) for i in range(4)]
    assert all(r.reason == "crash" for r in done) and expected[3] == -4.0
    assert result.returns == expected
