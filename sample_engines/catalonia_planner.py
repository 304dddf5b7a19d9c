"""A chain-building planner for Catalonia (the cooperative ``catalonia`` game).

Usage: python -m sample_engines.catalonia_planner [--movetime SECONDS] [--evaluations N] [--name NAME]

Both seats may run this same program: the game is cooperative, so the planner searches the
*joint* movement of a turn (its own move and its partner's reply) and plays its half; the partner,
running the same evaluation, finds the reply the plan assumed (or a better one). The referee is
the only channel between the two processes.

Design
    * Evaluation of a position: ``100 * L**2`` for the longest chain L (the turn's score if the
      position is scored), plus a small potential that leads towards chains before the first
      one forms and keeps pieces together afterwards: 3 per piece that lies on some defence
      cycle (of 3 or more), 1 per defence between the colours, 1/4 per defence.
    * Movement, first mover (White's ``move``/``after``, or Black moving first): every own move
      is screened by the value of the position after it alone (cheap chain estimate: a greedy
      lower bound); the best ones are paired with every reply of the partner; then ``after`` is
      planned the same way (Black's move, then White's reply); then the remaining own moves.
      The leading pairs are re-evaluated with the exact chain finder. Each stage only improves
      on the previous one, so a budget that runs out anywhere still leaves a sensible move (the
      best screened move if no pair was finished).
    * Movement, second mover: every move, evaluated exactly.
    * Bomb target: for each candidate, the pit is made, the escape squares found, and the best
      escape (or the removal) evaluated; the target that hurts least is picked. Escape: the
      best square. Trapped peasants: removed only if that strictly improves the evaluation.
    * Time: ``min(movetime, time_left / decisions left)`` per decision (``request.time_left_ms``;
      0 means no clock, then ``--movetime`` alone). ``--evaluations N`` also stops a decision's
      search after N evaluations (~150 take 20 ms here): the same moves on a fast or a slow
      machine, or one tracing every line for coverage, as long as the time lasts.

The search is usable without sockets: ``Planner().choose(state)`` on a ``CataloniaState``.
"""
from __future__ import annotations

import argparse
import time

from arbiter.games.catalonia import (AFTER, BLACK, DONE, SQUARE_INDEX, SQUARE_NAMES, WHITE,
                                     CataloniaGame, CataloniaState, defence_graph, escape_destinations,
                                     movement_moves, trapped_peasants)
from arbiter.games.catalonia_chains import chain_estimate, cycle_core, longest_chain
from protocol.messages import Info

NAME = "catalonia-planner"
DEFAULT_MOVETIME = 0.1
SCREEN_WIDTH = 8
"""How many first moves get paired with replies before the time budget decides the rest."""
EXACT_FINAL = 4
"""How many of the best pairs are re-checked with the exact chain finder."""


def evaluate(board: list[int], pits: int, exact: bool = True) -> float:
    """The planner's value of a position (see the module doc)."""
    squares, succ, white = defence_graph(board, pits)
    if exact:
        length = len(longest_chain(succ, white))
        core = cycle_core(succ, white)
    else:
        length, core = chain_estimate(succ, white)
    cross = edges = 0
    for i, m in enumerate(succ):
        edges += m.bit_count()
        cross += (m & (~white if (white >> i) & 1 else white)).bit_count()
    return 100.0 * length * length + 3.0 * core.bit_count() + cross + 0.25 * edges


def _moved(board: list[int], frm: int, to: int) -> list[int]:
    b = board[:]
    b[to] = b[frm]
    b[frm] = 0
    return b


class OutOfTime(Exception):
    pass


