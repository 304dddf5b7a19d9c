"""EinStein würfelt nicht! (Ingo Althöfer, 2004): rules, notation and a fast state.

Rules: ``docs/games/einstein.md``; the full notation reference is
``docs/games/einstein.md``. In short:

Seats and colours
    Seat 0 always makes the first decision (project convention); ``seat_roles`` is therefore
    ``("first", "second")``. The option ``seat0_colour`` (``"red"``, the default, or ``"blue"``)
    says which colour seat 0 plays: red is the top-left player, blue the bottom-right one. Who
    moves first is decided by the match schedule, not by colour.

Squares
    ``a1``..``e5``: files ``a``-``e`` are columns 0-4 left to right, ranks count up from the bottom
    (row 0, the top, is rank 5; row 4 is rank 1). Square index = ``row * 5 + col`` (``a5`` = 0,
    ``e1`` = 24). Red starts on ``a5 b5 c5 a4 b4 a3`` and wins at ``e1``; blue starts on
    ``e3 d2 e2 c1 d1 e1`` and wins at ``a5``.

Moves
    ``<from><to>``, e.g. ``b4c3``. Red steps right, down or down-right; blue left, up or up-left.

Set-up layouts
    Six digits: the cube numbers written onto the player's triangle squares in row-major order
    (red ``a5 b5 c5 a4 b4 a3``, blue ``e3 d2 e2 c1 d1 e1``), e.g. ``123456``. This is OpenSpiel's
    convention; the 720 layouts in lexicographic order are the outcomes of a random set-up draw
    (index k = OpenSpiel's chance outcome k).

Position text (``to_text`` / ``EinsteinGame.from_text``)
    Five space-separated fields: ``<board> <side> <die> <seat0> <phase>``.

    * board: ranks 5 to 1 separated by ``/``, each rank files a to e; ``R<n>`` a red cube n,
      ``B<n>`` a blue cube n, a digit 1-5 a run of empty squares.
    * side: ``r`` or ``b``, the colour to roll and move next (during set-up: the colour that
      will move first; when the game is over: the loser, as in chess FEN).
    * die: the die rolled for the pending move (``1``..``6``) or ``-``.
    * seat0: ``r`` or ``b``, the colour seat 0 plays (seat 0 moves first).
    * phase: ``setup`` (hidden simultaneous set-up pending), ``deal`` (the referee draws the
      set-ups; red's layout first, then blue's), ``play`` or ``over``.

    Initial position (``setup=choose``): ``5/5/5/5/5 r - r setup``; after both set-ups ``123456``:
    ``R1R2R32/R4R53/R63B1/3B2B3/2B4B5B6 r - r play``.

Decision flow
    set-up (SIMULTANEOUS, or two CHANCE nodes with 720 layouts each), then repeatedly: a CHANCE
    node with outcomes 1..6 (the die), then the mover's decision (``decision_kind`` ``move``,
    ``die()`` = the roll). A move that reaches the far corner or removes the opponent's last cube
    wins at once; there are no draws. ``returns()`` is ``[1, -1]`` or ``[-1, 1]`` by seat.

Fast path for engines and benchmarks
    ``moves_ints()`` -> list of ``(from_idx, to_idx)``, ``apply_move_ints(frm, to)``,
    ``set_die(d)`` and ``clone()`` work on square indices and skip string formatting and all
    validation. They must only be fed legal input (a move from ``moves_ints()``, a die 1..6 at a
    die node). The read-only helpers ``board()``, ``side_to_move()``, ``winner_colour()`` and
    ``seat_of_colour()`` complete the set.
"""
from __future__ import annotations

import functools

import itertools
from typing import Annotated, Any, ClassVar, Literal

import msgspec

from .base import (CHANCE, SIMULTANEOUS, TERMINAL, ChanceError, Game, GameOptions, GameType, IllegalMove, State,
                   Utility)

# --- constants -------------------------------------------------------------------------------

RED, BLUE = 0, 1
"""Colour codes used by the fast path (``side_to_move()``, ``winner_colour()``...)."""
COLOUR_NAMES = ("red", "blue")
_COLOUR_LETTER = ("r", "b")
_LETTER_COLOUR = {"r": RED, "b": BLUE}

