"""Catalonia: every rule and phase on hand-built positions, the notation, options and results."""
from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from arbiter.games import CHANCE, TERMINAL, IllegalMove, OptionError, Utility, load_game
from arbiter.games.catalonia import (BISHOP, BLACK, GENTLEMAN, KNIGHT, LADY, PEASANT, SQUARE_INDEX,
                                     SQUARE_NAMES, WHITE, CataloniaGame, board_text, defended_squares,
                                     escape_destinations, longest_chain_squares, movement_moves,
                                     trapped_peasants)

GAME = CataloniaGame()
LETTER = {"P": PEASANT, "N": KNIGHT, "B": BISHOP, "L": LADY, "G": GENTLEMAN}


def board_of(pieces: dict[str, str], pits: tuple[str, ...] = ()) -> tuple[list[int], int]:
    """A board from {'d2': 'B', 'f4': 'b', ...} (upper case White) and pit squares."""
    board = [0] * 64
    for sq, letter in pieces.items():
        kind = LETTER[letter.upper()]
        board[SQUARE_INDEX[sq]] = kind if letter.isupper() else -kind
    mask = 0
    for sq in pits:
        mask |= 1 << SQUARE_INDEX[sq]
    return board, mask


def text_of(pieces, pits=(), turn=1, step="white", arg="-", scores=(), chain="-") -> str:
    board, mask = board_of(pieces, pits)
    scores_text = ",".join(map(str, scores)) or "-"
    return f"{board_text(board, mask)} {turn} {step} {arg} {sum(scores)} {scores_text} {chain}"


def pos(pieces, pits=(), game=GAME, **fields):
    text = text_of(pieces, pits, **fields)
    s = game.from_text(text)
    assert s.to_text() == text
    return s


def names(squares) -> list[str]:
    return [SQUARE_NAMES[sq] for sq in squares]


def targets(pieces, pits, sq) -> list[str]:
    board, mask = board_of(pieces, pits)
    return names(defended_squares(board, mask, SQUARE_INDEX[sq]))


def dests(state, frm) -> set[str]:
    return {m[2:] for m in state.legal_moves() if m[:2] == frm}


# The "diamond": four pieces defending each other along diagonals and lines.
DIAMOND = {"d2": "B", "f4": "b", "d6": "L", "b4": "l"}
INITIAL = "1nblgbn1/1pppppp1/8/8/8/8/1PPPPPP1/1NBLGBN1"


# --- notation, options -------------------------------------------------------------------------


def test_initial_position_and_squares():
    s = GAME.new_initial_state()
    assert s.to_text() == "1nblgbn1/1pppppp1/8/8/8/8/1PPPPPP1/1NBLGBN1 1 white - 0 - -"
    assert GAME.from_text(s.to_text()).to_text() == s.to_text()
    assert SQUARE_NAMES[0] == "a1" and SQUARE_NAMES[7] == "h1" and SQUARE_NAMES[63] == "h8"
    assert GAME.seat_roles == ("white", "black") and GAME.game_type.utility is Utility.IDENTICAL
    assert s.current_player() == 0 and s.decision_kind() == "move"
    assert s.legal_moves(1) == [] and "after" in s.legal_moves(0)
    # White's opening moves: the knights and the Gentleman's leaps over the peasants, peasants.
    assert {"b1a3", "b1c3", "e1c3", "e1e3", "e1g3", "b2b3", "b2b4", "after"} <= set(s.legal_moves())
    assert "c1d2" not in s.legal_moves()  # blocked bishop


def test_options():
    assert GAME.options == {"turns": 15, "random": True, "max_pits": 20}
    assert load_game("catalonia", turns=20, random=False).options["turns"] == 20
    assert load_game("catalonia", random="false").random is False
    for bad, word in (({"turns": 4}, "turns"), ({"turns": "15"}, "turns"), ({"random": "maybe"}, "random"),
                      ({"max_pits": 36}, "max_pits"), ({"pits": 3}, "unknown")):
        with pytest.raises(OptionError, match=word):
            load_game("catalonia", **bad)


@pytest.mark.parametrize("text, why", [
    ("8/8/8/8/8/8/8/8 1 white - 0 -", "7 fields"),
    ("8/8/8/8/8/8/8 1 white - 0 - -", "8 ranks"),
    ("9/8/8/8/8/8/8/8 1 white - 0 - -", "unexpected"),
    ("7/8/8/8/8/8/8/8 1 white - 0 - -", "7 squares"),
    ("44/8/8/8/8/8/8/8 1 white - 0 - -", "one digit"),   # 4+4: to_text writes 8
    ("8/8/8/8/8/8/8/1P11BN2 1 white - 0 - -", "one digit"),
    ("LL6/8/8/8/8/8/8/8 1 white - 0 - -", "Lady"),
    ("8/8/8/8/8/8/8/8 16 white - 0 - -", "turn"),
    ("8/8/8/8/8/8/8/8 1 dance - 0 - -", "step"),
    ("8/8/8/8/8/8/8/8 2 white - 0 - -", "scores of 1 turns"),
    ("8/8/8/8/8/8/8/8 2 white - 5 0 -", "sum"),
    ("8/8/8/8/8/8/8/8 2 white - 17 17 -", "squared"),
    ("8/8/8/8/8/8/8/8 1 white 3 0 - -", "argument"),
    ("8/8/8/8/8/8/8/8 1 roll-rank 7 0 0 -", "file die"),
    ("8/8/8/8/8/8/8/8 3 over limit 0 0,0,0 -", "turn limit"),
    ("8/8/8/8/8/8/8/8 1 black - 0 - a1>b2>c3>d4", "movement"),
])
def test_bad_position_texts_are_refused_with_reasons(text, why):
    with pytest.raises(ValueError, match=why):
        GAME.from_text(text)


