"""Catalonia's production chains: an exact longest-cycle finder on the defence graph.

A chain is a simple directed cycle of at least 4 pieces, each defending the next, with at least
one white and one black piece. Finding the longest one is NP-hard in general, but a Catalonia
board holds at most 24 pieces, so an exact branch-and-bound search is affordable if it prunes
hard. This module knows nothing about the board: it works on a digraph given as bitmasks.

Graph
    Vertices ``0..n-1`` (the rules module numbers the pieces in ascending square order, so the
    vertex order *is* the square order); ``succ[v]`` is the bitmask of the vertices ``v``
    defends; ``white`` is the bitmask of the white vertices (the others are black).

Which longest chain
    The length is exact. Several chains may share it; ``longest_chain`` returns one of them
    (deterministically, written from its smallest vertex), and no rule depends on which:
    ``chain_members`` gives every vertex that lies on *some* longest chain, which is what the
    non-random pit phase offers as targets.

Search (why it is fast enough)
    1. Trimming: vertices on no cycle of 3 or more are dropped, repeatedly (no successor, no
       predecessor, or a single neighbour both ways).
    2. Chains are split by the first of their vertices in a search order chosen for speed: the
       remaining vertex with the fewest ways in or out, searched inside its strongly connected
       component; then it is deleted and the rest trimmed again, so later searches run on ever
       smaller graphs. A component no larger than the best chain so far, of one colour, or
       without a matching (cycle cover) bigger than the best, is skipped whole.
    3. A depth-first search grows the cycle from both ends -- a head path out of the start and
       a tail path into it -- always at the end with fewer candidates, trying the candidate
       with the fewest onward options first (long cycles early: the bound then bites). Before
       each step it bounds the cycle: only "inner" vertices -- reachable from the head's end
       and able to reach the tail's end through unused vertices -- can still join. Close to
       the best length it tightens the bound: the missing part of the cycle is a matching from
       the head's end and the inner vertices into the inner vertices and the tail's end, so it
       is no longer than a maximum bipartite matching (Kuhn's algorithm, stopping as soon as
       the matching is big enough). One-coloured paths that can no longer reach the other
       colour are cut too.
    4. Memo: every completion lies in the inner set, so a state with the same two ends and the
       same inner set met earlier with an open path at least as long has already been explored
       or cut (dynamic programming over subsets, without the exponential table).
    5. A cheap greedy pass first finds some long chain, so the bound bites from the start.
    Every set is a Python int used as a bitset; reachability in large components uses per-chunk
    lookup tables so that one breadth-first step costs five look-ups.
"""
from __future__ import annotations

from typing import Callable, Sequence

MIN_CHAIN = 4
"""A loop of fewer pieces is not a chain."""

MAX_VERTICES = 30
"""Bitsets of up to 30 bits stay single-digit Python ints (the board has at most 24 pieces)."""

MATCHING_GAP = 3
"""Tighten the bound (pockets, matching) only when the reachability bound is within this many
pieces of the best chain: far from it they rarely cut and cost more than they save."""

TABLE_REGION = 13
"""Regions of at least this many vertices use lookup tables for reachability."""


class ChainStats:
    """Counters of the last search (for the benchmark): DFS nodes expanded and bound cuts."""

    __slots__ = ("nodes", "cuts")

    def __init__(self) -> None:
        self.nodes = 0
        self.cuts = 0


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def _reach(start: int, adj: Sequence[int], within: int) -> int:
    """Every vertex of ``within`` reachable from the vertex set ``start`` (start included)."""
    seen = start
    frontier = start
    while frontier:
        new = 0
        while frontier:
            low = frontier & -frontier
            new |= adj[low.bit_length() - 1]
            frontier ^= low
        frontier = new & within & ~seen
        seen |= frontier
    return seen


def _prepare(succ: Sequence[int], white: int) -> tuple[list[int], list[int], int]:
    """Validated successor lists without self-loops, predecessor lists, and the trimmed set."""
    n = len(succ)
    if n > MAX_VERTICES:
        raise ValueError(f"the chain finder takes at most {MAX_VERTICES} vertices, got {n}")
    full = (1 << n) - 1
    if white < 0 or white & ~full:
        raise ValueError(f"white mask {white:#x} names vertices beyond {n - 1}")
    out = [(succ[v] & full) & ~(1 << v) for v in range(n)]  # a piece never defends itself
    pred = [0] * n
    for v in range(n):
        m = out[v]
        bit = 1 << v
        while m:
            low = m & -m
            pred[low.bit_length() - 1] |= bit
            m ^= low
    return out, pred, _trim(out, pred, full)


