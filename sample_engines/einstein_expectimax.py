"""An expectimax engine for EinStein würfelt nicht! (the ``einstein`` game).

Usage: python -m sample_engines.einstein_expectimax [--movetime SECONDS] [--depth N] [--seed N]

Design
    * Search: negamax expectimax (*-minimax with Star1 pruning) over alternating decision and
      chance nodes; a chance node averages the die outcomes, merged into groups of identical
      movable-cube sets (with cubes 1 and 6 left, dice 2-5 all offer the same choice). Iterative
      deepening under a time budget ``min(movetime, time_left / 10)``; a timed-out iteration keeps
      the moves it finished.
    * Evaluation: the probability that the side to roll wins a pure race to the corner. Each cube
      needs ``d`` steps (Chebyshev distance: every useful step advances exactly one); a die roll
      lets it step with probability ``m/6`` (m = the die values that select it, counting the
      next-higher/next-lower rule, so a cube's mobility grows as its neighbours are captured).
      Treating the cubes as independent, P(side not home after t turns) = prod_i P(Bin(t, m_i/6)
      < d_i); the two sides' curves give P(side to roll arrives first). Values are win
      probabilities in [0, 1] at every node, which is what expectimax averages.
    * Set-up: a fixed layout chosen by simulation (see ``RED_LAYOUT``): cubes 1 and 6 together at
      the back corner, middle cubes on the front square and the flanks.

The search is usable without sockets: ``choose_move(position_text)`` or ``Searcher``. The rules
module ``arbiter.games.einstein`` parses positions and supplies the root's legal moves, so the
engine never plays a move the rules do not list.
"""
from __future__ import annotations

import time
from math import comb

from arbiter.games.einstein import BLUE, GOAL, HOME, RED, SQUARE_NAMES, STEPS, EinsteinGame
from protocol.kit import PerGameRandom
from protocol.messages import EngineOption, Info

NAME = "einstein-expectimax"
DEFAULT_MOVETIME = 0.2
MAX_DEPTH = 64

# --- tables --------------------------------------------------------------------------------

