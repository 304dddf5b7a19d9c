"""Differential test of ``einstein`` against OpenSpiel's ``einstein_wurfelt_nicht``.

OpenSpiel facts this relies on (checked against its source and by experiment):

* players: 0 = black, top-left (moves right/down/down-right), 1 = white, bottom-right (moves
  left/up/up-left); white (player 1) always moves first;
* chance nodes: black's set-up, white's set-up (720 outcomes each: the lexicographic rank of the
  permutation of 1..6 written onto the triangle squares in row-major order), then before every
  move the die (outcome k = die k + 1);
* a move action is ``((row * 5 + col) * 6 + direction) * 2 + capture`` with direction offsets
  ``(1,1) (1,0) (0,1)`` for black and ``(-1,0) (-1,-1) (0,-1)`` for white;
* ``ToString`` is five lines of ``|b3|``/``|w6|``/``|__|`` cells, row 0 first.

Mapping: with ``seat0_colour=blue`` our board is OpenSpiel's as is (red = black, blue = white,
seat 0 = white = player 1). With ``seat0_colour=red`` the board is rotated 180 degrees
(square i <-> 24 - i; red = white, blue = black): a layout read in row-major order on one
triangle is the reverse of the row-major order on the rotated triangle. In both cases our seat
s is OpenSpiel's player 1 - s.
"""
from __future__ import annotations

import random
import re

import pytest

from arbiter.games import CHANCE, SIMULTANEOUS
from arbiter.games.einstein import BLUE, LAYOUTS, RED, SQUARE_NAMES, EinsteinGame

pyspiel = pytest.importorskip("pyspiel")

DIRS = ((1, 1), (1, 0), (0, 1), (-1, 0), (-1, -1), (0, -1))
CELL = re.compile(r"\|(..)\|")
RANK = {layout: k for k, layout in enumerate(LAYOUTS)}


def decode(action: int) -> tuple[int, int, int]:
    """OpenSpiel action -> (from, to, capture) in OpenSpiel's square indices."""
    rest, capture = divmod(action, 2)
    frm, d = divmod(rest, 6)
    dr, dc = DIRS[d]
    return frm, frm + dr * 5 + dc, capture


def os_board(state) -> list[int]:
    """OpenSpiel's board as 25 ints: +n black cube n, -n white cube n."""
    cells = CELL.findall(str(state))
    assert len(cells) == 25
    return [0 if c == "__" else (int(c[1]) if c[0] == "b" else -int(c[1])) for c in cells]


def play_pair(rng: random.Random, game_os, seat0: str, setup: str) -> int:
    """One random game driven in both implementations; returns its number of moves."""
    ours = EinsteinGame(seat0_colour=seat0, setup=setup).new_initial_state()
    theirs = game_os.new_initial_state()
    rotate = seat0 == "red"
    m = (lambda q: 24 - q) if rotate else (lambda q: q)

    red, blue = rng.choice(LAYOUTS), rng.choice(LAYOUTS)
    if setup == "choose":
        assert ours.current_player() == SIMULTANEOUS
        ours.apply_joint({ours.seat_of_colour(RED): red, ours.seat_of_colour(BLUE): blue})
    else:
        assert ours.current_player() == CHANCE and ours.chance_outcomes() == list(LAYOUTS)
        ours.apply_chance(red)
        ours.apply_chance(blue)
    black, white = (blue[::-1], red[::-1]) if rotate else (red, blue)
    assert theirs.is_chance_node() and len(theirs.chance_outcomes()) == 720
    theirs.apply_action(RANK[black])
    theirs.apply_action(RANK[white])

    # Our colour of OpenSpiel's black (+) cubes: red unrotated, blue rotated.
    sign = -1 if rotate else 1
    moves = 0
    while True:
        # the boards agree
        ob = os_board(theirs)
        assert ours.board() == [sign * ob[m(q)] for q in range(25)]
        if ours.is_terminal():
            break
        assert not theirs.is_terminal()
        assert ours.current_player() == CHANCE and theirs.is_chance_node()
        assert [a for a, _ in theirs.chance_outcomes()] == [0, 1, 2, 3, 4, 5]
        die = rng.randint(1, 6)
        ours.apply_chance(die)
        theirs.apply_action(die - 1)
        seat = ours.current_player()
        assert seat >= 0 and theirs.current_player() == 1 - seat

        their_moves = {}
        for a in theirs.legal_actions():
            frm, to, capture = decode(a)
            their_moves[(m(frm), m(to))] = (a, capture)
        our_ints = ours.moves_ints()
        assert len(set(our_ints)) == len(our_ints)
        assert set(our_ints) == set(their_moves), ours.to_text()
        assert ours.legal_moves(seat) == [SQUARE_NAMES[f] + SQUARE_NAMES[t] for f, t in our_ints]
        board = ours.board()
        for (f, t), (_, capture) in their_moves.items():
            assert capture == (board[t] != 0)

        frm, to = rng.choice(our_ints)
        ours.apply(SQUARE_NAMES[frm] + SQUARE_NAMES[to])
        theirs.apply_action(their_moves[(frm, to)][0])
        moves += 1
    assert theirs.is_terminal()
    assert ours.returns() == [theirs.returns()[1], theirs.returns()[0]]
    return moves


def test_legal_moves_and_results_match_openspiel():
    game_os = pyspiel.load_game("einstein_wurfelt_nicht")
    rng = random.Random(12345)
    n = 1200
    total = 0
    for i in range(n):
        seat0 = ("red", "blue")[i % 2]
        setup = ("choose", "random")[(i // 2) % 2]
        total += play_pair(rng, game_os, seat0, setup)
    assert total > 15 * n  # games are about 21.6 moves long on average