def _trim(out: list[int], pred: list[int], alive: int) -> int:
    """Drop vertices that lie on no cycle of 3 or more, repeatedly: no successor or no
    predecessor left, or one single neighbour both ways (only a 2-cycle through it)."""
    changed = True
    while changed:
        changed = False
        m = alive
        while m:
            low = m & -m
            m ^= low
            v = low.bit_length() - 1
            o = out[v] & alive
            i = pred[v] & alive
            both = o | i
            if not o or not i or both & (both - 1) == 0:
                alive ^= low
                changed = True
    return alive


def longest_chain(succ: Sequence[int], white: int, min_len: int = MIN_CHAIN,
                  stats: ChainStats | None = None) -> tuple[int, ...]:
    """A longest chain (vertices in cycle order, starting from its smallest vertex), or ``()``.

    Its length is exact; which of several equally long chains comes back is deterministic but
    an implementation detail (the rules never depend on it: see ``chain_members``).
    ``min_len`` is the shortest cycle that counts (4 in Catalonia; at least 3)."""
    if min_len < 3:
        raise ValueError(f"min_len must be at least 3, not {min_len}")
    out, pred, alive = _prepare(succ, white)
    if stats is not None:
        stats.nodes = stats.cuts = 0
    black = alive & ~white
    if alive.bit_count() < min_len or not (alive & white) or not black:
        return ()
    best = max(min_len, _greedy_length(out, pred, alive, white, black, min_len)) - 1
    search = _make_search(out, pred, white, black, stats)
    path: list[int] = []
    # Every chain is found from the first of its vertices in this order: the vertex with the
    # fewest ways in or out (few branches); then it is deleted and the rest trimmed again, so
    # the later searches run on ever smaller graphs.
    while alive.bit_count() > best:
        pick, fewest = -1, 99
        m = alive
        while m:
            low = m & -m
            m ^= low
            v = low.bit_length() - 1
            degree = min((out[v] & alive).bit_count(), (pred[v] & alive).bit_count())
            if degree < fewest:
                pick, fewest = v, degree
        sbit = 1 << pick
        comp = _reach(sbit, out, alive) & _reach(sbit, pred, alive)
        # A cycle of k vertices in the component is a matching of k of its edges: no matching
        # bigger than the best chain, no better chain (one cheap test before a whole search).
        if comp.bit_count() > best and (comp & white) and (comp & black) and \
                _matching_reaches(out, comp, comp, best + 1):
            length, found = search(pick, comp, best, False)
            if found:
                best, path = length, found
        alive = _trim(out, pred, alive ^ sbit)
    if not path:
        return ()
    first = path.index(min(path))
    return tuple(path[first:] + path[:first])


def chain_members(succ: Sequence[int], white: int, min_len: int = MIN_CHAIN) -> tuple[int, int]:
    """``(length, members)``: the longest chain length and the bitmask of every vertex that lies
    on *some* chain of that length (0, 0 without a chain).

    This is what the non-random pit phase needs: "a piece of the longest chain" when several
    chains tie is any piece of any of them, so the rule does not depend on which one a finder
    happens to return."""
    chain = longest_chain(succ, white, min_len)
    if not chain:
        return 0, 0
    length = len(chain)
    members = sum(1 << v for v in chain)
    out, pred, alive = _prepare(succ, white)
    black = alive & ~white
    search = _make_search(out, pred, white, black, None)
    for v in _bits(alive & ~members):
        if (members >> v) & 1:
            continue
        vbit = 1 << v
        comp = _reach(vbit, out, alive) & _reach(vbit, pred, alive)
        if comp.bit_count() < length or not (comp & white) or not (comp & black):
            continue
        _, found = search(v, comp, length - 1, True)  # nothing is longer: found means equal
        for u in found:
            members |= 1 << u
    return length, members


def chain_through(succ: Sequence[int], white: int, v: int, min_len: int = MIN_CHAIN) -> tuple[int, ...]:
    """Some chain that contains vertex ``v`` (in cycle order starting at ``v``), or ``()``.

    The escape rule asks only whether such a chain exists, not for the longest one."""
    n = len(succ)
    if not 0 <= v < n:
        raise ValueError(f"vertex {v} is not in a graph of {n} vertices")
    if min_len < 3:
        raise ValueError(f"min_len must be at least 3, not {min_len}")
    out, pred, alive = _prepare(succ, white)
    vbit = 1 << v
    if not alive & vbit:
        return ()
    comp = _reach(vbit, out, alive) & _reach(vbit, pred, alive)
    black = alive & ~white
    if comp.bit_count() < min_len or not (comp & white) or not (comp & black):
        return ()
    _, path = _make_search(out, pred, white, black, None)(v, comp, min_len - 1, True)
    return tuple(path)