SIZE = 5
NUM_SQUARES = 25
FILES = "abcde"
SQUARE_NAMES: tuple[str, ...] = tuple(
    f"{FILES[i % SIZE]}{SIZE - i // SIZE}" for i in range(NUM_SQUARES))
"""Square index (``row * 5 + col``) -> name; ``SQUARE_NAMES[0] == 'a5'``, ``[24] == 'e1'``."""
SQUARE_INDEX: dict[str, int] = {name: i for i, name in enumerate(SQUARE_NAMES)}

HOME: tuple[tuple[int, ...], tuple[int, ...]] = (
    (0, 1, 2, 5, 6, 10),        # red: a5 b5 c5 a4 b4 a3 (row + col <= 2), row-major
    (14, 18, 19, 22, 23, 24),   # blue: e3 d2 e2 c1 d1 e1 (row + col >= 6), row-major
)
GOAL = (24, 0)
"""The corner each colour must reach: red e1 (index 24), blue a5 (index 0)."""

LAYOUTS: tuple[str, ...] = tuple("".join(p) for p in itertools.permutations("123456"))
"""The 720 set-up layouts in lexicographic order (index = OpenSpiel's chance outcome)."""
_LAYOUT_SET = frozenset(LAYOUTS)


def _steps(colour: int) -> tuple[tuple[int, ...], ...]:
    dirs = ((0, 1), (1, 0), (1, 1)) if colour == RED else ((-1, -1), (-1, 0), (0, -1))
    table = []
    for sq in range(NUM_SQUARES):
        r, c = divmod(sq, SIZE)
        dests = [(r + dr) * SIZE + c + dc for dr, dc in dirs
                 if 0 <= r + dr < SIZE and 0 <= c + dc < SIZE]
        table.append(tuple(sorted(dests)))
    return tuple(table)


STEPS: tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...]] = (_steps(RED), _steps(BLUE))
"""``STEPS[colour][square]``: the squares a cube of that colour may step to, ascending."""
_STEPS_RED, _STEPS_BLUE = STEPS
_MOVE_NAMES: tuple[tuple[str, ...], ...] = tuple(
    tuple(SQUARE_NAMES[f] + SQUARE_NAMES[t] for t in range(NUM_SQUARES)) for f in range(NUM_SQUARES))
_DIRECTION_TEXT = ("right, down or down-right", "left, up or up-left")
_DICE = (1, 2, 3, 4, 5, 6)

# Phases.
SETUP, DEAL, PLAY, OVER = 0, 1, 2, 3
PHASE_NAMES = ("setup", "deal", "play", "over")
_PHASE_INDEX = {name: i for i, name in enumerate(PHASE_NAMES)}

# The cube-position table ``_pos`` has 14 entries: red cube n at ``_pos[n]``, blue cube n at
# ``_pos[7 + n]`` (entries 0 and 7 unused); -1 when the cube is off the board. On the board,
# red cube n is ``+n`` and blue cube n is ``-n``.


def layout_error(layout: Any) -> str | None:
    """Why ``layout`` is not a set-up layout, or ``None`` when it is one."""
    if not isinstance(layout, str):
        return f"a layout is a string of six digits, not {type(layout).__name__}"
    if layout in _LAYOUT_SET:
        return None
    if len(layout) != 6:
        return f"layout {layout!r} must have exactly six digits (one per cube 1-6), not {len(layout)}"
    for ch in layout:
        if ch not in "123456":
            return f"layout {layout!r}: {ch!r} is not a cube number 1-6"
    for ch in "123456":
        if layout.count(ch) > 1:
            return f"layout {layout!r}: cube {ch} appears {layout.count(ch)} times"
    return f"layout {layout!r} is not a permutation of 123456"  # unreachable in practice


# --- state -----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1 << 16)
def _row_text(row: tuple[int, ...]) -> str:
    """One rank of the position text (cached: the referee writes a position per request)."""
    parts = []
    empty = 0
    for v in row:
        if v == 0:
            empty += 1
            continue
        if empty:
            parts.append(str(empty))
            empty = 0
        parts.append(f"R{v}" if v > 0 else f"B{-v}")
    if empty:
        parts.append(str(empty))
    return "".join(parts)