@pytest.mark.parametrize("turn, total, scores", [
    ("\u0662", "0", "0"),       # an Arabic-Indic 2: int() reads it, the text must be ASCII
    ("\u00b2", "0", "0"),       # a superscript 2: isdigit() says yes, int() says no
    ("02", "0", "0"),            # a leading zero
    ("2", "00", "0"),
    ("2", "0", "+0"),            # int() takes a sign, an underscore, a leading zero
    ("2", "0", "-0"),
    ("2", "0", "0_0"),
    ("2", "0", "\u0660"),
    ("2", "16", "016"),
])
def test_numbers_in_the_position_text_are_plain_decimals(turn, total, scores):
    """Turn, total and turn scores are written as plain ASCII decimals without leading zeros; the
    parser took anything int() reads (another script's digits, a sign, '_', '016'), so a position
    was accepted in a form that differs from the one to_text() gives back (and the one engines see)."""
    text = f"{INITIAL} {turn} white - {total} {scores} -"
    with pytest.raises(ValueError, match="must be"):
        GAME.from_text(text)
    assert GAME.from_text(f"{INITIAL} 2 white - 0 0 -").to_text() == f"{INITIAL} 2 white - 0 0 -"


def test_a_turn_score_is_at_most_24_squared():
    """A turn scores its longest chain's length squared (4->16, ... 24->576): the board holds 24
    pieces, so a turn score is 0 or a square of 4..24; the parser refuses 25 squared and more."""
    assert GAME.from_text("8/8/8/8/8/8/8/8 2 white - 576 576 -").turn_scores() == [576]
    for score in (625, 676, 10000):
        with pytest.raises(ValueError, match="4..24"):
            GAME.from_text(f"8/8/8/8/8/8/8/8 2 white - {score} {score} -")


def test_a_game_without_a_chain_in_five_turns_has_no_later_turns_even_when_over():
    """Five-turn rule: no chain by the end of turn 5 ends the game at once, lost (score 0). A
    finished game whose first five turns scored nothing therefore ended at turn 5 by that rule,
    never later by the turn limit with points: the parser refuses such a text."""
    late = ",".join(["0"] * 5 + ["16"] * 10)
    with pytest.raises(ValueError, match="five-turn rule"):
        GAME.from_text(f"8/8/8/8/8/8/8/8 15 over limit 160 {late} -")
    early = ",".join(["0"] * 4 + ["16"] * 11)
    assert GAME.from_text(f"8/8/8/8/8/8/8/8 15 over limit 176 {early} -").returns() == [176.0, 176.0]
    assert GAME.from_text("8/8/8/8/8/8/8/8 5 over five-turn 0 0,0,0,0,0 -").returns() == [0.0, 0.0]


# --- movement -------------------------------------------------------------------------------------


def test_peasant_moves_and_double_steps():
    s = pos({"c2": "P", "e4": "P", "d7": "p", "h8": "p", "a1": "G", "a8": "g"})
    assert dests(s, "c2") == {"c1", "c3", "c4"}
    assert dests(s, "e4") == {"e3", "e5", "e2"}  # back from the 4th rank to the 2nd
    s = pos({"c2": "P", "c3": "n", "a1": "G", "a8": "g"})
    assert dests(s, "c2") == {"c1"}  # forward and double blocked by the piece on c3
    s = pos({"c2": "P", "a1": "G", "a8": "g"}, pits=("c3",))
    assert dests(s, "c2") == {"c1"}  # a pit blocks the double step too
    with pytest.raises(IllegalMove, match="must pass c3, which is a pit"):
        s.check_move("c2c4")
    s = pos({"d7": "p", "h8": "p", "a1": "G", "e5": "p"}, step="black", scores=())
    assert dests(s, "d7") == {"d8", "d6", "d5"}
    assert dests(s, "e5") == {"e4", "e6", "e7"}  # black's 5th rank back to its 7th
    assert dests(s, "h8") == {"h7"}  # black's last rank is rank 1: h8 is its back edge


def test_leapers_and_sliders():
    pieces = {"d4": "N", "e5": "p", "c5": "p", "a1": "G", "h8": "g"}
    s = pos(pieces, pits=("e6", "b3"))
    assert dests(s, "d4") == {"c2", "e2", "b5", "f3", "f5", "c6"}  # not b3/e6 (pits), leaps over e5
    s = pos({"d4": "G", "d5": "p", "e4": "P", "h8": "g"}, pits=("c4",))
    g = dests(s, "d4")
    assert {"d6", "f4", "b4", "f6", "b6", "f2", "b2", "d2"} <= g  # leaps of two, over d5/e4/c4
    assert "c4" not in g and "d5" not in g
    s = pos({"a1": "B", "h8": "g", "d1": "L"}, pits=("d4",))
    assert dests(s, "a1") == {"b2", "c3"}  # the bishop stops before the pit on d4
    assert dests(s, "d1") == {"a1", "b1", "c1", "e1", "f1", "g1", "h1", "c2", "b3", "a4", "e2", "f3",
                              "g4", "h5", "d2", "d3"} - {"a1"}
    with pytest.raises(IllegalMove, match="cannot cross the pit on d4"):
        s.check_move("a1e5")
    with pytest.raises(IllegalMove, match="d4 is a pit"):
        s.check_move("d1d4")