def _matching_reaches(out: Sequence[int], left: int, right: int, need: int) -> bool:
    """Whether the edges ``out`` from ``left`` into ``right`` hold a matching of ``need`` pairs.

    Kuhn's augmenting paths on bitsets after a greedy start; it stops as soon as ``need`` pairs
    are matched, which the greedy start alone usually achieves, so the full (costly) proof that
    no bigger matching exists is only paid when the answer is no and the branch gets cut."""
    match_r: dict[int, int] = {}
    taken = 0
    size = 0
    unmatched = []
    m = left
    while m:
        low = m & -m
        m ^= low
        u = low.bit_length() - 1
        c = out[u] & right & ~taken
        if c:
            r = c & -c
            taken |= r
            match_r[r] = u
            size += 1
        else:
            unmatched.append(u)
    if size >= need:
        return True
    if size + len(unmatched) < need:
        return False
    visited = 0

    def augment(u: int) -> bool:
        nonlocal visited, taken
        c = out[u] & right & ~visited
        while c:
            r = c & -c
            c ^= r
            visited |= r
            if not (taken & r):
                taken |= r
                match_r[r] = u
                return True
            if augment(match_r[r]):
                match_r[r] = u
                return True
        return False

    for i, u in enumerate(unmatched):
        # Rights visited by a failed search stay useless until the matching changes.
        if augment(u):
            size += 1
            if size >= need:
                return True
            visited = 0
        if size + len(unmatched) - i - 1 < need:
            return False
    return False


def _step_tables(adj: Sequence[int]) -> tuple[list[int], ...]:
    """One-step images of 6-bit chunks: ``T[k][m]`` = union of ``adj[6k + i]`` over bits i of m,
    so that a breadth-first step over a whole frontier costs five look-ups."""
    n = len(adj)
    tables = []
    for k in range(5):
        base = 6 * k
        width = max(0, min(6, n - base))
        t = [0] * 64
        for m in range(1, 1 << width):
            low = m & -m
            t[m] = t[m ^ low] | adj[base + low.bit_length() - 1]
        tables.append(t)
    return tuple(tables)


def _table_reach(tables: tuple[list[int], ...]) -> Callable[[int, int], int]:
    t0, t1, t2, t3, t4 = tables

    def reach(start: int, within: int) -> int:
        seen = frontier = start
        while frontier:
            frontier = (t0[frontier & 63] | t1[(frontier >> 6) & 63] | t2[(frontier >> 12) & 63]
                        | t3[(frontier >> 18) & 63] | t4[frontier >> 24]) & within & ~seen
            seen |= frontier
        return seen

    return reach


def _greedy_length(out: list[int], pred: list[int], alive: int, white: int, black: int,
                   min_len: int, budget: int = 100) -> int:
    """The length of some chain found by a short search with a long-path heuristic (0 if it
    finds none): only a hint that lets the exact search's bound bite from the start; any value
    it returns is the length of a real chain, so it never hides a longer one."""
    best = 0
    left = budget
    for s in _bits(alive):
        sbit = 1 << s
        comp = _reach(sbit, out, alive) & _reach(sbit, pred, alive)
        if comp.bit_count() <= max(best, min_len - 1) or not (comp & white) or not (comp & black):
            continue

        def walk(cur: int, avail: int, length: int, colours: int) -> None:
            nonlocal best, left
            if left <= 0:
                return
            left -= 1
            nxt = out[cur]
            if nxt & sbit and length >= min_len and colours == 3 and length > best:
                best = length
            cands = []
            m = nxt & avail
            while m:
                low = m & -m
                m ^= low
                onward = (out[low.bit_length() - 1] & (avail ^ low)).bit_count()
                if onward:  # Warnsdorff: the successor with the fewest onward options first
                    cands.append((onward, low))
            cands.sort()
            for _, low in cands[:2]:
                walk(low.bit_length() - 1, avail ^ low, length + 1, colours | (1 if low & white else 2))

        walk(s, comp & ~sbit, 1, 1 if sbit & white else 2)
        if left <= 0:
            break
    return best


def chain_lower_bound(succ: Sequence[int], white: int, budget: int = 100) -> int:
    """The length of some chain found by a short greedy search (0 if it finds none): a cheap
    lower bound on the longest chain, for engines that must screen many positions."""
    return chain_estimate(succ, white, budget)[0]


def chain_estimate(succ: Sequence[int], white: int, budget: int = 100) -> tuple[int, int]:
    """``(chain_lower_bound, cycle_core)`` computed together (one trimming pass)."""
    out, pred, alive = _prepare(succ, white)
    black = alive & ~white
    if alive.bit_count() < MIN_CHAIN or not (alive & white) or not black:
        return 0, alive
    return _greedy_length(out, pred, alive, white, black, MIN_CHAIN, budget), alive


def cycle_core(succ: Sequence[int], white: int) -> int:
    """The vertices left after trimming those on no cycle of 3 or more (a bitmask): the pieces
    that could belong to a chain without any move."""
    return _prepare(succ, white)[2]


