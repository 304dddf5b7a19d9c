"""Catalonia (François Tremblay, 2010): a cooperative chess-like game of production chains.

Rules: ``docs/games/catalonia.md``; the full notation reference, every project rule and
the ``state`` sent on the wire are in ``docs/games/catalonia.md``. In short:

Seats
    Seat 0 is White, seat 1 is Black (``seat_roles`` = ``("white", "black")``). The game is
    cooperative: ``returns()`` gives both seats the same total score; a five-turn-rule loss and
    a forfeit by either seat give both 0.

Squares
    ``a1``..``h8``; square index = ``rank_index * 8 + file_index`` (``a1`` = 0, ``h1`` = 7,
    ``a8`` = 56, ``h8`` = 63).

Decisions (``decision_kind``)
    * ``move``: ``<from><to>`` (e.g. ``b1c3``); White's first decision of a turn may instead
      be ``after`` (Black moves first, then White).
    * ``bomb_target``: the square of the piece whose square becomes a pit (e.g. ``d5``).
    * ``escape``: ``<pit square><destination>`` for the bombed piece (e.g. ``d5f7``).
    * ``remove_peasant``: the square of one of the decider's trapped peasants, or ``done``.

Turn flow
    White's decision (move or ``after``), Black's move (or the reverse order), then, once the
    first chain has formed: scoring (longest chain length squared), the pit phase (two CHANCE
    nodes: the file die and the rank die, repeated while they hit a pit; or the non-random
    target choice) with its escape, and the trapped-peasant removals. Decisions with a single
    option in the pit phase (one piece in the blast radius, one escape square) are applied by
    the rules without asking; movement decisions are always asked (except a seat with no move
    at all, which passes).

Position text: ``<board> <turn> <step> <arg> <total> <turn scores> <chain>`` (see the doc).

Fast path for engines
    Module functions on a plain ``board`` (64 ints: +type white, -type black, 0 empty) and a
    ``pits`` bitmask: ``movement_moves``, ``defence_graph``, ``longest_chain_squares``,
    ``escape_destinations``, ``trapped_peasants``. ``CataloniaState.board()`` / ``pits()`` give
    them their input; ``state.clone()`` copies a state.
"""
from __future__ import annotations

from typing import Annotated, Any, ClassVar

import msgspec

from .base import CHANCE, TERMINAL, ChanceError, Game, GameOptions, GameType, IllegalMove, State, Utility, bad_option
from .catalonia_chains import chain_members, chain_through, longest_chain

# --- board geometry --------------------------------------------------------------------------

WHITE, BLACK = 0, 1
COLOUR_NAMES = ("white", "black")
PEASANT, KNIGHT, BISHOP, LADY, GENTLEMAN = 1, 2, 3, 4, 5
PIECE_NAMES = ("", "Peasant", "Knight", "Bishop", "Lady", "Gentleman")
LETTERS = ".PNBLG"
"""Piece letter by type; White upper case, Black lower case (``P N B L G`` / ``p n b l g``)."""
PIT_CHAR = "*"
_LETTER_CODE = {**{ch: i for i, ch in enumerate(LETTERS) if i},
                **{ch.lower(): -i for i, ch in enumerate(LETTERS) if i}}
PIECE_COUNTS = {PEASANT: 6, KNIGHT: 2, BISHOP: 2, LADY: 1, GENTLEMAN: 1}
"""Pieces per colour at the start; no piece is ever added."""

FILES = "abcdefgh"
SQUARE_NAMES: tuple[str, ...] = tuple(f"{FILES[sq % 8]}{sq // 8 + 1}" for sq in range(64))
SQUARE_INDEX: dict[str, int] = {name: sq for sq, name in enumerate(SQUARE_NAMES)}

INITIAL_BOARD_TEXT = "1nblgbn1/1pppppp1/8/8/8/8/1PPPPPP1/1NBLGBN1"

MIN_CHAIN = 4
MAX_CHAIN = 2 * sum(PIECE_COUNTS.values())
"""Every piece of both armies (24): no chain is longer."""
FIVE_TURN_LIMIT = 5


def _on_board(r: int, f: int) -> bool:
    return 0 <= r < 8 and 0 <= f < 8


def _leaps(deltas: tuple[tuple[int, int], ...]) -> tuple[tuple[int, ...], ...]:
    table = []
    for sq in range(64):
        r, f = divmod(sq, 8)
        table.append(tuple(sorted((r + dr) * 8 + f + df for dr, df in deltas if _on_board(r + dr, f + df))))
    return tuple(table)


_ORTHO = ((1, 0), (-1, 0), (0, 1), (0, -1))
_DIAG = ((1, 1), (1, -1), (-1, 1), (-1, -1))
KNIGHT_LEAPS = _leaps(((1, 2), (2, 1), (-1, 2), (-2, 1), (1, -2), (2, -1), (-1, -2), (-2, -1)))
GENTLEMAN_LEAPS = _leaps(_ORTHO + _DIAG + tuple((2 * a, 2 * b) for a, b in _ORTHO + _DIAG))
"""King steps, Alfil (2,2) and Dabbaba (2,0) leaps: 16 squares at most."""
KING_STEPS = _leaps(_ORTHO + _DIAG)
"""The 8 neighbours of a square: the blast radius of a bomb."""


def _rays(dirs: tuple[tuple[int, int], ...]) -> tuple[tuple[tuple[int, ...], ...], ...]:
    table = []
    for sq in range(64):
        r, f = divmod(sq, 8)
        rays = []
        for dr, df in dirs:
            ray = []
            rr, ff = r + dr, f + df
            while _on_board(rr, ff):
                ray.append(rr * 8 + ff)
                rr, ff = rr + dr, ff + df
            if ray:
                rays.append(tuple(ray))
        table.append(tuple(rays))
    return tuple(table)


BISHOP_RAYS = _rays(_DIAG)
LADY_RAYS = _rays(_ORTHO + _DIAG)
_SLIDER_RAYS = {BISHOP: BISHOP_RAYS, LADY: LADY_RAYS}
_LEAPER_TABLE = {KNIGHT: KNIGHT_LEAPS, GENTLEMAN: GENTLEMAN_LEAPS}


def _peasant_tables(colour: int):
    fwd = 1 if colour == WHITE else -1
    second, fourth = (1, 3) if colour == WHITE else (6, 4)
    defends, steps, escapes = [], [], []
    for sq in range(64):
        r, f = divmod(sq, 8)
        defends.append(tuple(sorted((r + fwd) * 8 + f + df for df in (-1, 1) if _on_board(r + fwd, f + df))))
        mv = []  # (destination, square passed or -1)
        for dr in (fwd, -fwd):
            if _on_board(r + dr, f):
                mv.append(((r + dr) * 8 + f, -1))
        if r == second:
            mv.append((fourth * 8 + f, (second + fwd) * 8 + f))
        elif r == fourth:
            mv.append((second * 8 + f, (fourth - fwd) * 8 + f))
        steps.append(tuple(sorted(mv)))
        escapes.append(tuple(sorted(d for d, _ in mv)))
    return tuple(defends), tuple(steps), tuple(escapes)


