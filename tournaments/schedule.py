"""Pairing algorithms: pure functions of their inputs (no I/O, no clocks, no global randomness).

* ``round_robin_rounds`` — Berger tables (circle method), colours balanced to within one.
* ``swiss_pairings`` — one Swiss round: score groups (top half against bottom half), no repeat
  pairings (looking ahead: a round is paired so that the rounds after it can still be paired
  without one), colour (who is "A", the engine listed first in the match schedule) balanced to
  within two, byes to the lowest-ranked engine without one.
* ``knockout_slots`` — the standard seeded bracket (1 v 16, 8 v 9, ...), byes for top seeds.
* ``rotation`` — seat rotation for tables of three or more seats (and teams): every engine sits
  in every seat equally often in each block of ``num_seats`` games.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from arbiter.formats.match import rotation  # noqa: F401  (re-exported: the director's and the tests' name)


# --- round robin -------------------------------------------------------------------------------

def round_robin_rounds(n: int) -> list[list[tuple[int, int]]]:
    """Rounds of a single round robin among players ``0..n-1``: pairs ``(A, B)``.

    With an odd ``n`` one player sits out each round. Over the whole cycle every player is "A"
    either ⌊(n-1)/2⌋ or ⌈(n-1)/2⌉ times, and no player is "A" (or "B") three rounds running
    except where the circle method forces it for the fixed player (never, see the alternation)."""
    if n < 2:
        return []
    m = n if n % 2 == 0 else n + 1
    rounds = []
    others = list(range(m - 1))
    for r in range(m - 1):
        rot = others[r:] + others[:r]
        arr = [m - 1] + rot
        pairs = []
        for k in range(m // 2):
            x, y = arr[k], arr[m - 1 - k]
            if k == 0:
                pair = (x, y) if r % 2 == 0 else (y, x)
            else:
                pair = (x, y) if k % 2 == 1 else (y, x)
            if max(pair) < n:
                pairs.append(pair)
        rounds.append(pairs)
    return _balance_colours(rounds, n)


def _balance_colours(rounds: list[list[tuple[int, int]]], n: int) -> list[list[tuple[int, int]]]:
    """Flip pairs greedily (in round order) so every player's A-B difference stays within one."""
    diff = [0] * n
    out = []
    for pairs in rounds:
        new = []
        for a, b in pairs:
            if diff[a] > diff[b] or (diff[a] == diff[b] and diff[a] > 0):
                a, b = b, a
            diff[a] += 1
            diff[b] -= 1
            new.append((a, b))
        out.append(new)
    return out


# --- swiss -------------------------------------------------------------------------------------

@dataclass
class SwissPlayer:
    index: int
    score: float = 0.0
    colour_diff: int = 0
    """Times "A" minus times "B"."""
    last_colour: str = ""
    opponents: set[int] = field(default_factory=set)
    had_bye: bool = False


class PairingError(RuntimeError):
    pass


@dataclass
class SwissRound:
    pairs: list[tuple[int, int]]
    """(A, B) per board, top board first."""
    bye: int | None
    relaxed: str = ""
    """Empty when every rule held; else which rule had to give way ('colour', 'repeat'; 'bye': an
    engine that had one gets another, when every engine without one would need a repeat pairing)."""