def test_no_captures_wrong_piece_and_syntax():
    s = GAME.new_initial_state()
    with pytest.raises(IllegalMove, match="occupied"):
        s.check_move("b1d2")
    with pytest.raises(IllegalMove, match="black's"):
        s.check_move("b8c6")
    with pytest.raises(IllegalMove, match="no piece on a3"):
        s.check_move("a3a4")
    with pytest.raises(IllegalMove, match="bad move syntax"):
        s.check_move("b1-c3")
    with pytest.raises(IllegalMove, match="seat 1"):
        s.check_move("b1c3", seat=1)
    with pytest.raises(IllegalMove, match="cannot leap"):
        s.check_move("b1b3")


def test_after_lets_black_move_first():
    s = GAME.new_initial_state()
    s.apply("after")
    assert s.step == "black-first" and s.current_player() == 1 and "after" not in s.legal_moves()
    with pytest.raises(IllegalMove, match="only White's first decision"):
        s.check_move("after")
    s.apply("b8c6")
    assert s.step == "white-second" and s.current_player() == 0
    s.apply("b1c3")
    assert s.turn == 2 and s.step == "white" and s.turn_scores() == [0]


def test_a_side_without_a_move_passes_and_white_can_only_say_after():
    # Black's only piece, a peasant on h8 (Black's back rank) with a piece in front: no move.
    s = pos({"h8": "p", "h7": "P", "a1": "G"})
    s.apply("a1a2")
    assert s.turn == 2 and s.step == "white"  # Black passed, movement over
    assert "Black has no legal move and passes" in "\n".join(s.log())
    # White blocked: its only option is 'after'; Black moves, then White can move.
    s = pos({"h1": "P", "h2": "p", "a8": "g"})
    assert s.legal_moves() == ["after"]
    s.apply("after")
    s.apply("h2h3")
    assert s.step == "white-second" and s.legal_moves() == ["h1h2"]


@pytest.mark.parametrize("board, step, who", [
    ("7p/7P/8/8/8/8/8/G7", "black", "black"),
    ("7p/7P/8/8/8/8/8/G7", "black-first", "black"),
    ("g7/8/8/8/8/8/7p/7P", "white-second", "white"),
])
def test_a_position_never_asks_a_side_without_a_move(board, step, who):
    """A side with no legal move passes automatically; it is not asked (project rule 2). Only
    White's first decision is always asked (it has 'after'). So a position text that waits for
    Black's move, Black's first move or White's second move of a side without a move cannot
    arise, and would ask a seat that has no legal decision: the parser refuses it."""
    with pytest.raises(ValueError, match=f"{who} has no legal move"):
        GAME.from_text(f"{board} 1 {step} - 0 - -")
    # The same board is a real position when that side is not the one to move.
    assert GAME.from_text(f"{board} 1 white - 0 - -").legal_moves()


# --- defence ---------------------------------------------------------------------------------------


def test_peasants_defend_diagonally_forward_only():
    pieces = {"d4": "P", "c5": "n", "e5": "b", "d5": "p", "c3": "N", "e3": "p"}
    assert targets(pieces, (), "d4") == ["c5", "e5"]  # not d5 (straight), not c3/e3 (behind)
    pieces = {"d5": "p", "c4": "N", "e4": "B", "c6": "n", "d4": "P"}
    assert targets(pieces, (), "d5") == ["c4", "e4"]  # Black's forward is down


def test_knights_and_gentlemen_defend_over_pits_and_pieces():
    pieces = {"d4": "N", "e6": "p", "f5": "P", "e5": "b", "d5": "n"}
    assert targets(pieces, ("e4",), "d4") == ["f5", "e6"]
    pieces = {"d4": "G", "d6": "p", "f6": "P", "d5": "n", "e4": "b", "b2": "N"}
    # d5 and e4 are steps; d6 is a Dabbaba leap over d5, f6 an Alfil leap over the pit on e5,
    # b2 an Alfil leap over c3.
    assert targets(pieces, ("e5", "c3"), "d4") == ["b2", "e4", "d5", "d6", "f6"]


def test_sliders_defend_the_first_piece_and_not_across_a_pit():
    pieces = {"a1": "B", "c3": "p", "e5": "P", "a8": "l"}
    assert targets(pieces, (), "a1") == ["c3"]  # e5 is behind c3
    assert targets(pieces, ("b2",), "a1") == []  # nothing across the pit
    pieces = {"d4": "L", "d8": "p", "d1": "P", "a4": "n", "h4": "N", "f6": "b", "b2": "g", "g1": "B"}
    assert targets(pieces, ("d6", "f4"), "d4") == ["d1", "g1", "b2", "a4", "f6"]  # d8, h4 behind pits
    # The peasant's straight moves defend nothing; a piece never defends itself.
    assert "d4" not in targets(pieces, (), "d4")


# --- chains and scoring ------------------------------------------------------------------------------