_WP = _peasant_tables(WHITE)
_BP = _peasant_tables(BLACK)
PEASANT_DEFENDS = (_WP[0], _BP[0])
"""``PEASANT_DEFENDS[colour][sq]``: the two diagonal-forward squares."""
PEASANT_STEPS = (_WP[1], _BP[1])
"""``PEASANT_STEPS[colour][sq]``: ``(destination, passed square or -1)`` of every peasant move."""
PEASANT_ESCAPES = (_WP[2], _BP[2])


def _escape_table(kind: int) -> tuple[tuple[int, ...], ...]:
    if kind in _LEAPER_TABLE:
        return _LEAPER_TABLE[kind]
    return tuple(tuple(sorted(sq for ray in rays for sq in ray)) for rays in _SLIDER_RAYS[kind])


ESCAPE_SQUARES = {KNIGHT: KNIGHT_LEAPS, GENTLEMAN: GENTLEMAN_LEAPS,
                  BISHOP: _escape_table(BISHOP), LADY: _escape_table(LADY)}
"""Squares an escaping piece may leap to (peasants: ``PEASANT_ESCAPES[colour]``)."""


def initial_board() -> list[int]:
    board = [0] * 64
    for f, kind in zip(range(1, 7), (KNIGHT, BISHOP, LADY, GENTLEMAN, BISHOP, KNIGHT)):
        board[f] = kind
        board[56 + f] = -kind
        board[8 + f] = PEASANT
        board[48 + f] = -PEASANT
    return board


def piece_text(code: int) -> str:
    """``L`` for a white Lady, ``p`` for a black Peasant."""
    return LETTERS[code] if code > 0 else LETTERS[-code].lower()


def piece_on(code: int, sq: int) -> str:
    """A piece and its square, e.g. ``Lc3`` (white Lady on c3) or ``pd4`` (black Peasant)."""
    return piece_text(code) + SQUARE_NAMES[sq]


# --- the fast path: rules on a plain board and a pit bitmask ----------------------------------


def movement_moves(board: list[int], pits: int, colour: int) -> list[tuple[int, int]]:
    """Every movement of ``colour``'s pieces as ``(from, to)`` squares, ascending."""
    out: list[tuple[int, int]] = []
    sign = 1 if colour == WHITE else -1
    psteps = PEASANT_STEPS[colour]
    for sq in range(64):
        v = board[sq] * sign
        if v <= 0:
            continue
        if v == PEASANT:
            for to, via in psteps[sq]:
                if board[to] == 0 and not (pits >> to) & 1 and (
                        via < 0 or (board[via] == 0 and not (pits >> via) & 1)):
                    out.append((sq, to))
        elif v == KNIGHT or v == GENTLEMAN:
            for to in _LEAPER_TABLE[v][sq]:
                if board[to] == 0 and not (pits >> to) & 1:
                    out.append((sq, to))
        else:
            dests = []
            for ray in _SLIDER_RAYS[v][sq]:
                for to in ray:
                    if board[to] != 0 or (pits >> to) & 1:
                        break
                    dests.append(to)
            dests.sort()
            out.extend((sq, to) for to in dests)
    return out


def defended_squares(board: list[int], pits: int, sq: int) -> list[int]:
    """The occupied squares the piece on ``sq`` defends (the board as it is)."""
    v = board[sq]
    kind = v if v > 0 else -v
    if kind == PEASANT:
        return [t for t in PEASANT_DEFENDS[WHITE if v > 0 else BLACK][sq] if board[t]]
    if kind in _LEAPER_TABLE:
        return [t for t in _LEAPER_TABLE[kind][sq] if board[t]]
    out = []
    for ray in _SLIDER_RAYS[kind][sq]:
        for t in ray:
            if (pits >> t) & 1:
                break
            if board[t]:
                out.append(t)
                break
    return sorted(out)


def defence_graph(board: list[int], pits: int) -> tuple[list[int], list[int], int]:
    """The defence digraph: (piece squares ascending, successor bitmasks, white bitmask).

    Vertex i is the piece on ``squares[i]``; bit j of ``succ[i]`` means it defends piece j."""
    squares = [sq for sq in range(64) if board[sq]]
    index = [-1] * 64
    white = 0
    for i, sq in enumerate(squares):
        index[sq] = i
        if board[sq] > 0:
            white |= 1 << i
    succ = []
    for sq in squares:
        v = board[sq]
        kind = v if v > 0 else -v
        m = 0
        if kind == PEASANT:
            for t in PEASANT_DEFENDS[WHITE if v > 0 else BLACK][sq]:
                if board[t]:
                    m |= 1 << index[t]
        elif kind == KNIGHT or kind == GENTLEMAN:
            for t in _LEAPER_TABLE[kind][sq]:
                if board[t]:
                    m |= 1 << index[t]
        else:
            for ray in _SLIDER_RAYS[kind][sq]:
                for t in ray:
                    if (pits >> t) & 1:
                        break
                    if board[t]:
                        m |= 1 << index[t]
                        break
        succ.append(m)
    return squares, succ, white


def longest_chain_squares(board: list[int], pits: int) -> tuple[int, ...]:
    """A longest chain as squares in defence order, from its smallest square (empty if none).

    Its length is exact; when several chains tie, which one comes back is the finder's affair:
    no rule depends on it (see ``longest_chain_member_squares``)."""
    squares, succ, white = defence_graph(board, pits)
    return tuple(squares[i] for i in longest_chain(succ, white))


def longest_chain_member_squares(board: list[int], pits: int) -> list[int]:
    """Squares of every piece that belongs to some longest chain, ascending (the non-random
    bomb targets: "a piece of the longest chain", whichever of several equally long ones)."""
    squares, succ, white = defence_graph(board, pits)
    _, members = chain_members(succ, white)
    return [sq for i, sq in enumerate(squares) if (members >> i) & 1]


def in_some_chain(board: list[int], pits: int, sq: int) -> bool:
    """Whether the piece on ``sq`` belongs to some chain (the escape condition)."""
    squares, succ, white = defence_graph(board, pits)
    return bool(chain_through(succ, white, squares.index(sq)))


def escape_destinations(board: list[int], pits: int, frm: int, piece: int) -> list[int]:
    """The qualifying escape squares for ``piece`` (lifted off ``frm``, already a pit), ascending.

    A destination qualifies if it is empty and no pit, and with the piece standing there the
    position has a chain that includes it."""
    kind = piece if piece > 0 else -piece
    if kind == PEASANT:
        cands = PEASANT_ESCAPES[WHITE if piece > 0 else BLACK][frm]
    else:
        cands = ESCAPE_SQUARES[kind][frm]
    out = []
    for to in cands:
        if board[to] or (pits >> to) & 1:
            continue
        board[to] = piece
        try:
            if in_some_chain(board, pits, to):
                out.append(to)
        finally:
            board[to] = 0
    return out


