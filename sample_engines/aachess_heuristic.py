"""A heuristic A&A Chess engine: buys land power and planes, attacks where the arithmetic wins.

Usage: python -m sample_engines.aachess_heuristic

Because A&A Chess has no dice, a battle's outcome is (nearly) known before it is fought; this
engine uses exactly that (``library.predict``):

* purchase: powers with a complex on the continent buy infantry and armor; island powers
  (United Kingdom, Japan, United States) buy fighters and bombers, which can reach the fronts;
* combat move: for each enemy territory within reach (most valuable first) it gathers the units
  that can get there and attacks when the predicted battle leaves it land units and the enemy
  nothing; empty enemy territories are taken with one unit;
* casualties: the cheapest units first; retreat: continue while the prediction still wins;
* non-combat move: land units step toward the nearest enemy land, planes land nearest the front;
* placement: everything at the complex nearest the enemy.
"""
from __future__ import annotations

import argparse
from collections import deque

from arbiter.games.aachess import AAChessGame

NAME = "aachess-heuristic"


def enemy_distance(state, start: int) -> dict[int, int]:
    """Land distance (over land) from every land space to the nearest enemy-held land."""
    b, p = state.board, state.mover
    dist: dict[int, int] = {}
    queue = deque()
    for s in range(len(b.names)):
        if not b.sea[s] and state.enemies(p, state.owner[s]):
            dist[s] = 0
            queue.append(s)
    while queue:
        x = queue.popleft()
        for y in b.adjacent[x]:
            if not b.sea[y] and y not in dist:
                dist[y] = dist[x] + 1
                queue.append(y)
    return dist


def purchase(state) -> str:
    b, p = state.board, state.mover
    left = state.pus[p]
    complexes = [u.at for u in state.units.values() if u.p == p and u.t == "ic" and state.start_owner[u.at] == p]
    dist = enemy_distance(state, 0)
    near = min((dist.get(s, 99) for s in complexes), default=99)
    bought: dict[str, int] = {}
    if near <= 3:
        while left >= 3:
            code = "arm" if left >= 5 and sum(bought.values()) % 3 == 2 else "inf"
            bought[code] = bought.get(code, 0) + 1
            left -= b.units[code].cost
    else:
        while left >= 12:
            code = "bmb" if left >= 15 and bought.get("ftr", 0) > bought.get("bmb", 0) else "ftr"
            bought[code] = bought.get(code, 0) + 1
            left -= b.units[code].cost
    return ", ".join(f"{n} {c}" for c, n in bought.items()) or "-"


def combat_plan(state) -> str:
    from arbiter.games.aachess import library as lib

    b, p = state.board, state.mover
    work = state.clone()
    moves: list[str] = []
    targets = [s for s in range(len(b.names)) if not b.sea[s] and work.enemies(p, work.owner[s])]
    targets.sort(key=lambda s: (-b.production[s], len(work.defenders(s))))
    used: set[int] = set()
    for t in targets:
        if not work.enemies(p, work.owner[t]):
            continue
        reach: list[tuple] = []
        for u in lib.movable(work, True):
            if u.id in used or u.t in ("aa",) or work.kind(u) == "sea" or (work.kind(u) == "land" and u.on >= 0):
                continue
            paths = lib.paths_from(work, u, work.remaining(u))
            if t in paths:
                reach.append((u, paths[t]))
        land = [x for x in reach if work.kind(x[0]) == "land"]
        if not land:
            continue
        defenders = work.defenders(t)
        if not defenders:
            u, path = min(land, key=lambda x: (b.units[x[0].t].cost, x[0].id))
            text = lib.move_text(work, [u], path)
            if lib.try_move(work, text, True):
                moves.append(text)
                used.add(u.id)
            continue
        att, dfn = lib.predict(work, [x[0] for x in reach], defenders)
        if dfn or not any(work.kind(u) == "land" for u in att):
            continue
        for u, path in reach:
            text = lib.move_text(work, [u], path)
            if lib.try_move(work, text, True):
                moves.append(text)
                used.add(u.id)
    return "; ".join(moves) or "-"


def noncombat_plan(state) -> str:
    from arbiter.games.aachess import library as lib

    b, p = state.board, state.mover
    work = state.clone()
    moves: list[str] = []
    dist = enemy_distance(work, 0)
    capital = b.powers[p].capital
    for u in sorted(lib.movable(work, False), key=lambda u: u.id):
        if work.kind(u) != "land" or u.on >= 0 or u.t == "aa":
            continue
        here = dist.get(u.at, 99)
        if here <= 1 or (u.at == capital and sum(1 for x in work.at(capital) if x.p == p) <= 4):
            continue
        paths = lib.paths_from(work, u, work.remaining(u))
        best = min((s for s in paths if not b.sea[s] and work.friendly_land(p, s)), default=None,
                   key=lambda s: (dist.get(s, 99), len(paths[s]), s))
        if best is not None and dist.get(best, 99) < here:
            text = lib.move_text(work, [u], paths[best])
            if lib.try_move(work, text, False):
                moves.append(text)
    moves += lib.land_planes(work)
    return "; ".join(moves) or "-"


def place(state) -> str:
    b, p = state.board, state.mover
    dist = enemy_distance(state, 0)
    parts = []
    for code, n in state.bought.items():
        spots = state.placement_spots(code)
        if b.units[code].kind == "sea":
            continue
        spots = [s for s in spots if not b.sea[s]]
        if spots:
            best = min(spots, key=lambda s: (dist.get(s, 99), s))
            parts.append(f"{n} {code} @ {b.names[best]}")
    return "; ".join(parts) or "-"


def retreat(state) -> str:
    from arbiter.games.aachess import library as lib

    options = state.legal_moves()
    s = state.bt["at"]
    att, dfn = lib.predict(state, state.attackers(s), state.defenders(s))
    if "continue" in options and not dfn and att:
        return "continue"
    return [o for o in options if o != "continue"][0] if any(o != "continue" for o in options) else "continue"


def make_decider(seed: int = 0):
    from arbiter.games.aachess import library as lib

    cache: dict[str, object] = {}

    def decide(request, new_game) -> str:
        if cache.get("id") != request.game_id:
            cache["id"] = request.game_id
            cache["game"] = AAChessGame(**dict(new_game.options or {}))
        state = cache["game"].from_text(request.position)
        kind = request.kind
        if kind == "purchase":
            return purchase(state)
        if kind == "combat_move":
            return combat_plan(state)
        if kind == "noncombat_move":
            return noncombat_plan(state)
        if kind == "casualties":
            return lib.cheapest_casualties(state)
        if kind == "battle":
            return state.legal_moves()[0]
        if kind == "retreat":
            return retreat(state)
        if kind == "place":
            return place(state)
        raise ValueError(f"unknown decision kind {kind!r}")
    return decide


def main(argv: list[str] | None = None) -> int:
    from protocol.kit import run_engine

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default=NAME)
    parser.add_argument("--endpoint", default=None)
    args = parser.parse_args(argv)
    return run_engine(make_decider(args.seed), name=args.name, author="arbiter project", version="1",
                      games=["aachess"], endpoint=args.endpoint)


if __name__ == "__main__":
    raise SystemExit(main())