class EinsteinState(State):
    """One position. Mutable; small (a 25-int board, a 14-int cube table, a few ints)."""

    __slots__ = ("game", "_board", "_pos", "_count", "_turn", "_die", "_phase", "_winner",
                 "_seat0", "_checked", "_listed")

    def __init__(self, game: "EinsteinGame", seat0: int = RED, phase: int = SETUP):
        self.game = game
        self._board = [0] * NUM_SQUARES
        self._pos = [-1] * 14
        self._count = [0, 0]
        self._seat0 = seat0
        self._turn = seat0
        self._die: int | None = None
        self._phase = phase
        self._winner = -1
        self._checked: tuple[str, int, int] | None = None
        """(move, from, to) of the last ``check_move`` in this position: ``apply`` does not parse it
        again (every change of the position clears it)."""
        self._listed: dict[str, tuple[int, int]] | None = None
        """The moves ``legal_moves`` listed in this position, by name: ``check_move`` of a move the
        referee has just listed is a lookup (every change of the position clears it)."""

    # --- seats and colours ---------------------------------------------------------------

    def seat_of_colour(self, colour: int) -> int:
        """The seat playing ``colour`` (RED = 0 / BLUE = 1)."""
        return colour ^ self._seat0

    def colour_of_seat(self, seat: int) -> int:
        """The colour code (RED = 0 / BLUE = 1) that ``seat`` plays."""
        return seat ^ self._seat0

    @property
    def seat0_colour(self) -> str:
        return COLOUR_NAMES[self._seat0]

    def side_to_move(self) -> int:
        """The colour to roll and move next (during set-up the first mover; when over the loser)."""
        return self._turn

    def winner_colour(self) -> int:
        """RED or BLUE once the game is over, else -1."""
        return self._winner

    def end_detail(self) -> str:
        """How the game was won: the corner reached, or the last enemy cube taken."""
        w = self._winner
        if w < 0:
            return ""
        if self._board[GOAL[w]] * (1 if w == RED else -1) > 0:
            return f"{COLOUR_NAMES[w]} reached {SQUARE_NAMES[GOAL[w]]}"
        return f"{COLOUR_NAMES[w]} took the last {COLOUR_NAMES[1 - w]} cube"

    def board(self) -> list[int]:
        """A copy of the board: 25 ints row-major (a5..e5, a4..e1); +n red cube n, -n blue n."""
        return self._board[:]

    def phase(self) -> str:
        return PHASE_NAMES[self._phase]

    # --- the common interface ----------------------------------------------------------------

    def current_player(self) -> int:
        phase = self._phase
        if phase == PLAY:
            if self._die is None:
                return CHANCE
            return self._turn ^ self._seat0
        if phase == SETUP:
            return SIMULTANEOUS
        if phase == DEAL:
            return CHANCE
        return TERMINAL

    def is_terminal(self) -> bool:
        return self._phase == OVER

    def acting_seats(self) -> list[int]:
        if self._phase == SETUP:
            return [0, 1]
        p = self.current_player()
        return [p] if p >= 0 else []

    def decision_kind(self, seat: int | None = None) -> str:
        return "setup" if self._phase == SETUP else "move"

    def die(self) -> int | None:
        """The die rolled for the pending move (also the position text's third field)."""
        return self._die

    def legal_moves(self, seat: int | None = None) -> list[str]:
        phase = self._phase
        if phase == PLAY and self._die is not None:
            if seat is not None and seat != self._turn ^ self._seat0:  # seat_acts, for the common case
                return []
            names = _MOVE_NAMES
            listed = self._listed = {names[f][t]: (f, t) for f, t in self.moves_ints()}
            return list(listed)
        if phase == SETUP and self.seat_acts(seat):
            return list(LAYOUTS)
        return []

    def check_move(self, move: str, seat: int | None = None) -> None:
        listed = self._listed
        if listed is not None and type(move) is str and move in listed \
                and (seat is None or seat == self._turn ^ self._seat0):  # listed for this seat: legal
            self._checked = (move, *listed[move])
            return
        self.check_seat(seat)
        if self._phase == SETUP:
            err = layout_error(move)
            if err:
                raise IllegalMove(err)
            return
        frm, to = self._parse_move(move)
        self._checked = (move, frm, to)

    def _phase_error(self) -> str | None:
        phase = self._phase
        if phase == SETUP:
            return "the game is in the hidden set-up: both seats submit a layout (apply_joint)"
        if phase == DEAL:
            return "the game is waiting for the referee to draw the set-up (a chance event)"
        if phase == OVER:
            return "the game is over"
        if self._die is None:
            return "the game is waiting for the referee's die roll (a chance event)"
        return None

    def _parse_move(self, move: Any) -> tuple[int, int]:
        """Validate a move for the side to move; return (from, to) or raise ``IllegalMove``."""
        err = self._phase_error()
        if err:
            raise IllegalMove(f"no move is possible now: {err}")
        if not isinstance(move, str) or len(move) != 4:
            raise IllegalMove(f"bad move syntax {move!r}: expected from-square and to-square, "
                              f"e.g. 'b4c3'")
        frm = SQUARE_INDEX.get(move[:2])
        to = SQUARE_INDEX.get(move[2:])
        if frm is None or to is None:
            bad = move[:2] if frm is None else move[2:]
            raise IllegalMove(f"bad move syntax {move!r}: {bad!r} is not a square a1..e5")
        colour = self._turn
        name = COLOUR_NAMES[colour]
        v = self._board[frm]
        if v == 0:
            raise IllegalMove(f"{move}: there is no cube on {move[:2]}")
        if (v > 0) != (colour == RED):
            raise IllegalMove(f"{move}: the cube on {move[:2]} is {COLOUR_NAMES[1 - colour]}'s "
                              f"cube {abs(v)}, not one of {name}'s")
        cube = abs(v)
        movable = self.movable_cubes()
        if cube not in movable:
            allowed = " or ".join(str(c) for c in movable)
            raise IllegalMove(f"{move}: die {self._die} does not let cube {cube} move "
                              f"(movable: cube {allowed})")
        if to not in STEPS[colour][frm]:
            raise IllegalMove(f"{move}: illegal direction; {name} moves one square "
                              f"{_DIRECTION_TEXT[colour]}")
        return frm, to

    def apply(self, move: str) -> None:
        checked = self._checked
        if checked is not None and checked[0] == move:
            self.apply_move_ints(checked[1], checked[2])
            return
        frm, to = self._parse_move(move)
        self.apply_move_ints(frm, to)

    def apply_joint(self, moves: dict[int, str]) -> None:
        if self._phase != SETUP:
            raise IllegalMove(f"no simultaneous decision now (phase {PHASE_NAMES[self._phase]})")
        if set(moves) != {0, 1}:
            raise IllegalMove(f"the set-up needs a layout from seats 0 and 1, got seats "
                              f"{sorted(moves)}")
        for seat in (0, 1):
            err = layout_error(moves[seat])
            if err:
                raise IllegalMove(f"seat {seat}: {err}")
        for seat in (0, 1):
            self._place(seat ^ self._seat0, moves[seat])
        self._checked = self._listed = None
        self._phase = PLAY
        self._turn = self._seat0
        self._die = None

    def _place(self, colour: int, layout: str) -> None:
        board, pos = self._board, self._pos
        sign = 1 if colour == RED else -1
        base = 7 * colour
        for sq, ch in zip(HOME[colour], layout):
            n = ord(ch) - 48
            board[sq] = sign * n
            pos[base + n] = sq
        self._count[colour] = 6

    def chance_outcomes(self) -> list[Any]:
        phase = self._phase
        if phase == PLAY and self._die is None:
            return list(_DICE)
        if phase == DEAL:
            return list(LAYOUTS)
        raise ChanceError(f"not a chance node: {self._phase_error() or 'a decision is pending'}")

    def apply_chance(self, outcome: Any) -> None:
        self._checked = self._listed = None
        phase = self._phase
        if phase == PLAY and self._die is None:
            if type(outcome) is not int or not 1 <= outcome <= 6:
                raise ChanceError(f"a die roll is an int 1..6, not {outcome!r}")
            self._die = outcome
            return
        if phase == DEAL:
            err = layout_error(outcome)
            if err:
                raise ChanceError(f"set-up draw: {err}")
            if self._count[RED] == 0:
                self._place(RED, outcome)
            else:
                self._place(BLUE, outcome)
                self._phase = PLAY
                self._turn = self._seat0
            return
        raise ChanceError(f"not a chance node: {self._phase_error() or 'a decision is pending'}")

    def returns(self) -> list[float]:
        if self._phase != OVER:
            return [0.0, 0.0]
        if self._winner == self._seat0:
            return [1.0, -1.0]
        return [-1.0, 1.0]

    def winner_seat(self) -> int | None:
        return None if self._winner < 0 else self._winner ^ self._seat0

    # --- fast path ---------------------------------------------------------------------------

    def movable_cubes(self) -> list[int]:
        """The cube numbers the side to move may move with the current die (ascending)."""
        d = self._die
        pos = self._pos
        base = 7 * self._turn
        if pos[base + d] >= 0:
            return [d]
        out = []
        for n in range(d - 1, 0, -1):
            if pos[base + n] >= 0:
                out.append(n)
                break
        for n in range(d + 1, 7):
            if pos[base + n] >= 0:
                out.append(n)
                break
        return out

    def moves_ints(self) -> list[tuple[int, int]]:
        """Engine fast path: the legal moves as ``(from_idx, to_idx)`` square indices.

        Only valid at a move decision (phase play, die rolled); no checks. Order: the lower
        movable cube first, destinations ascending by index."""
        d = self._die
        pos = self._pos
        turn = self._turn
        base = 7 * turn
        steps = _STEPS_RED if turn == RED else _STEPS_BLUE
        p = pos[base + d]
        if p >= 0:
            return [(p, t) for t in steps[p]]
        out = []
        n = d - 1
        while n > 0:
            p = pos[base + n]
            if p >= 0:
                out = [(p, t) for t in steps[p]]
                break
            n -= 1
        n = d + 1
        while n < 7:
            p = pos[base + n]
            if p >= 0:
                out += [(p, t) for t in steps[p]]
                break
            n += 1
        return out

    def set_die(self, die: int) -> None:
        """Engine fast path: roll ``die`` (1..6) at a die node, without checks."""
        self._die = die
        self._checked = self._listed = None

    def apply_move_ints(self, frm: int, to: int) -> None:
        """Engine fast path: play ``(frm, to)`` from ``moves_ints()``, without checks."""
        self._checked = self._listed = None
        board = self._board
        v = board[frm]
        w = board[to]
        pos = self._pos
        count = self._count
        if w > 0:
            pos[w] = -1
            count[0] -= 1
        elif w < 0:
            pos[7 - w] = -1
            count[1] -= 1
        board[to] = v
        board[frm] = 0
        self._die = None
        if v > 0:
            pos[v] = to
            self._turn = BLUE
            if to == 24 or count[1] == 0:
                self._winner = RED
                self._phase = OVER
        else:
            pos[7 - v] = to
            self._turn = RED
            if to == 0 or count[0] == 0:
                self._winner = BLUE
                self._phase = OVER

    def clone(self) -> "EinsteinState":
        s = object.__new__(EinsteinState)
        s.game = self.game
        s._board = self._board[:]
        s._pos = self._pos[:]
        s._count = self._count[:]
        s._turn = self._turn
        s._die = self._die
        s._phase = self._phase
        s._winner = self._winner
        s._seat0 = self._seat0
        s._checked = s._listed = None
        return s

    # --- text --------------------------------------------------------------------------------

    def board_text(self) -> str:
        b, row = self._board, _row_text  # unrolled (SIZE = 5): the referee writes one per request
        return (f"{row(tuple(b[0:5]))}/{row(tuple(b[5:10]))}/{row(tuple(b[10:15]))}/{row(tuple(b[15:20]))}/"
                f"{row(tuple(b[20:25]))}")

    def to_text(self) -> str:
        die = "-" if self._die is None else str(self._die)
        return (f"{self.board_text()} {_COLOUR_LETTER[self._turn]} {die} "
                f"{_COLOUR_LETTER[self._seat0]} {PHASE_NAMES[self._phase]}")

    def observation(self, seat: int) -> str:
        # Everything is public once placed; a submitted-but-unrevealed layout is never stored
        # (apply_joint places both at once), so the full text hides nothing it must not show.
        return self.to_text()

    def observation_data(self, seat: int) -> dict[str, Any]:
        phase = self._phase
        return {
            "board": self._board[:],
            "phase": PHASE_NAMES[phase],
            "to_move_colour": None if phase == OVER else COLOUR_NAMES[self._turn],
            "die": self._die,
            "my_colour": COLOUR_NAMES[seat ^ self._seat0],
            "seat0_colour": COLOUR_NAMES[self._seat0],
            "winner_colour": None if self._winner < 0 else COLOUR_NAMES[self._winner],
        }

    def render_svg(self, reveal: bool = False) -> str:
        return _render_svg(self, reveal)

    def render(self) -> str:
        files = "     " + "  ".join(f" {f}" for f in FILES)
        lines = [files]
        for r in range(SIZE):
            cells = []
            for v in self._board[r * SIZE:(r + 1) * SIZE]:
                cells.append(" . " if v == 0 else (f"R{v} " if v > 0 else f"B{-v} "))
            rank = SIZE - r
            lines.append(f"  {rank}  " + " ".join(cells) + f" {rank}")
        lines.append(files)
        s0 = COLOUR_NAMES[self._seat0]
        s1 = COLOUR_NAMES[1 - self._seat0]
        lines.append(f"seat 0 (first): {s0}, seat 1 (second): {s1}")
        phase = self._phase
        if phase == SETUP:
            lines.append("set-up: both seats choose a layout (hidden)")
        elif phase == DEAL:
            lines.append("set-up: the referee draws " +
                         ("red's layout" if self._count[RED] == 0 else "blue's layout"))
        elif phase == PLAY:
            who = f"{COLOUR_NAMES[self._turn]} (seat {self._turn ^ self._seat0})"
            if self._die is None:
                lines.append(f"{who} to roll")
            else:
                lines.append(f"{who} to move, die {self._die}")
        else:
            lines.append(f"game over: {COLOUR_NAMES[self._winner]} "
                         f"(seat {self._winner ^ self._seat0}) wins")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"EinsteinState({self.to_text()!r})"