def is_trapped_peasant(pits: int, sq: int, colour: int) -> bool:
    """A peasant with a pit in front and behind, or a pit on one side and the edge on the other."""
    fwd = 8 if colour == WHITE else -8
    front, back = sq + fwd, sq - fwd
    front_edge = not 0 <= front < 64
    back_edge = not 0 <= back < 64
    front_pit = not front_edge and (pits >> front) & 1
    back_pit = not back_edge and (pits >> back) & 1
    return bool((front_pit and (back_pit or back_edge)) or (front_edge and back_pit))


def trapped_peasants(board: list[int], pits: int, colour: int) -> list[int]:
    """Squares of ``colour``'s peasants that are trapped by pits (removable), ascending."""
    code = PEASANT if colour == WHITE else -PEASANT
    return [sq for sq in range(64) if board[sq] == code and is_trapped_peasant(pits, sq, colour)]


def board_text(board: list[int], pits: int) -> str:
    """Ranks 8 to 1 separated by ``/``; piece letters, ``*`` for a pit, digits for empty runs."""
    rows = []
    for r in range(7, -1, -1):
        parts = []
        empty = 0
        for f in range(8):
            sq = r * 8 + f
            v = board[sq]
            if v == 0 and not (pits >> sq) & 1:
                empty += 1
                continue
            if empty:
                parts.append(str(empty))
                empty = 0
            parts.append(PIT_CHAR if v == 0 else piece_text(v))
        if empty:
            parts.append(str(empty))
        rows.append("".join(parts))
    return "/".join(rows)


def _is_decimal(text: str) -> bool:
    """A number as ``to_text`` writes it: ASCII digits, no sign, no leading zero (``int`` also
    takes other scripts' digits, ``+``, ``_`` and ``016``; ``isdigit`` takes superscripts)."""
    return text.isascii() and text.isdigit() and (text == "0" or text[0] != "0")


def parse_board(text: str) -> tuple[list[int], int]:
    """The inverse of ``board_text``; raises ValueError saying what is wrong."""
    rows = text.split("/")
    if len(rows) != 8:
        raise ValueError(f"board needs 8 ranks separated by '/', got {len(rows)}: {text!r}")
    board = [0] * 64
    pits = 0
    for i, row in enumerate(rows):
        r = 7 - i
        f = 0
        for k, ch in enumerate(row):
            if ch in "12345678":
                if k and row[k - 1] in "12345678":
                    raise ValueError(f"rank {r + 1}: a run of empty squares is one digit, not "
                                     f"{row[k - 1]}{ch} in {row!r}")
                f += int(ch)
            elif ch == PIT_CHAR or ch in _LETTER_CODE:
                if f < 8:
                    if ch == PIT_CHAR:
                        pits |= 1 << (r * 8 + f)
                    else:
                        board[r * 8 + f] = _LETTER_CODE[ch]
                f += 1
            else:
                raise ValueError(f"rank {r + 1}: unexpected {ch!r} in {row!r} (piece letters "
                                 f"PNBLG/pnblg, '{PIT_CHAR}' for a pit, digits 1-8 for empty squares)")
            if f > 8:
                raise ValueError(f"rank {r + 1} has more than 8 squares: {row!r}")
        if f != 8:
            raise ValueError(f"rank {r + 1} has {f} squares, not 8: {row!r}")
    for colour, sign in ((WHITE, 1), (BLACK, -1)):
        for kind, most in PIECE_COUNTS.items():
            n = board.count(sign * kind)
            if n > most:
                raise ValueError(f"{COLOUR_NAMES[colour]} has {n} {PIECE_NAMES[kind]}s; at most "
                                 f"{most} exist")
    return board, pits


# --- steps of a turn -------------------------------------------------------------------------

WHITE_FIRST, BLACK_SECOND, BLACK_FIRST, WHITE_SECOND = 0, 1, 2, 3
ROLL_FILE, ROLL_RANK, TARGET, ESCAPE, REMOVE, OVER = 4, 5, 6, 7, 8, 9
STEP_NAMES = ("white", "black", "black-first", "white-second", "roll-file", "roll-rank",
              "target", "escape", "remove", "over")
_STEP_INDEX = {name: i for i, name in enumerate(STEP_NAMES)}
_MOVEMENT_STEPS = (WHITE_FIRST, BLACK_SECOND, BLACK_FIRST, WHITE_SECOND)
_MOVER = {WHITE_FIRST: WHITE, BLACK_SECOND: BLACK, BLACK_FIRST: BLACK, WHITE_SECOND: WHITE}
KIND_MOVE, KIND_TARGET, KIND_ESCAPE, KIND_REMOVE = "move", "bomb_target", "escape", "remove_peasant"
AFTER = "after"
DONE = "done"
END_LIMIT, END_FIVE_TURN = "limit", "five-turn"
_DICE = (1, 2, 3, 4, 5, 6)


