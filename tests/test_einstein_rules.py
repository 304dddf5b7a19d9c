"""EinStein würfelt nicht!: every rule on hand-built positions, notation, options, statistics."""
from __future__ import annotations

import random

import pytest

from arbiter.games import CHANCE, SIMULTANEOUS, TERMINAL, IllegalMove, OptionError, load_game
from arbiter.games.einstein import (BLUE, HOME, LAYOUTS, RED, SQUARE_INDEX, SQUARE_NAMES,
                                    EinsteinGame, EinsteinState)

GAME = EinsteinGame()


def pos(board: str, side: str = "r", die: str = "-", seat0: str = "r",
        phase: str = "play") -> EinsteinState:
    s = GAME.from_text(f"{board} {side} {die} {seat0} {phase}")
    assert s.to_text() == f"{board} {side} {die} {seat0} {phase}"
    return s


def moves(s: EinsteinState) -> set[str]:
    return set(s.legal_moves())


def from_squares(s: EinsteinState) -> set[str]:
    return {m[:2] for m in s.legal_moves()}


# --- notation basics -------------------------------------------------------------------------


def test_square_names():
    assert SQUARE_NAMES[0] == "a5" and SQUARE_NAMES[4] == "e5"
    assert SQUARE_NAMES[20] == "a1" and SQUARE_NAMES[24] == "e1"
    assert SQUARE_INDEX["c3"] == 12
    assert [SQUARE_NAMES[q] for q in HOME[RED]] == ["a5", "b5", "c5", "a4", "b4", "a3"]
    assert [SQUARE_NAMES[q] for q in HOME[BLUE]] == ["e3", "d2", "e2", "c1", "d1", "e1"]


def test_layouts_are_lexicographic_permutations():
    assert len(LAYOUTS) == 720 == len(set(LAYOUTS))
    assert LAYOUTS[0] == "123456" and LAYOUTS[1] == "123465" and LAYOUTS[-1] == "654321"
    assert list(LAYOUTS) == sorted(LAYOUTS)


# --- set-up ----------------------------------------------------------------------------------


def test_hidden_setup_node():
    s = GAME.new_initial_state()
    assert s.to_text() == "5/5/5/5/5 r - r setup"
    assert s.current_player() == SIMULTANEOUS
    assert s.acting_seats() == [0, 1]
    assert s.decision_kind(0) == s.decision_kind(1) == "setup"
    assert s.legal_moves(0) == s.legal_moves(1) == list(LAYOUTS)
    assert s.die() is None and not s.is_terminal()
    s.apply_joint({0: "123456", 1: "654321"})
    assert s.to_text() == "R1R2R32/R4R53/R63B6/3B5B4/2B3B2B1 r - r play"
    assert s.current_player() == CHANCE
    assert s.decision_kind() == "move"


def test_hidden_setup_seat0_blue_places_seat_layouts_by_colour():
    g = EinsteinGame(seat0_colour="blue")
    assert g.seat_colours == ("blue", "red")
    s = g.new_initial_state()
    assert s.to_text() == "5/5/5/5/5 b - b setup"
    s.apply_joint({0: "123456", 1: "654321"})  # seat 0 is blue, seat 1 red
    assert s.to_text() == "R6R5R42/R3R23/R13B1/3B2B3/2B4B5B6 b - b play"


def test_observation_during_setup_hides_nothing_stored():
    s = GAME.new_initial_state()
    for seat in (0, 1):
        assert "R" not in s.observation(seat) and "B" not in s.observation(seat)
        data = s.observation_data(seat)
        assert data["board"] == [0] * 25 and data["phase"] == "setup"
    assert s.observation_data(0)["my_colour"] == "red"
    assert s.observation_data(1)["my_colour"] == "blue"
    # A failed joint set-up leaves nothing behind either.
    with pytest.raises(IllegalMove):
        s.apply_joint({0: "123456", 1: "12345"})
    assert s.to_text() == "5/5/5/5/5 r - r setup"