def assert_is_chain(board, pits, chain, length):
    """``chain`` is a cycle of ``length`` pieces, each defending the next, both colours."""
    assert len(chain) == length and len(set(chain)) == length
    for a, b in zip(chain, chain[1:] + chain[:1]):
        assert b in defended_squares(board, pits, a), f"{SQUARE_NAMES[a]} does not defend {SQUARE_NAMES[b]}"
    assert {board[sq] > 0 for sq in chain} == {True, False}


def test_diamond_chain_and_direction():
    board, pits = board_of(DIAMOND)
    chain = longest_chain_squares(board, pits)
    assert_is_chain(board, pits, chain, 4)
    assert names(chain)[0] == "d2"  # written from its smallest square
    board, pits = board_of(DIAMOND, pits=("e3",))  # Bd2 no longer defends f4: d2>b4>f4>d6 remains
    chain = longest_chain_squares(board, pits)
    assert_is_chain(board, pits, chain, 4)
    assert names(chain) == ["d2", "b4", "f4", "d6"]  # the only one left: direction matters
    board, pits = board_of(DIAMOND, pits=("e3", "c5", "e5", "c4"))
    assert longest_chain_squares(board, pits) == ()


def test_one_colour_loops_and_short_loops_are_not_chains():
    board, pits = board_of({"d2": "B", "f4": "B", "d6": "L", "b4": "N"})  # all white
    assert longest_chain_squares(board, pits) == ()
    board, pits = board_of({"d4": "L", "d6": "l", "f6": "G"})  # triangles at most
    assert longest_chain_squares(board, pits) == ()


def test_no_chain_means_movement_only_turns():
    s = pos({"a1": "N", "h8": "n"}, turn=2, step="white", scores=(0,))
    s.apply("a1b3")
    s.apply("h8g6")
    assert s.turn == 3 and s.step == "white" and s.turn_scores() == [0, 0] and not s.started()


def test_first_chain_scores_and_starts_the_pit_phase_that_turn():
    s = pos({"d2": "B", "f4": "b", "d6": "L", "a4": "l"}, turn=3, step="black", scores=(0, 0))
    s.apply("a4b4")
    assert s.turn_scores() == [0, 0, 16] and s.total_score() == 16 and s.started()
    assert set(names(s.scored_chain())) == {"d2", "b4", "f4", "d6"}
    assert_is_chain(s.board(), s.pits(), s.scored_chain(), 4)
    assert s.current_player() == CHANCE and s.step == "roll-file" and s.chance_outcomes() == [1, 2, 3, 4, 5, 6]
    chain_text = ">".join(names(s.scored_chain()))
    assert s.to_text().endswith(f"3 roll-file - 16 0,0,16 {chain_text}")


def test_five_turn_rule():
    s = pos({"a1": "N", "h8": "n"}, turn=5, step="white", scores=(0, 0, 0, 0))
    s.apply("a1b3")
    s.apply("h8g6")
    assert s.is_terminal() and s.current_player() == TERMINAL
    assert s.returns() == [0.0, 0.0]
    assert "five-turn rule" in s.end_detail()
    assert s.to_text().split()[2:4] == ["over", "five-turn"]
    # Formed in turn 5 just in time: the game goes on.
    s = pos({"d2": "B", "f4": "b", "d6": "L", "a4": "l"}, turn=5, step="black", scores=(0, 0, 0, 0))
    s.apply("a4b4")
    assert not s.is_terminal() and s.turn_scores()[-1] == 16


def test_started_turn_without_chain_scores_zero_and_still_bombs():
    s = pos({"a1": "N", "h8": "n"}, turn=6, step="black", scores=(0, 0, 16, 0, 0))
    s.apply("h8g6")
    assert s.turn_scores()[-1] == 0 and s.step == "roll-file"


@pytest.mark.parametrize("turns", [15, 20])
def test_turn_limit_ends_after_scoring_without_a_pit_phase(turns):
    game = CataloniaGame(turns=turns)
    scores = (0, 0) + (16,) * (turns - 3)
    s = pos({"d2": "B", "f4": "b", "d6": "L", "a4": "l"}, game=game, turn=turns, step="black", scores=scores)
    s.apply("a4b4")
    assert s.is_terminal() and s.turn == turns
    assert s.returns() == [16.0 * (turns - 2)] * 2
    assert f"turn limit ({turns} turns)" in s.end_detail()
    assert s.to_text().split()[2:4] == ["over", "limit"]


# --- pit phase (random) --------------------------------------------------------------------------------


def rolled(pieces, file_die, rank_die, pits=(), turn=4, game=GAME):
    s = pos(pieces, pits, game=game, turn=turn, step="roll-file", scores=(0, 0, 16) + (0,) * (turn - 3))
    s.apply_chance(file_die)
    assert s.step == "roll-rank" and s.to_text().split()[3] == str(file_die)
    s.apply_chance(rank_die)
    return s


def test_dice_map_to_b2_g7_and_an_empty_lonely_square_becomes_a_pit():
    s = rolled({"a8": "N", "h1": "n"}, 3, 4)  # file 3 -> d, rank 4 -> 5
    assert s.pits() == 1 << SQUARE_INDEX["d5"] and s.turn == 5 and s.step == "white"
    s = rolled({"a8": "N", "h1": "n"}, 1, 1)
    assert s.pits() == 1 << SQUARE_INDEX["b2"]
    s = rolled({"a8": "N", "h1": "n"}, 6, 6)
    assert s.pits() == 1 << SQUARE_INDEX["g7"]