class Planner:
    """Chooses a decision for a Catalonia state within a time budget."""

    def __init__(self, movetime: float = DEFAULT_MOVETIME, max_evaluations: int | None = None):
        self.movetime = movetime
        self.max_evaluations = max_evaluations
        self.deadline = 0.0
        self.evaluations = 0

    def _tick(self) -> None:
        if time.monotonic() > self.deadline or (self.max_evaluations is not None
                                                and self.evaluations >= self.max_evaluations):
            raise OutOfTime

    def _value(self, board: list[int], pits: int, exact: bool) -> float:
        self.evaluations += 1
        return evaluate(board, pits, exact)

    # --- entry point -----------------------------------------------------------------------------

    def choose(self, state: CataloniaState, budget: float | None = None) -> tuple[str, float]:
        """The decision for ``state`` and its value (within ``budget`` seconds, default movetime)."""
        self.deadline = time.monotonic() + (self.movetime if budget is None else budget)
        self.evaluations = 0
        kind = state.decision_kind()
        if kind == "move":
            return self._movement(state)
        if kind == "bomb_target":
            return self._bomb_target(state)
        if kind == "escape":
            return self._escape(state)
        return self._removal(state)

    # --- movement --------------------------------------------------------------------------------

    def _movement(self, state: CataloniaState) -> tuple[str, float]:
        board, pits = state.board(), state.pits()
        colour = state.deciding_colour()
        step = state.step
        if step == "white":
            return self._first_mover(board, pits, WHITE, allow_after=True)
        if step == "black-first":
            return self._first_mover(board, pits, BLACK, allow_after=False)
        return self._best_single(board, pits, colour)

    def _best_single(self, board: list[int], pits: int, colour: int) -> tuple[str, float]:
        """Second mover: the move whose position is worth most (exact evaluation)."""
        moves = movement_moves(board, pits, colour)
        best, best_value = None, float("-inf")
        for frm, to in moves:
            try:
                self._tick()
            except OutOfTime:
                break
            value = self._value(_moved(board, frm, to), pits, True)
            if value > best_value:
                best, best_value = (frm, to), value
        if best is None:  # out of time before the first evaluation: any legal move
            best = moves[0]
        return SQUARE_NAMES[best[0]] + SQUARE_NAMES[best[1]], best_value

    def _first_mover(self, board: list[int], pits: int, colour: int, allow_after: bool) -> tuple[str, float]:
        """Plan the turn's pair of moves: our move and the partner's best reply.

        In stages, each one improving the answer of the one before, so that running out of time
        anywhere still leaves a sensible decision: screen our moves alone; pair the best of them
        with every reply; then (White's first decision only) plan ``after`` the same way; last,
        re-check the leading pairs with the exact chain finder."""
        partner = 1 - colour
        own = movement_moves(board, pits, colour)
        if not own:
            return AFTER, 0.0  # White blocked: letting Black move first is the only option
        screened: list = []
        plans: list[tuple[float, str, list[int]]] = []  # (estimate, decision, board after both)
        try:
            screened = self._screen(board, pits, own)
            self._pair(pits, screened[:SCREEN_WIDTH], partner, False, plans)
            if allow_after:
                partner_first = self._screen(board, pits, movement_moves(board, pits, partner))
                self._pair(pits, partner_first[:SCREEN_WIDTH // 2], colour, True, plans)
            self._pair(pits, screened[SCREEN_WIDTH:], partner, False, plans)
        except OutOfTime:
            pass
        if not plans:
            if screened:  # no pair finished: the best move on its own
                value, (frm, to), _ = max(screened, key=lambda item: item[0])
                return SQUARE_NAMES[frm] + SQUARE_NAMES[to], value
            frm, to = own[0]  # not even one evaluation: any legal move
            return SQUARE_NAMES[frm] + SQUARE_NAMES[to], 0.0
        plans.sort(key=lambda p: -p[0])
        best_decision, best_value = plans[0][1], plans[0][0]
        exact_best = float("-inf")
        seen = set()
        for _, decision, b2 in plans:
            if len(seen) >= EXACT_FINAL or time.monotonic() > self.deadline + 0.5 * self.movetime:
                break
            if decision in seen:
                continue
            seen.add(decision)
            value = self._value(b2, pits, True)
            if value > exact_best:
                exact_best, best_decision, best_value = value, decision, value
        return best_decision, best_value

    def _pair(self, pits: int, firsts: list, second: int, swapped: bool, plans: list) -> None:
        """For each screened first move, the partner's (or our, if ``swapped``) best reply."""
        for _, (frm, to), b1 in firsts:
            replies = movement_moves(b1, pits, second) or [None]
            best_value, best_board = float("-inf"), b1
            for reply in replies:
                self._tick()
                b2 = b1 if reply is None else _moved(b1, *reply)
                value = self._value(b2, pits, False)
                if value > best_value:
                    best_value, best_board = value, b2
            plans.append((best_value, AFTER if swapped else SQUARE_NAMES[frm] + SQUARE_NAMES[to], best_board))

    def _screen(self, board: list[int], pits: int, moves: list[tuple[int, int]]):
        """Moves with the position after each, best single-move estimate first (those screened
        before the time ran out, if it did)."""
        scored = []
        try:
            for frm, to in moves:
                self._tick()
                b1 = _moved(board, frm, to)
                scored.append((self._value(b1, pits, False), (frm, to), b1))
        except OutOfTime:
            if not scored:
                raise
        scored.sort(key=lambda item: -item[0])
        return scored

    # --- pit phase ---------------------------------------------------------------------------------

    def _bomb_target(self, state: CataloniaState) -> tuple[str, float]:
        board, pits = state.board(), state.pits()
        options = [SQUARE_INDEX[m] for m in state.legal_moves()]
        best, best_value = options[0], float("-inf")
        for sq in options:
            if time.monotonic() > self.deadline and best_value > float("-inf"):
                break
            piece = board[sq]
            b = board[:]
            b[sq] = 0
            p = pits | (1 << sq)
            dests = escape_destinations(b, p, sq, piece)
            if dests:
                value = max(self._value(_placed(b, d, piece), p, True) for d in dests)
            else:
                value = self._value(b, p, True)
            if value > best_value:
                best, best_value = sq, value
        return SQUARE_NAMES[best], best_value

    def _escape(self, state: CataloniaState) -> tuple[str, float]:
        board, pits = state.board(), state.pits()
        moves = state.legal_moves()
        data = state.observation_data(0)["escaping"]
        piece = _piece_code(data["piece"])
        best, best_value = moves[0], float("-inf")
        for move in moves:
            if time.monotonic() > self.deadline and best_value > float("-inf"):
                break
            value = self._value(_placed(board, SQUARE_INDEX[move[2:]], piece), pits, True)
            if value > best_value:
                best, best_value = move, value
        return best, best_value

    def _removal(self, state: CataloniaState) -> tuple[str, float]:
        board, pits = state.board(), state.pits()
        colour = state.deciding_colour()
        current = self._value(board, pits, True)
        best, best_value = DONE, current
        for sq in trapped_peasants(board, pits, colour):
            b = board[:]
            b[sq] = 0
            value = self._value(b, pits, True)
            if value > best_value:
                best, best_value = SQUARE_NAMES[sq], value
        return best, best_value


def _placed(board: list[int], sq: int, piece: int) -> list[int]:
    b = board[:]
    b[sq] = piece
    return b


def _piece_code(letter: str) -> int:
    kind = " PNBLG".index(letter.upper())
    return kind if letter.isupper() else -kind


def budget_for(request, movetime: float, turns: int, turn: int) -> float:
    """Seconds for this decision: the movetime, capped by an even share of the clock."""
    if request.time_left_ms <= 0:
        return movetime
    decisions_left = max(1, 3 * (turns - turn + 1))
    share = request.time_left_ms / 1000.0 / decisions_left
    return max(0.005, min(movetime, share, 0.5 * request.time_left_ms / 1000.0))


def make_decider(movetime: float, max_evaluations: int | None = None):
    planner = Planner(movetime, max_evaluations)
    games: dict[str, CataloniaGame] = {}

    def decide(request, new_game):
        game = games.get(new_game.game_id)
        if game is None:
            games.clear()
            game = games[new_game.game_id] = CataloniaGame(**new_game.options)
        state = game.from_text(request.position)
        budget = budget_for(request, movetime, game.turns, state.turn)
        started = time.monotonic()
        move, value = planner.choose(state, budget * 0.8)
        if request.legal_moves is not None and move not in request.legal_moves:
            move = request.legal_moves[0]  # never forfeit on a planner bug
        return move, Info(score=round(value, 2), nodes=planner.evaluations,
                          time_ms=int((time.monotonic() - started) * 1000))

    return decide


def main(argv: list[str] | None = None) -> int:
    from protocol.kit import run_engine

    parser = argparse.ArgumentParser(description="Catalonia chain-building planner")
    parser.add_argument("--movetime", type=float, default=DEFAULT_MOVETIME,
                        help=f"seconds per decision at most (default {DEFAULT_MOVETIME})")
    parser.add_argument("--evaluations", type=int, default=None,
                        help="evaluations per decision at most (default: as many as the time allows)")
    parser.add_argument("--name", default=NAME)
    parser.add_argument("--endpoint", default=None)
    args = parser.parse_args(argv)
    if args.movetime <= 0:
        parser.error("--movetime must be positive")
    if args.evaluations is not None and args.evaluations < 1:
        parser.error("--evaluations must be at least 1")
    return run_engine(make_decider(args.movetime, args.evaluations), name=args.name, author="arbiter project", version="1",
                      games=["catalonia"], wants_legal_moves=True, endpoint=args.endpoint)


if __name__ == "__main__":
    raise SystemExit(main())