@pytest.mark.parametrize("layout, reason", [
    ("12345", "exactly six digits"),
    ("1234567", "exactly six digits"),
    ("123457", "'7' is not a cube number"),
    ("12345a", "'a' is not a cube number"),
    ("112345", "cube 1 appears 2 times"),
    ("", "exactly six digits"),
    (123456, "not int"),
])
def test_bad_layouts_rejected_with_reason(layout, reason):
    s = GAME.new_initial_state()
    with pytest.raises(IllegalMove, match=reason):
        s.check_move(layout, 0)
    with pytest.raises(IllegalMove, match=f"seat 1: .*{reason}"):
        s.apply_joint({0: "123456", 1: layout})
    assert s.current_player() == SIMULTANEOUS


def test_setup_needs_both_seats_and_apply_is_refused():
    s = GAME.new_initial_state()
    with pytest.raises(IllegalMove, match="seats 0 and 1"):
        s.apply_joint({0: "123456"})
    with pytest.raises(IllegalMove, match="seats 0 and 1"):
        s.apply_joint({0: "123456", 1: "123456", 2: "123456"})
    with pytest.raises(IllegalMove, match="hidden set-up"):
        s.apply("123456")
    with pytest.raises(IllegalMove, match="not a chance node"):
        s.apply_chance(3)
    s.check_move("531246", 1)
    s.apply_joint({0: "123456", 1: "123456"})
    with pytest.raises(IllegalMove, match="no simultaneous decision"):
        s.apply_joint({0: "123456", 1: "123456"})


def test_random_setup_chance_outcomes():
    g = EinsteinGame(setup="random")
    s = g.new_initial_state()
    assert s.to_text() == "5/5/5/5/5 r - r deal"
    assert s.current_player() == CHANCE
    assert s.chance_outcomes() == list(LAYOUTS)
    with pytest.raises(IllegalMove, match="set-up draw"):
        s.apply_chance("123455")
    with pytest.raises(IllegalMove, match="set-up draw"):
        s.apply_chance(3)
    s.apply_chance("162534")  # red's layout first
    assert s.to_text() == "R1R6R22/R5R33/R44/5/5 r - r deal"
    assert s.current_player() == CHANCE and s.chance_outcomes() == list(LAYOUTS)
    s.apply_chance("654321")  # then blue's
    assert s.to_text() == "R1R6R22/R5R33/R43B6/3B5B4/2B3B2B1 r - r play"
    assert s.current_player() == CHANCE and s.chance_outcomes() == [1, 2, 3, 4, 5, 6]
    # the same with blue moving first
    s = EinsteinGame(setup="random", seat0_colour="blue").new_initial_state()
    s.apply_chance("123456")
    s.apply_chance("123456")
    assert s.to_text() == "R1R2R32/R4R53/R63B1/3B2B3/2B4B5B6 b - b play"
    s.apply_chance(6)
    assert s.current_player() == 0 and s.legal_moves() == ["e1d2", "e1e2", "e1d1"]


# --- dice ------------------------------------------------------------------------------------


def test_die_chance_node():
    s = pos("R1R2R32/R4R53/R63B6/3B5B4/2B3B2B1")
    assert s.current_player() == CHANCE and s.chance_outcomes() == [1, 2, 3, 4, 5, 6]
    assert s.legal_moves() == [] and s.legal_moves(0) == []
    for bad in (0, 7, "3", 2.0, None):
        with pytest.raises(IllegalMove, match="die roll"):
            s.apply_chance(bad)
    with pytest.raises(IllegalMove, match="waiting for the referee's die"):
        s.apply("b4c3")
    s.apply_chance(5)
    assert s.die() == 5 and s.current_player() == 0
    assert s.to_text().endswith(" r 5 r play")
    with pytest.raises(IllegalMove, match="not a chance node"):
        s.apply_chance(5)


def test_die_selects_exactly_that_cube():
    start = "R1R2R32/R4R53/R63B6/3B5B4/2B3B2B1"
    expected = {1: "a5", 2: "b5", 3: "c5", 4: "a4", 5: "b4", 6: "a3"}
    for d, sq in expected.items():
        assert from_squares(pos(start, die=str(d))) == {sq}
    blue = {1: "e1", 2: "d1", 3: "c1", 4: "e2", 5: "d2", 6: "e3"}
    for d, sq in blue.items():
        assert from_squares(pos(start, side="b", die=str(d))) == {sq}


