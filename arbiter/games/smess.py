"""Smess ("The Ninny's Chess", Parker Brothers 1970): rules, arrow boards, notation, a fast state.

Rules: ``docs/games/smess.md``; the full notation reference is ``docs/games/smess.md``.
In short:

Board as data
    The arrows and the set-up are read from a JSON board file (``smess_boards/smess.json`` is the
    original; the option ``board`` names another built-in board or a file path) and validated on
    load (``SmessBoard``): every square defined, no arrow off the board, a consistent set-up. Move
    generation walks rays precomputed per square from the arrows, so any layout plays as fast.

Seats and colours
    Seat 0 always moves first (project convention); ``seat_roles`` is ``("first", "second")``.
    The option ``seat0_colour`` (``"blue"``, the default, or ``"red"``) says which colour seat 0
    plays. Blue starts on ranks 1-2, Red on ranks 7-8.

Moves
    ``<from><to>``, e.g. ``c2c3``. A piece moves only along an arrow of the square it starts on:
    a Ninny or the Brain one square; a Numskull any number of squares in one straight line up to
    the first occupied square (capturing it when it is an enemy). Promotion of a Ninny arriving on
    an enemy Numskull start square is automatic, so moves carry no suffix.

Position text (``to_text`` / ``SmessGame.from_text``)
    ``<board> <side> <seat0> <quiet> <move> [<end>]``, e.g. the start position
    ``1ssbss1/nnnnnnn/7/7/7/7/NNNNNNN/1SSBSS1 b b 0 1``: ranks 8 to 1, upper case Blue, lower
    case Red, ``B`` Brain, ``S`` Numskull, ``N`` Ninny, digits for empty runs; the colour to move
    and seat 0's colour (``b``/``r``); plies since the last capture; the move number (starts at
    1, goes up after the second mover's move); on finished games why it ended (``brain``,
    ``stuck``, ``brains``, ``repetition``, ``quiet``).

End of the game
    Capturing the Brain wins; a side to move without a legal move loses; only the two Brains left
    is a draw. For engine play (not in the original rules): ``no_capture_plies`` (default 100,
    0 = off) plies in a row without a capture draw, and the ``repetitions``-th occurrence (default
    3, 0 = off) of a position (same board, same side to move) draws.

Fast path for engines and benchmarks
    ``moves_ints()`` -> ``[(from_idx, to_idx), ...]``, ``apply_move_ints(frm, to)`` and
    ``clone()`` skip parsing and validation (feed them legal moves only); ``perft(state, depth)``
    counts the move tree. Square index = ``(rank - 1) * files + file`` (``a1`` = 0, ``g8`` = 55
    on the original board). Board ints: ``+1/+2/+3`` Blue Ninny/Numskull/Brain, negative for Red.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import msgspec

from .base import TERMINAL, Game, GameOptions, GameType, IllegalMove, OptionError, State, Utility, bad_option

# --- constants -------------------------------------------------------------------------------

BLUE, RED = 0, 1
"""Colour codes of the fast path (``side_to_move()``, ``winner_colour()``)."""
COLOUR_NAMES = ("blue", "red")
_COLOUR_TITLE = ("Blue", "Red")
_COLOUR_LETTER = ("b", "r")
_LETTER_COLOUR = {"b": BLUE, "r": RED}

NINNY, NUMSKULL, BRAIN = 1, 2, 3
"""Piece codes; Blue's are positive on the board, Red's negative."""
PIECE_NAMES = {NINNY: "Ninny", NUMSKULL: "Numskull", BRAIN: "Brain"}
_KIND_KEYS = {"brain": BRAIN, "numskull": NUMSKULL, "ninny": NINNY}
_PIECE_LETTER = {NINNY: "N", NUMSKULL: "S", BRAIN: "B", -NINNY: "n", -NUMSKULL: "s", -BRAIN: "b"}
_LETTER_PIECE = {letter: code for code, letter in _PIECE_LETTER.items()}

DIRECTIONS: dict[str, tuple[int, int]] = {
    "N": (0, 1), "NE": (1, 1), "E": (1, 0), "SE": (1, -1),
    "S": (0, -1), "SW": (-1, -1), "W": (-1, 0), "NW": (-1, 1),
}
"""Arrow name -> (file step, rank step); N points toward the last rank, E toward the last file."""
_DIRECTION_ORDER = tuple(DIRECTIONS)
_DIRECTION_OF_STEP = {step: name for name, step in DIRECTIONS.items()}
_ARROW_GLYPH = {"N": "↑", "NE": "↗", "E": "→", "SE": "↘", "S": "↓", "SW": "↙", "W": "←", "NW": "↖"}

END_REASONS = ("brain", "stuck", "brains", "repetition", "quiet")
"""The codes of the position text's end field, in the order the referee checks them."""

BOARDS_DIR = Path(__file__).resolve().parent / "smess_boards"
"""Built-in boards: ``<name>.json`` here is the board named ``<name>`` (option ``board``)."""
BOARD_FORMAT = "smess-board/1"
_MAX_FILES, _MAX_RANKS = 26, 99


class BoardError(ValueError):
    """A board file that is missing, unreadable or inconsistent; the message says where and why."""


# --- the board -------------------------------------------------------------------------------