def swiss_pairings(ranked: list[SwissPlayer], round_number: int, coin: int = 0,
                   node_limit: int = 200_000, later_rounds: int = 0,
                   lookahead_limit: int = 200_000, halves: bool = True) -> SwissRound:
    """Pair one Swiss round. ``ranked`` is the standings order (best first; ties already broken).

    Rules, in order of precedence: (1) no repeat pairing, in this round and, with
    ``later_rounds`` (the rounds still to be paired after this one), in the later rounds: the
    round is paired so that they can still be paired without one (and without a second bye),
    whatever their results; (2) nobody's A-B difference beyond two (two players who both must
    have the same colour are not paired); (3) pair within score groups, the top half against the
    bottom half; (4) colours: the engine with the lower A-B difference gets A, then the one that
    was B last time, then alternating boards. Within a score group an opponent due the other
    colour is preferred; among those, and among the others, the bottom half first from its top
    (Dutch transpositions), then the top half from its bottom (exchanges); ``halves=False``
    (events started under planning rules 1 and 2) took the nearest to the natural partner on
    either side, the top half's on a tie, so colour could pair 1 with 2 where 1-4 and 2-3 suit.
    The search is exhaustive (backtracking) under a node budget; only if no pairing satisfies
    (1) and (2) is (2) relaxed, and only if none satisfies (1) is (1) relaxed (reported in
    ``relaxed``). The look-ahead has a budget of its own (``lookahead_limit`` nodes,
    counted, not timed: the same standings always give the same pairing); when it runs out, or
    when the later rounds cannot all be paired without a repeat whatever this one does, the
    round is paired as with ``later_rounds = 0``."""
    players = list(ranked)
    by_index = {p.index: p for p in players}
    bye_order: list[int | None] = [None]
    if len(players) % 2:
        without = [p.index for p in reversed(players) if not p.had_bye]
        bye_order = without + [p.index for p in reversed(players) if p.had_bye]

    def finish(pairs: list[tuple[int, int]], bye: int | None, relaxed: str) -> SwissRound:
        boards = [_allocate(by_index[x], by_index[y], board, round_number, coin)
                  for board, (x, y) in enumerate(pairs)]
        if bye is not None and by_index[bye].had_bye:  # a second bye rather than a repeat pairing
            relaxed = f"{relaxed} and bye" if relaxed else "bye"
        return SwissRound(boards, bye, relaxed)

    if later_rounds > 0:
        found = _look_ahead(players, bye_order, later_rounds, node_limit, _Budget(lookahead_limit), halves)
        if found is not None:
            return finish(*found)
    for relaxed in ("", "colour", "repeat"):
        for bye in bye_order:
            rest = [p for p in players if p.index != bye]
            pairs = next(_candidates(rest, relaxed, node_limit, halves), None)
            if pairs is not None:
                return finish(pairs, bye, relaxed)
    raise PairingError(f"cannot pair swiss round {round_number}")  # unreachable: 'repeat' always pairs


class _OutOfNodes(Exception):
    pass


class _Budget:
    def __init__(self, nodes: int):
        self.left = nodes

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise _OutOfNodes


def _look_ahead(players: list[SwissPlayer], bye_order: list[int | None], later: int, node_limit: int,
                budget: _Budget, halves: bool = True) -> tuple[list[tuple[int, int]], int | None, str] | None:
    """(pairs, bye, relaxed) of the first pairing in the usual order of preference after which the
    ``later`` rounds can be paired without a repeat, nor a second bye (else without a repeat); None
    when there is none (the rounds paired so far have made a repeat unavoidable) or the budget ran out."""
    ids = [p.index for p in players]
    allowed = {p.index: {q for q in ids if q != p.index and q not in p.opponents} for p in players}
    no_bye = {p.index for p in players if not p.had_bye}
    odd = len(players) % 2 == 1
    try:
        for strict in ((True, False) if odd else (True,)):
            if not _completable(ids, allowed, no_bye, later + 1, strict, budget):
                continue  # no pairing of this round keeps the later ones repeat-free
            for relaxed in ("", "colour"):
                for bye in bye_order:
                    if strict and bye is not None and bye not in no_bye:
                        continue
                    rest = [p for p in players if p.index != bye]
                    for pairs in _candidates(rest, relaxed, node_limit, halves):
                        after = {i: set(s) for i, s in allowed.items()}
                        for x, y in pairs:
                            after[x].discard(y)
                            after[y].discard(x)
                        if _completable(ids, after, no_bye - {bye}, later, strict, budget):
                            return pairs, bye, relaxed
    except _OutOfNodes:
        pass
    return None


def _completable(ids: list[int], allowed: dict[int, set[int]], no_bye: set[int], rounds: int, strict: bool,
                 budget: _Budget, floor: int = -1) -> bool:
    """Whether ``rounds`` rounds can be paired among ``ids`` with only ``allowed`` partners, each
    pair at most once; with an odd number of players a bye each round, to distinct players (with
    ``strict``, only to players in ``no_bye``). ``allowed`` is left as it was found. Rounds are
    interchangeable, so they are searched in one order only: byes (odd) or the first player's
    partners (even) increasing from round to round (``floor``)."""
    budget.spend()
    if rounds == 0:
        return True
    odd = len(ids) % 2 == 1
    pool = sorted(no_bye) if (odd and strict) else (list(ids) if odd else [])
    if odd and len([b for b in pool if b > floor]) < rounds:
        return False
    for p in ids:  # every player must still find enough partners
        if len(allowed[p]) < rounds - (1 if odd and (p in no_bye or not strict) else 0):
            return False
    for bye in ([b for b in pool if b > floor] if odd else [None]):
        rest = [p for p in ids if p != bye]
        first = None if odd else rest[0]
        for pairs in _matchings(rest, allowed, budget, first, -1 if odd else floor):
            for x, y in pairs:
                allowed[x].discard(y)
                allowed[y].discard(x)
            try:
                nxt = bye if odd else dict(pairs + [(y, x) for x, y in pairs])[first]
                if _completable(ids, allowed, no_bye - {bye}, rounds - 1, strict, budget, nxt):
                    return True
            finally:
                for x, y in pairs:
                    allowed[x].add(y)
                    allowed[y].add(x)
    return False