def test_missing_cube_either_neighbour_whatever_the_distance():
    # red has cubes 1, 2, 5 (the rule book example): a 4 lets the 2 or the 5 move; so does a 3.
    board = "R1R23/R54/5/4B1/5"
    for d in (3, 4):
        s = pos(board, die=str(d))
        assert from_squares(s) == {"b5", "a4"}
        assert s.movable_cubes() == [2, 5]
    assert from_squares(pos(board, die="6")) == {"a4"}  # only the lower neighbour exists
    # far apart: cubes 1 and 6 only, every die 2..5 offers both
    board = "R14/5/2R62/4B1/5"
    for d in (2, 3, 4, 5):
        assert from_squares(pos(board, die=str(d))) == {"a5", "c3"}


def test_missing_cube_only_one_neighbour():
    # red cubes 4 and 5 only: 1, 2, 3 -> the 4 (next higher), 6 -> the 5 (next lower)
    board = "2R42/3R51/5/4B1/5"
    for d in (1, 2, 3):
        assert from_squares(pos(board, die=str(d))) == {"c5"}
    assert from_squares(pos(board, die="6")) == {"d4"}
    # blue with cubes 1 and 2 only: a 6 moves the 2
    board = "R14/5/5/3B1B2/5"
    assert from_squares(pos(board, side="b", die="6")) == {"e2"}
    assert from_squares(pos(board, side="b", die="1")) == {"d2"}
    assert pos(board, side="b", die="4").movable_cubes() == [2]


# --- directions and board edges --------------------------------------------------------------


def test_red_directions():
    s = pos("5/5/2R12/5/4B1", die="1")
    assert moves(s) == {"c3d3", "c3c2", "c3d2"}  # right, down, down-right


def test_blue_directions():
    s = pos("R14/5/2B12/5/5", side="b", die="1")
    assert moves(s) == {"c3b3", "c3c4", "c3b4"}  # left, up, up-left


def test_no_moves_off_the_board():
    assert moves(pos("5/5/4R1/5/B14", die="1")) == {"e3e2"}          # red on the right edge
    assert moves(pos("5/5/5/5/2R1B11", die="1")) == {"c1d1"}         # red on the bottom edge
    assert moves(pos("5/5/B14/5/3R11", side="b", die="1")) == {"a3a4"}  # blue on the left edge
    assert moves(pos("R11B12/5/5/5/5", side="b", die="1")) == {"c5b5"}  # blue on the top edge


def test_illegal_move_reasons():
    s = pos("R1R2R32/R4R53/R63B6/3B5B4/2B3B2B1", die="5")
    cases = [
        ("b4", "bad move syntax"),
        ("b4c3x", "bad move syntax"),
        ("z9c3", "'z9' is not a square"),
        ("b4c0", "'c0' is not a square"),
        ("c3d3", "no cube on c3"),
        ("e1d1", "blue's cube 1, not one of red's"),
        ("a5b5", "die 5 does not let cube 1 move"),
        ("b4a4", "illegal direction"),          # left
        ("b4b5", "illegal direction"),          # up
        ("b4d4", "illegal direction"),          # two squares
        ("b4b4", "illegal direction"),
    ]
    for move, reason in cases:
        with pytest.raises(IllegalMove, match=reason):
            s.apply(move)
        with pytest.raises(IllegalMove, match=reason):
            s.check_move(move, 0)
    with pytest.raises(IllegalMove, match="seat 0's turn, not seat 1's"):
        s.check_move("b4c3", 1)
    assert s.legal_moves(1) == []
    with pytest.raises(IllegalMove, match="bad move syntax"):
        s.apply(None)  # type: ignore[arg-type]
    assert s.to_text() == "R1R2R32/R4R53/R63B6/3B5B4/2B3B2B1 r 5 r play"  # unchanged
    s.apply("b4c3")
    assert s.to_text() == "R1R2R32/R44/R61R51B6/3B5B4/2B3B2B1 b - r play"


# --- captures --------------------------------------------------------------------------------


def test_capture_of_opponent():
    s = pos("R14/1R23/2B22/5/4B1", die="2")
    assert moves(s) == {"b4c4", "b4b3", "b4c3"}
    s.apply("b4c3")
    assert s.to_text() == "R14/5/2R22/5/4B1 b - r play"
    s.apply_chance(2)  # blue cube 2 is gone: its neighbour 1 moves
    assert from_squares(s) == {"e1"}