class SmessBoard:
    """An arrow board with its set-up, validated on construction; immutable and shared by states.

    Build one with ``load_board`` (a built-in name, a file path or a dict in the board-file
    format). Square index = ``(rank - 1) * files + file``. Tables for move generation:
    ``rays[sq]`` (one tuple of squares per arrow, nearest first), ``steps[sq]`` (the first square
    of each ray: where a Ninny or Brain may go), ``promotes[colour][sq]`` (a Ninny of that colour
    arriving on ``sq`` becomes a Numskull)."""

    def __init__(self, data: Any, origin: str = "inline board"):
        self.origin = origin
        if not isinstance(data, dict):
            raise BoardError(f"{origin}: a board is a JSON object, not {type(data).__name__}")
        known = {"format", "name", "description", "source", "files", "ranks", "arrows", "setup"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise BoardError(f"{origin}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        for key in ("files", "ranks", "arrows", "setup"):
            if key not in data:
                raise BoardError(f"{origin}: the key {key!r} is missing")
        fmt = data.get("format", BOARD_FORMAT)
        if fmt != BOARD_FORMAT:
            raise BoardError(f"{origin}: format {fmt!r} is not {BOARD_FORMAT!r}")
        self.name: str = str(data.get("name", "unnamed board"))
        self.description: str = str(data.get("description", ""))
        self.files = self._dimension(data["files"], "files", _MAX_FILES)
        self.ranks = self._dimension(data["ranks"], "ranks", _MAX_RANKS)
        self.size = self.files * self.ranks
        self.square_names: tuple[str, ...] = tuple(
            f"{chr(97 + sq % self.files)}{sq // self.files + 1}" for sq in range(self.size))
        self.square_index: dict[str, int] = {n: i for i, n in enumerate(self.square_names)}
        self.arrows: tuple[tuple[str, ...], ...] = self._read_arrows(data["arrows"])
        self.rays: tuple[tuple[tuple[int, ...], ...], ...] = tuple(
            tuple(self._ray(sq, d) for d in self.arrows[sq]) for sq in range(self.size))
        self.steps: tuple[tuple[int, ...], ...] = tuple(
            tuple(ray[0] for ray in rays) for rays in self.rays)
        self.num_arrows = sum(len(a) for a in self.arrows)
        self.start: tuple[int, ...] = self._read_setup(data["setup"])
        self.numskull_starts: tuple[tuple[int, ...], tuple[int, ...]] = tuple(
            tuple(sq for sq in range(self.size) if self.start[sq] == sign * NUMSKULL)
            for sign in (1, -1))  # type: ignore[assignment]
        self.promotion_squares = (frozenset(self.numskull_starts[RED]), frozenset(self.numskull_starts[BLUE]))
        """Where a Ninny of each colour is promoted: the enemy Numskull start squares."""
        self.promotes: tuple[tuple[bool, ...], tuple[bool, ...]] = tuple(
            tuple(sq in squares for sq in range(self.size)) for squares in self.promotion_squares)  # type: ignore
        self.start_counts = tuple(sum(1 for v in self.start if (v > 0 if c == BLUE else v < 0))
                                  for c in (BLUE, RED))
        self.start_ninnies = tuple(sum(1 for v in self.start if v == s * NINNY) for s in (1, -1))
        self._symmetry: dict[str, dict[str, bool]] | None = None

    def move_name(self, frm: int, to: int) -> str:
        """The notation of the move ``frm`` -> ``to`` (square indices), e.g. ``c2c3``."""
        return self.square_names[frm] + self.square_names[to]

    def to_data(self) -> dict[str, Any]:
        """The board in the board-file format (what ``load_board`` reads back): name, size, the
        arrows of every square (ranks from the last down, directions in N NE E ... NW order) and
        the set-up. Engines get it as ``new_game.game_info["board"]``."""
        names = self.square_names
        order = [r * self.files + f for r in range(self.ranks - 1, -1, -1) for f in range(self.files)]
        return {
            "format": BOARD_FORMAT, "name": self.name, "files": self.files, "ranks": self.ranks,
            "arrows": {names[sq]: list(self.arrows[sq]) for sq in order},
            "setup": {colour: {kind: [names[sq] for sq in range(self.size) if self.start[sq] == sign * code]
                               for kind, code in _KIND_KEYS.items()}
                      for colour, sign in (("blue", 1), ("red", -1))},
        }

    # --- validation helpers ------------------------------------------------------------------

    def _dimension(self, value: Any, key: str, top: int) -> int:
        if type(value) is not int or not 2 <= value <= top:
            raise BoardError(f"{self.origin}: {key!r} must be an integer 2..{top}, not {value!r}")
        return value

    def _square(self, name: Any, where: str) -> int:
        sq = self.square_index.get(name) if isinstance(name, str) else None
        if sq is None:
            raise BoardError(f"{self.origin}: {where}: {name!r} is not a square of this "
                             f"{self.files}x{self.ranks} board (a1..{self.square_names[-1]})")
        return sq

    def _read_arrows(self, arrows: Any) -> tuple[tuple[str, ...], ...]:
        if not isinstance(arrows, dict):
            raise BoardError(f"{self.origin}: 'arrows' must map each square to a list of directions")
        table: list[tuple[str, ...] | None] = [None] * self.size
        for name, dirs in arrows.items():
            sq = self._square(name, "arrows")
            if not isinstance(dirs, list) or not all(isinstance(d, str) for d in dirs):
                raise BoardError(f"{self.origin}: arrows of {name}: a list of direction names "
                                 f"({' '.join(_DIRECTION_ORDER)}), not {dirs!r}")
            for d in dirs:
                if d not in DIRECTIONS:
                    raise BoardError(f"{self.origin}: arrows of {name}: {d!r} is not a direction; "
                                     f"use {' '.join(_DIRECTION_ORDER)}")
                if dirs.count(d) > 1:
                    raise BoardError(f"{self.origin}: arrows of {name}: {d} is listed twice")
                f, r = sq % self.files, sq // self.files
                df, dr = DIRECTIONS[d]
                if not (0 <= f + df < self.files and 0 <= r + dr < self.ranks):
                    raise BoardError(f"{self.origin}: arrows of {name}: {d} points off the board")
            table[sq] = tuple(d for d in _DIRECTION_ORDER if d in dirs)
        missing = [self.square_names[sq] for sq in range(self.size) if table[sq] is None]
        if missing:
            raise BoardError(f"{self.origin}: arrows: square(s) {', '.join(missing)} not defined "
                             f"(every square needs an entry, [] for none)")
        return tuple(table)  # type: ignore[arg-type]

    def _ray(self, sq: int, direction: str) -> tuple[int, ...]:
        df, dr = DIRECTIONS[direction]
        f, r = sq % self.files + df, sq // self.files + dr
        out = []
        while 0 <= f < self.files and 0 <= r < self.ranks:
            out.append(r * self.files + f)
            f += df
            r += dr
        return tuple(out)

    def _read_setup(self, setup: Any) -> tuple[int, ...]:
        if not isinstance(setup, dict) or set(setup) != {"blue", "red"}:
            raise BoardError(f"{self.origin}: 'setup' must have exactly the keys 'blue' and 'red'")
        board = [0] * self.size
        placed: dict[int, str] = {}
        for colour, sign in (("blue", 1), ("red", -1)):
            side = setup[colour]
            if not isinstance(side, dict) or set(side) != set(_KIND_KEYS):
                raise BoardError(f"{self.origin}: setup of {colour} must have exactly the keys "
                                 f"brain, numskull, ninny (lists of squares)")
            for kind, code in _KIND_KEYS.items():
                squares = side[kind]
                if not isinstance(squares, list):
                    raise BoardError(f"{self.origin}: setup {colour} {kind}: a list of squares, not {squares!r}")
                if kind == "brain" and len(squares) != 1:
                    raise BoardError(f"{self.origin}: setup {colour}: exactly one brain square, "
                                     f"not {len(squares)}")
                for name in squares:
                    sq = self._square(name, f"setup {colour} {kind}")
                    if sq in placed:
                        raise BoardError(f"{self.origin}: setup: {name} holds both the {placed[sq]} "
                                         f"and the {colour} {kind}")
                    placed[sq] = f"{colour} {kind}"
                    board[sq] = sign * code
        return tuple(board)

    # --- reports -----------------------------------------------------------------------------

    def _transform(self, kind: str):
        """(square map, direction map, swaps colours) of a symmetry: rotation or mirror."""
        F, R = self.files, self.ranks

        def sq_map(sq: int) -> int:
            f, r = sq % F, sq // F
            if kind in ("rotate180", "mirror_files"):
                f = F - 1 - f
            if kind in ("rotate180", "mirror_ranks"):
                r = R - 1 - r
            return r * F + f

        def dir_map(d: str) -> str:
            df, dr = DIRECTIONS[d]
            if kind in ("rotate180", "mirror_files"):
                df = -df
            if kind in ("rotate180", "mirror_ranks"):
                dr = -dr
            return _DIRECTION_OF_STEP[(df, dr)]

        return sq_map, dir_map, kind != "mirror_files"

    def symmetry(self) -> dict[str, dict[str, bool]]:
        """Which symmetries hold: ``{"rotate180" | "mirror_files" | "mirror_ranks":
        {"arrows": bool, "setup": bool}}``. Square and arrow are both turned; the set-up is
        compared with the colours swapped for the rotation and the top-bottom mirror."""
        if self._symmetry is None:
            out = {}
            for kind in ("rotate180", "mirror_files", "mirror_ranks"):
                sq_map, dir_map, swap = self._transform(kind)
                arrows_ok = all(set(self.arrows[sq_map(sq)]) == {dir_map(d) for d in self.arrows[sq]}
                                for sq in range(self.size))
                setup_ok = all(self.start[sq_map(sq)] == (-v if swap else v)
                               for sq, v in enumerate(self.start))
                out[kind] = {"arrows": arrows_ok, "setup": setup_ok}
            self._symmetry = out
        return self._symmetry

    def strongly_connected(self) -> bool:
        """True when one-square steps along the arrows lead from every square to every other."""
        forward: list[list[int]] = [list(s) for s in self.steps]
        backward: list[list[int]] = [[] for _ in range(self.size)]
        for sq, dests in enumerate(forward):
            for t in dests:
                backward[t].append(sq)
        for graph in (forward, backward):
            seen = {0}
            todo = [0]
            while todo:
                for t in graph[todo.pop()]:
                    if t not in seen:
                        seen.add(t)
                        todo.append(t)
            if len(seen) != self.size:
                return False
        return True

    def describe(self) -> str:
        """A one-paragraph report: size, arrow count, reachability and symmetry."""
        sym = self.symmetry()
        names = {"rotate180": "a 180° rotation", "mirror_files": "a left-right mirror",
                 "mirror_ranks": "a top-bottom mirror"}
        parts = []
        for kind, label in names.items():
            s = sym[kind]
            if s["arrows"] and s["setup"]:
                parts.append(f"symmetric under {label} (arrows and set-up)")
            elif s["arrows"]:
                parts.append(f"arrows symmetric under {label}, set-up not")
            else:
                parts.append(f"not symmetric under {label}")
        reach = ("every square reaches every other along the arrows" if self.strongly_connected()
                 else "some squares cannot reach every other along the arrows")
        return (f"{self.name}: {self.files}x{self.ranks}, {self.num_arrows} arrows, {reach}; "
                + "; ".join(parts))

    def __repr__(self) -> str:
        return f"SmessBoard({self.name!r}, {self.origin!r})"


_BOARD_CACHE: dict[Any, SmessBoard] = {}


def builtin_boards() -> list[str]:
    """Names of the boards shipped in ``smess_boards/``."""
    return sorted(p.stem for p in BOARDS_DIR.glob("*.json"))


def load_board(spec: Any = "smess") -> SmessBoard:
    """A validated board from a built-in name (``"smess"``), a path to a board file (any string
    with a ``/`` or ending in ``.json``) or a dict in the board-file format. Raises
    ``BoardError`` naming the file and the problem. Files are cached by path and mtime."""
    if isinstance(spec, dict):
        return SmessBoard(spec, "inline board")
    if not isinstance(spec, str) or not spec:
        raise BoardError(f"a board is a built-in name, a file path or a board object, not {spec!r}")
    if "/" in spec or os.sep in spec or spec.endswith(".json"):
        path = Path(spec).expanduser()
    else:
        path = BOARDS_DIR / f"{spec}.json"
        if not path.is_file():
            raise BoardError(f"no built-in board {spec!r}; built-in: {', '.join(builtin_boards())} "
                             f"(or give a path to a .json board file)")
    try:
        key = (str(path.resolve()), path.stat().st_mtime_ns)
    except OSError as exc:
        raise BoardError(f"board file {spec}: {exc.strerror or exc}") from None
    board = _BOARD_CACHE.get(key)
    if board is None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise BoardError(f"board file {spec}: {exc.strerror or exc}") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BoardError(f"board file {spec}: not valid JSON: {exc}") from None
        board = SmessBoard(data, f"board file {spec}")
        _BOARD_CACHE[key] = board
    return board


# --- move generation (shared by the state and perft) ------------------------------------------


def generate_moves(board: list[int], side: int, rb: SmessBoard) -> list[tuple[int, int]]:
    """Every legal ``(from, to)`` for ``side`` on ``board`` (ints as in the state), in square
    order then arrow order (N, NE, E, ... NW) then distance."""
    rays, steps = rb.rays, rb.steps
    out: list[tuple[int, int]] = []
    append = out.append
    if side == BLUE:
        for sq, v in enumerate(board):
            if v <= 0:
                continue
            if v == NUMSKULL:
                for ray in rays[sq]:
                    for t in ray:
                        w = board[t]
                        if w == 0:
                            append((sq, t))
                        else:
                            if w < 0:
                                append((sq, t))
                            break
            else:
                for t in steps[sq]:
                    if board[t] <= 0:
                        append((sq, t))
    else:
        for sq, v in enumerate(board):
            if v >= 0:
                continue
            if v == -NUMSKULL:
                for ray in rays[sq]:
                    for t in ray:
                        w = board[t]
                        if w == 0:
                            append((sq, t))
                        else:
                            if w > 0:
                                append((sq, t))
                            break
            else:
                for t in steps[sq]:
                    if board[t] >= 0:
                        append((sq, t))
    return out


def has_move(board: list[int], side: int, rb: SmessBoard) -> bool:
    """Whether ``side`` has any legal move: some piece whose first step along an arrow is free or
    enemy (that is enough for a Numskull too)."""
    steps = rb.steps
    sign = 1 if side == BLUE else -1
    for sq, v in enumerate(board):
        if v * sign > 0:
            for t in steps[sq]:
                if board[t] * sign <= 0:
                    return True
    return False


def perft(state: "SmessState", depth: int) -> int:
    """The number of move sequences of ``depth`` plies from ``state`` under the movement rules.

    A line ends when a Brain is captured or only the two Brains are left (the engine-play draw
    options are not applied). Uses make/unmake on a private board copy."""
    if state.is_terminal() or depth <= 0:
        return 0 if depth > 0 else 1
    rb = state.game.board_def
    board = state.board()
    count = sum(1 for v in board if v)
    return _perft(board, state.side_to_move(), depth, rb, rb.promotes, count)


def _perft(board: list[int], side: int, depth: int, rb: SmessBoard, promotes, count: int) -> int:
    moves = generate_moves(board, side, rb)
    if depth == 1:
        return len(moves)
    total = 0
    prom = promotes[side]
    other = 1 - side
    for frm, to in moves:
        v = board[frm]
        w = board[to]
        if w == BRAIN or w == -BRAIN:
            continue  # the game ends here: no deeper lines
        nv = v
        if (v == NINNY or v == -NINNY) and prom[to]:
            nv = v + v
        board[to] = nv
        board[frm] = 0
        c = count - 1 if w else count
        if c > 2:
            total += _perft(board, other, depth - 1, rb, promotes, c)
        board[frm] = v
        board[to] = w
    return total


# --- state -----------------------------------------------------------------------------------


class SmessState(State):
    """One position: a list of ints (one per square), the side to move, the counters and the
    positions seen since the last irreversible move (for the repetition rule)."""

    __slots__ = ("game", "_rb", "_board", "_side", "_seat0", "_quiet", "_ply", "_count",
                 "_end", "_winner", "_detail", "_seen")

    def __init__(self, game: "SmessGame", seat0: int = BLUE):
        self.game = game
        self._rb: SmessBoard = game.board_def
        self._board = list(self._rb.start)
        self._seat0 = seat0
        self._side = seat0
        self._quiet = 0
        self._ply = 0
        self._count = sum(1 for v in self._board if v)
        self._end: str | None = None
        self._winner = -1
        self._detail = ""
        self._seen: dict[tuple, int] | None = {} if game.repetitions else None
        self._remember()

    # --- seats and colours ---------------------------------------------------------------

    def seat_of_colour(self, colour: int) -> int:
        """The seat playing ``colour`` (BLUE = 0 / RED = 1)."""
        return colour ^ self._seat0

    def colour_of_seat(self, seat: int) -> int:
        return seat ^ self._seat0

    @property
    def seat0_colour(self) -> str:
        return COLOUR_NAMES[self._seat0]

    def side_to_move(self) -> int:
        """The colour to move (when the game is over: the side that would move next)."""
        return self._side

    def winner_colour(self) -> int:
        """BLUE or RED once won, else -1 (still playing, or a draw)."""
        return self._winner

    def winner_seat(self) -> int | None:
        return None if self._winner < 0 else self._winner ^ self._seat0

    def board(self) -> list[int]:
        """A copy of the board: one int per square from a1 (index 0) rank by rank to the last."""
        return self._board[:]

    def end_reason(self) -> str | None:
        """``None`` while playing, else one of ``END_REASONS``."""
        return self._end

    def no_capture_plies(self) -> int:
        return self._quiet

    def move_number(self) -> int:
        return self._ply // 2 + 1

    # --- the common interface ----------------------------------------------------------------

    def current_player(self) -> int:
        if self._end is not None:
            return TERMINAL
        return self._side ^ self._seat0

    def is_terminal(self) -> bool:
        return self._end is not None

    def legal_moves(self, seat: int | None = None) -> list[str]:
        if self._end is not None or not self.seat_acts(seat):
            return []
        names = self._rb.square_names
        return [names[f] + names[t] for f, t in generate_moves(self._board, self._side, self._rb)]

    def check_move(self, move: str, seat: int | None = None) -> None:
        self.check_seat(seat)
        self._parse_move(move)

    def apply(self, move: str) -> None:
        frm, to = self._parse_move(move)
        self.apply_move_ints(frm, to)

    def returns(self) -> list[float]:
        if self._end is None or self._winner < 0:
            return [0.0, 0.0]
        return [1.0, -1.0] if self._winner == self._seat0 else [-1.0, 1.0]

    def end_detail(self) -> str:
        return self._detail

    # --- move parsing with reasons ----------------------------------------------------------

    def _parse_move(self, move: Any) -> tuple[int, int]:
        """Validate a move of the side to move; return (from, to) or raise ``IllegalMove``."""
        if self._end is not None:
            raise IllegalMove(f"the game is over ({self._detail})")
        rb = self._rb
        if not isinstance(move, str):
            raise IllegalMove(f"a move is a string like 'c2c3', not {type(move).__name__}")
        frm, to = _split_move(move, rb)
        if frm is None or to is None:
            raise IllegalMove(f"bad move syntax {move!r}: expected from-square and to-square, e.g. 'c2c3' "
                              f"(squares a1..{rb.square_names[-1]})")
        names = rb.square_names
        a, b = names[frm], names[to]
        board = self._board
        side = self._side
        sign = 1 if side == BLUE else -1
        v = board[frm]
        if v == 0:
            raise IllegalMove(f"{move}: there is no piece on {a}")
        if v * sign < 0:
            raise IllegalMove(f"{move}: the piece on {a} is {COLOUR_NAMES[1 - side]}'s "
                              f"{PIECE_NAMES[abs(v)]}; {COLOUR_NAMES[side]} is to move")
        kind = PIECE_NAMES[abs(v)]
        df = to % rb.files - frm % rb.files
        dr = to // rb.files - frm // rb.files
        if frm == to:
            raise IllegalMove(f"{move}: a move must leave its square")
        if df and dr and abs(df) != abs(dr):
            raise IllegalMove(f"{move}: not a straight line (a move goes along one arrow)")
        dist = max(abs(df), abs(dr))
        direction = _DIRECTION_OF_STEP[(_sgn(df), _sgn(dr))]
        arrows = rb.arrows[frm]
        if direction not in arrows:
            shown = " ".join(arrows) if arrows else "none"
            raise IllegalMove(f"{move}: {a} has no {direction} arrow (its arrows: {shown})")
        if dist > 1 and abs(v) != NUMSKULL:
            raise IllegalMove(f"{move}: a {kind} moves one square, this is {dist}")
        ray = rb.rays[frm][arrows.index(direction)]
        for t in ray[:dist - 1]:
            w = board[t]
            if w:
                owner = "its own" if w * sign > 0 else "the enemy"
                raise IllegalMove(f"{move}: the Numskull would pass over {owner} "
                                  f"{PIECE_NAMES[abs(w)]} on {names[t]}")
        w = board[to]
        if w * sign > 0:
            raise IllegalMove(f"{move}: {b} holds {COLOUR_NAMES[side]}'s own {PIECE_NAMES[abs(w)]}")
        return frm, to

    # --- fast path ---------------------------------------------------------------------------

    def moves_ints(self) -> list[tuple[int, int]]:
        """Engine fast path: the legal moves as ``(from_idx, to_idx)``; ``[]`` once over."""
        if self._end is not None:
            return []
        return generate_moves(self._board, self._side, self._rb)

    def apply_move_ints(self, frm: int, to: int) -> None:
        """Engine fast path: play ``(frm, to)`` from ``moves_ints()`` without checks, applying
        promotion and every end rule."""
        board = self._board
        rb = self._rb
        side = self._side
        v = board[frm]
        w = board[to]
        irreversible = False
        if (v == NINNY or v == -NINNY) and rb.promotes[side][to]:
            v += v
            irreversible = True
        board[to] = v
        board[frm] = 0
        self._ply += 1
        self._side = other = 1 - side
        if w:
            self._quiet = 0
            self._count -= 1
            irreversible = True
            if w == BRAIN or w == -BRAIN:
                self._finish("brain", side, f"{_COLOUR_TITLE[side]} captured {_COLOUR_TITLE[other]}'s Brain "
                                            f"on {rb.square_names[to]}")
                return
            if self._count == 2:
                self._finish("brains", -1, "only the two Brains are left")
                return
        else:
            self._quiet += 1
        if not has_move(board, other, rb):
            self._finish("stuck", side, f"{_COLOUR_TITLE[other]} cannot move")
            return
        seen = self._seen
        if seen is not None:
            if irreversible:
                seen.clear()
            key = (other, *board)
            n = seen.get(key, 0) + 1
            seen[key] = n
            if n >= self.game.repetitions:
                self._finish("repetition", -1, f"the same position occurred {n} times")
                return
        limit = self.game.no_capture_plies
        if limit and self._quiet >= limit:
            self._finish("quiet", -1, f"{self._quiet} plies without a capture")

    def _finish(self, reason: str, winner: int, detail: str) -> None:
        self._end, self._winner, self._detail = reason, winner, detail

    def _remember(self) -> None:
        if self._seen is not None:
            key = (self._side, *self._board)
            self._seen[key] = self._seen.get(key, 0) + 1

    def clone(self) -> "SmessState":
        s = object.__new__(SmessState)
        s.game = self.game
        s._rb = self._rb
        s._board = self._board[:]
        s._side = self._side
        s._seat0 = self._seat0
        s._quiet = self._quiet
        s._ply = self._ply
        s._count = self._count
        s._end = self._end
        s._winner = self._winner
        s._detail = self._detail
        s._seen = None if self._seen is None else dict(self._seen)
        return s

    # --- text --------------------------------------------------------------------------------

    def board_text(self) -> str:
        rb = self._rb
        rows = []
        for r in range(rb.ranks - 1, -1, -1):
            parts = []
            empty = 0
            for v in self._board[r * rb.files:(r + 1) * rb.files]:
                if v == 0:
                    empty += 1
                    continue
                if empty:
                    parts.append(str(empty))
                    empty = 0
                parts.append(_PIECE_LETTER[v])
            if empty:
                parts.append(str(empty))
            rows.append("".join(parts))
        return "/".join(rows)

    def to_text(self) -> str:
        text = (f"{self.board_text()} {_COLOUR_LETTER[self._side]} {_COLOUR_LETTER[self._seat0]} "
                f"{self._quiet} {self.move_number()}")
        return text if self._end is None else f"{text} {self._end}"

    def observation_data(self, seat: int) -> dict[str, Any]:
        rb = self._rb
        return {
            "board": self._board[:],
            "files": rb.files,
            "ranks": rb.ranks,
            "board_name": rb.name,
            "to_move_colour": None if self._end else COLOUR_NAMES[self._side],
            "my_colour": COLOUR_NAMES[seat ^ self._seat0],
            "seat0_colour": COLOUR_NAMES[self._seat0],
            "no_capture_plies": self._quiet,
            "move_number": self.move_number(),
            "end": self._end,
            "winner_colour": None if self._winner < 0 else COLOUR_NAMES[self._winner],
        }

    def render_svg(self, reveal: bool = False) -> str:
        return _render_svg(self, reveal)

    def render(self) -> str:
        """The board with every square's arrows around its piece (3x3 glyphs per square)."""
        rb = self._rb
        F = rb.files
        files = "    " + "".join(f"   {chr(97 + f)}  " for f in range(F))
        top = "   ┌" + "┬".join(["─────"] * F) + "┐"
        mid = "   ├" + "┼".join(["─────"] * F) + "┤"
        bottom = "   └" + "┴".join(["─────"] * F) + "┘"
        lines = [files, top]
        for r in range(rb.ranks - 1, -1, -1):
            cells = [[], [], []]
            for f in range(F):
                sq = r * F + f
                arrows = rb.arrows[sq]
                g = {d: (_ARROW_GLYPH[d] if d in arrows else " ") for d in _DIRECTION_ORDER}
                v = self._board[sq]
                centre = _PIECE_LETTER[v] if v else ("+" if sq in rb.promotion_squares[BLUE] or
                                                     sq in rb.promotion_squares[RED] else "·")
                cells[0].append(f" {g['NW']}{g['N']}{g['NE']} ")
                cells[1].append(f" {g['W']}{centre}{g['E']} ")
                cells[2].append(f" {g['SW']}{g['S']}{g['SE']} ")
            label = f"{r + 1:>2}"
            lines.append("   │" + "│".join(cells[0]) + "│")
            lines.append(f"{label} │" + "│".join(cells[1]) + f"│ {label.strip()}")
            lines.append("   │" + "│".join(cells[2]) + "│")
            lines.append(mid if r else bottom)
        lines.append(files)
        lines.append("B S N: Blue Brain, Numskull, Ninny · b s n: Red's · + empty promotion square")
        lines.append("arrows: the directions a piece standing on the square may move")
        s0 = self._seat0
        lines.append(f"seat 0 (first): {COLOUR_NAMES[s0]}, seat 1 (second): {COLOUR_NAMES[1 - s0]}"
                     f" · board {rb.name}")
        limit = self.game.no_capture_plies
        clock = f"{self._quiet}/{limit}" if limit else f"{self._quiet} (no limit)"
        if self._end is None:
            side = self._side
            lines.append(f"{_COLOUR_TITLE[side]} (seat {side ^ s0}) to move · move {self.move_number()} · "
                         f"plies without capture {clock}")
        elif self._winner >= 0:
            lines.append(f"game over: {_COLOUR_TITLE[self._winner]} (seat {self._winner ^ s0}) wins — "
                         f"{self._detail}")
        else:
            lines.append(f"game over: draw — {self._detail}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"SmessState({self.to_text()!r})"


def _is_number(text: str) -> bool:
    """Plain ASCII digits without a leading zero, as ``to_text`` writes them (``str.isdigit``
    also accepts superscripts that ``int`` refuses)."""
    return text.isascii() and text.isdigit() and (text == "0" or text[0] != "0")


def _sgn(x: int) -> int:
    return (x > 0) - (x < 0)


def _split_square(text: str, rb: SmessBoard) -> tuple[int | None, str]:
    """Parse one square at the start of ``text``: (index or None, the rest)."""
    if not text or not "a" <= text[0] <= "z":
        return None, text
    i = 1
    while i < len(text) and "0" <= text[i] <= "9":
        i += 1
    return rb.square_index.get(text[:i]), text[i:]


def _split_move(move: str, rb: SmessBoard) -> tuple[int | None, int | None]:
    frm, rest = _split_square(move, rb)
    if frm is None:
        return None, None
    to, rest = _split_square(rest, rb)
    if rest:
        return frm, None
    return frm, to


# --- game ------------------------------------------------------------------------------------


class SmessOptions(GameOptions):
    seat0_colour: Annotated[Literal["blue", "red"], msgspec.Meta(description="'blue' or 'red'")] = "blue"
    board: Annotated[str | dict[str, Any], msgspec.Meta(
        description="a built-in board name, a path to a board file or a board object")] = "smess"
    no_capture_plies: Annotated[int, msgspec.Meta(ge=0, description="an integer >= 0 (0 = off)")] = 100
    repetitions: Annotated[int, msgspec.Meta(ge=0, description="0 (off) or an integer >= 2")] = 3

    def check(self, game: str) -> None:
        if self.repetitions == 1:
            raise bad_option(game, "repetitions", 1, "0 (off) or an integer >= 2")


class SmessGame(Game):
    """Smess. Options: ``seat0_colour`` (``blue``/``red``: the colour of seat 0, the first
    mover), ``board`` (a built-in board name, a path to a board file, or a board object),
    ``no_capture_plies`` (draw after that many plies without a capture; 0 = off) and
    ``repetitions`` (draw on that occurrence of a position; 0 = off)."""

    game_type: ClassVar[GameType] = GameType(
        name="smess", min_seats=2, max_seats=2, utility=Utility.ZERO_SUM, chance=False,
        simultaneous=False, hidden_information=False, options=SmessOptions)
    seat_roles: tuple[str, ...] = ("first", "second")

    def configure(self) -> None:
        o = self.settings
        self._seat0 = COLOUR_NAMES.index(o.seat0_colour)
        try:
            self.board_def: SmessBoard = load_board(o.board)
        except BoardError as exc:
            raise OptionError(f"smess: option board: {exc}") from None
        self.no_capture_plies: int = o.no_capture_plies
        self.repetitions: int = o.repetitions

    def game_info(self) -> dict[str, Any]:
        """``{"board": ...}``: the arrow board being played (whatever the ``board`` option names),
        so that an engine knows every square's arrows without reading this module."""
        return {"board": self.board_def.to_data()}

    @property
    def seat_colours(self) -> tuple[str, str]:
        """The colour of each seat, e.g. ``('blue', 'red')`` (seat 0 moves first)."""
        return (COLOUR_NAMES[self._seat0], COLOUR_NAMES[1 - self._seat0])

    def new_initial_state(self) -> SmessState:
        state = SmessState(self, self._seat0)
        if state._count == 2:  # a set-up of the two Brains alone: the draw rule holds from the start
            state._finish("brains", -1, "only the two Brains are left")
        elif not has_move(state._board, state._side, self.board_def):
            state._finish("stuck", 1 - state._side, f"{_COLOUR_TITLE[state._side]} cannot move")
        return state

    def from_text(self, text: str) -> SmessState:
        """Parse ``<board> <side> <seat0> <quiet> <move> [<end>]`` (see the module docstring).

        The seat-0 colour comes from the text; the board layout and the draw limits from the
        game's options. The end field is optional when the board shows the end (a missing
        Brain, two Brains, a side that cannot move, the no-capture limit reached) and required
        for ``repetition``. Raises ``ValueError`` saying what is wrong."""
        fields = text.split()
        if len(fields) not in (5, 6):
            raise ValueError(f"smess position needs 5 or 6 fields '<board> <side> <seat0> <quiet> <move> "
                             f"[<end>]', got {len(fields)}: {text!r}")
        board_f, side_f, seat0_f, quiet_f, move_f = fields[:5]
        end_f = fields[5] if len(fields) == 6 else None
        if side_f not in _LETTER_COLOUR:
            raise ValueError(f"side to move must be 'b' (blue) or 'r' (red), not {side_f!r}")
        if seat0_f not in _LETTER_COLOUR:
            raise ValueError(f"seat-0 colour must be 'b' (blue) or 'r' (red), not {seat0_f!r}")
        if not _is_number(quiet_f):
            raise ValueError(f"plies without a capture must be an integer >= 0, not {quiet_f!r}")
        if not _is_number(move_f) or int(move_f) < 1:
            raise ValueError(f"the move number must be an integer >= 1, not {move_f!r}")
        if end_f is not None and end_f not in END_REASONS:
            raise ValueError(f"end must be one of {', '.join(END_REASONS)}, not {end_f!r}")
        rb = self.board_def
        board = self._parse_board(board_f)
        side, seat0 = _LETTER_COLOUR[side_f], _LETTER_COLOUR[seat0_f]
        ply = 2 * (int(move_f) - 1) + (0 if side == seat0 else 1)
        quiet = int(quiet_f)
        if quiet > ply:
            raise ValueError(f"{quiet} plies without a capture, but only {ply} plies have been played "
                             f"(move {move_f}, {COLOUR_NAMES[side]} to move, seat 0 {COLOUR_NAMES[seat0]})")

        s = object.__new__(SmessState)
        s.game, s._rb, s._board = self, rb, board
        s._side, s._seat0, s._quiet, s._ply = side, seat0, quiet, ply
        s._count = sum(1 for v in board if v)
        s._end, s._winner, s._detail = None, -1, ""
        s._seen = {} if self.repetitions else None
        s._remember()

        brains = [any(v == sign * BRAIN for v in board) for sign in (1, -1)]
        other = 1 - side
        derived = None
        if not brains[other]:
            raise ValueError(f"{COLOUR_NAMES[other]} has no Brain, but {COLOUR_NAMES[other]} made the last move "
                             f"({COLOUR_NAMES[side]} is to move)")
        if not brains[side]:
            derived = ("brain", other, f"{_COLOUR_TITLE[other]} captured {_COLOUR_TITLE[side]}'s Brain")
        elif s._count == 2:
            derived = ("brains", -1, "only the two Brains are left")
        elif not has_move(board, side, rb):
            derived = ("stuck", other, f"{_COLOUR_TITLE[side]} cannot move")
        elif end_f == "repetition":
            if not self.repetitions:
                raise ValueError("end 'repetition', but the game's repetitions option is off (0)")
            derived = ("repetition", -1, "the same position occurred "
                                         f"{self.repetitions} times")
        elif self.no_capture_plies and quiet >= self.no_capture_plies:
            derived = ("quiet", -1, f"{quiet} plies without a capture")
        if end_f is not None and (derived is None or derived[0] != end_f):
            shown = f"it shows '{derived[0]}'" if derived else "the game is still on"
            raise ValueError(f"end {end_f!r} does not match the position: {shown}")
        if derived is not None:
            s._finish(*derived)
        return s

    def _parse_board(self, text: str) -> list[int]:
        rb = self.board_def
        rows = text.split("/")
        if len(rows) != rb.ranks:
            raise ValueError(f"board needs {rb.ranks} ranks separated by '/', got {len(rows)}: {text!r}")
        board = [0] * rb.size
        for i, row in enumerate(rows):
            rank = rb.ranks - i
            f = 0
            j = 0
            while j < len(row):
                ch = row[j]
                if "0" <= ch <= "9":
                    k = j
                    while k < len(row) and "0" <= row[k] <= "9":
                        k += 1
                    run = int(row[j:k])
                    if run == 0:
                        raise ValueError(f"rank {rank}: an empty run of 0 squares in {row!r}")
                    if ch == "0":
                        raise ValueError(f"rank {rank}: a run of empty squares is written without a "
                                         f"leading zero, not {row[j:k]!r} in {row!r}")
                    f += run
                    j = k
                elif ch in _LETTER_PIECE:
                    if f < rb.files:
                        board[(rank - 1) * rb.files + f] = _LETTER_PIECE[ch]
                    f += 1
                    j += 1
                else:
                    raise ValueError(f"rank {rank}: unexpected {ch!r} in {row!r} (B S N for Blue's Brain, "
                                     f"Numskull, Ninny, b s n for Red's, digits for empty squares)")
                if f > rb.files:
                    raise ValueError(f"rank {rank} has more than {rb.files} squares: {row!r}")
            if f != rb.files:
                raise ValueError(f"rank {rank} has {f} squares, not {rb.files}: {row!r}")
        for colour, sign in ((BLUE, 1), (RED, -1)):
            name = COLOUR_NAMES[colour]
            brains = sum(1 for v in board if v == sign * BRAIN)
            if brains > 1:
                raise ValueError(f"{name} has {brains} Brains; a side has one")
            pieces = sum(1 for v in board if v * sign > 0)
            if pieces > rb.start_counts[colour]:
                raise ValueError(f"{name} has {pieces} pieces; the set-up has only {rb.start_counts[colour]}")
            ninnies = sum(1 for v in board if v == sign * NINNY)
            if ninnies > rb.start_ninnies[colour]:
                raise ValueError(f"{name} has {ninnies} Ninnies; the set-up has only {rb.start_ninnies[colour]}")
            for sq in rb.promotion_squares[colour]:
                if board[sq] == sign * NINNY:
                    raise ValueError(f"a {name} Ninny on {rb.square_names[sq]} would have been promoted "
                                     f"to a Numskull")
        return board


def _render_svg(state: "SmessState", reveal: bool = False) -> str:
    """The board with every square's arrows (where a piece standing there may move) and the
    pieces on top: Brains, Numskulls and Ninnies, blue and red; promotion squares marked."""
    from .svg import document, esc

    rb = state._rb
    cell, pad = 56, 22
    colours = {BLUE: "#1e4fb5", RED: "#c62828"}
    body = ['<rect width="100%" height="100%" fill="#f3efe4"/>',
            '<defs><marker id="sm-head" viewBox="0 0 6 6" refX="5" refY="3" markerWidth="4" markerHeight="4" '
            'orient="auto"><path d="M0,0 L6,3 L0,6 z" fill="#8d8370"/></marker></defs>']
    for r in range(rb.ranks):
        for f in range(rb.files):
            sq = r * rb.files + f
            x, y = pad + f * cell, pad + (rb.ranks - 1 - r) * cell
            promo = sq in rb.promotion_squares[BLUE] or sq in rb.promotion_squares[RED]
            body.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{"#efe0bd" if promo else "#fffdf7"}" '
                        f'stroke="#a99f8a"/>')
            cx, cy = x + cell / 2, y + cell / 2
            for d in rb.arrows[sq]:
                dx, dy = DIRECTIONS[d]
                body.append(f'<line class="arrow" x1="{cx + dx * 8}" y1="{cy - dy * 8}" x2="{cx + dx * 24}" '
                            f'y2="{cy - dy * 24}" stroke="#8d8370" stroke-width="1.5" marker-end="url(#sm-head)"/>')
            v = state._board[sq]
            if v:
                colour = colours[BLUE] if v > 0 else colours[RED]
                body.append(f'<circle class="piece" cx="{cx}" cy="{cy}" r="14" fill="{colour}" stroke="#111"/>'
                            f'<text x="{cx}" y="{cy + 5}" font-size="14" font-weight="700" text-anchor="middle" '
                            f'fill="#fff">{_PIECE_LETTER[v].upper()}</text>')
    for f in range(rb.files):
        body.append(f'<text x="{pad + f * cell + cell / 2}" y="{pad + rb.ranks * cell + 15}" font-size="12" '
                    f'text-anchor="middle">{chr(97 + f)}</text>')
    for r in range(rb.ranks):
        body.append(f'<text x="10" y="{pad + (rb.ranks - 1 - r) * cell + cell / 2 + 4}" font-size="12" '
                    f'text-anchor="middle">{r + 1}</text>')
    if state._end is None:
        status = f"{COLOUR_NAMES[state._side]} to move · move {state.move_number()}"
    elif state._winner >= 0:
        status = f"{COLOUR_NAMES[state._winner]} wins: {state._detail}"
    else:
        status = f"draw: {state._detail}"
    h = pad * 2 + rb.ranks * cell
    body.append(f'<text x="{pad}" y="{h + 6}" font-size="13">{esc(status)} · B brain, S numskull, N ninny</text>')
    return document(pad * 2 + rb.files * cell, h + 14, body, f"Smess ({rb.name})")