def _matchings(ids: list[int], allowed: dict[int, set[int]], budget: _Budget, first: int | None, floor: int):
    """Every pairing of ``ids`` with ``allowed`` partners (``first``'s partner above ``floor``),
    the player with the fewest partners left paired first."""
    def rec(unpaired: frozenset[int]):
        if not unpaired:
            yield []
            return
        budget.spend()
        p = first if first in unpaired else min(unpaired, key=lambda x: (len(allowed[x] & unpaired), x))
        for q in sorted(allowed[p] & unpaired):
            if p == first and q <= floor:
                continue
            for sub in rec(unpaired - {p, q}):
                yield [(p, q)] + sub

    yield from rec(frozenset(ids))


def _conflict(p: SwissPlayer, q: SwissPlayer) -> bool:
    return (p.colour_diff >= 2 and q.colour_diff >= 2) or (p.colour_diff <= -2 and q.colour_diff <= -2)


def _candidates(rest: list[SwissPlayer], relaxed: str, node_limit: int, halves: bool = True):
    """The pairings of ``rest`` allowed by ``relaxed``, best first (the first is the round's
    pairing when nothing is looked ahead), until ``node_limit`` nodes have been searched."""
    budget = [node_limit]

    def rec(unpaired: list[SwissPlayer]):
        if not unpaired:
            yield []
            return
        budget[0] -= 1
        if budget[0] < 0:
            return
        p = unpaired[0]
        group = [q for q in unpaired if q.score == p.score]
        ideal = len(group) // 2

        def order(iq: tuple[int, SwissPlayer]) -> tuple:
            i, q = iq
            if q.score != p.score:
                dutch: tuple = (i,)
            elif halves:  # the bottom half from its top, then the top half from its bottom
                dutch = (group.index(q) < ideal, abs(group.index(q) - ideal))
            else:
                dutch = (abs(group.index(q) - ideal),)
            colour = 1 if p.colour_diff * q.colour_diff > 0 else 0
            repeat = 1 if q.index in p.opponents else 0
            return (repeat, abs(p.score - q.score), colour, dutch, i)

        for _, q in sorted(enumerate(unpaired[1:], 1), key=order):
            if q.index in p.opponents and relaxed != "repeat":
                continue
            if relaxed == "" and _conflict(p, q):
                continue
            for sub in rec([x for x in unpaired[1:] if x is not q]):
                yield [(p.index, q.index)] + sub
            if budget[0] < 0:
                return

    yield from rec(rest)


def _allocate(p: SwissPlayer, q: SwissPlayer, board: int, round_number: int, coin: int) -> tuple[int, int]:
    """(A, B) for higher-ranked ``p`` and ``q``."""
    if p.colour_diff != q.colour_diff:
        return (p.index, q.index) if p.colour_diff < q.colour_diff else (q.index, p.index)
    if p.last_colour != q.last_colour and p.last_colour and q.last_colour:
        return (p.index, q.index) if p.last_colour == "B" else (q.index, p.index)
    if (board + round_number + coin) % 2 == 0:
        return (p.index, q.index)
    return (q.index, p.index)


# --- knockout ----------------------------------------------------------------------------------

def bracket_order(size: int) -> list[int]:
    """Seed numbers (1-based) in bracket order for a power-of-two ``size``: 1, 16, 8, 9, ..."""
    order = [1]
    while len(order) < size:
        m = 2 * len(order) + 1
        order = [s for x in order for s in (x, m - x)]
    return order


def knockout_slots(n: int) -> list[int | None]:
    """First-round slots: seed index (0-based) per slot, ``None`` for a bye; pairs are slots 2i, 2i+1."""
    size = 1
    while size < n:
        size *= 2
    return [s - 1 if s <= n else None for s in bracket_order(size)]


def knockout_rounds(n: int) -> int:
    size, r = 1, 0
    while size < n:
        size, r = size * 2, r + 1
    return r


# --- seat rotation: arbiter.formats.match.rotation (``arbiter match`` rotates n-seat series too) ----

def seeded_order(n: int, seed: str, salt: str) -> list[int]:
    """A permutation of ``0..n-1`` that depends only on the tournament seed and ``salt``."""
    order = list(range(n))
    random.Random(f"{seed}|{salt}").shuffle(order)
    return order