def test_a_pit_rolled_again_means_rolling_again():
    s = rolled({"a1": "N", "h8": "n"}, 3, 4, pits=("d5",))
    assert s.step == "roll-file" and s.pits() == 1 << SQUARE_INDEX["d5"]
    assert "already a pit: roll again" in s.log()[-1]
    s.apply_chance(3)
    s.apply_chance(5)
    assert s.pits() == (1 << SQUARE_INDEX["d5"]) | (1 << SQUARE_INDEX["d6"])


def slider_chain_escapes(pieces: dict[str, str], pits: set[str], frm: str) -> set[str]:
    """Escape squares of the Lady on ``frm`` (now a pit) among Bishops and Ladies only, from the
    rules as written (docs/games/catalonia.md, rule 11 and 'Chain'), by brute force: a square on
    one of her 8 lines at any distance, empty and no pit, where some directed cycle of >= 4
    pieces, both colours, each defending the next, passes through her."""
    lines = {"B": [(1, 1), (1, -1), (-1, 1), (-1, -1)]}
    lines["L"] = lines["B"] + [(1, 0), (-1, 0), (0, 1), (0, -1)]

    def xy(sq):
        return "abcdefgh".index(sq[0]), int(sq[1]) - 1

    def sq_at(x, y):
        return f"{'abcdefgh'[x]}{y + 1}" if 0 <= x < 8 and 0 <= y < 8 else None

    def defended(board, sq):
        out = []
        for dx, dy in lines[board[sq].upper()]:
            x, y = xy(sq)
            while (nxt := sq_at(x + dx, y + dy)) is not None and nxt not in pits:
                x, y = x + dx, y + dy
                if nxt in board:
                    out.append(nxt)
                    break
        return out

    def in_a_chain(board, start):
        def walk(path):
            for nxt in defended(board, path[-1]):
                if nxt == start and len(path) >= 4 and {board[s].isupper() for s in path} == {True, False}:
                    return True
                if nxt not in path and walk(path + [nxt]):
                    return True
            return False
        return walk([start])

    found = set()
    for dx, dy in lines["L"]:
        x, y = xy(frm)
        while (to := sq_at(x + dx, y + dy)) is not None:
            x, y = x + dx, y + dy
            others = {s: p for s, p in pieces.items() if s != frm}
            if to not in others and to not in pits and in_a_chain({**others, to: pieces[frm]}, to):
                found.add(to)
    return found


def test_a_bombed_piece_escapes_into_a_chain_or_is_removed():
    # The Lady on d6 is hit (dice 3, 5). Escape squares are her lines as leaps; the chain needs
    # her back on a square from which she defends and is defended.
    s = rolled(dict(DIAMOND), 3, 5)
    assert (s.pits() >> SQUARE_INDEX["d6"]) & 1
    assert s.step == "escape"  # two qualifying squares: her owner (White) chooses
    assert s.current_player() == 0 and s.decision_kind() == "escape"
    expected = slider_chain_escapes(DIAMOND, {"d6"}, "d6")
    assert expected == {"d4", "h2"}  # worked by hand: d4 closes d4>f4>d2>b4, h2 closes h2>d2>b4>f4
    assert sorted(s.legal_moves()) == sorted(f"d6{sq}" for sq in expected)
    assert set(names(escape_destinations(s.board(), s.pits(), SQUARE_INDEX["d6"], LADY))) == expected
    # A lonely knight has nowhere to escape into a chain: removed.
    s = rolled({"d5": "N", "h8": "n", "a1": "G"}, 3, 4)
    assert s.board()[SQUARE_INDEX["d5"]] == 0 and (s.pits() >> SQUARE_INDEX["d5"]) & 1
    assert "is removed" in "\n".join(s.log())


def test_escape_is_a_leap_and_needs_a_chain_through_the_piece():
    # Black Lady bombed on b4: pieces Bd2, bf4, Ld6 remain. From b4 the Lady may leap along its
    # lines (over the pit and pieces); qualifying squares put her in a 4-chain again.
    board, pits = board_of({"d2": "B", "f4": "b", "d6": "L"}, pits=("b4",))
    options = names(escape_destinations(board, pits, SQUARE_INDEX["b4"], -LADY))
    assert options, "the Lady can rejoin the diamond"
    for sq in options:
        b = board[:]
        b[SQUARE_INDEX[sq]] = -LADY
        chain = longest_chain_squares(b, pits)
        assert SQUARE_INDEX[sq] in chain
    assert "h4" not in options  # on the rank, but no chain includes her there
    # A peasant's escape includes the double step as a jump over an occupied square.
    board, pits = board_of({"c3": "n", "b5": "b", "d5": "B", "h8": "G"}, pits=("c2",))
    board[SQUARE_INDEX["c3"]] = -KNIGHT
    got = escape_destinations(board, pits, SQUARE_INDEX["c2"], PEASANT)
    assert set(got) <= {SQUARE_INDEX["c1"], SQUARE_INDEX["c4"]}