def _make_search(out: list[int], pred: list[int], white: int, black: int, stats: ChainStats | None):
    """A cycle search over this graph: ``search(s, region, threshold, first_only)`` returns
    ``(length, path)`` of a longest cycle through ``s`` inside ``region`` that is longer than
    ``threshold`` and has both colours (``(threshold, [])`` if there is none); with
    ``first_only`` it stops at the first such cycle. ``path`` starts at ``s``.

    The cycle grows from both ends: a head path ``s -> ... -> cur`` and a tail path
    ``t -> ... -> s``; it closes with an edge ``cur -> t``. Each step extends the end with
    fewer candidates (a Peasant defends at most two pieces but may be defended by many: its
    successors are the cheap side), which keeps the tree narrow."""
    tables: list = []

    def search(s: int, region: int, threshold: int, first_only: bool) -> tuple[int, list[int]]:
        if region.bit_count() >= TABLE_REGION:
            if not tables:
                tables.extend((_table_reach(_step_tables(out)), _table_reach(_step_tables(pred))))
            fwd, bwd = tables
        else:
            def fwd(start: int, within: int) -> int:
                return _reach(start, out, within)

            def bwd(start: int, within: int) -> int:
                return _reach(start, pred, within)
        sbit = 1 << s
        other = black if sbit & white else white
        head = [s]
        tail = [s]
        best: list[int] = []
        best_len = threshold
        nodes = cuts = 0
        seen_states: dict[int, int] = {}

        def dfs(cur: int, t: int, usable: int, length: int, mixed: bool) -> bool:
            """Extend the open path ``t -> ... -> s -> ... -> cur`` (``length`` pieces) through
            ``usable``: the unused vertices reachable from ``cur`` that can reach ``t``. True
            stops the search (``first_only`` and found)."""
            nonlocal best, best_len, nodes, cuts
            nodes += 1
            if cur != t and (out[cur] >> t) & 1 and mixed and length > best_len:
                best = head + tail[:0:-1]
                best_len = length
                if first_only:
                    return True
            ahead = out[cur] & usable
            behind = pred[t] & usable
            if not ahead or not behind:
                return False
            forward = ahead.bit_count() <= behind.bit_count()
            adj = out if forward else pred
            m = ahead if forward else behind
            candidates = []
            while m:
                low = m & -m
                m ^= low
                candidates.append(((adj[low.bit_length() - 1] & usable).bit_count(), low))
            if len(candidates) > 1:
                # Any order finds the maximum; the candidate with the fewest onward options
                # first (Warnsdorff) finds long cycles early, which tightens the bound.
                candidates.sort()
            tbit, cbit = 1 << t, 1 << cur
            for _, low in candidates:
                rest = usable ^ low
                x = low.bit_length() - 1
                if forward:
                    new_cur, new_t = x, t
                    inner = fwd(low, rest) & bwd(tbit, rest) & rest
                else:
                    new_cur, new_t = cur, x
                    inner = fwd(cbit, rest) & bwd(low, rest) & rest
                closes = (out[new_cur] >> new_t) & 1
                # The cycle can still gain at most the inner vertices.
                room = length + 1 + inner.bit_count() - best_len
                if room <= 0 or not (closes or (out[new_cur] & inner and pred[new_t] & inner)):
                    cuts += 1
                    continue
                x_mixed = mixed or bool(low & other)
                if not x_mixed and not (inner & other):
                    cuts += 1
                    continue
                # Memo: every completion lies in ``inner``; the same ends and inner set, met
                # before with an open path at least as long (and mixed if this one is), were
                # explored or cut under a threshold no higher than now: nothing longer here.
                key = ((((inner << 5) | new_cur) << 5) | new_t) << 1
                if seen_states.get(key | 1, 0) > length or (
                        not x_mixed and seen_states.get(key, 0) > length):
                    cuts += 1
                    continue
                seen_states[key | x_mixed] = length + 1
                # Close to the best: the rest new_cur -> ... -> new_t is a matching from
                # {new_cur} + inner into inner + {new_t}, no bigger than a maximum one.
                if room <= MATCHING_GAP and not _matching_reaches(
                        out, inner | (1 << new_cur), inner | (1 << new_t), best_len + 1 - length):
                    cuts += 1
                    continue
                (head if forward else tail).append(x)
                if dfs(new_cur, new_t, inner, length + 1, x_mixed):
                    return True
                (head if forward else tail).pop()
            return False

        avail = region & ~sbit
        dfs(s, s, fwd(sbit, avail) & bwd(sbit, avail) & avail, 1, False)
        if stats is not None:
            stats.nodes += nodes
            stats.cuts += cuts
        return best_len, best

    return search
