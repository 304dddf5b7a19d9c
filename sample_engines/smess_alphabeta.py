"""An alpha-beta engine for Smess (the ``smess`` game).

Usage: python -m sample_engines.smess_alphabeta [--movetime SECONDS] [--depth N] [--seed N]

Design
    * Search: negamax alpha-beta with principal-variation windows, iterative deepening under a
      time budget, a transposition table (Zobrist keys), and a capture-only quiescence search
      with stand-pat. Move order: the table's move, Brain captures, other captures by
      most-valuable-victim / least-valuable-attacker, promotions, two killer moves per ply, then
      the history heuristic. A Brain that can be taken ends the search at once (it wins); a side
      without moves loses; repeated positions (game history and search path), the no-capture
      limit and "two Brains left" score as draws, so the engine knows the referee's end rules.
    * Evaluation (centi-Ninnies, side to move): material (Ninny 100, Numskull 400); mobility of
      every Numskull (squares it reaches along its arrows); Brain safety (enemy pieces that can
      capture it now, open lines into its square, its escape steps); promotion threats (a Ninny
      1..4 arrow-steps from an enemy Numskull start square, by precomputed distance); a small
      bonus for the side to move.
    * Time: ``min(--movetime, share of the clock)``: the share is ``time_left / 30`` plus most
      of the increment, or 70 % of a fixed per-move time. The search checks the clock every 32
      nodes and keeps the last completed iteration (or a partial one that searched the previous
      best move first).

Everything board-specific (rays, promotion squares, distances) is derived from the game's board
definition (``arbiter.games.smess.SmessBoard``), so other layouts work unchanged. The search is
usable without sockets: ``Searcher(SmessGame()).choose(state, budget=0.1)``.
"""
from __future__ import annotations

import json
import random
import time

from arbiter.games.smess import BLUE, BRAIN, NINNY, NUMSKULL, RED, SmessGame, SmessState
from protocol.kit import PerGameRandom
from protocol.messages import Info

NAME = "smess-alphabeta"
DEFAULT_MOVETIME = 0.5
MAX_DEPTH = 64
MATE = 100_000
"""Score of capturing the Brain now; a win found at ply p scores ``MATE - p``."""
MATE_BOUND = MATE - 1000

VALUE = (0, 100, 400, 0)
"""Material by piece code (the Brain is not material: losing it ends the game)."""
NUMSKULL_MOBILITY = 6
BRAIN_ATTACKED = 120
"""Per enemy piece that could capture the Brain right now."""
BRAIN_OPEN_LINE = 10
"""Per open line (free path, no own piece at its end) along which a Numskull could reach the Brain."""
BRAIN_ESCAPE = 6
PROMOTION_BONUS = (0, 90, 40, 18, 8)
"""Bonus of a Ninny by arrow-step distance to the nearest promotion square (index = distance)."""
TEMPO = 12
QUIESCENCE_DEPTH = 8
TT_LIMIT = 600_000


class Timeout(Exception):
    pass


class Tables:
    """Search tables for one board: rays, reverse rays, promotion data, Zobrist keys."""

    def __init__(self, rules: SmessGame, seed: int = 20240611):
        rb = rules.board_def
        self.size = n = rb.size
        self.shift = max(6, (n - 1).bit_length())
        self.mask = (1 << self.shift) - 1
        self.rays = rb.rays
        self.steps = rb.steps
        self.promotes = rb.promotes
        self.names = rb.square_names
        rev: list[list[tuple[int, tuple[int, ...]]]] = [[] for _ in range(n)]
        for sq in range(n):
            for ray in rb.rays[sq]:
                for i, t in enumerate(ray):
                    rev[t].append((sq, ray[:i]))
        self.reverse = tuple(tuple(r) for r in rev)
        """``reverse[t]``: (source square, squares between) for every arrow line ending on t."""
        self.promotion_bonus = tuple(self._promotion_table(rb, colour) for colour in (BLUE, RED))
        rng = random.Random(seed)
        self.zobrist = tuple(tuple(rng.getrandbits(64) for _ in range(n)) for _ in range(7))
        """``zobrist[piece + 3][square]``."""
        self.z_side = rng.getrandbits(64)
        self.no_capture_plies = rules.no_capture_plies
        self.repetitions = rules.repetitions

    @staticmethod
    def _promotion_table(rb, colour: int) -> tuple[int, ...]:
        """Bonus per square for a Ninny of ``colour`` from its step distance to promotion."""
        targets = rb.promotion_squares[colour]
        back: list[list[int]] = [[] for _ in range(rb.size)]
        for sq, dests in enumerate(rb.steps):
            for t in dests:
                back[t].append(sq)
        dist = {t: 0 for t in targets}
        frontier = list(targets)
        while frontier:
            nxt = []
            for t in frontier:
                for s in back[t]:
                    if s not in dist:
                        dist[s] = dist[t] + 1
                        nxt.append(s)
            frontier = nxt
        return tuple(PROMOTION_BONUS[dist[sq]] if 0 < dist.get(sq, 99) < len(PROMOTION_BONUS) else 0
                     for sq in range(rb.size))