def test_one_neighbour_is_the_target_without_asking():
    s = rolled({"e6": "N", "h1": "n", "a8": "G"}, 3, 4)  # d5 empty, only Ne6 next to it
    assert (s.pits() >> SQUARE_INDEX["e6"]) & 1 and not (s.pits() >> SQUARE_INDEX["d5"]) & 1
    assert "the only piece near is Ne6" in "\n".join(s.log())


@pytest.mark.parametrize("turn, chooser", [(4, 1), (5, 0)])
def test_several_neighbours_the_chooser_alternates_by_turn(turn, chooser):
    pieces = {"c6": "N", "e4": "n", "d6": "p", "a1": "G", "h8": "g"}
    s = rolled(pieces, 3, 4, turn=turn)  # d5: neighbours c6, d6, e4
    assert s.step == "target" and s.decision_kind() == "bomb_target"
    assert s.current_player() == chooser
    assert s.legal_moves(chooser) == ["e4", "c6", "d6"] and s.legal_moves(1 - chooser) == []
    assert s.to_text().split()[3] == "d5"
    with pytest.raises(IllegalMove, match="next to the rolled square d5"):
        s.check_move("a1")
    with pytest.raises(IllegalMove, match="no piece on e5"):
        s.check_move("e5")
    s.apply("d6")
    assert (s.pits() >> SQUARE_INDEX["d6"]) & 1 and not (s.pits() >> SQUARE_INDEX["d5"]) & 1


def test_max_pits_stops_the_bombers():
    game = CataloniaGame(max_pits=2)
    s = pos({"a1": "N", "h8": "n"}, ("d4", "e4"), game=game, turn=6, step="black", scores=(0, 0, 16, 0, 0))
    s.apply("h8g6")
    assert s.turn == 7 and s.step == "white" and s.pits().bit_count() == 2
    assert "no bomb" in "\n".join(s.log())


NEAR_D5 = {"c6": "N", "e4": "n", "d6": "p", "a1": "G", "h8": "g"}
TRAPPED_B1 = {"b1": "P", "h8": "g"}
# The escape example of the docs: the black Knight bombed on c6 may go to d4 or e5.
ESCAPE_C6 = {sq: p for sq, p in zip(("c8", "d8", "e8", "f8", "b7", "c7", "d7", "e7", "f7", "g7", "e4", "c3", "e3", "f3",
                                     "b2", "c2", "d2", "e2", "f2", "g2", "c1", "d1", "f1"), "blgbppppppnNGNPPPPPPBLB")}


@pytest.mark.parametrize("game, pieces, pits, fields, why", [
    # The last turn ends after its scoring (project rule 6): no pit phase, no removals.
    (GAME, NEAR_D5, (), dict(turn=15, step="roll-file", scores=(16,) + (0,) * 14), "last"),
    (GAME, NEAR_D5, (), dict(turn=15, step="target", arg="d5", scores=(16,) + (0,) * 14), "last"),
    (GAME, TRAPPED_B1, ("b2",), dict(turn=15, step="remove", arg="w", scores=(16,) + (0,) * 14), "last"),
    (CataloniaGame(turns=5), ESCAPE_C6, ("c6",), dict(turn=5, step="escape", arg="c6n", scores=(0, 0, 64, 0, 0)),
     "last"),
    # Before the first chain a turn is movement only (project rule 3).
    (GAME, NEAR_D5, (), dict(turn=2, step="roll-file", scores=(0, 0)), "no chain has formed"),
    (GAME, NEAR_D5, (), dict(turn=4, step="target", arg="d5", scores=(0, 0, 0, 0)), "no chain has formed"),
    # The non-random game has no dice; no bomb once max_pits pits are made (project rule 9).
    (CataloniaGame(random=False), NEAR_D5, (), dict(turn=4, step="roll-file", scores=(0, 0, 16, 0)), "no dice"),
    (CataloniaGame(max_pits=2), NEAR_D5, ("b2", "g2"), dict(turn=4, step="roll-file", scores=(0, 0, 16, 0)),
     "max_pits"),
])
def test_a_position_has_no_pit_phase_or_removal_where_the_turn_has_none(game, pieces, pits, fields, why):
    """The pit phase (dice, bomb target, escape) happens only once the first chain has formed
    (rule 3), never in the last turn, which ends after its scoring (rule 6; its removals are
    skipped too), never with dice in the non-random game, and not once all max_pits pits are made
    (rule 9). A position text at such a step cannot arise; the parsed state played it anyway
    (bombs before the first chain, a 16th turn of a 15-turn game): the parser refuses it."""
    with pytest.raises(ValueError, match=why):
        game.from_text(text_of(pieces, pits, **fields))


def test_the_escaping_piece_counts_with_the_pieces_on_the_board():
    """No piece is ever added: each army has 6 Peasants, 2 Knights, 2 Bishops, 1 Lady and
    1 Gentleman at most, and the piece escaping from its pit is one of them (it lands back on
    the board). An escape step for a third black Knight is refused."""
    fields = dict(turn=3, step="escape", arg="c6n", scores=(0, 0, 64))
    assert pos(ESCAPE_C6, ("c6",), **fields).legal_moves() == ["c6d4", "c6e5"]  # ne4 and the escaping one
    with pytest.raises(ValueError, match="Knight"):
        GAME.from_text(text_of({**ESCAPE_C6, "h8": "n"}, ("c6",), **fields))