BIT = (0, 1, 2, 4, 8, 16, 32)
POW = (0, 1, 6, 36, 216, 1296, 7776)
"""Digit weights of the per-side distance key: cube n is base-6 digit n-1 (0 = off the board,
else distance + 1)."""
KEY_SPAN = 6 ** 6
DIG = (tuple(max(4 - sq // 5, 4 - sq % 5) + 1 for sq in range(25)),   # red: distance to e1, + 1
       tuple(max(sq // 5, sq % 5) + 1 for sq in range(25)))           # blue: distance to a5, + 1


def _movable(mask: int, die: int) -> tuple[int, ...]:
    if mask & BIT[die]:
        return (die,)
    out = []
    for n in range(die - 1, 0, -1):
        if mask & BIT[n]:
            out.append(n)
            break
    for n in range(die + 1, 7):
        if mask & BIT[n]:
            out.append(n)
            break
    return tuple(sorted(out))


def _groups(mask: int) -> tuple[tuple[float, tuple[int, ...]], ...]:
    """Die outcomes grouped by the cubes they let move: ((probability, cubes), ...), likeliest first."""
    weights: dict[tuple[int, ...], int] = {}
    for d in range(1, 7):
        cubes = _movable(mask, d)
        weights[cubes] = weights.get(cubes, 0) + 1
    return tuple((w / 6.0, c) for c, w in sorted(weights.items(), key=lambda kv: (-kv[1], kv[0])))


GROUPS = (((),),) + tuple(_groups(mask) for mask in range(1, 64))
MOBILITY = ((0,) * 7,) + tuple(
    tuple(sum(1 for d in range(1, 7) if n in _movable(mask, d)) if mask & BIT[n] else 0 for n in range(7))
    for mask in range(1, 64))
"""MOBILITY[mask][n]: how many of the six die values let cube n move."""

TMAX = 48
"""Turns the race model looks ahead (beyond it the remaining probability is split evenly)."""


def _survival(k: int, m: int) -> tuple[float, ...]:
    """P(Bin(t, m/6) < k) for t = 0..TMAX: a cube k steps away, moving with prob m/6, not home."""
    p = m / 6.0
    return tuple(sum(comb(t, j) * p ** j * (1 - p) ** (t - j) for j in range(min(k, t + 1)))
                 for t in range(TMAX + 1))


SURVIVAL = tuple(tuple(_survival(k, m) for m in range(7)) for k in range(6))


def _curve(key: int) -> tuple[float, ...]:
    """P(not home after t own turns), t = 0..TMAX, for one side's distance key."""
    digits = [0] + [key // POW[n] % 6 for n in range(1, 7)]
    mask = 0
    for n in range(1, 7):
        if digits[n]:
            mask |= BIT[n]
    mob = MOBILITY[mask]
    curve = None
    for n in range(1, 7):
        d = digits[n]
        if d:
            s = SURVIVAL[d - 1][mob[n]]
            curve = s if curve is None else [a * b for a, b in zip(curve, s)]
    return tuple(curve) if curve is not None else (1.0,) * (TMAX + 1)  # no cubes: never home


def race_probability(mover_curve, other_curve) -> float:
    """P(the side about to roll gets home first), from both sides' not-home curves."""
    total = 0.0
    prev = 1.0
    for t in range(1, TMAX + 1):
        f = mover_curve[t]
        total += (prev - f) * other_curve[t - 1]
        prev = f
    return total + 0.5 * prev * other_curve[TMAX]


# --- the search ----------------------------------------------------------------------------


class Timeout(Exception):
    pass


class Searcher:
    """Expectimax search over a private mutable board; caches evaluations across moves."""

    def __init__(self) -> None:
        self.memo: dict[int, float] = {}
        self.curves: dict[int, tuple[float, ...]] = {}
        self.board = [0] * 25
        self.pos = [-1] * 14
        self.mask = [0, 0]
        self.key = [0, 0]
        self.nodes = 0
        """Decision nodes searched (every 256th checks the clock)."""
        self.leaves = 0
        """Positions evaluated at the horizon: counted apart so the clock checks keep their rhythm."""
        self.deadline = float("inf")
        self.reached_leaf = False

    # --- position -------------------------------------------------------------------------

    def load(self, board: list[int]) -> None:
        """Set the position from a 25-int board (+n red cube n, -n blue cube n)."""
        self.board = list(board)
        self.pos = [-1] * 14
        self.mask = [0, 0]
        self.key = [0, 0]
        for sq, v in enumerate(self.board):
            if v:
                side = RED if v > 0 else BLUE
                n = v if v > 0 else -v
                self.pos[7 * side + n] = sq
                self.mask[side] |= BIT[n]
                self.key[side] += DIG[side][sq] * POW[n]

    def make(self, frm: int, to: int) -> int:
        board, pos, mask, key = self.board, self.pos, self.mask, self.key
        v = board[frm]
        w = board[to]
        if v > 0:
            pos[v] = to
            key[0] += (DIG[0][to] - DIG[0][frm]) * POW[v]
        else:
            pos[7 - v] = to
            key[1] += (DIG[1][to] - DIG[1][frm]) * POW[-v]
        if w > 0:
            pos[w] = -1
            mask[0] ^= BIT[w]
            key[0] -= DIG[0][to] * POW[w]
        elif w < 0:
            pos[7 - w] = -1
            mask[1] ^= BIT[-w]
            key[1] -= DIG[1][to] * POW[-w]
        board[to] = v
        board[frm] = 0
        return w

    def unmake(self, frm: int, to: int, w: int) -> None:
        board, pos, mask, key = self.board, self.pos, self.mask, self.key
        v = board[to]
        board[frm] = v
        board[to] = w
        if v > 0:
            pos[v] = frm
            key[0] -= (DIG[0][to] - DIG[0][frm]) * POW[v]
        else:
            pos[7 - v] = frm
            key[1] -= (DIG[1][to] - DIG[1][frm]) * POW[-v]
        if w > 0:
            pos[w] = to
            mask[0] |= BIT[w]
            key[0] += DIG[0][to] * POW[w]
        elif w < 0:
            pos[7 - w] = to
            mask[1] |= BIT[-w]
            key[1] += DIG[1][to] * POW[-w]

    # --- evaluation -----------------------------------------------------------------------

    def evaluate(self, side: int) -> float:
        """P(``side``, about to roll, wins) under the race model."""
        kr, kb = self.key
        v = self.memo.get((kr * KEY_SPAN + kb) * 2 + side)
        return self._race(kr, kb, side) if v is None else v

    def _race(self, kr: int, kb: int, side: int) -> float:
        """``evaluate`` for the distance keys ``kr``/``kb`` (filling the caches)."""
        curves = self.curves
        cr = curves.get(kr)
        if cr is None:
            cr = curves[kr] = _curve(kr)
        cb = curves.get(kb + KEY_SPAN)
        if cb is None:
            cb = curves[kb + KEY_SPAN] = _curve(kb)
        v = race_probability(cr, cb) if side == RED else race_probability(cb, cr)
        self.memo[(kr * KEY_SPAN + kb) * 2 + side] = v
        return v

    def _leaf_values(self, side: int, moves) -> list[float]:
        """The static value for ``side`` of each move (the evaluation after it), no make/unmake."""
        board = self.board
        kr0, kb0 = self.key
        memo_get = self.memo.get
        race = self._race
        other = 1 - side
        dr, db = DIG
        out = []
        for frm, to in moves:
            v = board[frm]
            w = board[to]
            kr, kb = kr0, kb0
            if v > 0:
                kr += (dr[to] - dr[frm]) * POW[v]
            else:
                kb += (db[to] - db[frm]) * POW[-v]
            if w > 0:
                kr -= dr[to] * POW[w]
            elif w < 0:
                kb -= db[to] * POW[-w]
            e = memo_get((kr * KEY_SPAN + kb) * 2 + other)
            if e is None:
                e = race(kr, kb, other)
            out.append(1.0 - e)
        return out

    # --- nodes ----------------------------------------------------------------------------

    def _moves(self, side: int, cubes: tuple[int, ...]):
        """(winning, moves): winning is True when some move wins at once."""
        board, pos = self.board, self.pos
        base = 7 * side
        steps = STEPS[side]
        goal = GOAL[side]
        omask = self.mask[1 - side]
        moves = []
        for n in cubes:
            p = pos[base + n]
            for t in steps[p]:
                if t == goal:
                    return True, [(p, t)]
                w = board[t]
                if w:
                    if side == RED:
                        if w < 0 and omask == BIT[-w]:
                            return True, [(p, t)]
                    elif w > 0 and omask == BIT[w]:
                        return True, [(p, t)]
                moves.append((p, t))
        return False, moves

    def decide(self, side: int, cubes: tuple[int, ...], depth: int, alpha: float, beta: float) -> float:
        """Value for ``side`` choosing a move of one of ``cubes``, ``depth`` >= 1 plies left."""
        self.nodes += 1
        if not self.nodes & 255 and time.monotonic() > self.deadline:
            raise Timeout
        winning, moves = self._moves(side, cubes)
        if winning:
            return 1.0
        if depth == 1:
            self.reached_leaf = True
            return max(self._leaf_values(side, moves))
        other = 1 - side
        make, unmake, chance = self.make, self.unmake, self.chance
        if len(moves) > 1:
            values = self._leaf_values(side, moves)
            moves = [m for _, m in sorted(zip(values, moves), reverse=True)]
        best = -1.0
        for frm, to in moves:
            w = make(frm, to)
            try:
                v = 1.0 - chance(other, depth - 1, 1.0 - beta, 1.0 - alpha)
            finally:
                unmake(frm, to, w)
            if v > best:
                best = v
                if v >= beta:
                    return v
                if v > alpha:
                    alpha = v
        return best

    def chance(self, side: int, depth: int, alpha: float, beta: float) -> float:
        """Value for ``side``, about to roll, ``depth`` decision plies left (Star1 pruning)."""
        if depth <= 0:
            self.reached_leaf = True
            self.leaves += 1
            return self.evaluate(side)
        total = 0.0
        rest = 1.0
        decide = self.decide
        for q, cubes in GROUPS[self.mask[side]]:
            rest -= q
            lo = (alpha - total - rest) / q
            hi = (beta - total) / q
            v = decide(side, cubes, depth, lo if lo > 0.0 else 0.0, hi if hi < 1.0 else 1.0)
            total += q * v
            if v <= lo:
                return total + rest
            if v >= hi:
                return total
        return total

    # --- the root -------------------------------------------------------------------------

    def search(self, board: list[int], side: int, moves: list[tuple[int, int]], *, budget: float | None,
               max_depth: int = MAX_DEPTH) -> tuple[tuple[int, int], Info]:
        """Best of ``moves`` (legal ``(from, to)`` pairs) for ``side`` to move on ``board``."""
        started = time.monotonic()
        if len(self.memo) > 400_000:
            self.memo.clear()
        if len(self.curves) > 40_000:
            self.curves.clear()
        self.load(board)
        self.nodes = self.leaves = 0
        goal = GOAL[side]
        other = 1 - side
        for frm, to in moves:  # an immediate win needs no search
            w = self.board[to]
            if to == goal or (w and (w > 0) != (side == RED) and self.mask[other] == BIT[abs(w)]):
                return (frm, to), Info(score=1.0, depth=0, nodes=0, pv=[SQUARE_NAMES[frm] + SQUARE_NAMES[to]],
                                       comment="immediate win")
        if len(moves) == 1:
            return moves[0], Info(depth=0, nodes=0, pv=[SQUARE_NAMES[moves[0][0]] + SQUARE_NAMES[moves[0][1]]],
                                  comment="only move")
        self.deadline = started + budget if budget is not None else float("inf")
        order = list(moves)
        best_move, best_score, done_depth = order[0], None, 0
        for depth in range(1, max_depth + 1):
            self.reached_leaf = False
            scores: dict[tuple[int, int], float] = {}
            alpha = -1.0
            iter_best = None
            try:
                for mv in order:
                    w = self.make(*mv)
                    try:
                        v = 1.0 - self.chance(other, depth - 1, 0.0, 1.0 - alpha)
                    finally:
                        self.unmake(mv[0], mv[1], w)
                    scores[mv] = v
                    if v > alpha:
                        alpha, iter_best = v, mv
            except Timeout:
                # Keep a partial iteration only if it searched the previous best move first.
                if iter_best is not None and order[0] in scores:
                    best_move, best_score, done_depth = iter_best, alpha, depth
                break
            best_move, best_score, done_depth = iter_best, alpha, depth
            order.sort(key=lambda m: -scores[m])
            order.remove(best_move)
            order.insert(0, best_move)
            if not self.reached_leaf:
                break  # every line ends the game: deeper search changes nothing
            if budget is not None and time.monotonic() - started > budget * 0.2:
                break  # the next iteration would most likely not finish
        name = SQUARE_NAMES[best_move[0]] + SQUARE_NAMES[best_move[1]]
        return best_move, Info(score=None if best_score is None else round(best_score, 4), depth=done_depth,
                               nodes=self.nodes + self.leaves, pv=[name])


# --- set-up --------------------------------------------------------------------------------

RED_LAYOUT = {0: 1, 1: 5, 2: 2, 5: 6, 6: 4, 10: 3}
"""Cube number per red home square: a5 = 1, b5 = 5, c5 = 2, a4 = 6, b4 = 4, a3 = 3 (layout
``152643``). Blue uses the same layout rotated by 180 degrees. Chosen by simulation against a
random opponent with random layouts: all 180 layouts up to symmetry (mirror in the diagonal,
cube n <-> 7 - n) at depth 1, 2,000 games each (range 89.2%-94.4%), then the best ten at depth 2,
6,000 games each. The winners share a shape: the rarely-moving extremes 1 and 6 side by side at
the back corner, a middle cube on the front square b4, the flanks c5/a3 with middle cubes."""


def layout_for(colour: int, red_layout: dict[int, int] | None = None) -> str:
    """The set-up string (cube numbers on the home squares, row-major) for ``colour``."""
    red_layout = red_layout or RED_LAYOUT
    if colour == RED:
        return "".join(str(red_layout[sq]) for sq in HOME[RED])
    return "".join(str(red_layout[24 - sq]) for sq in HOME[BLUE])


# --- the decision function -----------------------------------------------------------------

_GAME = EinsteinGame()


def parse_position(position: str):
    """The rules module's state for a position text."""
    return _GAME.from_text(position)


def time_budget(movetime: float | None, time_left_ms: int) -> float | None:
    """Seconds to think: min(movetime, time_left / 10); None = unlimited."""
    budget = movetime if movetime and movetime > 0 else None
    if time_left_ms and time_left_ms > 0:
        share = time_left_ms / 1000.0 / 10.0
        budget = share if budget is None else min(budget, share)
    return budget


def choose_move(position: str, *, movetime: float | None = DEFAULT_MOVETIME,
                depth: int | None = None, time_left_ms: int = 0,
                searcher: Searcher | None = None) -> tuple[str, Info]:
    """The engine's move for a position text (its third field is the die rolled for the move)."""
    state = parse_position(position)
    if state.die() is None:
        raise ValueError(f"no die in {position!r}: a move is asked for after the roll")
    moves = state.moves_ints()
    if not moves:
        raise ValueError(f"no legal move in {position!r}")
    searcher = searcher or Searcher()
    budget = time_budget(movetime, time_left_ms)
    if budget is None and depth is None:
        depth = 5  # no clock and no limit given: a fixed, bounded search
    (frm, to), info = searcher.search(state.board(), state.side_to_move(), moves,
                                      budget=budget, max_depth=depth or MAX_DEPTH)
    return SQUARE_NAMES[frm] + SQUARE_NAMES[to], info


def my_colour(request) -> int:
    data = request.state if isinstance(request.state, dict) else {}
    if data.get("my_colour") in ("red", "blue"):
        return RED if data["my_colour"] == "red" else BLUE
    seat0 = RED if request.position.split()[3] == "r" else BLUE
    return seat0 ^ request.seat


def engine_options(movetime: float | None = DEFAULT_MOVETIME, depth: int | None = None) -> list[EngineOption]:
    """The options this engine declares in its hello (defaults: its command line's)."""
    return [EngineOption(name="depth", type="spin", default=depth or 0, min=0, max=MAX_DEPTH,
                         description="maximum search depth in plies (0: as deep as the time allows)"),
            EngineOption(name="movetime", type="spin", default=round((movetime or 0) * 1000), min=0, max=3_600_000,
                         description="milliseconds per move at most (0: only the clock's share)")]


def make_decider(movetime: float | None = DEFAULT_MOVETIME, depth: int | None = None, seed: int | None = None):
    """A kit decision function ``decide(request, game)``; the game's ``engine_options`` (``depth``,
    ``movetime`` in ms) override ``depth`` and ``movetime``."""
    searcher = Searcher()
    rngs = PerGameRandom(seed)  # fallbacks seeded per game: the same game is played the same in any run

    def decide(request, game):
        if request.kind == "setup":
            layout = layout_for(my_colour(request))
            if request.legal_moves is not None and layout not in request.legal_moves:
                layout = rngs(game).choice(request.legal_moves)
            return layout, Info(comment="fixed layout")
        options = getattr(game, "engine_options", {})  # none when called without a game (tests, tools)
        game_depth = options["depth"] or None if "depth" in options else depth
        game_movetime = options["movetime"] / 1000 if "movetime" in options else movetime
        try:
            move, info = choose_move(request.position, movetime=game_movetime, depth=game_depth,
                                     time_left_ms=request.time_left_ms, searcher=searcher)
        except Exception as exc:  # never forfeit over an engine bug: fall back to a legal move
            if not request.legal_moves:
                raise
            return rngs(game).choice(request.legal_moves), Info(comment=f"fallback after {type(exc).__name__}: {exc}")
        if request.legal_moves is not None and move not in request.legal_moves:
            return rngs(game).choice(request.legal_moves), Info(comment=f"fallback: {move} not in the referee's list")
        return move, info

    return decide


def main(argv: list[str] | None = None) -> int:
    from protocol.kit import engine_arguments, run_engine

    parser = engine_arguments("EinStein würfelt nicht! expectimax engine", NAME, seed=None)
    parser.add_argument("--movetime", type=float, default=DEFAULT_MOVETIME,
                        help=f"seconds per move at most (default {DEFAULT_MOVETIME}; 0 = only the clock share)")
    parser.add_argument("--depth", type=int, default=None, help="maximum search depth in plies")
    args = parser.parse_args(argv)
    return run_engine(make_decider(args.movetime, args.depth, args.seed), name=args.name, author="arbiter project",
                      version="1", games=["einstein"], wants_legal_moves=True, wants_state=True,
                      options=engine_options(args.movetime, args.depth),
                      endpoint=args.endpoint)


if __name__ == "__main__":
    raise SystemExit(main())
