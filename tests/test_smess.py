"""Smess: every movement rule on hand-built positions, promotion, every end, board files, notation,
perft against an independent generator written here from the rules' arrow table, and a whole
match between engine subprocesses through the referee."""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from arbiter.games import IllegalMove, OptionError, load_game
from arbiter.games.smess import BoardError, SmessGame, load_board, perft

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
RULES_DOC = ROOT / "docs" / "games" / "smess.md"

# --- an independent reference, from the rules' arrow table (not the production code) -----------

RULES_TABLE = "\n".join(line for line in RULES_DOC.read_text(encoding="utf-8").splitlines()
                        if line.startswith("| **"))
"""The board table as docs/games/smess.md carries it (transcribed from the rules)."""

REF_VEC = {"N": (0, 1), "NE": (1, 1), "E": (1, 0), "SE": (1, -1), "S": (0, -1), "SW": (-1, -1),
           "W": (-1, 0), "NW": (-1, 1)}
REF_FILES = "abcdefg"


def ref_arrows(table: str = RULES_TABLE) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """(file 0-6, rank 1-8) -> arrow vectors, parsed from the markdown table rows."""
    out = {}
    for line in table.strip().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rank = int(cells[0].strip("*"))
        for f, cell in enumerate(cells[1:]):
            names = list(REF_VEC) if cell == "all 8" else cell.split()
            out[(f, rank)] = [REF_VEC[n] for n in names]
    return out


REF_ARROWS = ref_arrows()
REF_PROMOTION = {"blue": {(1, 8), (2, 8), (4, 8), (5, 8)}, "red": {(1, 1), (2, 1), (4, 1), (5, 1)}}


def ref_start() -> dict[tuple[int, int], tuple[str, str]]:
    pos = {}
    for colour, back, front in (("blue", 1, 2), ("red", 8, 7)):
        pos[(3, back)] = (colour, "brain")
        for f in (1, 2, 4, 5):
            pos[(f, back)] = (colour, "numskull")
        for f in range(7):
            pos[(f, front)] = (colour, "ninny")
    return pos


def ref_moves(pos, colour):
    """Every (from, to) for ``colour``, straight from the rules' wording."""
    for (f, r), (c, kind) in list(pos.items()):
        if c != colour:
            continue
        for dx, dy in REF_ARROWS[(f, r)]:
            k = 1
            while True:
                x, y = f + dx * k, r + dy * k
                if not (0 <= x < 7 and 1 <= y <= 8):
                    break
                there = pos.get((x, y))
                if there is not None and there[0] == colour:
                    break
                yield (f, r), (x, y)
                if there is not None or kind != "numskull":
                    break
                k += 1


def ref_play(pos, colour, move):
    src, dst = move
    new = dict(pos)
    piece = new.pop(src)
    if piece[1] == "ninny" and dst in REF_PROMOTION[colour]:
        piece = (colour, "numskull")
    new[dst] = piece
    return new


def ref_perft(pos, colour, depth):
    other = "red" if colour == "blue" else "blue"
    total = 0
    for move in ref_moves(pos, colour):
        if depth == 1:
            total += 1
            continue
        captured = pos.get(move[1])
        new = ref_play(pos, colour, move)
        if (captured and captured[1] == "brain") or len(new) == 2:
            continue  # the game is over
        total += ref_perft(new, other, depth - 1)
    return total


def ref_name(sq):
    return f"{REF_FILES[sq[0]]}{sq[1]}"