def test_self_capture_is_legal_and_removes_own_cube():
    s = pos("R14/1R23/5/5/4B1", die="1")
    assert moves(s) == {"a5b5", "a5a4", "a5b4"}
    s.apply("a5b4")  # onto its own cube 2
    assert s.to_text() == "5/1R13/5/5/4B1 b - r play"
    assert not s.is_terminal()
    s.apply_chance(1)
    s.apply("e1d1")
    s.apply_chance(2)  # red's 2 is gone: the 1 moves
    assert from_squares(s) == {"b4"}
    assert s.movable_cubes() == [1]


def test_blue_self_capture():
    s = pos("R14/5/3B1B3/4B2/5", side="b", die="3")
    assert moves(s) == {"e3d3", "e3e4", "e3d4"}
    s.apply("e3d3")
    assert s.to_text() == "R14/5/3B31/4B2/5 r - r play"


# --- winning ---------------------------------------------------------------------------------


def test_red_wins_on_the_corner():
    s = pos("5/5/5/3R1B2/4B1", die="4")  # red's only cube is the 1: it moves
    assert moves(s) == {"d2e2", "d2d1", "d2e1"}
    s.apply("d2e1")  # capturing blue's 1 on the goal
    assert s.is_terminal() and s.current_player() == TERMINAL
    assert s.returns() == [1.0, -1.0]
    assert s.to_text() == "5/5/5/4B2/4R1 b - r over"
    assert s.legal_moves() == [] and s.legal_moves(0) == []
    with pytest.raises(IllegalMove, match="game is over"):
        s.apply("e1e1")
    with pytest.raises(IllegalMove, match="not a chance node"):
        s.chance_outcomes()


def test_red_reaching_corner_without_capture_wins():
    s = pos("1B13/5/5/4R3/5", die="3")
    s.apply("e2e1")
    assert s.is_terminal() and s.returns() == [1.0, -1.0]
    assert s.winner_seat() == 0


def test_blue_wins_on_the_corner():
    s = pos("1R33/B24/5/4R1/5", side="b", die="2")
    assert moves(s) == {"a4a5"}
    s.apply("a4a5")
    assert s.is_terminal() and s.returns() == [-1.0, 1.0]
    assert s.to_text() == "B2R33/5/5/4R1/5 r - r over"
    # the same when blue is seat 0
    s = pos("1R33/B24/5/4R1/5", side="b", die="2", seat0="b")
    s.apply("a4a5")
    assert s.returns() == [1.0, -1.0] and s.winner_seat() == 0


def test_win_by_eliminating_the_opponent():
    s = pos("R14/5/2R52/3B41/5", die="5")
    s.apply("c3d2")
    assert s.is_terminal() and s.returns() == [1.0, -1.0]
    assert s.to_text() == "R14/5/5/3R51/5 b - r over"
    s2 = pos("5/1R13/2B22/5/5", side="b", die="3", seat0="b")
    s2.apply("c3b4")
    assert s2.is_terminal() and s2.returns() == [1.0, -1.0]
    assert s2.to_text() == "5/1B23/5/5/5 r - b over"


# --- seats and first mover -------------------------------------------------------------------


@pytest.mark.parametrize("seat0", ["red", "blue"])
def test_seat0_always_moves_first(seat0):
    g = EinsteinGame(seat0_colour=seat0)
    s = g.new_initial_state()
    s.apply_joint({0: "123456", 1: "123456"})
    s.apply_chance(1)
    assert s.current_player() == 0
    first = s.legal_moves()[0]
    assert (first[:2] == "a5") == (seat0 == "red")
    assert s.observation_data(0)["to_move_colour"] == seat0
    assert s.observation_data(0)["my_colour"] == seat0
    s.apply(first)
    s.apply_chance(1)
    assert s.current_player() == 1


def test_options():
    assert EinsteinGame.seat_roles == ("first", "second")
    assert load_game("einstein").options == {"seat0_colour": "red", "setup": "choose"}
    with pytest.raises(OptionError, match="seat0_colour"):
        EinsteinGame(seat0_colour="green")
    with pytest.raises(OptionError, match="setup"):
        EinsteinGame(setup="fixed")
    with pytest.raises(OptionError, match="unknown option"):
        EinsteinGame(colour="red")
    with pytest.raises(OptionError, match="seat0_colour"):
        load_game("einstein", seat0_colour=None)