# --- game ------------------------------------------------------------------------------------


class EinsteinOptions(GameOptions):
    seat0_colour: Annotated[Literal["red", "blue"], msgspec.Meta(description="'red' or 'blue'")] = "red"
    setup: Annotated[Literal["choose", "random"], msgspec.Meta(description="'choose' or 'random'")] = "choose"


class EinsteinGame(Game):
    """EinStein würfelt nicht! Options: ``seat0_colour`` (``red``/``blue``: the colour of seat 0,
    the first mover) and ``setup`` (``choose``: hidden simultaneous set-up; ``random``: the
    referee draws both layouts, red's first)."""

    game_type: ClassVar[GameType] = GameType(
        name="einstein", min_seats=2, max_seats=2, utility=Utility.ZERO_SUM, chance=True,
        simultaneous=True, hidden_information=False, options=EinsteinOptions)
    """Hidden information: none. The set-up is simultaneous, but a layout is never stored before
    both are in (``apply_joint`` places them together), so no position hides anything."""
    seat_roles: tuple[str, ...] = ("first", "second")

    def configure(self) -> None:
        self._seat0 = COLOUR_NAMES.index(self.settings.seat0_colour)

    @property
    def seat_colours(self) -> tuple[str, str]:
        """The colour of each seat, e.g. ``('red', 'blue')`` (seat 0 moves first)."""
        return (COLOUR_NAMES[self._seat0], COLOUR_NAMES[1 - self._seat0])

    def new_initial_state(self) -> EinsteinState:
        phase = SETUP if self.options["setup"] == "choose" else DEAL
        return EinsteinState(self, self._seat0, phase)

    def from_text(self, text: str) -> EinsteinState:
        """Parse ``<board> <side> <die> <seat0> <phase>`` (see the module docstring).

        The seat-0 colour comes from the text; the game's options only shape new games.
        Raises ``ValueError`` saying what is wrong."""
        fields = text.split()
        if len(fields) != 5:
            raise ValueError(f"einstein position needs 5 fields '<board> <side> <die> <seat0> "
                             f"<phase>', got {len(fields)}: {text!r}")
        board_f, side_f, die_f, seat0_f, phase_f = fields
        if side_f not in _LETTER_COLOUR:
            raise ValueError(f"side to move must be 'r' or 'b', not {side_f!r}")
        if seat0_f not in _LETTER_COLOUR:
            raise ValueError(f"seat-0 colour must be 'r' or 'b', not {seat0_f!r}")
        if phase_f not in _PHASE_INDEX:
            raise ValueError(f"phase must be one of {', '.join(PHASE_NAMES)}, not {phase_f!r}")
        phase = _PHASE_INDEX[phase_f]
        if die_f == "-":
            die = None
        elif len(die_f) == 1 and die_f in "123456":
            die = int(die_f)
        else:
            raise ValueError(f"die must be 1..6 or '-', not {die_f!r}")

        s = EinsteinState(self, _LETTER_COLOUR[seat0_f], phase)
        s._turn = _LETTER_COLOUR[side_f]
        s._die = die
        self._parse_board(board_f, s)

        red, blue = s._count
        if phase in (SETUP, DEAL):
            if die is not None:
                raise ValueError("no die may show during the set-up")
            if s._turn != s._seat0:
                raise ValueError("during the set-up the side field must be the first mover "
                                 "(the seat-0 colour)")
            if phase == SETUP and (red or blue):
                raise ValueError("the board must be empty during the hidden set-up")
            if phase == DEAL:
                if blue or red not in (0, 6) or (red and any(s._board[q] <= 0 for q in HOME[RED])):
                    raise ValueError("during the set-up draw the board is empty or holds red's "
                                     "six cubes on red's triangle only")
            return s
        red_won = s._board[24] > 0 or blue == 0
        blue_won = s._board[0] < 0 or red == 0
        if phase == PLAY:
            if red_won or blue_won:
                raise ValueError("the position is already won (a cube on its goal corner or a "
                                 "side without cubes): its phase must be 'over'")
            return s
        # OVER: the side field names the loser; the winner made the last move.
        if die is not None:
            raise ValueError("no die may show once the game is over")
        winner = 1 - s._turn
        won = (red_won, blue_won)
        if not won[winner] or won[s._turn]:
            raise ValueError(f"phase 'over' with side {side_f!r} to move means "
                             f"{COLOUR_NAMES[winner]} has won, but the board does not show "
                             f"exactly that")
        s._winner = winner
        return s

    @staticmethod
    def _parse_board(text: str, s: EinsteinState) -> None:
        rows = text.split("/")
        if len(rows) != SIZE:
            raise ValueError(f"board needs 5 ranks separated by '/', got {len(rows)}: {text!r}")
        board, pos, count = s._board, s._pos, s._count
        for r, row in enumerate(rows):
            c = 0
            i = 0
            while i < len(row):
                ch = row[i]
                if ch in "RB":
                    if i + 1 >= len(row) or row[i + 1] not in "123456":
                        raise ValueError(f"rank {SIZE - r}: {ch!r} must be followed by a cube "
                                         f"number 1-6 in {row!r}")
                    n = int(row[i + 1])
                    if c >= SIZE:
                        raise ValueError(f"rank {SIZE - r} has more than 5 squares: {row!r}")
                    colour = RED if ch == "R" else BLUE
                    if pos[7 * colour + n] >= 0:
                        raise ValueError(f"{COLOUR_NAMES[colour]} cube {n} appears twice")
                    sq = r * SIZE + c
                    board[sq] = n if colour == RED else -n
                    pos[7 * colour + n] = sq
                    count[colour] += 1
                    c += 1
                    i += 2
                elif ch in "12345":
                    if i and row[i - 1] in "12345" and (i < 2 or row[i - 2] not in "RB"):
                        raise ValueError(f"rank {SIZE - r}: a run of empty squares is one digit, "
                                         f"not {row[i - 1]}{ch} in {row!r}")
                    c += int(ch)
                    i += 1
                else:
                    raise ValueError(f"rank {SIZE - r}: unexpected {ch!r} in {row!r} "
                                     f"(R<n>, B<n> or a digit 1-5)")
                if c > SIZE:
                    raise ValueError(f"rank {SIZE - r} has more than 5 squares: {row!r}")
            if c != SIZE:
                raise ValueError(f"rank {SIZE - r} has {c} squares, not 5: {row!r}")