class CataloniaState(State):
    """One position, with everything the rules need to go on (see ``to_text``)."""

    def __init__(self, game: "CataloniaGame"):
        self.game = game
        self._board = initial_board()
        self._pits = 0
        self._turn = 1
        self._step = WHITE_FIRST
        self._file_die = 0
        self._rolled = -1
        """Square the dice picked (random variant), -1 when none is pending."""
        self._escape_from = -1
        self._escape_piece = 0
        self._escape_options: list[int] = []
        self._removing = WHITE
        self._scores: list[int] = []
        self._chain: tuple[int, ...] = ()
        self._targets: list[int] = []
        """Non-random target step: the squares of every piece on some longest chain."""
        self._end = ""
        self._log: list[str] = []
        """What happened, one line per event, for people (``render``); not part of the rules."""
        self._log_from = 0
        self._log_done = 0

    # --- read-only helpers --------------------------------------------------------------------

    def board(self) -> list[int]:
        """A copy of the board: 64 ints (a1..h8), +type white, -type black, 0 empty."""
        return self._board[:]

    def pits(self) -> int:
        """The pits as a bitmask over square indices."""
        return self._pits

    @property
    def turn(self) -> int:
        return self._turn

    @property
    def step(self) -> str:
        return STEP_NAMES[self._step]

    def total_score(self) -> int:
        return sum(self._scores)

    def turn_scores(self) -> list[int]:
        return self._scores[:]

    def started(self) -> bool:
        """Whether the first chain has formed (phases 2 and 3 are on)."""
        return any(self._scores)

    def scored_chain(self) -> tuple[int, ...]:
        """The chain scored this turn (squares at scoring time, defence order), or ()."""
        return self._chain

    def deciding_colour(self) -> int | None:
        step = self._step
        if step in _MOVER:
            return _MOVER[step]
        if step == TARGET:
            return WHITE if self._turn % 2 else BLACK
        if step == ESCAPE:
            return WHITE if self._escape_piece > 0 else BLACK
        if step == REMOVE:
            return self._removing
        return None

    def log(self) -> list[str]:
        """Everything that happened so far, one line per event (for people)."""
        return self._log[:]

    def event_note(self) -> str:
        """The log lines written since the previous call (chains, scores, bombs, pits, escapes,
        removals), so the record carries every phase, not only the decisions."""
        noted = getattr(self, "_noted", 0)
        self._noted = len(self._log)
        return "; ".join(self._log[noted:])

    # --- the common interface -------------------------------------------------------------

    def current_player(self) -> int:
        step = self._step
        if step == OVER:
            return TERMINAL
        if step == ROLL_FILE or step == ROLL_RANK:
            return CHANCE
        return self.deciding_colour()  # seat == colour

    def is_terminal(self) -> bool:
        return self._step == OVER

    def decision_kind(self, seat: int | None = None) -> str:
        step = self._step
        if step == TARGET:
            return KIND_TARGET
        if step == ESCAPE:
            return KIND_ESCAPE
        if step == REMOVE:
            return KIND_REMOVE
        return KIND_MOVE

    def legal_moves(self, seat: int | None = None) -> list[str]:
        colour = self.deciding_colour()
        if colour is None or not self.seat_acts(seat):
            return []
        step = self._step
        names = SQUARE_NAMES
        if step in _MOVER:
            moves = [names[f] + names[t] for f, t in movement_moves(self._board, self._pits, colour)]
            return moves + [AFTER] if step == WHITE_FIRST else moves
        if step == TARGET:
            return [names[sq] for sq in self.target_options()]
        if step == ESCAPE:
            frm = names[self._escape_from]
            return [frm + names[t] for t in self._escape_options]
        trapped = trapped_peasants(self._board, self._pits, self._removing)
        return [names[sq] for sq in trapped] + [DONE]

    def target_options(self) -> list[int]:
        """Squares of the pieces the chooser may pick as the bomb target (ascending)."""
        if self._step != TARGET:
            return []
        if self._rolled >= 0:
            return [t for t in KING_STEPS[self._rolled] if self._board[t]]
        return self._targets[:]

    def _phase_error(self) -> str | None:
        step = self._step
        if step == OVER:
            return "the game is over"
        if step in (ROLL_FILE, ROLL_RANK):
            return "the game is waiting for the referee's dice (a chance event)"
        return None

    def check_move(self, move: str, seat: int | None = None) -> None:
        err = self._phase_error()
        if err:
            raise IllegalMove(f"no decision is possible now: {err}")
        self.check_seat(seat)
        self._parse(move)

    def _parse(self, move: Any) -> Any:
        """Validate a decision for the current step; return its parsed form or raise IllegalMove."""
        err = self._phase_error()
        if err:
            raise IllegalMove(f"no decision is possible now: {err}")
        if not isinstance(move, str):
            raise IllegalMove(f"a decision is a string, not {type(move).__name__}")
        step = self._step
        if step in _MOVER:
            return self._parse_movement(move)
        if step == TARGET:
            sq = self._parse_square(move, "bomb target")
            options = self.target_options()
            if sq not in options:
                where = (f"next to the rolled square {SQUARE_NAMES[self._rolled]}" if self._rolled >= 0
                         else "of a longest chain (scored this turn)")
                if not self._board[sq]:
                    raise IllegalMove(f"bomb target {move}: there is no piece on {move}")
                raise IllegalMove(f"bomb target {move}: the target must be a piece {where} "
                                  f"({', '.join(SQUARE_NAMES[s] for s in options)})")
            return sq
        if step == ESCAPE:
            return self._parse_escape(move)
        # REMOVE
        if move == DONE:
            return DONE
        sq = self._parse_square(move, "peasant removal")
        code = PEASANT if self._removing == WHITE else -PEASANT
        who = COLOUR_NAMES[self._removing]
        if self._board[sq] != code:
            raise IllegalMove(f"peasant removal {move}: there is no {who} Peasant on {move}")
        if not is_trapped_peasant(self._pits, sq, self._removing):
            raise IllegalMove(f"peasant removal {move}: that Peasant is not trapped by pits (a pit "
                              f"in front and behind, or a pit on one side and the edge on the other)")
        return sq

    @staticmethod
    def _parse_square(text: str, what: str) -> int:
        sq = SQUARE_INDEX.get(text)
        if sq is None:
            raise IllegalMove(f"bad {what} syntax {text!r}: expected a square a1..h8")
        return sq

    @staticmethod
    def _parse_pair(move: str, what: str, example: str) -> tuple[int, int]:
        frm = SQUARE_INDEX.get(move[:2]) if len(move) == 4 else None
        to = SQUARE_INDEX.get(move[2:]) if len(move) == 4 else None
        if frm is None or to is None:
            raise IllegalMove(f"bad {what} syntax {move!r}: expected from-square and to-square, "
                              f"e.g. {example!r}")
        return frm, to

    def _parse_movement(self, move: str) -> Any:
        step = self._step
        colour = _MOVER[step]
        if move == AFTER:
            if step != WHITE_FIRST:
                raise IllegalMove("'after' is only White's first decision of a turn (to let Black "
                                  "move first)")
            return AFTER
        frm, to = self._parse_pair(move, "move", "b1c3")
        if (frm, to) in movement_moves(self._board, self._pits, colour):
            return frm, to
        raise IllegalMove(f"{move}: {self._why_illegal(frm, to, colour)}")

    def _why_illegal(self, frm: int, to: int, colour: int) -> str:
        board, pits = self._board, self._pits
        names = SQUARE_NAMES
        v = board[frm]
        if v == 0:
            return f"there is no piece on {names[frm]}" + (" (it is a pit)" if (pits >> frm) & 1 else "")
        if (v > 0) != (colour == WHITE):
            return f"the piece on {names[frm]} is {COLOUR_NAMES[1 - colour]}'s; {COLOUR_NAMES[colour]} moves now"
        name = PIECE_NAMES[abs(v)]
        if (pits >> to) & 1:
            return f"{names[to]} is a pit"
        if board[to]:
            return f"{names[to]} is occupied (there are no captures)"
        kind = abs(v)
        if kind == PEASANT:
            for dest, via in PEASANT_STEPS[colour][frm]:
                if dest == to:
                    return f"the Peasant must pass {names[via]}, which is " + (
                        "a pit" if (pits >> via) & 1 else "occupied")
            return ("a Peasant moves one step straight forward or back, or two between its 2nd and "
                    "4th ranks")
        if kind in _LEAPER_TABLE:
            return f"a {name} cannot leap from {names[frm]} to {names[to]}"
        for ray in _SLIDER_RAYS[kind][frm]:
            if to in ray:
                for t in ray[:ray.index(to)]:
                    if (pits >> t) & 1:
                        return f"the {name} cannot cross the pit on {names[t]}"
                    if board[t]:
                        return f"the {name}'s path is blocked by the piece on {names[t]}"
        lines = "diagonal" if kind == BISHOP else "straight or diagonal"
        return f"a {name} slides along {lines} lines; {names[to]} is not on one from {names[frm]}"

    def _parse_escape(self, move: str) -> tuple[int, int]:
        frm, to = self._parse_pair(move, "escape", SQUARE_NAMES[self._escape_from] + "e5")
        if frm != self._escape_from:
            raise IllegalMove(f"escape {move}: the escaping piece comes from "
                              f"{SQUARE_NAMES[self._escape_from]}, not {move[:2]}")
        if to not in self._escape_options:
            options = ", ".join(SQUARE_NAMES[t] for t in self._escape_options)
            if self._board[to] or (self._pits >> to) & 1:
                why = f"{move[2:]} is " + ("a pit" if (self._pits >> to) & 1 else "occupied")
            else:
                piece = self._escape_piece
                cands = (PEASANT_ESCAPES[WHITE if piece > 0 else BLACK][frm] if abs(piece) == PEASANT
                         else ESCAPE_SQUARES[abs(piece)][frm])
                why = (f"no chain includes the {PIECE_NAMES[abs(piece)]} on {move[2:]}" if to in cands
                       else f"the {PIECE_NAMES[abs(piece)]} cannot leap from {move[:2]} to {move[2:]}")
            raise IllegalMove(f"escape {move}: {why} (qualifying: {options})")
        return frm, to

    def apply(self, move: str) -> None:
        parsed = self._parse(move)
        self._log_from = self._log_done
        step = self._step
        who = COLOUR_NAMES[self.deciding_colour()].capitalize()
        if step in _MOVER:
            if parsed == AFTER:
                self._log.append(f"turn {self._turn}: White lets Black move first (after)")
                self._step = BLACK_FIRST
                self._enter_movement_step()
            else:
                frm, to = parsed
                self._log.append(f"turn {self._turn}: {who} {piece_on(self._board[frm], frm)}-{SQUARE_NAMES[to]}")
                self._move(frm, to)
                self._step = {WHITE_FIRST: BLACK_SECOND, BLACK_SECOND: -1, BLACK_FIRST: WHITE_SECOND,
                              WHITE_SECOND: -1}[step]
                if self._step < 0:
                    self._end_movement()
                else:
                    self._enter_movement_step()
        elif step == TARGET:
            self._log.append(f"turn {self._turn}: {who} picks {piece_on(self._board[parsed], parsed)} "
                             f"as the bomb target")
            self._blast(parsed)
        elif step == ESCAPE:
            frm, to = parsed
            self._log.append(f"turn {self._turn}: {who} escapes {piece_on(self._escape_piece, frm)} "
                             f"to {SQUARE_NAMES[to]}")
            self._finish_escape(to)
        else:
            if parsed == DONE:
                self._next_remover()
            else:
                self._log.append(f"turn {self._turn}: {who} removes the trapped "
                                 f"{piece_on(self._board[parsed], parsed)}")
                self._board[parsed] = 0
                if not trapped_peasants(self._board, self._pits, self._removing):
                    self._next_remover()
        self._log_done = len(self._log)

    def _move(self, frm: int, to: int) -> None:
        self._board[to] = self._board[frm]
        self._board[frm] = 0

    # --- turn flow --------------------------------------------------------------------------

    def _enter_movement_step(self) -> None:
        """At Black's move, Black-first or White-second: a side without a move passes."""
        while self._step in (BLACK_SECOND, BLACK_FIRST, WHITE_SECOND):
            colour = _MOVER[self._step]
            if movement_moves(self._board, self._pits, colour):
                return
            self._log.append(f"turn {self._turn}: {COLOUR_NAMES[colour].capitalize()} has no "
                             f"legal move and passes")
            if self._step == BLACK_FIRST:
                self._step = WHITE_SECOND
            else:
                self._end_movement()
                return

    def _end_movement(self) -> None:
        chain = longest_chain_squares(self._board, self._pits)
        turn = self._turn
        if not self.started() and not chain:
            self._scores.append(0)
            if turn >= FIVE_TURN_LIMIT:
                self._log.append(f"turn {turn}: no chain has formed by the end of turn "
                                 f"{FIVE_TURN_LIMIT}: the players lose (five-turn rule)")
                self._finish(END_FIVE_TURN)
                return
            self._log.append(f"turn {turn}: no chain yet (movement only)")
            self._begin_removals()
            return
        score = len(chain) ** 2
        self._scores.append(score)
        self._chain = chain
        total = sum(self._scores)
        if chain:
            pieces = " > ".join(piece_on(self._board[sq], sq) for sq in chain)
            self._log.append(f"turn {turn}: chain of {len(chain)} scores {score} (total {total}): {pieces}")
        else:
            self._log.append(f"turn {turn}: no chain: scores 0 (total {total})")
        if turn >= self.game.turns:
            self._log.append(f"turn {turn} was the last: final score {total}")
            self._finish(END_LIMIT)
            return
        self._begin_pits()

    def _finish(self, reason: str) -> None:
        self._end = reason
        self._step = OVER

    def _begin_pits(self) -> None:
        if self._pits.bit_count() >= self.game.max_pits:
            self._log.append(f"turn {self._turn}: all {self.game.max_pits} pits are made: no bomb")
            self._begin_removals()
        elif self.game.random:
            self._step = ROLL_FILE
        elif not self._chain:
            self._log.append(f"turn {self._turn}: no chain scored: no bomb (non-random game)")
            self._begin_removals()
        else:
            self._targets = longest_chain_member_squares(self._board, self._pits)
            self._step = TARGET

    def _bomb(self, sq: int) -> None:
        """The dice picked ``sq`` (not a pit)."""
        self._rolled = sq
        name = SQUARE_NAMES[sq]
        if self._board[sq]:
            self._log.append(f"turn {self._turn}: the bomb hits {piece_on(self._board[sq], sq)}")
            self._blast(sq)
            return
        around = [t for t in KING_STEPS[sq] if self._board[t]]
        if not around:
            self._pits |= 1 << sq
            self._log.append(f"turn {self._turn}: the bomb falls on empty {name}: a pit, nobody near")
            self._begin_removals()
        elif len(around) == 1:
            self._log.append(f"turn {self._turn}: the bomb falls on empty {name}; the only piece "
                             f"near is {piece_on(self._board[around[0]], around[0])}")
            self._blast(around[0])
        else:
            chooser = "White" if self._turn % 2 else "Black"
            self._log.append(f"turn {self._turn}: the bomb falls on empty {name}; {chooser} picks "
                             f"the target among {', '.join(piece_on(self._board[t], t) for t in around)}")
            self._step = TARGET

    def _blast(self, sq: int) -> None:
        """``sq`` becomes a pit; its piece must escape (or is removed)."""
        piece = self._board[sq]
        self._board[sq] = 0
        self._pits |= 1 << sq
        self._rolled = -1
        self._escape_from, self._escape_piece = sq, piece
        self._escape_options = escape_destinations(self._board, self._pits, sq, piece)
        options = self._escape_options
        what = piece_on(piece, sq)
        if not options:
            self._log.append(f"turn {self._turn}: {SQUARE_NAMES[sq]} becomes a pit; {what} has no "
                             f"escape into a chain and is removed")
            self._clear_escape()
            self._begin_removals()
        elif len(options) == 1:
            self._log.append(f"turn {self._turn}: {SQUARE_NAMES[sq]} becomes a pit; {what} escapes "
                             f"to {SQUARE_NAMES[options[0]]} (the only qualifying square)")
            self._finish_escape(options[0])
        else:
            self._log.append(f"turn {self._turn}: {SQUARE_NAMES[sq]} becomes a pit; {what} must "
                             f"escape to one of {', '.join(SQUARE_NAMES[t] for t in options)}")
            self._step = ESCAPE

    def _finish_escape(self, to: int) -> None:
        self._board[to] = self._escape_piece
        self._clear_escape()
        self._begin_removals()

    def _clear_escape(self) -> None:
        self._escape_from, self._escape_piece, self._escape_options = -1, 0, []

    def _begin_removals(self) -> None:
        self._removing = WHITE
        if trapped_peasants(self._board, self._pits, WHITE):
            self._step = REMOVE
        else:
            self._next_remover()

    def _next_remover(self) -> None:
        if self._removing == WHITE and trapped_peasants(self._board, self._pits, BLACK):
            self._removing = BLACK
            self._step = REMOVE
            return
        self._new_turn()

    def _new_turn(self) -> None:
        self._turn += 1
        self._step = WHITE_FIRST
        self._chain = ()
        self._targets = []
        self._rolled = -1
        self._file_die = 0
        self._removing = WHITE

    # --- chance -----------------------------------------------------------------------------

    def chance_outcomes(self) -> list[Any]:
        if self._step in (ROLL_FILE, ROLL_RANK):
            return list(_DICE)
        raise ChanceError("not a chance node: a decision is pending or the game is over")

    def apply_chance(self, outcome: Any) -> None:
        if self._step not in (ROLL_FILE, ROLL_RANK):
            raise ChanceError("not a chance node: a decision is pending or the game is over")
        if type(outcome) is not int or not 1 <= outcome <= 6:
            raise ChanceError(f"a die roll is an int 1..6, not {outcome!r}")
        if self._step == ROLL_FILE:
            self._file_die = outcome
            self._step = ROLL_RANK
            return
        sq = outcome * 8 + self._file_die  # file die 1..6 -> b..g, rank die 1..6 -> 2..7
        dice = f"the dice {self._file_die} and {outcome} pick {SQUARE_NAMES[sq]}"
        self._file_die = 0
        if (self._pits >> sq) & 1:
            self._log.append(f"turn {self._turn}: {dice}, already a pit: roll again")
            self._step = ROLL_FILE
            return
        self._log.append(f"turn {self._turn}: {dice}")
        self._bomb(sq)

    # --- results ----------------------------------------------------------------------------

    def returns(self) -> list[float]:
        if self._step != OVER or self._end == END_FIVE_TURN:
            return [0.0, 0.0]
        total = float(sum(self._scores))
        return [total, total]

    def truncated_returns(self) -> list[float]:
        """Stopped by an event's ply limit: the team keeps the points scored so far (as at the turn limit)."""
        total = float(sum(self._scores))
        return [total, total]

    def end_detail(self) -> str:
        if self._end == END_FIVE_TURN:
            return f"five-turn rule: no chain by the end of turn {FIVE_TURN_LIMIT}"
        if self._end == END_LIMIT:
            return f"turn limit ({self._turn} turns): total score {sum(self._scores)}"
        return ""

    # --- text -------------------------------------------------------------------------------

    def _arg_text(self) -> str:
        step = self._step
        if step == ROLL_RANK:
            return str(self._file_die)
        if step == TARGET:
            return SQUARE_NAMES[self._rolled] if self._rolled >= 0 else "chain"
        if step == ESCAPE:
            return SQUARE_NAMES[self._escape_from] + piece_text(self._escape_piece)
        if step == REMOVE:
            return "wb"[self._removing]
        if step == OVER:
            return self._end
        return "-"

    def to_text(self) -> str:
        scores = ",".join(map(str, self._scores)) or "-"
        chain = ">".join(SQUARE_NAMES[sq] for sq in self._chain) or "-"
        return (f"{board_text(self._board, self._pits)} {self._turn} {STEP_NAMES[self._step]} "
                f"{self._arg_text()} {sum(self._scores)} {scores} {chain}")

    def observation_data(self, seat: int) -> Any:
        board, pits = self._board, self._pits
        squares = [PIT_CHAR if (pits >> sq) & 1 else (piece_text(v) if v else "")
                   for sq, v in enumerate(board)]
        colour = self.deciding_colour()
        step = self._step
        return {
            "board": squares,
            "turn": self._turn,
            "turns": self.game.turns,
            "step": STEP_NAMES[step],
            "decider": COLOUR_NAMES[colour] if colour is not None else None,
            "kind": self.decision_kind() if colour is not None else None,
            "my_colour": COLOUR_NAMES[seat] if seat in (0, 1) else None,
            "random": self.game.random,
            "started": self.started(),
            "score": sum(self._scores),
            "turn_scores": self._scores[:],
            "chain": [SQUARE_NAMES[sq] for sq in self._chain],
            "rolled": SQUARE_NAMES[self._rolled] if self._rolled >= 0 else None,
            "file_die": self._file_die or None,
            "escaping": ({"from": SQUARE_NAMES[self._escape_from], "piece": piece_text(self._escape_piece)}
                         if step == ESCAPE else None),
            "removing": COLOUR_NAMES[self._removing] if step == REMOVE else None,
            "pits": pits.bit_count(),
            "max_pits": self.game.max_pits,
            "end": self._end or None,
        }

    def render_svg(self, reveal: bool = False) -> str:
        return _render_svg(self, reveal)

    def render(self) -> str:
        names = SQUARE_NAMES
        lines = []
        total = sum(self._scores)
        scores = " ".join(map(str, self._scores)) or "none yet"
        colour = self.deciding_colour()
        if self._step == OVER:
            status = f"game over ({self.end_detail()}): both players score {int(self.returns()[0])}"
        elif colour is None:
            status = "the referee rolls the dice"
        else:
            status = f"{COLOUR_NAMES[colour].capitalize()} to decide: {self.decision_kind()}"
        lines.append(f"Catalonia · turn {self._turn}/{self.game.turns} · {status}")
        lines.append(f"total {total} · per turn: {scores} · pits {self._pits.bit_count()}/{self.game.max_pits}")
        chain = set(self._chain)
        lines.append("     a  b  c  d  e  f  g  h")
        for r in range(7, -1, -1):
            cells = []
            for f in range(8):
                sq = r * 8 + f
                v = self._board[sq]
                if (self._pits >> sq) & 1:
                    cell = " # "
                elif v:
                    mark = "(" if sq in chain else " "
                    cell = mark + piece_text(v) + (")" if sq in chain else " ")
                else:
                    cell = " . "
                cells.append(cell)
            lines.append(f" {r + 1}  {''.join(cells)} {r + 1}")
        lines.append("     a  b  c  d  e  f  g  h")
        lines.append("     (x) = piece of the chain scored this turn, # = pit, upper case White")
        if self._chain:
            pieces = " > ".join(piece_on(self._board[sq], sq) if self._board[sq] else names[sq]
                                for sq in self._chain)
            lines.append(f"chain this turn ({len(self._chain)} pieces, {len(self._chain) ** 2}): {pieces}")
        if self._step == ESCAPE:
            lines.append(f"escaping: {piece_on(self._escape_piece, self._escape_from)} to one of "
                         f"{', '.join(names[t] for t in self._escape_options)}")
        elif self._step == TARGET:
            lines.append("bomb target options: " + ", ".join(piece_on(self._board[t], t)
                                                             for t in self.target_options()))
        recent = self._log[self._log_from:]
        if recent:
            lines.append("since the previous decision:")
            lines.extend("  " + line for line in recent)
        return "\n".join(lines)

    def clone(self) -> "CataloniaState":
        s = object.__new__(CataloniaState)
        s.__dict__.update(self.__dict__)
        s._board = self._board[:]
        s._scores = self._scores[:]
        s._escape_options = self._escape_options[:]
        s._targets = self._targets[:]
        s._log = self._log[:]
        return s