class Searcher:
    """Alpha-beta search on a private board; keeps its table and game history between moves."""

    def __init__(self, rules: SmessGame):
        self.rules = rules
        self.t = Tables(rules)
        self.tt: dict[int, tuple[int, int, int, int]] = {}
        self.game_positions: dict[int, int] = {}
        self.game_id = None
        self.history: dict[int, int] = {}
        self.killers: list[list[int]] = [[0, 0] for _ in range(MAX_DEPTH + QUIESCENCE_DEPTH + 2)]
        self.nodes = 0
        self.deadline = float("inf")
        self.b: list[int] = []
        self.side = BLUE
        self.hash = 0
        self.quiet = 0
        self.count = 0
        self.brain = [-1, -1]
        self.rep: dict[int, int] = {}
        self.stack: list[tuple] = []
        self.seldepth = 0

    # --- position --------------------------------------------------------------------------

    def load(self, state: SmessState) -> None:
        t = self.t
        self.b = state.board()
        self.side = state.side_to_move()
        self.quiet = state.no_capture_plies()
        self.count = sum(1 for v in self.b if v)
        self.brain = [-1, -1]
        h = t.z_side if self.side == RED else 0
        for sq, v in enumerate(self.b):
            if v:
                h ^= t.zobrist[v + 3][sq]
                if v == BRAIN:
                    self.brain[BLUE] = sq
                elif v == -BRAIN:
                    self.brain[RED] = sq
        self.hash = h
        self.stack = []

    def note_game_position(self, game_id, state: SmessState) -> None:
        """Remember a position of the game (for repetition); a capture clears older ones."""
        if game_id != self.game_id:
            self.game_id = game_id
            self.game_positions = {}
            self.tt.clear()
            self.history.clear()
        if state.no_capture_plies() == 0:
            self.game_positions = {}
        self.load(state)
        self.game_positions[self.hash] = self.game_positions.get(self.hash, 0) + 1

    def make(self, m: int) -> int:
        """Play move ``m``; return the captured piece code (0 if none)."""
        t = self.t
        frm, to = m >> t.shift, m & t.mask
        b = self.b
        v = b[frm]
        w = b[to]
        side = self.side
        nv = v
        if (v == NINNY or v == -NINNY) and t.promotes[side][to]:
            nv = v + v
        z = t.zobrist
        h = self.hash ^ z[v + 3][frm] ^ z[nv + 3][to] ^ t.z_side
        self.stack.append((m, v, w, self.quiet, self.hash))
        if w:
            h ^= z[w + 3][to]
            self.count -= 1
            self.quiet = 0
        else:
            self.quiet += 1
        b[to] = nv
        b[frm] = 0
        if v == BRAIN or v == -BRAIN:
            self.brain[side] = to
        self.hash = h
        self.side = 1 - side
        rep = self.rep
        rep[h] = rep.get(h, 0) + 1
        return w

    def unmake(self) -> None:
        m, v, w, quiet, h = self.stack.pop()
        t = self.t
        frm, to = m >> t.shift, m & t.mask
        rep = self.rep
        rep[self.hash] -= 1
        b = self.b
        b[frm] = v
        b[to] = w
        self.side = side = 1 - self.side
        if v == BRAIN or v == -BRAIN:
            self.brain[side] = frm
        if w:
            self.count += 1
        self.quiet = quiet
        self.hash = h

    # --- move generation -------------------------------------------------------------------

    def gen(self, captures_only: bool = False) -> tuple[list[int], int]:
        """(moves, a Brain-capturing move or -1) for the side to move."""
        t = self.t
        b = self.b
        rays, steps, shift = t.rays, t.steps, t.shift
        out: list[int] = []
        append = out.append
        sign = 1 if self.side == BLUE else -1
        enemy_brain = -sign * BRAIN
        for sq, v in enumerate(b):
            if v * sign <= 0:
                continue
            base = sq << shift
            if v == NUMSKULL or v == -NUMSKULL:
                for ray in rays[sq]:
                    for to in ray:
                        w = b[to]
                        if w == 0:
                            if not captures_only:
                                append(base | to)
                            continue
                        if w * sign < 0:
                            if w == enemy_brain:
                                return out, base | to
                            append(base | to)
                        break
            else:
                for to in steps[sq]:
                    w = b[to]
                    if w == 0:
                        if not captures_only:
                            append(base | to)
                    elif w * sign < 0:
                        if w == enemy_brain:
                            return out, base | to
                        append(base | to)
        return out, -1

    def attackers(self, target: int, sign: int) -> int:
        """How many pieces of colour ``sign`` (+1 Blue, -1 Red) could move onto ``target`` now."""
        b = self.b
        n = 0
        for src, between in self.t.reverse[target]:
            v = b[src] * sign
            if v <= 0:
                continue
            if not between:
                n += 1
            elif v == NUMSKULL:
                for x in between:
                    if b[x]:
                        break
                else:
                    n += 1
        return n

    # --- evaluation ------------------------------------------------------------------------

    def evaluate(self) -> int:
        """Static score for the side to move (see the module docstring)."""
        t = self.t
        b = self.b
        rays = t.rays
        pb_blue, pb_red = t.promotion_bonus
        score = 0
        for sq, v in enumerate(b):
            if v == 0:
                continue
            if v == NINNY:
                score += 100 + pb_blue[sq]
            elif v == -NINNY:
                score -= 100 + pb_red[sq]
            elif v == NUMSKULL:
                m = 0
                for ray in rays[sq]:
                    for to in ray:
                        w = b[to]
                        if w == 0:
                            m += 1
                        else:
                            if w < 0:
                                m += 1
                            break
                score += 400 + NUMSKULL_MOBILITY * m
            elif v == -NUMSKULL:
                m = 0
                for ray in rays[sq]:
                    for to in ray:
                        w = b[to]
                        if w == 0:
                            m += 1
                        else:
                            if w > 0:
                                m += 1
                            break
                score -= 400 + NUMSKULL_MOBILITY * m
        score += self.brain_safety(BLUE) - self.brain_safety(RED)
        return (score if self.side == BLUE else -score) + TEMPO

    def brain_safety(self, colour: int) -> int:
        sq = self.brain[colour]
        if sq < 0:
            return -MATE
        b = self.b
        sign = 1 if colour == BLUE else -1
        penalty = 0
        for src, between in self.t.reverse[sq]:
            v = b[src] * sign
            if v > 0:
                continue  # an own piece closes that line
            for x in between:
                if b[x]:
                    break
            else:
                if v < 0 and (not between or v == -NUMSKULL):
                    penalty += BRAIN_ATTACKED
                elif between:
                    penalty += BRAIN_OPEN_LINE
        escapes = 0
        for to in self.t.steps[sq]:
            if b[to] * sign <= 0:
                escapes += 1
        return BRAIN_ESCAPE * min(escapes, 3) - penalty

    # --- search ----------------------------------------------------------------------------

    def _order(self, moves: list[int], tt_move: int, ply: int) -> list[int]:
        t = self.t
        b = self.b
        shift, mask = t.shift, t.mask
        prom = t.promotes[self.side]
        killers = self.killers[ply]
        hist = self.history
        scored = []
        for m in moves:
            if m == tt_move:
                s = 1 << 40
            else:
                frm, to = m >> shift, m & mask
                w = b[to]
                if w:
                    s = (1 << 30) + VALUE[abs(w)] * 64 - VALUE[abs(b[frm])]
                elif prom[to] and (b[frm] == NINNY or b[frm] == -NINNY):
                    s = 1 << 29
                elif m == killers[0] or m == killers[1]:
                    s = 1 << 28
                else:
                    s = hist.get(m, 0)
            scored.append((s, m))
        scored.sort(reverse=True)
        return [m for _, m in scored]

    def _draw_here(self) -> bool:
        if self.count == 2:
            return True
        limit = self.t.no_capture_plies
        if limit and self.quiet >= limit:
            return True
        return self.t.repetitions > 0 and self.rep.get(self.hash, 0) > 1

    def search(self, depth: int, alpha: int, beta: int, ply: int) -> int:
        self.nodes += 1
        if not self.nodes & 31 and time.monotonic() > self.deadline:
            raise Timeout
        if self._draw_here():
            return 0
        if depth <= 0:
            return self.quiesce(alpha, beta, ply, 0)
        key = self.hash
        entry = self.tt.get(key)
        tt_move = 0
        if entry is not None:
            e_depth, e_flag, e_score, tt_move = entry
            if e_depth >= depth:
                if e_score > MATE_BOUND:
                    e_score -= ply
                elif e_score < -MATE_BOUND:
                    e_score += ply
                if e_flag == 0 or (e_flag == 1 and e_score >= beta) or (e_flag == -1 and e_score <= alpha):
                    return e_score
        moves, brain_capture = self.gen()
        if brain_capture >= 0:
            return MATE - ply - 1
        if not moves:
            return -MATE + ply  # cannot move: loses
        alpha0 = alpha
        best, best_move = -MATE - 1, moves[0]
        first = True
        for m in self._order(moves, tt_move, ply):
            captured = self.make(m)
            try:
                if first:
                    score = -self.search(depth - 1, -beta, -alpha, ply + 1)
                else:
                    score = -self.search(depth - 1, -alpha - 1, -alpha, ply + 1)
                    if alpha < score < beta:
                        score = -self.search(depth - 1, -beta, -alpha, ply + 1)
            finally:
                self.unmake()
            first = False
            if score > best:
                best, best_move = score, m
                if score > alpha:
                    alpha = score
                    if score >= beta:
                        if not captured:
                            killers = self.killers[ply]
                            if killers[0] != m:
                                killers[1] = killers[0]
                                killers[0] = m
                            self.history[m] = self.history.get(m, 0) + depth * depth
                        break
        flag = 1 if best >= beta else (-1 if best <= alpha0 else 0)
        stored = best + ply if best > MATE_BOUND else (best - ply if best < -MATE_BOUND else best)
        if len(self.tt) > TT_LIMIT:
            self.tt.clear()
        self.tt[key] = (depth, flag, stored, best_move)
        return best

    def quiesce(self, alpha: int, beta: int, ply: int, qdepth: int) -> int:
        self.nodes += 1
        if not self.nodes & 31 and time.monotonic() > self.deadline:
            raise Timeout
        if ply > self.seldepth:
            self.seldepth = ply
        captures, brain_capture = self.gen(captures_only=True)
        if brain_capture >= 0:
            return MATE - ply - 1
        stand = self.evaluate()
        if stand >= beta or qdepth >= QUIESCENCE_DEPTH:
            return stand
        if stand > alpha:
            alpha = stand
        if not captures:
            return stand
        t = self.t
        b = self.b
        shift, mask = t.shift, t.mask
        captures.sort(key=lambda m: VALUE[abs(b[m & mask])] * 64 - VALUE[abs(b[m >> shift])], reverse=True)
        best = stand
        for m in captures:
            self.make(m)
            try:
                if self.count == 2:
                    score = 0
                else:
                    score = -self.quiesce(-beta, -alpha, ply + 1, qdepth + 1)
            finally:
                self.unmake()
            if score > best:
                best = score
                if score > alpha:
                    alpha = score
                    if score >= beta:
                        break
        return best

    # --- the root --------------------------------------------------------------------------

    def choose(self, state: SmessState, *, budget: float | None, max_depth: int = MAX_DEPTH) -> tuple[int, int, Info]:
        """Best ``(from, to)`` for the side to move in ``state``, with search information."""
        started = time.monotonic()
        self.load(state)
        self.rep = dict(self.game_positions)
        self.rep[self.hash] = max(self.rep.get(self.hash, 0), 1)
        self.nodes = 0
        self.seldepth = 0
        t = self.t
        moves, brain_capture = self.gen()
        if brain_capture >= 0:
            return brain_capture >> t.shift, brain_capture & t.mask, Info(
                score=MATE, depth=1, nodes=1, comment="captures the Brain")
        if not moves:
            raise ValueError("no legal move")
        if len(moves) == 1:
            return moves[0] >> t.shift, moves[0] & t.mask, Info(depth=0, nodes=0, comment="only move")
        self.deadline = started + budget if budget is not None else float("inf")
        for k in self.killers:
            k[0] = k[1] = 0
        order = self._order(moves, 0, 0)
        best_move, best_score, done = order[0], None, 0
        for depth in range(1, max_depth + 1):
            alpha, beta = -MATE - 1, MATE + 1
            iter_best, scores = None, {}
            try:
                for m in order:
                    self.make(m)
                    try:
                        if iter_best is None:
                            score = -self.search(depth - 1, -beta, -alpha, 1)
                        else:
                            score = -self.search(depth - 1, -alpha - 1, -alpha, 1)
                            if score > alpha:
                                score = -self.search(depth - 1, -beta, -alpha, 1)
                    finally:
                        self.unmake()
                    scores[m] = score
                    if iter_best is None or score > alpha:
                        alpha, iter_best = score, m
            except Timeout:
                if iter_best is not None and order[0] in scores:
                    best_move, best_score, done = iter_best, alpha, depth
                break
            best_move, best_score, done = iter_best, alpha, depth
            order.sort(key=lambda m: -scores.get(m, -MATE - 2))
            if abs(best_score) > MATE_BOUND:
                break  # a forced win or loss is found: deeper search changes nothing
            if budget is not None and time.monotonic() - started > budget * 0.45:
                break  # the next iteration would most likely not finish
        name = t.names[best_move >> t.shift] + t.names[best_move & t.mask]
        return best_move >> t.shift, best_move & t.mask, Info(
            score=None if best_score is None else float(best_score), depth=done, nodes=self.nodes, pv=[name])


