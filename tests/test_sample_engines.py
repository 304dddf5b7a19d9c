"""The sample engines: the expectimax engine's decision function, and a real short match."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from arbiter.clock import parse_time_control
from arbiter.hosting import EngineConfig
from arbiter.games import load_game
from arbiter.games.einstein import BLUE, GOAL, HOME, LAYOUTS, RED
from arbiter.formats.match import Match, MatchFormat
from arbiter.records.store import ResultsStore
from protocol.messages import Info, Request
from sample_engines import einstein_expectimax as ex

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def random_positions(count: int, seed: int):
    """(state, die) pairs at decision points of random games, over random set-ups and both colours."""
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        game = load_game("einstein", seat0_colour=rng.choice(["red", "blue"]))
        state = game.new_initial_state()
        state.apply_joint({0: rng.choice(LAYOUTS), 1: rng.choice(LAYOUTS)})
        while not state.is_terminal():
            state.apply_chance(rng.randint(1, 6))
            if rng.random() < 0.35:
                out.append(state.clone())
            state.apply(rng.choice(state.legal_moves()))
    return out[:count]


def wins_at_once(state, move: str) -> bool:
    s = state.clone()
    mover = s.side_to_move()
    s.apply(move)
    return s.is_terminal() and s.winner_colour() == mover


def test_always_legal_on_random_positions():
    searcher = ex.Searcher()
    for state in random_positions(400, seed=7):
        text = state.to_text()
        move, info = ex.choose_move(text, depth=2, movetime=None, searcher=searcher)
        assert move in state.legal_moves(), (text, move)
        assert isinstance(info, Info)
        assert state.to_text() == text  # the caller's position is untouched


def test_legal_under_a_time_budget_reading_the_die_from_the_position():
    searcher = ex.Searcher()
    for state in random_positions(40, seed=11):
        text = state.to_text()
        assert text.split()[2] == str(state.die())  # the die travels in the position text
        move, info = ex.choose_move(text, movetime=0.01, searcher=searcher)
        assert move in state.legal_moves()
        assert info.depth is not None and info.depth >= 0
        blank = text.split()
        blank[2] = "-"
        with pytest.raises(ValueError, match="no die"):
            ex.choose_move(" ".join(blank), movetime=0.01, searcher=searcher)


def test_search_leaves_its_board_as_it_found_it():
    searcher = ex.Searcher()
    for state in random_positions(30, seed=3):
        board = state.board()
        searcher.search(board, state.side_to_move(), state.moves_ints(), budget=None, max_depth=3)
        check = ex.Searcher()
        check.load(board)
        assert (searcher.board, searcher.pos, searcher.mask, searcher.key) == \
            (check.board, check.pos, check.mask, check.key)


@pytest.mark.parametrize("position, winning", [
    # red cube 1 on d2 may step onto e1
    ("R2R3R42/R5R63/5/3R1B1/B2B3B4B5B6 r 1 r play", "d2e1"),
    # blue cube 4 on b4 may step onto a5
    ("5/1B4R2R1R3/2R52/5/B1B2B3B5B6 b 4 b play", "b4a5"),
    # red's cube 3 takes blue's last cube
    ("5/1R33/2B52/5/R14 r 3 r play", "b4c3"),
    # cube 3 is gone: die 3 lets red move cube 2 or cube 6; cube 2 on d2 wins
    ("R14/5/3R61/3R21/B1B23 r 3 r play", "d2e1"),
])
def test_plays_an_immediately_winning_move(position, winning):
    state = load_game("einstein").from_text(position)
    assert winning in state.legal_moves() and wins_at_once(state, winning)
    move, info = ex.choose_move(position, movetime=0.05)
    assert move == winning
    assert info.score == 1.0


def test_finds_a_winning_move_whenever_one_exists():
    searcher = ex.Searcher()
    found = 0
    for state in random_positions(600, seed=5):
        winners = [m for m in state.legal_moves() if wins_at_once(state, m)]
        if not winners:
            continue
        found += 1
        move, _ = ex.choose_move(state.to_text(), depth=2, movetime=None, searcher=searcher)
        assert move in winners, state.to_text()
    assert found >= 20


def test_time_budget():
    assert ex.time_budget(0.2, 0) == 0.2
    assert ex.time_budget(0.2, 1000) == pytest.approx(0.1)
    assert ex.time_budget(0.2, 180_000) == 0.2
    assert ex.time_budget(0, 5000) == pytest.approx(0.5)
    assert ex.time_budget(None, 0) is None


@pytest.mark.parametrize("colour", [RED, BLUE])
def test_setup_layout_is_a_legal_layout_and_mirrors_between_colours(colour):
    layout = ex.layout_for(colour)
    assert layout in LAYOUTS
    # the same cube sits on the same role square: red's b4 is blue's d2, red's a5 is blue's e1
    red = dict(zip(HOME[RED], ex.layout_for(RED)))
    blue = dict(zip(HOME[BLUE], ex.layout_for(BLUE)))
    assert all(red[sq] == blue[24 - sq] for sq in HOME[RED])
    assert GOAL[RED] == 24 and GOAL[BLUE] == 0


def test_decider_answers_setup_and_move_requests():
    decide = ex.make_decider(movetime=0.02, seed=1)
    game = load_game("einstein")
    state = game.new_initial_state()
    for seat in (0, 1):
        req = Request(kind="setup", seat=seat, position=state.to_text(), state=state.observation_data(seat),
                      legal_moves=state.legal_moves(seat))
        layout, _ = decide(req, None)
        assert layout == ex.layout_for(RED if seat == 0 else BLUE)
    state.apply_joint({0: ex.layout_for(RED), 1: ex.layout_for(BLUE)})
    state.apply_chance(4)
    req = Request(kind="move", seat=0, position=state.to_text(), time_left_ms=30_000,
                  legal_moves=state.legal_moves(0))
    move, info = decide(req, None)
    assert move in state.legal_moves()
    assert info.depth >= 1 and info.nodes > 0 and info.pv == [move]
    # a search that ends after one ply (a busy machine's clock, or depth 1) still counts what it
    # evaluated: its positions at the horizon are nodes too (it said 0 before)
    move, info = ex.make_decider(movetime=None, depth=1)(req, None)
    assert info.depth == 1 and info.nodes == len(state.legal_moves(0)), info


def test_short_real_match_against_the_random_engine(tmp_path):
    game = load_game("einstein")
    store = ResultsStore(tmp_path / "results.sqlite")
    configs = (EngineConfig(f"{PY} -m sample_engines.einstein_expectimax --movetime 0.02", name="expectimax",
                            cwd=str(ROOT)),
               EngineConfig(f"{PY} -m sample_engines.random_engine --seed 3", name="random", cwd=str(ROOT)))
    match = Match(game, configs, parse_time_control("30"), MatchFormat.parse("games=4"), store=store,
                  run_dir=tmp_path, seed=b"sample-engines-test")
    try:
        result = match.play()
    finally:
        store.close()
    assert len(result.records) == 4
    assert [r.players[0] for r in result.records] == ["expectimax", "random", "expectimax", "random"]
    for record in result.records:
        assert record.reason == "normal", (record.reason, record.detail)
        mine = [e for e in record.events if e.seat >= 0 and record.players[e.seat] == "expectimax"]
        assert mine[0].kind == "setup"
        moves = [e for e in mine if e.kind == "move"]
        assert all(e.info is not None and e.info.pv for e in moves)
        assert all(e.measured_ms < 1000 for e in moves)
    assert sum(result.points) == 4
