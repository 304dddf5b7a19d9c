"""The exact longest-chain finder against brute-force enumeration of every simple cycle.

Checked: the length of the chain found (exact), that it is a chain (a cycle of >= 4 pieces, each
defending the next, both colours, written from its smallest vertex), the set of pieces on any
longest chain (the non-random targets), and the escape test (some chain through a piece)."""
from __future__ import annotations

import random

import pytest

from arbiter.games import catalonia_chains as chains
from arbiter.games.catalonia import PIECE_COUNTS, defence_graph
from arbiter.games.catalonia_chains import chain_lower_bound, chain_members, chain_through, longest_chain

ARMY = [kind for kind, n in PIECE_COUNTS.items() for _ in range(n)]


def all_cycles(succ: list[int], white: int, min_len: int = 4) -> list[tuple[int, ...]]:
    """Every chain: simple cycles of >= min_len vertices with both colours, each written once,
    from its smallest vertex (plain depth-first enumeration, no pruning)."""
    n = len(succ)
    found = []

    def extend(start: int, path: list[int]) -> None:
        for v in range(n):
            if v == path[-1] or not (succ[path[-1]] >> v) & 1:
                continue
            if v == start:
                colours = {(white >> u) & 1 for u in path}
                if len(path) >= min_len and len(colours) == 2:
                    found.append(tuple(path))
            elif v > start and v not in path:
                extend(start, path + [v])

    for s in range(n):
        extend(s, [s])
    return found


def longest_and_members(cycles: list[tuple[int, ...]]) -> tuple[int, int]:
    """The longest length and the bitmask of every vertex on a cycle of that length."""
    if not cycles:
        return 0, 0
    longest = max(map(len, cycles))
    members = 0
    for c in cycles:
        if len(c) == longest:
            for v in c:
                members |= 1 << v
    return longest, members


def check_answer(succ: list[int], white: int, cycles: list[tuple[int, ...]], min_len: int = 4) -> None:
    longest, members = longest_and_members(cycles)
    chain = longest_chain(succ, white, min_len=min_len)
    assert len(chain) == longest, (succ, white, chain, longest)
    if chain:
        check_chain(succ, white, chain, min_len)
        assert chain[0] == min(chain)
    assert chain_members(succ, white, min_len=min_len) == (longest, members), (succ, white)


def random_digraph(rng: random.Random, n: int) -> tuple[list[int], int]:
    p = rng.uniform(0.1, 0.6)
    succ = [sum(1 << v for v in range(n) if v != u and rng.random() < p) for u in range(n)]
    return succ, rng.getrandbits(n) if n else 0


def random_position(rng: random.Random, pieces: int, width: int, height: int) -> tuple[list[int], int]:
    """``pieces`` random pieces of both armies packed in a random box, a few pits around."""
    rank0, file0 = rng.randint(0, 8 - height), rng.randint(0, 8 - width)
    box = [r * 8 + f for r in range(rank0, rank0 + height) for f in range(file0, file0 + width)]
    codes = ARMY + [-k for k in ARMY]
    rng.shuffle(codes)
    board = [0] * 64
    for code, sq in zip(codes[:pieces], rng.sample(box, min(pieces, len(box)))):
        board[sq] = code
    pits = 0
    for sq in range(64):
        if not board[sq] and rng.random() < 0.15:
            pits |= 1 << sq
    return board, pits


def check_chain(succ: list[int], white: int, chain: tuple[int, ...], min_len: int = 4) -> None:
    assert len(chain) >= min_len and len(set(chain)) == len(chain)
    for a, b in zip(chain, chain[1:] + chain[:1]):
        assert (succ[a] >> b) & 1, f"{a} does not defend {b}"
    assert {(white >> v) & 1 for v in chain} == {0, 1}


def test_finder_matches_brute_force_on_random_positions():
    rng = random.Random(20260)
    with_chain = 0
    for i in range(3000):
        board, pits = random_position(rng, rng.randint(4, 10), rng.randint(2, 4), rng.randint(3, 4))
        _, succ, white = defence_graph(board, pits)
        cycles = all_cycles(succ, white)
        check_answer(succ, white, cycles)
        with_chain += bool(cycles)
        v = rng.randrange(len(succ))
        through = chain_through(succ, white, v)
        assert bool(through) == any(v in c for c in cycles)
        if through:
            assert through[0] == v
            check_chain(succ, white, through)
        assert chain_lower_bound(succ, white) <= longest_and_members(cycles)[0]
    assert with_chain > 500, with_chain  # the sample really exercises chains (594 of them)


def test_medium_digraphs_against_brute_force():
    rng = random.Random(13)
    for _ in range(150):
        n = rng.randint(10, 13)
        p = rng.uniform(0.12, 0.3)
        succ = [sum(1 << v for v in range(n) if v != u and rng.random() < p) for u in range(n)]
        white = rng.getrandbits(n)
        check_answer(succ, white, all_cycles(succ, white))


def test_finder_matches_brute_force_on_random_digraphs():
    rng = random.Random(7)
    for i in range(2500):
        succ, white = random_digraph(rng, rng.randint(0, 9))
        cycles = all_cycles(succ, white)
        check_answer(succ, white, cycles)
        for v in range(len(succ)):
            assert bool(chain_through(succ, white, v)) == any(v in c for c in cycles)


@pytest.mark.parametrize("min_len", [3, 5, 6])
def test_other_minimum_lengths(min_len):
    rng = random.Random(min_len)
    for _ in range(300):
        succ, white = random_digraph(rng, rng.randint(3, 8))
        check_answer(succ, white, all_cycles(succ, white, min_len), min_len)


def test_medium_positions_against_brute_force():
    rng = random.Random(99)
    for _ in range(120):
        board, pits = random_position(rng, rng.randint(11, 14), 5, 4)
        _, succ, white = defence_graph(board, pits)
        check_answer(succ, white, all_cycles(succ, white))


def test_bounds_never_cut_a_longer_chain_on_full_boards(monkeypatch):
    """Full 24-piece dense boxes are beyond brute force: the fully pruned search must agree with
    the search that only uses reachability (no pockets, no matching bound)."""
    rng = random.Random(5)
    positions = [random_position(rng, 24, rng.choice((5, 6)), rng.choice((5, 6))) for _ in range(12)]
    graphs = [defence_graph(b, p)[1:] for b, p in positions]
    pruned = [longest_chain(succ, white) for succ, white in graphs]
    monkeypatch.setattr(chains, "MATCHING_GAP", -1)
    plain = [longest_chain(succ, white) for succ, white in graphs]
    assert [len(c) for c in pruned] == [len(c) for c in plain]
    for (succ, white), chain in zip(graphs, pruned):
        if chain:
            check_chain(succ, white, chain)
            assert chain[0] == min(chain)


def test_self_loops_and_one_colour_are_ignored():
    assert longest_chain([0b0011, 0b0110, 0b1100, 0b1001], white=0b0101) == (0, 1, 2, 3)
    assert longest_chain([0b0010, 0b0100, 0b1000, 0b0001], white=0b1111) == ()
    assert longest_chain([0b0010, 0b0100, 0b0001], white=0b001) == ()  # a triangle is too short
    assert longest_chain([], 0) == ()


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="at most 30"):
        longest_chain([0] * 31, 0)
    with pytest.raises(ValueError, match="white mask"):
        longest_chain([0, 0], 0b100)
    with pytest.raises(ValueError, match="min_len"):
        longest_chain([0, 0], 0, min_len=2)
    with pytest.raises(ValueError, match="vertex 5"):
        chain_through([0, 0], 0, 5)