class CataloniaOptions(GameOptions):
    turns: Annotated[int, msgspec.Meta(ge=FIVE_TURN_LIMIT, le=100, description=(
        f"an integer {FIVE_TURN_LIMIT}..100 (15 or 20 are usual)"))] = 15
    random: Annotated[bool | str, msgspec.Meta(description="true or false")] = True
    max_pits: Annotated[int, msgspec.Meta(ge=0, le=35, description=(
        "an integer 0..35 (the dice pick among 36 squares and re-roll on pits)"))] = 20

    def check(self, game: str) -> None:
        if isinstance(self.random, str):  # "true"/"false" from a command line: kept as the bool
            if self.random.lower() not in ("true", "false"):
                raise bad_option(game, "random", self.random, "true or false")
            self.random = self.random.lower() == "true"


class CataloniaGame(Game):
    """Catalonia with its options: ``turns`` (15; 20 is the other common choice), ``random``
    (True: the bombers' square comes from the referee's dice; False: a chain piece is chosen)
    and ``max_pits`` (20: the original's supply of checkers)."""

    game_type: ClassVar[GameType] = GameType(
        name="catalonia", min_seats=2, max_seats=2, utility=Utility.IDENTICAL, chance=True,
        simultaneous=False, hidden_information=False, options=CataloniaOptions)
    seat_roles: tuple[str, ...] = ("white", "black")

    @property
    def turns(self) -> int:
        return self.options["turns"]

    @property
    def random(self) -> bool:
        return self.options["random"]

    @property
    def max_pits(self) -> int:
        return self.options["max_pits"]

    def new_initial_state(self) -> CataloniaState:
        return CataloniaState(self)

    def forfeit_returns(self, seat: int) -> list[float]:
        """A forfeit by either seat is a loss for the pair: both score 0 (the record keeps the
        reason and the forfeiting seat)."""
        return [0.0, 0.0]

    def from_text(self, text: str) -> CataloniaState:
        fields = text.split()
        if len(fields) != 7:
            raise ValueError(f"a Catalonia position has 7 fields (board turn step arg total scores "
                             f"chain), got {len(fields)}: {text!r}")
        board_f, turn_f, step_f, arg_f, total_f, scores_f, chain_f = fields
        board, pits = parse_board(board_f)
        if not _is_decimal(turn_f) or not 1 <= int(turn_f) <= self.turns:
            raise ValueError(f"turn must be 1..{self.turns} (option turns), not {turn_f!r}")
        turn = int(turn_f)
        if step_f not in _STEP_INDEX:
            raise ValueError(f"step must be one of {', '.join(STEP_NAMES)}, not {step_f!r}")
        step = _STEP_INDEX[step_f]
        if scores_f == "-":
            scores = []
        else:
            if not all(_is_decimal(x) for x in scores_f.split(",")):
                raise ValueError(f"turn scores must be comma-separated integers or '-', not {scores_f!r}")
            scores = [int(x) for x in scores_f.split(",")]
            for x in scores:
                if x != 0 and not (MIN_CHAIN ** 2 <= x <= MAX_CHAIN ** 2 and int(x ** 0.5) ** 2 == x):
                    raise ValueError(f"turn score {x} is not 0 or a chain length (4..24) squared")
        if not _is_decimal(total_f) or int(total_f) != sum(scores):
            raise ValueError(f"total {total_f!r} must be the sum of the turn scores ({sum(scores)})")
        expected = turn - 1 if step in _MOVEMENT_STEPS else turn
        if len(scores) != expected:
            raise ValueError(f"at step {step_f} of turn {turn} the scores of {expected} turns are "
                             f"known, the text gives {len(scores)}")
        if len(scores) >= FIVE_TURN_LIMIT and not any(scores[:FIVE_TURN_LIMIT]) and (
                step != OVER or arg_f != END_FIVE_TURN):
            raise ValueError(f"no chain in the first {FIVE_TURN_LIMIT} turns ends the game (five-turn rule)")
        if pits.bit_count() > self.max_pits:
            raise ValueError(f"{pits.bit_count()} pits on the board; option max_pits allows {self.max_pits}")
        chain: tuple[int, ...] = ()
        if chain_f != "-":
            names = chain_f.split(">")
            if any(n not in SQUARE_INDEX for n in names) or len(set(names)) != len(names) or len(names) < MIN_CHAIN:
                raise ValueError(f"chain must be '-' or at least {MIN_CHAIN} distinct squares joined by "
                                 f"'>', not {chain_f!r}")
            chain = tuple(SQUARE_INDEX[n] for n in names)
            if step in _MOVEMENT_STEPS:
                raise ValueError("no chain is scored yet during the movement phase")
            if scores[-1] != len(chain) ** 2:
                raise ValueError(f"the chain has {len(chain)} pieces but the turn scored {scores[-1]}")
        s = CataloniaState(self)
        s._board, s._pits, s._turn, s._step, s._scores, s._chain = board, pits, turn, step, scores, chain
        self._parse_arg(s, arg_f)
        if step in (BLACK_SECOND, BLACK_FIRST, WHITE_SECOND) and not movement_moves(board, pits, _MOVER[step]):
            raise ValueError(f"{COLOUR_NAMES[_MOVER[step]]} has no legal move at step {step_f}: a side "
                             f"without a move passes, it is never asked")
        if step in (ROLL_FILE, ROLL_RANK, TARGET, ESCAPE, REMOVE):
            self._check_phase(s, step_f)
        return s

    def _check_phase(self, s: CataloniaState, step_f: str) -> None:
        """A pit-phase or removal step only where the rules have that phase (rules 3, 5, 6, 9)."""
        step = s._step
        if s._turn == self.turns:
            raise ValueError(f"turn {s._turn} is the last (option turns): it ends after its scoring, "
                             f"without a pit phase or removals, so there is no step {step_f}")
        if step == REMOVE:
            return
        if not s.started():
            raise ValueError(f"no chain has formed yet: there is no pit phase (step {step_f}) before "
                             f"the turn of the first chain")
        if step in (ROLL_FILE, ROLL_RANK) and not self.random:
            raise ValueError("the non-random game (option random=false) rolls no dice")
        if step != ESCAPE and s._pits.bit_count() >= self.max_pits:
            raise ValueError(f"all {self.max_pits} pits (option max_pits) are made: no more bombs, "
                             f"so there is no step {step_f}")

    def _parse_arg(self, s: CataloniaState, arg: str) -> None:
        step = s._step
        if step == ROLL_RANK:
            if len(arg) != 1 or arg not in "123456":
                raise ValueError(f"at step roll-rank the argument is the file die 1..6, not {arg!r}")
            s._file_die = int(arg)
        elif step == TARGET:
            if arg == "chain":
                if self.random:
                    raise ValueError("a target chosen from the chain belongs to the non-random game "
                                     "(option random=false)")
                if not s._chain or not all(s._board[sq] for sq in s._chain):
                    raise ValueError("a chain target needs the scored chain, every square of it occupied")
                s._targets = longest_chain_member_squares(s._board, s._pits)
                if len(longest_chain_squares(s._board, s._pits)) != len(s._chain) or \
                        not set(s._chain) <= set(s._targets):
                    raise ValueError(f"the chain {'>'.join(SQUARE_NAMES[q] for q in s._chain)} is not a "
                                     f"longest chain of this board")
                return
            if not self.random:
                raise ValueError("the non-random game chooses its target from the chain: the "
                                 "argument must be 'chain'")
            sq = SQUARE_INDEX.get(arg)
            if sq is None or (s._pits >> sq) & 1 or s._board[sq] or not 1 <= sq % 8 <= 6 or not 1 <= sq // 8 <= 6:
                raise ValueError(f"at step target the argument is the empty rolled square b2..g7 "
                                 f"(or 'chain'), not {arg!r}")
            if sum(1 for t in KING_STEPS[sq] if s._board[t]) < 2:
                raise ValueError(f"fewer than two pieces are next to the rolled square {arg}: there "
                                 f"is nothing to choose")
            s._rolled = sq
        elif step == ESCAPE:
            sq = SQUARE_INDEX.get(arg[:2])
            code = _LETTER_CODE.get(arg[2:]) if len(arg) == 3 else None
            if sq is None or code is None:
                raise ValueError(f"at step escape the argument is the pit square and the escaping "
                                 f"piece, e.g. 'd5L', not {arg!r}")
            if not (s._pits >> sq) & 1:
                raise ValueError(f"the escaping piece's square {arg[:2]} must already be a pit")
            kind = abs(code)
            if s._board.count(code) >= PIECE_COUNTS[kind]:
                raise ValueError(f"{COLOUR_NAMES[code < 0]} already has {PIECE_COUNTS[kind]} "
                                 f"{PIECE_NAMES[kind]}(s) on the board: the escaping one would be one too many")
            s._escape_from, s._escape_piece = sq, code
            s._escape_options = escape_destinations(s._board, s._pits, sq, code)
            if len(s._escape_options) < 2:
                raise ValueError(f"{piece_on(code, sq)} has {len(s._escape_options)} qualifying escape "
                                 f"square(s): an escape decision needs at least two")
        elif step == REMOVE:
            if arg not in ("w", "b"):
                raise ValueError(f"at step remove the argument is 'w' or 'b', not {arg!r}")
            s._removing = WHITE if arg == "w" else BLACK
            if not trapped_peasants(s._board, s._pits, s._removing):
                raise ValueError(f"{COLOUR_NAMES[s._removing]} has no trapped peasant to remove")
        elif step == OVER:
            if arg == END_LIMIT:
                if s._turn != self.turns or not any(s._scores):
                    raise ValueError(f"a game ends by the turn limit after turn {self.turns} (option "
                                     f"turns) with a chain formed")
            elif arg == END_FIVE_TURN:
                if s._turn != FIVE_TURN_LIMIT or any(s._scores):
                    raise ValueError(f"the five-turn rule ends a game at turn {FIVE_TURN_LIMIT} "
                                     f"without any chain")
            else:
                raise ValueError(f"at step over the argument is {END_LIMIT!r} or {END_FIVE_TURN!r}, not {arg!r}")
            s._end = arg
        elif arg != "-":
            raise ValueError(f"at step {STEP_NAMES[step]} the argument must be '-', not {arg!r}")