def test_pit_phase_and_removal_positions_the_rules_reach_are_accepted():
    assert pos(NEAR_D5, turn=14, step="target", arg="d5", scores=(16,) + (0,) * 13).legal_moves(1)
    assert pos(TRAPPED_B1, ("b2",), turn=14, step="remove", arg="w", scores=(16,) + (0,) * 13).legal_moves()
    assert pos(ESCAPE_C6, ("c6",), game=CataloniaGame(turns=5), turn=4, step="escape", arg="c6n",
               scores=(0, 0, 64, 0)).legal_moves() == ["c6d4", "c6e5"]
    s = pos({}, ("b2",), game=CataloniaGame(max_pits=2), turn=4, step="roll-file", scores=(0, 0, 16, 0))
    assert s.current_player() == CHANCE


# --- pit phase (non-random) ------------------------------------------------------------------------------


def test_non_random_target_is_a_piece_of_the_scored_chain():
    game = CataloniaGame(random=False)
    s = pos({"d2": "B", "f4": "b", "d6": "L", "a4": "l", "h8": "n"}, game=game, turn=4, step="black",
            scores=(0, 0, 16))
    s.apply("a4b4")
    assert s.step == "target" and s.to_text().split()[3] == "chain"
    assert s.current_player() == BLACK  # turn 4: Black chooses
    assert s.legal_moves() == ["d2", "b4", "f4", "d6"]
    with pytest.raises(IllegalMove, match="of a longest chain"):
        s.check_move("h8")
    s.apply("d2")
    assert (s.pits() >> SQUARE_INDEX["d2"]) & 1
    assert s.current_player() != CHANCE  # no dice in the non-random game


def test_non_random_target_may_be_on_any_longest_chain_but_not_on_a_shorter_one():
    game = CataloniaGame(random=False)
    pieces = {"c6": "p", "c5": "l", "d5": "G", "c4": "p", "e4": "B", "d3": "N", "f3": "P"}
    board, pits = board_of(pieces)
    chain = longest_chain_squares(board, pits)
    assert_is_chain(board, pits, chain, 6)
    s = pos(pieces, game=game, turn=5, step="target", arg="chain", scores=(0, 0, 16, 16, 36),
            chain=">".join(names(chain)))
    assert s.current_player() == WHITE  # turn 5: White chooses
    assert s.legal_moves() == ["d3", "f3", "e4", "c5", "d5", "c6"]
    with pytest.raises(IllegalMove, match="of a longest chain"):
        s.check_move("c4")  # on a chain of 4 or 5 only
    with pytest.raises(ValueError, match="not a longest chain"):
        game.from_text(text_of(pieces, turn=5, step="target", arg="chain", scores=(0, 0, 16, 16, 36),
                               chain="c6>c5>d5>e4>d3>c4"))


def test_non_random_without_a_chain_makes_no_pit():
    game = CataloniaGame(random=False)
    s = pos({"a1": "N", "h8": "n"}, game=game, turn=6, step="black", scores=(0, 0, 16, 0, 0))
    s.apply("h8g6")
    assert s.turn == 7 and s.pits() == 0


# --- trapped peasants -------------------------------------------------------------------------------


def test_trapped_peasants():
    board, pits = board_of({"c4": "P", "e1": "P", "g5": "P", "b5": "p", "d8": "p", "f6": "P"},
                           pits=("c5", "c3", "e2", "b4", "d7", "f7"))
    assert names(trapped_peasants(board, pits, WHITE)) == ["e1", "c4"]  # f6: pit in front only
    assert names(trapped_peasants(board, pits, BLACK)) == ["d8"]  # b5: pit in front, b6 open


def test_removal_decisions_white_then_black():
    pieces = {"c4": "P", "e1": "P", "d8": "p", "a1": "N", "h8": "n"}
    pits = ("c5", "c3", "e2", "d7")
    s = pos(pieces, pits, turn=6, step="black", scores=(0, 0, 16, 0, 0), game=CataloniaGame(max_pits=4))
    s.apply("h8g6")  # no chain, all pits made: straight to the removals
    assert s.step == "remove" and s.decision_kind() == "remove_peasant" and s.current_player() == WHITE
    assert s.legal_moves() == ["e1", "c4", "done"]
    with pytest.raises(IllegalMove, match="no white Peasant on a1"):
        s.check_move("a1")
    s.apply("c4")
    assert s.board()[SQUARE_INDEX["c4"]] == 0 and s.legal_moves() == ["e1", "done"]
    s.apply("done")
    assert s.current_player() == BLACK and s.legal_moves() == ["d8", "done"]
    s.apply("d8")  # the last trapped black peasant: the turn ends
    assert s.turn == 7 and s.step == "white"
    assert s.board()[SQUARE_INDEX["e1"]] == PEASANT


def test_peasant_blocked_by_pieces_is_not_removable():
    board, pits = board_of({"c4": "P", "c5": "n", "c3": "N"})
    assert trapped_peasants(board, pits, WHITE) == []


# --- results, forfeits, observation, random games ---------------------------------------------------------


def test_cooperative_returns_and_forfeit_is_a_loss_for_both():
    assert GAME.forfeit_returns(0) == GAME.forfeit_returns(1) == [0.0, 0.0]
    s = pos({"d2": "B", "f4": "b", "d6": "L", "a4": "l"}, turn=15, step="black", scores=(0, 0) + (25,) * 12)
    s.apply("a4b4")
    assert s.returns() == [316.0, 316.0]