# --- text and observations -------------------------------------------------------------------


@pytest.mark.parametrize("text, reason", [
    ("5/5/5/5 r - r play", "5 ranks"),
    ("5/5/5/5/5 r - r", "5 fields"),
    ("R1R1/5/5/5/5 r - r play", "appears twice|squares"),
    ("R14/R14/5/5/4B1 r - r play", "red cube 1 appears twice"),
    ("R15/5/5/5/4B1 r - r play", "more than 5 squares"),
    ("R13/5/5/5/4B1 r - r play", "4 squares, not 5"),
    ("R1211/5/5/5/4B1 r - r play", "one digit"),        # 2+1+1: to_text writes R14
    ("R14/5/5/32/4B1 r - r play", "one digit"),
    ("R74/5/5/5/4B1 r - r play", "cube number 1-6"),
    ("X4/5/5/5/4B1 r - r play", "unexpected"),
    ("R14/5/5/5/4B1 x - r play", "side to move"),
    ("R14/5/5/5/4B1 r 7 r play", "die must be"),
    ("R14/5/5/5/4B1 r - g play", "seat-0 colour"),
    ("R14/5/5/5/4B1 r - r end", "phase must be"),
    ("R14/5/5/5/4R2 r - r play", "already won"),
    ("R14/5/5/5/5 r - r play", "already won"),
    ("R14/5/5/5/4B1 r - r over", "does not show"),
    ("5/5/5/5/4R1 r - r over", "does not show"),
    ("R14/5/5/5/4B1 r - r setup", "empty"),
    ("5/5/5/5/5 b - r setup", "first mover"),
    ("5/5/5/5/5 r 3 r setup", "no die"),
    ("R14/5/5/5/5 r - r deal", "red's six cubes"),
])
def test_from_text_rejects(text, reason):
    with pytest.raises(ValueError, match=reason):
        GAME.from_text(text)


def test_from_text_takes_seat0_from_text():
    s = GAME.from_text("R14/5/5/5/4B1 b 3 b play")
    assert s.current_player() == 0 and s.seat0_colour == "blue"
    assert s.observation_data(1) == {
        "board": [1] + [0] * 23 + [-1], "phase": "play", "to_move_colour": "blue", "die": 3,
        "my_colour": "red", "seat0_colour": "blue", "winner_colour": None}


def _random_game_states(rng: random.Random, game: EinsteinGame):
    """Every state of one random game, played through the public string interface."""
    s = game.new_initial_state()
    yield s
    while not s.is_terminal():
        p = s.current_player()
        if p == CHANCE:
            s.apply_chance(rng.choice(s.chance_outcomes()))
        elif p == SIMULTANEOUS:
            s.apply_joint({seat: rng.choice(s.legal_moves(seat)) for seat in s.acting_seats()})
        else:
            s.apply(rng.choice(s.legal_moves()))
        yield s


@pytest.mark.parametrize("options", [{}, {"seat0_colour": "blue"}, {"setup": "random"},
                                     {"setup": "random", "seat0_colour": "blue"}])
def test_text_round_trip_over_random_games(options):
    rng = random.Random(7)
    game = EinsteinGame(**options)
    for _ in range(100):
        for s in _random_game_states(rng, game):
            text = s.to_text()
            t = game.from_text(text)
            assert t.to_text() == text
            assert t.current_player() == s.current_player()
            assert t.die() == s.die()
            assert t.returns() == s.returns()
            assert t.legal_moves() == s.legal_moves()
            if s.die() is not None:
                assert t.movable_cubes() == s.movable_cubes()
            # the other game instance (other options) parses the same text identically
            assert EinsteinGame().from_text(text).to_text() == text
            for seat in (0, 1):
                assert s.observation(seat) == text


def test_render_has_coordinates():
    s = pos("R1R2R32/R4R53/R63B6/3B5B4/2B3B2B1", die="2")
    r = s.render()
    lines = r.splitlines()
    assert "a" in lines[0] and "e" in lines[0]
    assert lines[1].split()[0] == "5" and lines[5].split()[0] == "1"
    assert "R1" in lines[1] and "B1" in lines[5]
    assert "red (seat 0) to move, die 2" in r


# --- fast path -------------------------------------------------------------------------------