# --- time and the decision function ------------------------------------------------------------


def time_budget(movetime: float | None, time_left_ms: int, time_control=None) -> float | None:
    """Seconds to think: ``min(movetime, clock share)``; None = no limit at all."""
    budget = movetime if movetime and movetime > 0 else None
    if time_left_ms and time_left_ms > 0:
        left = time_left_ms / 1000.0
        kind = getattr(time_control, "kind", "")
        if kind == "fixed_per_move":
            share = left * 0.7 - 0.02
        else:
            inc = getattr(time_control, "increment_ms", 0) / 1000.0
            share = min(left / 30.0 + inc * 0.7, left * 0.4)
        share = max(share, 0.005)
        budget = share if budget is None else min(budget, share)
    return budget


def make_decider(movetime: float | None = DEFAULT_MOVETIME, depth: int | None = None, seed: int | None = None):
    """A kit decision function; one searcher (tables, hash table, history) per option set."""
    rngs = PerGameRandom(seed)  # fallbacks seeded per game: the same game is played the same in any run
    searchers: dict[str, Searcher] = {}

    def decide(request, game):
        try:
            key = json.dumps(game.options, sort_keys=True)
            searcher = searchers.get(key)
            if searcher is None:
                searcher = searchers[key] = Searcher(SmessGame(**game.options))
            rules = searcher.rules
            state = rules.from_text(request.position)
            searcher.note_game_position(request.game_id, state)
            budget = time_budget(movetime, request.time_left_ms, game.time_control)
            if budget is None and depth is None:
                budget = DEFAULT_MOVETIME
            frm, to, info = searcher.choose(state, budget=budget, max_depth=depth or MAX_DEPTH)
            move = rules.board_def.move_name(frm, to)
            if request.legal_moves is not None and move not in request.legal_moves:
                raise ValueError(f"{move} is not in the referee's list")
            after = state.clone()
            after.apply_move_ints(frm, to)
            if not after.is_terminal():
                searcher.note_game_position(request.game_id, after)
        except Exception as exc:  # never forfeit over an engine bug: fall back to a legal move
            if not request.legal_moves:
                raise
            return rngs(game).choice(request.legal_moves), Info(comment=f"fallback after {type(exc).__name__}: {exc}")
        return move, info

    return decide


def main(argv: list[str] | None = None) -> int:
    from protocol.kit import engine_arguments, run_engine

    parser = engine_arguments("Smess alpha-beta engine", NAME, seed=None)
    parser.add_argument("--movetime", type=float, default=DEFAULT_MOVETIME,
                        help=f"seconds per move at most (default {DEFAULT_MOVETIME}; 0 = only the clock share)")
    parser.add_argument("--depth", type=int, default=None, help="maximum search depth in plies")
    args = parser.parse_args(argv)
    return run_engine(make_decider(args.movetime, args.depth, args.seed), name=args.name, author="arbiter project",
                      version="1", games=["smess"], wants_legal_moves=True, endpoint=args.endpoint)


if __name__ == "__main__":
    raise SystemExit(main())