def test_observation_data():
    s = pos({"c6": "N", "e4": "n", "d6": "p", "a1": "G", "h8": "g"}, turn=4, step="target", arg="d5",
            scores=(0, 0, 16, 0))
    data = s.observation_data(1)
    assert data["board"][SQUARE_INDEX["c6"]] == "N" and data["board"][SQUARE_INDEX["e4"]] == "n"
    assert data["decider"] == "black" and data["kind"] == "bomb_target" and data["my_colour"] == "black"
    assert data["rolled"] == "d5" and data["score"] == 16 and data["turn_scores"] == [0, 0, 16, 0]
    assert data["turns"] == 15 and data["random"] is True and data["started"] is True


def test_random_games_through_the_string_interface():
    rng = random.Random(11)
    kinds = set()
    for game in (CataloniaGame(), CataloniaGame(random=False, turns=20)):
        for _ in range(40):
            s = game.new_initial_state()
            while not s.is_terminal():
                text = s.to_text()
                assert game.from_text(text).to_text() == text
                p = s.current_player()
                if p == CHANCE:
                    s.apply_chance(rng.choice(s.chance_outcomes()))
                    continue
                moves = s.legal_moves(p)
                assert moves and s.legal_moves(1 - p) == []
                kinds.add(s.decision_kind(p))
                for m in moves[:5]:
                    s.check_move(m, p)
                s.apply(rng.choice(moves))
            r = s.returns()
            assert r[0] == r[1] == s.total_score() or r == [0.0, 0.0]
            assert s.render()
    assert {"move", "bomb_target", "escape"} <= kinds


def test_movement_fast_path_matches_legal_moves():
    rng = random.Random(3)
    s = GAME.new_initial_state()
    for _ in range(30):
        if s.is_terminal():
            break
        if s.current_player() == CHANCE:
            s.apply_chance(rng.choice(s.chance_outcomes()))
            continue
        if s.decision_kind() == "move":
            colour = s.deciding_colour()
            fast = [SQUARE_NAMES[f] + SQUARE_NAMES[t] for f, t in movement_moves(s.board(), s.pits(), colour)]
            assert fast == [m for m in s.legal_moves() if m != "after"]
        s.apply(rng.choice(s.legal_moves()))


def test_the_refusals_quoted_in_the_docs_are_the_real_ones():
    """docs/games/catalonia.md, "Decisions and notation", quotes the reasons an IllegalMove gives
    for a refused decision: each quoted reason is what the referee says for such a decision."""
    doc = (Path(__file__).resolve().parent.parent / "docs" / "games" / "catalonia.md").read_text()
    paragraph = doc.split("A refused decision raises `IllegalMove` with the reason, for instance:")[1]
    quoted = [" ".join(q.split()) for q in re.findall(r"`([^`]+)`", paragraph.split("\n\n")[0])]

    def refusal(state, move, seat=None) -> str:
        with pytest.raises(IllegalMove) as caught:
            state.check_move(move, seat)
        return str(caught.value)

    after = GAME.new_initial_state()
    after.apply("after")
    produced = [
        refusal(after, "after"),
        refusal(pos({"f2": "N", "e4": "n"}), "f2e4"),
        refusal(pos({"c1": "B", "h8": "g"}, ("d2",)), "c1e3"),
        refusal(pos({"d2": "P", "h8": "g"}, ("d3",)), "d2d4"),
        refusal(pos({"e6": "N", "c7": "n", "d7": "p", "e7": "P", "f5": "g"}, turn=4, step="target", arg="d6",
                    scores=(0, 0, 16, 0)), "f5"),
        refusal(GAME.from_text("7n/1g6/8/2l*b3/5G2/8/1N6/8 3 escape d5L 16 0,0,16 -"), "d5e6"),
        refusal(pos({"b1": "P", "d3": "P", "h8": "g"}, ("b2",), turn=4, step="remove", arg="w",
                    scores=(0, 0, 16, 0)), "d3"),
        refusal(GAME.new_initial_state(), "b8c6", 1),
    ]
    assert len(quoted) == len(produced)
    for quote, message in zip(quoted, produced):
        assert quote in message


def test_the_log_example_in_the_docs_is_a_real_one():
    """docs/games/catalonia.md, "Records and arbiter show", shows the log of a bomb on an empty
    square: the dice (file die 1->b ... 6->g, rank die 1->2 ... 6->7) pick the square, the pieces
    on its 8 neighbouring squares are the choices, and the chosen target's square becomes a pit.
    The example is what the referee logs for such a position."""
    doc = (Path(__file__).resolve().parent.parent / "docs" / "games" / "catalonia.md").read_text()
    block = doc.split("## Records")[1].split("since the previous decision:\n")[1].split("```")[0]
    shown = [line.strip() for line in block.splitlines() if line.strip()]
    s = pos({"d1": "L", "e1": "G", "f1": "P", "d2": "P", "d3": "g", "e3": "P", "c3": "N"}, turn=7,
            step="roll-file", scores=(0, 0, 16, 16, 16, 16, 16))
    s.apply_chance(4)
    s.apply_chance(1)
    s.apply("e3")
    s.apply("c3e4")
    assert s.log() == shown