def _render_svg(state: "CataloniaState", reveal: bool = False) -> str:
    """The 8x8 board: pieces by letter (upper case White), pits dark, and the chain scored this
    turn highlighted and joined in its order."""
    from .svg import document, esc

    cell, pad = 52, 22
    chain = list(state._chain)
    body = ['<rect width="100%" height="100%" fill="#efe9dc"/>']

    def centre(sq: int) -> tuple[float, float]:
        return pad + (sq % 8) * cell + cell / 2, pad + (7 - sq // 8) * cell + cell / 2

    for sq in range(64):
        x, y = pad + (sq % 8) * cell, pad + (7 - sq // 8) * cell
        pit = (state._pits >> sq) & 1
        fill = "#3b342c" if pit else "#ffe08a" if sq in chain else ("#fbf7ee" if (sq // 8 + sq) % 2 else "#e9dfc8")
        body.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{fill}" stroke="#a89c85"/>')
    if len(chain) > 1:
        points = " ".join(f"{x},{y}" for x, y in map(centre, chain))
        body.append(f'<polyline class="chain" points="{points}" fill="none" stroke="#e07b00" stroke-width="5" '
                    f'stroke-opacity="0.7" stroke-linejoin="round"/>')
    for sq in range(64):
        v = state._board[sq]
        if v and not (state._pits >> sq) & 1:
            cx, cy = centre(sq)
            white = v > 0
            body.append(f'<circle cx="{cx}" cy="{cy}" r="17" fill="{"#fff" if white else "#222"}" stroke="#222"/>'
                        f'<text x="{cx}" y="{cy + 6}" font-size="17" font-weight="700" text-anchor="middle" '
                        f'fill="{"#222" if white else "#fff"}">{esc(piece_text(v).upper())}</text>')
    for i in range(8):
        body.append(f'<text x="{pad + i * cell + cell / 2}" y="{pad + 8 * cell + 15}" font-size="12" '
                    f'text-anchor="middle">{"abcdefgh"[i]}</text>')
        body.append(f'<text x="10" y="{pad + (7 - i) * cell + cell / 2 + 4}" font-size="12" text-anchor="middle">{i + 1}</text>')
    h = pad * 2 + 8 * cell
    total = sum(state._scores)
    status = f"turn {state._turn}/{state.game.turns} · total {total}"
    if chain:
        status += f" · chain of {len(chain)} ({len(chain) ** 2})"
    if state._step == OVER:
        status += f" · over: {state.end_detail()}"
    body.append(f'<text x="{pad}" y="{h + 6}" font-size="13">{esc(status)}</text>')
    return document(pad * 2 + 8 * cell, h + 14, body, "Catalonia")