def test_fast_path_agrees_with_string_interface():
    rng = random.Random(3)
    for _ in range(200):
        s = EinsteinGame(setup="random").new_initial_state()
        s.apply_chance(rng.choice(LAYOUTS))
        s.apply_chance(rng.choice(LAYOUTS))
        while not s.is_terminal():
            d = rng.randint(1, 6)
            fast = s.clone()
            s.apply_chance(d)
            fast.set_die(d)
            ints = fast.moves_ints()
            assert [SQUARE_NAMES[f] + SQUARE_NAMES[t] for f, t in ints] == s.legal_moves()
            i = rng.randrange(len(ints))
            fast.apply_move_ints(*ints[i])
            before = s.to_text()
            s.apply(s.legal_moves()[i])
            assert fast.to_text() == s.to_text() != before


def test_clone_is_independent():
    s = pos("R1R2R32/R4R53/R63B6/3B5B4/2B3B2B1", die="5")
    c = s.clone()
    c.apply("b4c3")
    assert s.to_text() == "R1R2R32/R4R53/R63B6/3B5B4/2B3B2B1 r 5 r play"
    assert c.to_text() == "R1R2R32/R44/R61R51B6/3B5B4/2B3B2B1 b - r play"
    assert s.legal_moves() == ["b4c4", "b4b3", "b4c3"]


# --- statistics ------------------------------------------------------------------------------


def test_random_play_statistics():
    """5,000 uniformly random games: mean length ~21.6 plies, first mover wins ~53.3%,
    ~98.8% end on the corner (reference: 200,000 games). Played through the public interface."""
    rng = random.Random(2024)
    n = 5000
    plies = first_wins = corner = 0
    game = EinsteinGame(setup="random")
    for i in range(n):
        s = game.new_initial_state()
        while not s.is_terminal():
            p = s.current_player()
            if p == CHANCE:
                s.apply_chance(rng.choice(s.chance_outcomes()))
            else:
                s.apply(rng.choice(s.legal_moves()))
                plies += 1
        first_wins += s.returns()[0] > 0
        b = s.board()
        corner += b[24] > 0 or b[0] < 0
    mean_len, first_share = plies / n, first_wins / n
    print(f"random play: mean plies {mean_len:.2f}, first-mover wins {first_share:.3%}, "
          f"corner finishes {corner / n:.3%}")
    assert abs(mean_len - 21.6) < 1.0
    assert abs(first_share - 0.533) < 0.03   # sigma ~0.7% at n=5000
    assert abs(corner / n - 0.988) < 0.01


def test_a_checked_move_is_parsed_again_once_the_position_changed():
    """``check_move`` keeps its parse for ``apply`` (the referee's hot path); any change of the
    position in between must drop it, so ``apply`` still refuses a move that became illegal."""
    s = GAME.new_initial_state()
    s.apply_joint({0: "123456", 1: "123456"})
    s.apply_chance(1)
    (m,) = [m for m in s.legal_moves() if m.startswith("a5")][:1]
    s.check_move(m, 0)
    s.set_die(6)  # cube 1 may not move on a 6 while cube 6 is on the board
    with pytest.raises(IllegalMove):
        s.apply(m)
    t = s.clone()
    s.set_die(1)
    s.check_move(m, 0)
    s.apply(m)  # the cached parse
    t.set_die(1)
    t.apply(m)  # parsed afresh
    assert s.to_text() == t.to_text()


def test_a_listed_move_is_checked_by_lookup_only_for_its_seat_and_position():
    """``check_move`` of a move ``legal_moves`` has just listed is a lookup (the referee's hot
    path); the other seat, or the same text after the position changed, gets the full check."""
    s = GAME.new_initial_state()
    s.apply_joint({0: "123456", 1: "123456"})
    s.apply_chance(1)
    listed = s.legal_moves(0)
    assert listed and s.legal_moves(1) == []
    with pytest.raises(IllegalMove, match="turn"):
        s.check_move(listed[0], 1)
    s.check_move(listed[0], 0)
    s.check_move(listed[0], None)
    s.set_die(6)  # the listed moves were for a 1
    with pytest.raises(IllegalMove):
        s.check_move(listed[0], 0)
    with pytest.raises(IllegalMove, match="syntax"):
        s.check_move(["not", "a", "move"], 0)  # unhashable: never looked up