def ref_from_ints(board):
    """The reference position for a production board (index (rank-1)*7 + file, documented)."""
    kinds = {1: "ninny", 2: "numskull", 3: "brain"}
    return {(i % 7, i // 7 + 1): ("blue" if v > 0 else "red", kinds[abs(v)]) for i, v in enumerate(board) if v}


# --- helpers -----------------------------------------------------------------------------------

START = "1ssbss1/nnnnnnn/7/7/7/7/NNNNNNN/1SSBSS1 b b 0 1"


def position(pieces: dict[str, str], side: str = "b", seat0: str = "b", quiet: int = 0, move: int = 10) -> str:
    """Position text from {square: letter}, built here independently of the production code."""
    ranks = []
    for rank in range(8, 0, -1):
        row, empty = "", 0
        for f in REF_FILES:
            letter = pieces.get(f"{f}{rank}")
            if letter is None:
                empty += 1
                continue
            if empty:
                row += str(empty)
                empty = 0
            row += letter
        ranks.append(row + (str(empty) if empty else ""))
    return f"{'/'.join(ranks)} {side} {seat0} {quiet} {move}"


def moves_from(state, square: str) -> set[str]:
    return {m[len(square):] for m in state.legal_moves() if m.startswith(square) and not m[len(square)].isdigit()}


def board_data() -> dict:
    return json.loads((ROOT / "arbiter" / "games" / "smess_boards" / "smess.json").read_text())


GAME = SmessGame()


# --- the board ---------------------------------------------------------------------------------


def test_the_rules_table_is_complete():
    """Eight ranks of seven squares: a table lost from the document fails here, not silently."""
    assert sorted(r for _, r in REF_ARROWS) == sorted(list(range(1, 9)) * 7)
    assert len(REF_ARROWS) == 56 and sum(len(v) for v in REF_ARROWS.values()) == 170


def test_loaded_board_matches_the_rules_and_its_stated_facts():
    rb = GAME.board_def
    assert (rb.files, rb.ranks, rb.num_arrows) == (7, 8, 170)
    for (f, r), vectors in REF_ARROWS.items():
        sq = rb.square_index[f"{REF_FILES[f]}{r}"]
        got = {(rb.steps[sq][i] % 7 - f, rb.steps[sq][i] // 7 + 1 - r) for i in range(len(rb.steps[sq]))}
        assert got == set(vectors), REF_FILES[f] + str(r)
    assert rb.strongly_connected()
    assert rb.symmetry() == {"rotate180": {"arrows": True, "setup": True},
                             "mirror_files": {"arrows": False, "setup": True},
                             "mirror_ranks": {"arrows": False, "setup": True}}
    assert "symmetric under a 180° rotation (arrows and set-up)" in rb.describe()
    assert {rb.square_names[s] for s in rb.promotion_squares[0]} == {"b8", "c8", "e8", "f8"}
    assert {rb.square_names[s] for s in rb.promotion_squares[1]} == {"b1", "c1", "e1", "f1"}


@pytest.mark.parametrize("change, message", [
    (lambda d: d["arrows"]["g4"].append("E"), "arrows of g4: E points off the board"),
    (lambda d: d["arrows"]["a8"].append("N"), "arrows of a8: N points off the board"),
    (lambda d: d["arrows"].pop("d5"), "square(s) d5 not defined"),
    (lambda d: d["arrows"].__setitem__("h9", ["N"]), "arrows: 'h9' is not a square of this 7x8 board"),
    (lambda d: d["arrows"]["c3"].append("NNE"), "arrows of c3: 'NNE' is not a direction"),
    (lambda d: d["arrows"]["c3"].append("NE"), "arrows of c3: NE is listed twice"),
    (lambda d: d["setup"]["blue"]["brain"].append("a1"), "setup blue: exactly one brain square, not 2"),
    (lambda d: d["setup"]["red"]["ninny"].append("c1"), "setup: c1 holds both the blue numskull and the red ninny"),
    (lambda d: d["setup"]["red"]["ninny"].append("z1"), "setup red ninny: 'z1' is not a square"),
    (lambda d: d["setup"].pop("red"), "'setup' must have exactly the keys 'blue' and 'red'"),
    (lambda d: d.__setitem__("files", 30), "'files' must be an integer 2..26, not 30"),
    (lambda d: d.pop("arrows"), "the key 'arrows' is missing"),
    (lambda d: d.__setitem__("colour", "x"), "unknown key(s) colour"),
])
def test_a_broken_board_file_gives_a_precise_error(tmp_path, change, message):
    data = board_data()
    change(data)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(data))
    with pytest.raises(BoardError) as err:
        load_board(str(path))
    assert message in str(err.value)
    assert str(path) in str(err.value)
    with pytest.raises(OptionError, match="option board"):
        SmessGame(board=str(path))


def test_unreadable_boards_and_unknown_names(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"files": 7,,}')
    with pytest.raises(BoardError, match=r"not valid JSON: .*line 1 column"):
        load_board(str(bad))
    with pytest.raises(BoardError, match="No such file"):
        load_board(str(tmp_path / "missing.json"))
    with pytest.raises(BoardError, match="no built-in board 'kings_men'; built-in: smess"):
        load_board("kings_men")
    with pytest.raises(BoardError, match="a board is a built-in name"):
        load_board(42)


def test_another_layout_plays_from_a_file_and_inline(tmp_path):
    data = board_data()
    data["name"] = "Variant"
    data["arrows"]["a2"] = ["N", "NE", "S"]  # one more arrow for a Blue Ninny on move 1
    path = tmp_path / "variant.json"
    path.write_text(json.dumps(data))
    for board in (str(path), data):
        game = load_game("smess", board=board)
        state = game.new_initial_state()
        assert "a2b3" in state.legal_moves() and len(state.legal_moves()) == 13
        assert game.board_def.name == "Variant" and game.board_def.num_arrows == 171
        assert not game.board_def.symmetry()["rotate180"]["arrows"]
        assert game.from_text(state.to_text()).to_text() == state.to_text()


# --- movement ----------------------------------------------------------------------------------


def test_start_position_moves():
    state = GAME.new_initial_state()
    assert state.to_text() == START
    assert state.legal_moves() == ["b1a1", "f1g1", "a2a3", "a2a1", "b2b3", "c2c3", "d2d3", "e2e3",
                                   "f2f3", "f2g1", "g2g3", "g2g1"]
    assert load_game("smess", seat0_colour="red").new_initial_state().to_text() == START.replace(" b b ", " r r ")


def test_ninny_moves_one_square_along_its_start_squares_arrows_only():
    state = GAME.from_text(position({"c3": "N", "d3": "N", "c2": "N", "a1": "B", "g8": "b"}))
    assert moves_from(state, "c3") == {"b4", "d4", "b2", "d2"}       # c3: NE SE SW NW only
    assert moves_from(state, "d3") == {"e3"}                         # d3: E W (c3 is its own)
    assert moves_from(state, "c2") == {"d2", "c1", "b2"}             # sideways and backward
    with pytest.raises(IllegalMove, match="c3 has no N arrow"):
        state.check_move("c3c4")
    with pytest.raises(IllegalMove, match="a Ninny moves one square, this is 2"):
        state.check_move("c3e5")
    with pytest.raises(IllegalMove, match="not a straight line"):
        state.check_move("c3d5")
    state.apply("d3e3")  # e3 has only diagonal arrows: irrelevant to the move that arrives
    assert state.board()[2 * 7 + 4] == 1


def test_red_ninny_moves_backward_when_the_arrows_allow():
    state = GAME.from_text(position({"c6": "n", "a1": "B", "g8": "b"}, side="r"))
    assert moves_from(state, "c6") == {"b7", "d7", "b5", "d5"}


def test_brain_moves_one_square_and_may_move_into_attack():
    state = GAME.from_text(position({"d1": "B", "d5": "s", "a8": "b"}))
    assert moves_from(state, "d1") == {"d2", "c1", "e1"}
    state.apply("d1d2")  # d2 is attacked by the Numskull on d5: there is no check
    assert "d5d2" in state.legal_moves()


def test_numskull_slides_to_the_first_occupied_square():
    state = GAME.from_text(position({"d4": "S", "d6": "N", "f6": "n", "b4": "n", "a1": "B", "g8": "b"}))
    assert moves_from(state, "d4") == {
        "d5",                 # N: stops before its own Ninny on d6
        "e5", "f6",           # NE: captures the first enemy, not beyond
        "e4", "f4", "g4",     # E: to the edge
        "e3", "f2", "g1",     # SE
        "d3", "d2", "d1",     # S
        "c3", "b2",           # SW: a1 holds its own Brain
        "c4", "b4",           # W: captures on b4, never a4
        "c5", "b6", "a7",     # NW
    }
    with pytest.raises(IllegalMove, match="pass over its own Ninny on d6"):
        state.check_move("d4d7")
    with pytest.raises(IllegalMove, match="pass over the enemy Ninny on f6"):
        state.check_move("d4g7")
    with pytest.raises(IllegalMove, match="pass over the enemy Ninny on b4"):
        state.check_move("d4a4")
    with pytest.raises(IllegalMove, match="a1 holds blue's own Brain"):
        state.check_move("d4a1")


def test_numskull_follows_only_its_start_squares_arrow():
    state = GAME.from_text(position({"c1": "S", "d1": "B", "g8": "b"}))
    # c1 has N E W; the squares it crosses (c3: diagonals only) do not matter.
    assert moves_from(state, "c1") == {f"c{r}" for r in range(2, 9)} | {"b1", "a1"}
    state.apply("c1c6")
    assert state.board()[5 * 7 + 2] == 2


def test_captures_are_optional_and_any_piece_captures_any_piece():
    state = GAME.from_text(position({"c2": "N", "c3": "b", "d1": "B", "g8": "s"}))
    assert "c2c3" in state.legal_moves() and "c2b2" in state.legal_moves()
    state.apply("c2c3")  # a Ninny takes the Brain
    assert state.is_terminal() and state.end_reason() == "brain"


def test_wrong_side_bad_syntax_and_wrong_seat_are_refused():
    state = GAME.new_initial_state()
    for move, message in [("c7c6", "is red's Ninny; blue is to move"), ("c4c5", "no piece on c4"),
                          ("c2", "bad move syntax"), ("c2c33", "bad move syntax"), ("h2h3", "bad move syntax"),
                          ("c2c2", "must leave its square"), ("c1c2", "c2 holds blue's own Ninny"),
                          ("c1c3", "pass over its own Ninny on c2")]:
        with pytest.raises(IllegalMove, match=message):
            state.check_move(move)
    with pytest.raises(IllegalMove, match="it is seat 0's turn, not seat 1's"):
        state.check_move("c2c3", seat=1)
    with pytest.raises(IllegalMove, match="a move is a string"):
        state.apply(None)
    assert state.legal_moves(seat=1) == []


# --- promotion ---------------------------------------------------------------------------------


def test_promotion_by_move_and_by_capture_for_both_colours():
    state = GAME.from_text(position({"c7": "N", "e7": "N", "e8": "s", "c2": "n", "d1": "B", "a8": "b"}))
    state.apply("c7c8")
    assert state.to_text().startswith("b1S1s2/")         # promoted on c8
    state.apply("c2c1")
    assert state.to_text().split()[0].endswith("/2sB3")   # a Red Ninny promotes on c1
    state.apply("e7e8")                                   # captures the Numskull and promotes
    assert state.to_text().startswith("b1S1S2/")
    assert state.no_capture_plies() == 0


def test_no_promotion_on_own_start_squares_or_for_other_pieces():
    state = GAME.from_text(position({"c1": "N", "b7": "S", "d7": "B", "g8": "b"}))
    state.apply("c1b1")                                   # b1 is Blue's own Numskull square
    assert state.board()[1] == 1
    state = GAME.from_text(position({"c7": "B", "g8": "b", "a7": "n"}))
    state.apply("c7c8")                                   # a Brain is never promoted
    assert state.board()[7 * 7 + 2] == 3


# --- the end -----------------------------------------------------------------------------------


def test_capturing_the_brain_wins_for_either_seat_colour():
    for seat0 in ("b", "r"):
        game = SmessGame(seat0_colour="blue" if seat0 == "b" else "red")
        state = game.from_text(position({"d1": "S", "c1": "B", "d8": "b", "a8": "n"}, seat0=seat0))
        state.apply("d1d8")
        assert state.is_terminal() and state.current_player() < 0
        assert state.end_detail() == "Blue captured Red's Brain on d8"
        blue_seat = 0 if seat0 == "b" else 1
        assert state.returns()[blue_seat] == 1.0 and state.returns()[1 - blue_seat] == -1.0
        assert state.to_text().endswith(" brain")
        assert state.legal_moves() == []
        with pytest.raises(IllegalMove, match="the game is over"):
            state.apply("c1c2")


def test_a_side_that_cannot_move_loses():
    tiny = {"files": 3, "ranks": 3,
            "arrows": {"a1": ["N"], "b1": ["N"], "c1": ["N"], "a2": ["S"], "b2": ["N"], "c2": ["N"],
                       "a3": ["E"], "b3": ["E"], "c3": ["W"]},
            "setup": {"blue": {"brain": ["a1"], "numskull": [], "ninny": ["a2"]},
                      "red": {"brain": ["c3"], "numskull": [], "ninny": []}}}
    blue_first = load_game("smess", board=tiny).new_initial_state()
    assert blue_first.is_terminal() and blue_first.end_reason() == "stuck"
    assert blue_first.returns() == [-1.0, 1.0] and blue_first.end_detail() == "Blue cannot move"
    game = load_game("smess", board=tiny, seat0_colour="red")
    state = game.new_initial_state()
    assert state.legal_moves() == ["c3b3"]
    state.apply("c3b3")
    assert state.is_terminal() and state.end_detail() == "Blue cannot move"
    assert state.winner_seat() == 0 and state.returns() == [1.0, -1.0]
    assert game.from_text(state.to_text()).end_reason() == "stuck"


def test_only_two_brains_left_is_a_draw():
    state = GAME.from_text(position({"d4": "B", "d5": "n", "a8": "b"}))
    state.apply("d4d5")
    assert state.is_terminal() and state.end_reason() == "brains"
    assert state.returns() == [0.0, 0.0] and state.end_detail() == "only the two Brains are left"


def test_a_set_up_of_the_two_brains_alone_is_drawn_at_once():
    """The rules: "Only the two Brains left on the board: draw" -- on a board whose set-up has
    nothing else, the start position is already that draw (as ``from_text`` of it says)."""
    tiny = {"files": 3, "ranks": 3,
            "arrows": {"a1": ["N"], "b1": ["N"], "c1": ["N"], "a2": ["S"], "b2": ["N"], "c2": ["N"],
                       "a3": ["E"], "b3": ["E"], "c3": ["W"]},
            "setup": {"blue": {"brain": ["a1"], "numskull": [], "ninny": []},
                      "red": {"brain": ["c3"], "numskull": [], "ninny": []}}}
    game = load_game("smess", board=tiny)
    state = game.new_initial_state()
    assert state.is_terminal() and state.end_reason() == "brains"
    assert state.returns() == [0.0, 0.0] and state.end_detail() == "only the two Brains are left"
    assert state.legal_moves() == []
    assert game.from_text(state.to_text()).to_text() == state.to_text()


def test_no_capture_ply_limit():
    game = SmessGame(no_capture_plies=4)
    state = game.new_initial_state()
    for move in ("a2a3", "a7a6", "a3a4"):
        state.apply(move)
        assert not state.is_terminal()
    state.apply("a6a5")
    assert state.is_terminal() and state.end_reason() == "quiet" and state.returns() == [0.0, 0.0]
    assert state.end_detail() == "4 plies without a capture"
    # A capture resets the count.
    state = game.from_text(position({"c2": "N", "c3": "n", "d1": "B", "g8": "b"}, quiet=3))
    state.apply("c2c3")
    assert not state.is_terminal() and state.no_capture_plies() == 0
    assert SmessGame().options["no_capture_plies"] == 100


def test_threefold_repetition_and_turning_it_off():
    shuffle = ["a2a3", "a7a6", "a3a2", "a6a7"]
    state = GAME.new_initial_state()
    for i, move in enumerate(shuffle * 2):
        assert not state.is_terminal(), i
        state.apply(move)
    assert state.is_terminal() and state.end_reason() == "repetition"
    assert state.end_detail() == "the same position occurred 3 times" and state.returns() == [0.0, 0.0]
    assert state.to_text() == START.replace(" 0 1", " 8 5 repetition")
    assert GAME.from_text(state.to_text()).end_reason() == "repetition"
    off = SmessGame(repetitions=0).new_initial_state()
    for move in shuffle * 3:
        off.apply(move)
    assert not off.is_terminal()
    two = SmessGame(repetitions=2).new_initial_state()
    for move in shuffle:
        two.apply(move)
    assert two.end_reason() == "repetition"


def test_options_are_checked():
    for options, message in [({"seat0_colour": "green"}, "seat0_colour must be 'blue' or 'red'"),
                             ({"no_capture_plies": -1}, "no_capture_plies must be an integer >= 0"),
                             ({"no_capture_plies": True}, "no_capture_plies must be an integer"),
                             ({"repetitions": 1}, "repetitions must be 0 \\(off\\) or an integer >= 2"),
                             ({"board": "nope"}, "no built-in board 'nope'"),
                             ({"colour": "blue"}, "unknown option\\(s\\) colour")]:
        with pytest.raises(OptionError, match=message):
            load_game("smess", **options)


# --- perft against the independent generator --------------------------------------------------


@pytest.mark.parametrize("depth, expected", [(1, 12), (2, 144), (3, 1943), (4, 26211)])
def test_perft_from_the_start_matches_the_independent_generator(depth, expected):
    state = GAME.new_initial_state()
    assert ref_perft(ref_start(), "blue", depth) == expected
    assert perft(state, depth) == expected
    if depth <= 3:  # the same count through the full state (apply with every end rule)
        def walk(s, d):
            if d == 0:
                return 1
            total = 0
            for m in s.legal_moves():
                child = s.clone()
                child.apply(m)
                total += walk(child, d - 1) if not child.is_terminal() or d == 1 else 0
            return total
        assert walk(state, depth) == expected


def test_random_games_agree_with_the_independent_generator_move_by_move():
    rng = random.Random(7)
    plies = 0
    for _ in range(60):
        state = SmessGame(no_capture_plies=0, repetitions=0).new_initial_state()
        while not state.is_terminal() and plies < 6000:
            pos = ref_from_ints(state.board())
            colour = "blue" if state.side_to_move() == 0 else "red"
            expected = sorted(ref_name(a) + ref_name(b) for a, b in ref_moves(pos, colour))
            assert sorted(state.legal_moves()) == expected, state.to_text()
            move = rng.choice(state.legal_moves())
            src, dst = (ord(move[0]) - 97, int(move[1])), (ord(move[2]) - 97, int(move[3]))
            after = ref_play(pos, colour, (src, dst))
            state.apply(move)
            assert ref_from_ints(state.board()) == after, move
            plies += 1
    assert plies > 3000


# --- notation ----------------------------------------------------------------------------------


def test_position_text_round_trips_along_random_games():
    rng = random.Random(3)
    ends = set()
    for _ in range(40):
        state = GAME.new_initial_state()
        while True:
            text = state.to_text()
            again = GAME.from_text(text)
            assert again.to_text() == text
            assert again.legal_moves() == state.legal_moves()
            assert again.returns() == state.returns()
            assert again.current_player() == state.current_player()
            if state.is_terminal():
                ends.add(state.end_reason())
                break
            for m in state.legal_moves():
                state.check_move(m, state.current_player())
            state.apply(rng.choice(state.legal_moves()))
    assert "brain" in ends


@pytest.mark.parametrize("text", [
    START,
    START.replace(" b b ", " r r "),
    "1ssbss1/nn1nnnn/2n4/7/7/2N4/NNSNNNN/1S1BSS1 r b 3 2",
    "nn5/1n1S3/3n3/7/7/2N4/2B1s2/7 r b 0 51 brain",
    "3b3/7/7/7/7/7/7/3B3 r b 0 30 brains",
])
def test_documented_examples_parse_and_round_trip(text):
    assert GAME.from_text(text).to_text() == text


def test_after_moves_the_counters_advance():
    state = GAME.new_initial_state()
    for move in ("c2c3", "c7c6", "c1c2"):
        state.apply(move)
    assert state.to_text() == "1ssbss1/nn1nnnn/2n4/7/7/2N4/NNSNNNN/1S1BSS1 r b 3 2"
    data = state.observation_data(1)
    assert data["my_colour"] == "red" and data["to_move_colour"] == "red" and data["move_number"] == 2
    assert data["board"][2] == 0 and data["board"][9] == 2 and len(data["board"]) == 56


@pytest.mark.parametrize("text, message", [
    ("1ssbss1/nnnnnnn/7/7/7/7/NNNNNNN/1SSBSS1 b b 0", "needs 5 or 6 fields"),
    ("1ssbss1/nnnnnnn/7/7/7/7/NNNNNNN b b 0 1", "needs 8 ranks"),
    ("1ssbss1/nnnnnnn/7/7/7/7/NNNNNNN/1SSBSS b b 0 1", "rank 1 has 6 squares, not 7"),
    ("1ssbss1/nnnnnnn/8/7/7/7/NNNNNNN/1SSBSS1 b b 0 1", "rank 6 has more than 7 squares"),
    ("1ssbss1/nnnnnnn/7/7/3K3/7/NNNNNNN/1SSBSS1 b b 0 1", "rank 4: unexpected 'K'"),
    ("1ssbss1/nnnnnnn/7/7/7/7/NNNNNNN/1SSBSS1 g b 0 1", "side to move must be 'b'"),
    ("1ssbss1/nnnnnnn/7/7/7/7/NNNNNNN/1SSBSS1 b x 0 1", "seat-0 colour must be"),
    ("1ssbss1/nnnnnnn/7/7/7/7/NNNNNNN/1SSBSS1 b b -1 1", "plies without a capture must be an integer"),
    ("1ssbss1/nnnnnnn/7/7/7/7/NNNNNNN/1SSBSS1 b b 0 0", "move number must be an integer >= 1"),
    ("1ssbss1/nnnnnnn/7/7/7/7/NNNNNNN/1SSBSS1 b b 5 2", "5 plies without a capture, but only 2 plies"),
    ("1ssbss1/nnnnnnn/7/7/7/7/NNNNNNN/1SSBSS1 b b 0 1 brain", "end 'brain' does not match the position"),
    ("1ssbss1/nnnnnnn/7/7/7/7/NNNNNNN/1SSBSS1 b b 0 1 won", "end must be one of"),
    ("1ssbss1/nnnnnnn/7/7/7/7/NNNNNNN/1SSBBS1 b b 0 1", "blue has 2 Brains"),
    ("1ssbss1/nnnnnnn/7/7/7/N6/NNNNNNN/1SSBSS1 b b 0 1", "blue has 13 pieces"),
    ("1sNbss1/nnnnnnn/7/7/7/7/NNNNNN1/1SSBSS1 b b 0 1", "a blue Ninny on c8 would have been promoted"),
    ("1ss1ss1/nnnnnnn/7/7/7/7/NNNNNNN/1SSBSS1 b b 0 1", "red has no Brain, but red made the last move"),
    # Numbers as to_text writes them: no leading zero (the parser read 07, 00 and 01 as 7, 0, 1).
    ("1ssbss1/nnnnnnn/07/7/7/7/NNNNNNN/1SSBSS1 b b 0 1", "rank 6: a run of empty squares is written"),
    ("1ssbss1/nnnnnnn/7/7/7/7/NNNNNNN/1SSBSS1 b b 00 1", "plies without a capture must be an integer"),
    ("1ssbss1/nnnnnnn/7/7/7/7/NNNNNNN/1SSBSS1 b b 0 01", "move number must be an integer >= 1"),
])
def test_bad_position_text_is_refused_with_the_reason(text, message):
    with pytest.raises(ValueError, match=message):
        GAME.from_text(text)


def test_render_draws_arrows_and_pieces():
    text = GAME.new_initial_state().render()
    lines = text.splitlines()
    grid = lines[1:34]
    assert len({len(line.rstrip("0123456789 ")) for line in grid}) == 1  # a rectangular grid
    assert " 4 │  ·  │ ←·→ │ ←·  │ ←·→ │" in text            # d4: all eight arrows
    assert "│ ↖↑↗ │" in text and "│ ↙↓↘ │" in text
    assert " 1 │  ·  │ ←S→ │ ←S→ │ ←B→ │ ←S→ │ ←S→ │ ←·  │ 1" in text
    assert "Blue (seat 0) to move · move 1 · plies without capture 0/100" in text
    assert "[" not in text                                    # safe for rich markup in `arbiter show`
    over = GAME.from_text("3b3/7/7/7/7/7/7/3B3 r b 0 30 brains").render()
    assert "game over: draw — only the two Brains are left" in over


# --- engines ------------------------------------------------------------------------------------


def test_greedy_takes_the_most_material_and_the_brain_first():
    from sample_engines.smess_greedy import greedy_move

    rng = random.Random(1)
    state = GAME.from_text(position({"d4": "S", "d6": "n", "f6": "s", "d1": "B", "a8": "b"}))
    frm, to = greedy_move(state, rng)
    assert GAME.board_def.move_name(frm, to) == "d4f6"
    state = GAME.from_text(position({"d4": "S", "f6": "s", "b6": "b", "d1": "B"}))
    frm, to = greedy_move(state, rng)
    assert GAME.board_def.move_name(frm, to) == "d4b6"


def test_alphabeta_takes_the_brain_and_parries_a_threat():
    from sample_engines.smess_alphabeta import Searcher

    state = GAME.from_text(position({"d4": "S", "b6": "b", "d1": "B", "g7": "s"}))
    frm, to, _ = Searcher(GAME).choose(state, budget=None, max_depth=3)
    assert GAME.board_def.move_name(frm, to) == "d4b6"
    # Red's Numskull on d5 attacks the Brain on d2: Blue must not leave it there.
    state = GAME.from_text(position({"d2": "B", "a2": "N", "g2": "N", "d5": "s", "a8": "b"}))
    frm, to, _ = Searcher(GAME).choose(state, budget=None, max_depth=3)
    state.apply_move_ints(frm, to)
    assert all(state.board()[t] != 3 for _, t in state.moves_ints())


def test_match_between_engine_subprocesses_through_the_referee(tmp_path):
    from arbiter.clock import parse_time_control
    from arbiter.hosting import EngineConfig
    from arbiter.formats.match import Match, MatchFormat
    from arbiter.records.replay import verify

    game = load_game("smess", seat0_colour="red")  # the engines must read the colours from the options
    configs = (EngineConfig(f"{PY} -m sample_engines.random_engine --seed 5", name="random", cwd=str(ROOT)),
               EngineConfig(f"{PY} -m sample_engines.smess_alphabeta --movetime 0.02", name="alphabeta",
                            cwd=str(ROOT)))
    result = Match(game, configs, parse_time_control("10"), MatchFormat.parse("games=2"), run_dir=tmp_path).play()
    assert [r.players[0] for r in result.records] == ["random", "alphabeta"]  # the first move alternates
    for record in result.records:
        assert record.reason == "normal", record.detail
        assert record.detail  # end_detail: why the game ended
        assert verify(record) == []
        final = game.from_text(record.final_position)
        assert final.is_terminal() and final.returns() == record.returns
        ab = record.players.index("alphabeta")
        assert all(e.info is not None for e in record.events if e.seat == ab)
    assert result.points[1] >= 1.5, [r.detail for r in result.records]


# --- the arrow board on the wire (new_game.game_info) ----------------------------------------



def test_an_engine_that_asks_gets_the_arrow_board_in_new_game_over_the_socket(tmp_path):
    """Two engine subprocesses through the referee: the one that set ``wants_game_info`` in its
    hello receives the board being played (here a changed layout passed inline), exactly as the
    rules module has it; the other gets nil."""
    import hashlib

    from arbiter.clock import parse_time_control
    from arbiter.formats.match import Match, MatchFormat
    from arbiter.hosting import EngineConfig

    data = json.loads((ROOT / "arbiter" / "games" / "smess_boards" / "smess.json").read_text())
    data["arrows"]["d4"] = ["N", "S"]  # another layout: what arrives must follow the option
    game = load_game("smess", board=data)
    script = ROOT / "tests" / "engines" / "game_info_echo.py"
    configs = (EngineConfig(f"{PY} {script} asks", name="asks", cwd=str(ROOT)),
               EngineConfig(f"{PY} {script} silent", name="silent", cwd=str(ROOT)))
    result = Match(game, configs, parse_time_control("10"), MatchFormat.parse("games=1"), run_dir=tmp_path).play()
    record = result.records[0]
    assert record.reason == "normal", record.detail

    expected = {"board": {
        "format": "smess-board/1", "name": data["name"], "files": 7, "ranks": 8,
        "arrows": {name: list(game.board_def.arrows[sq]) for sq, name in enumerate(game.board_def.square_names)},
        "setup": data["setup"]}}
    assert expected == game.game_info()
    assert load_board(expected["board"]).arrows == game.board_def.arrows
    digest = hashlib.sha256(json.dumps(expected, sort_keys=True, separators=(",", ":")).encode()).hexdigest()

    seats = {name: record.players.index(name) for name in ("asks", "silent")}
    seen = {name: [json.loads(e.info.comment) for e in record.events if e.seat == seat]
            for name, seat in seats.items()}
    assert seen["asks"] and seen["silent"]
    for report in seen["asks"]:
        assert report["sample"] == {"a5": ["NE", "E", "SE"], "d4": ["N", "S"], "g4": ["SW", "W", "NW"]}
        assert report["digest"] == digest and not report["none"]
    assert all(report["none"] for report in seen["silent"])


def test_game_info_is_the_documented_arrow_table_for_the_original_board():
    board = load_game("smess").game_info()["board"]
    assert list(board["arrows"])[:2] == ["a8", "b8"] and list(board["arrows"])[-1] == "g1"
    for (f, rank), vectors in ref_arrows().items():
        assert [REF_VEC[d] for d in board["arrows"][f"{REF_FILES[f]}{rank}"]] == vectors
