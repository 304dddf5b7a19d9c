"""Helpers for A&A Chess engines: build legal decisions with the rules module as a library.

Every builder tries candidate moves on a clone of the state and keeps those the rules accept,
so what it returns is legal by construction (the referee validates it again as a whole).
"""
from __future__ import annotations

import random
from collections import deque

from ..base import IllegalMove
from .rules import AAChessState, Unit


def paths_from(state: AAChessState, u: Unit, steps: int) -> dict[int, list[int]]:
    """Shortest paths (start first) to every space ``u`` might reach in ``steps`` moves,
    by terrain only (the rules decide the rest)."""
    b = state.board
    kind = state.kind(u)
    start = u.at
    paths = {start: [start]}
    queue = deque([start])
    while queue:
        x = queue.popleft()
        if len(paths[x]) - 1 >= steps:
            continue
        if kind == "land" and b.sea[x]:
            continue
        for y in b.adjacent[x]:
            if y in paths:
                continue
            if kind == "sea" and not b.sea[y]:
                continue
            if kind == "air" and b.neutral[y] and state.owner[y] is None:
                continue
            if kind == "land" and x != start and not state.friendly_land(state.mover, x) and u.t != "arm":
                continue
            paths[y] = paths[x] + [y]
            queue.append(y)
    del paths[start]
    return paths


def move_text(state: AAChessState, units: list[Unit], path: list[int], raid: bool = False) -> str:
    names = state.board.names
    return ("bomb " if raid else "") + ", ".join(f"#{u.id}" for u in units) + " : " + " > ".join(names[s] for s in path)


def try_move(state: AAChessState, text: str, combat: bool) -> bool:
    """Play ``text`` on ``state`` if legal (state unchanged otherwise)."""
    trial = state.clone()
    try:
        trial.move(text, combat)
    except IllegalMove:
        return False
    state.__dict__.update({k: v for k, v in trial.__dict__.items() if k not in ("log", "_rendered")})
    return True


def movable(state: AAChessState, combat: bool) -> list[Unit]:
    p = state.mover
    out = []
    for u in state.units.values():
        if u.p != p or u.t == "ic" or (u.has("done") and u.on < 0) or (combat and u.has("stop")):
            continue
        if not combat and u.has("cm") and state.kind(u) != "air":
            continue
        if state.kind(u) == "land" and u.on >= 0 and state.board.sea[u.at]:
            out.append(u)
        elif state.remaining(u) > 0:
            out.append(u)
    return out


def random_plan(state: AAChessState, rng: random.Random, combat: bool, tries: int = 40, share: float = 0.4) -> str:
    """A random legal plan for the combat or non-combat move."""
    work = state.clone()
    moves: list[str] = []
    for _ in range(tries):
        units = movable(work, combat)
        if not units:
            break
        u = rng.choice(units)
        if rng.random() > share:
            continue
        if state.kind(u) == "land" and u.on >= 0:
            targets = {y: [u.at, y] for y in work.board.adjacent[u.at] if not work.board.sea[y]}
        else:
            targets = paths_from(work, u, work.remaining(u))
        if not targets:
            continue
        dest = rng.choice(sorted(targets))
        raid = combat and u.t == "bmb" and rng.random() < 0.3
        text = move_text(work, [u], targets[dest], raid)
        if try_move(work, text, combat):
            moves.append(text)
    if not combat:
        moves += land_planes(work)
    return "; ".join(moves) or "-"


def land_planes(state: AAChessState) -> list[str]:
    """Non-combat moves that bring the mover's planes to the nearest landing spot (played on
    ``state``); planes with nowhere to go are left (they will be lost)."""
    moves = []
    p = state.mover
    for u in sorted((u for u in state.units.values() if u.p == p and state.kind(u) == "air"), key=lambda u: u.id):
        if state.landing_spot(p, u.at, u.t == "ftr") and (not state.board.sea[u.at] or u.on >= 0):
            continue
        paths = paths_from(state, u, state.remaining(u))
        spots = sorted((len(path), s) for s, path in paths.items() if state.landing_spot(p, s, u.t == "ftr"))
        for _, s in spots:
            text = move_text(state, [u], paths[s])
            if try_move(state, text, False):
                moves.append(text)
                if state.board.sea[s]:
                    state._dock(s)
                break
    return moves


def random_purchase(state: AAChessState, rng: random.Random) -> str:
    left = state.pus[state.mover]
    codes = ["inf", "inf", "inf", "arm", "arm", "ftr", "bmb", "trn", "sub", "bb", "cv", "aa"]
    bought: dict[str, int] = {}
    for _ in range(30):
        c = rng.choice(codes)
        cost = state.board.units[c].cost
        if cost <= left:
            bought[c] = bought.get(c, 0) + 1
            left -= cost
    return ", ".join(f"{n} {c}" for c, n in bought.items()) or "-"


def random_placement(state: AAChessState, rng: random.Random) -> str:
    parts = []
    work = state.clone()
    for code, n in state.bought.items():
        for _ in range(n):
            spots = work.placement_spots(code)
            rng.shuffle(spots)
            for s in spots:
                text = f"1 {code} @ {work.board.names[s]}"
                trial = work.clone()
                trial.bought = {code: 1}
                try:
                    trial._place(text)
                except IllegalMove:
                    continue
                work = trial
                parts.append(text)
                break
    return "; ".join(parts) or "-"


def random_casualties(state: AAChessState, rng: random.Random) -> str:
    cands = state.casualty_candidates()
    chosen = rng.sample(cands, state.cas["count"])
    return ", ".join(f"#{u.id}" for u in chosen)


def cheapest_casualties(state: AAChessState) -> str:
    """Lose the cheapest units first (transports carrying nothing before loaded ones)."""
    b = state.board
    cands = sorted(state.casualty_candidates(),
                   key=lambda u: (b.units[u.t].cost + 10 * len(state.cargo(u)), u.id))
    return ", ".join(f"#{u.id}" for u in cands[:state.cas["count"]])


def predict(state: AAChessState, attackers: list[Unit], defenders: list[Unit], max_rounds: int = 30) -> tuple[list[Unit], list[Unit]]:
    """The battle as the A&A Chess arithmetic plays it (both sides losing their cheapest units
    first; a rolled fraction counts as a hit when it is 4 or more): the survivors of each side."""
    from . import combat

    b = state.board
    variant = state.variant
    att = sorted(attackers, key=lambda u: (b.units[u.t].cost, u.id))
    dfn = sorted(defenders, key=lambda u: (b.units[u.t].cost, u.id))
    carry = [0, 0]
    for _ in range(max_rounds):
        if not att or not dfn:
            break
        fa = combat.fire(sum(b.units[u.t].attack for u in att), combat.ATTACKER, variant, carry[0])
        fd = combat.fire(sum(b.units[u.t].defence for u in dfn), combat.DEFENDER, variant, carry[1])
        ha = fa.hits + (1 if fa.roll >= 4 else 0)
        hd = fd.hits + (1 if fd.roll >= 4 else 0)
        carry = [fa.carry_out, fd.carry_out]
        if ha == 0 and hd == 0 and variant not in combat.CARRY_VARIANTS:
            break
        dfn, att = dfn[ha:], att[hd:]
    return att, dfn