def _render_svg(state: "EinsteinState", reveal: bool = False) -> str:
    """The 5x5 board with numbered red and blue cubes, the corners and the die (EinStein has no
    hidden information on the board: a hidden set-up is placed only once both layouts are in)."""
    from .svg import document, esc

    cell, pad = 60, 20
    # A live page gets a board per move for every spectator, so it is kept small: shared attributes
    # are set once on a group, and the square and the cube are defined once and placed with <use>
    # (every EinStein board on a page defines them alike, so their ids may repeat).
    squares, cubes, numbers = [], [], []
    for r in range(SIZE):
        for c in range(SIZE):
            x, y = pad + c * cell, pad + r * cell
            corner = ' fill="#fde2e2"' if (r, c) == (0, 0) else ' fill="#dde8fb"' if (r, c) == (SIZE - 1, SIZE - 1) else ""
            squares.append(f'<use href="#ew-sq" x="{x}" y="{y}"{corner}/>')
            v = state._board[r * SIZE + c]
            if v:
                colour = "#c62828" if v > 0 else "#1e4fb5"
                cubes.append(f'<use href="#ew-cube" class="cube" x="{x + 8}" y="{y + 8}" fill="{colour}"/>')
                numbers.append(f'<text x="{x + cell // 2}" y="{y + cell // 2 + 8}">{abs(v)}</text>')
    body = [f'<defs><rect id="ew-sq" width="{cell}" height="{cell}"/>'
            f'<rect id="ew-cube" width="{cell - 16}" height="{cell - 16}" rx="7"/></defs>',
            '<rect width="100%" height="100%" fill="#f7f1e3"/>',
            '<g fill="#fffdf7" stroke="#8a7f6a">', *squares, "</g>",  # fill, stroke and fonts inherit
            '<g stroke="#222">', *cubes, "</g>",
            '<g font-size="24" font-weight="700" text-anchor="middle" fill="#fff">', *numbers, "</g>",
            '<g font-size="12" text-anchor="middle">']
    for i in range(SIZE):
        body.append(f'<text x="{pad + i * cell + cell / 2:g}" y="{pad + SIZE * cell + 15}">{FILES[i]}</text>'
                    f'<text x="8" y="{pad + i * cell + cell / 2 + 4:g}">{SIZE - i}</text>')
    body.append("</g>")
    dx = pad * 2 + SIZE * cell
    phase = state._phase
    if phase == PLAY and state._die is not None:
        colour = "#c62828" if state._turn == RED else "#1e4fb5"
        body.append(f'<rect class="die" x="{dx}" y="{pad}" width="50" height="50" rx="8" fill="#fff" stroke="{colour}" '
                    f'stroke-width="3"/><text x="{dx + 25}" y="{pad + 34}" font-size="26" font-weight="700" '
                    f'text-anchor="middle" fill="{colour}">{state._die}</text>')
    status = {SETUP: "hidden set-up", DEAL: "dealing"}.get(phase)
    if phase == PLAY:
        status = f"{COLOUR_NAMES[state._turn]} to {'move' if state._die is not None else 'roll'}"
    elif phase == OVER:
        status = f"{COLOUR_NAMES[state._winner]} wins"
    body.append(f'<text x="{dx}" y="{pad + 80}" font-size="13">{esc(status)}</text>')
    return document(dx + 110, pad * 2 + SIZE * cell, body, "EinStein würfelt nicht!")
