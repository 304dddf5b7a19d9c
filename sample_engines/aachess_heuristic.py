"""A heuristic A&A Chess engine: land power on the fronts, transports and planes to the islands.

Usage: python -m sample_engines.aachess_heuristic

Because A&A Chess has no dice, a battle's outcome is (nearly) known before it is fought; this
engine uses exactly that (``library.predict``, ``library.captures``):

* objective: a power whose complexes are far from any land front (United Kingdom, United States)
  and whose alliance needs an enemy capital its allies cannot reach by land (the Allies need
  Japan, an island) works *amphibiously* toward that capital (``objective``);
* research (option ``research``): with 30 PUs or more, one die a turn for heavy bombers (if it
  has bombers) or jet fighters; every AA gun that can fires a rocket once developed;
* purchase: powers with a complex near the enemy buy infantry and armor; amphibious powers buy an
  industrial complex on a coast near the objective once, transports, the infantry and armor to
  fill them, and bombers with the rest; other far powers buy fighters and bombers;
* combat move: the amphibious assault on the objective (transports sail next to it, load, unload,
  with every plane in reach) when ``library.amphibious_assault`` predicts the capture; else it
  clears the enemy fleet from the sea zones next to it (``library.sea_strike``) and bombs the
  objective's complex to empty its owner's treasury (``library.bombing_raid``); then, for each
  enemy territory within reach (most valuable first), the units that can get there attack when
  the prediction leaves a land unit alive and the enemy nothing; empty enemy territories are
  taken with one unit;
* casualties: an attacker in a land battle keeps its strongest land unit to the last (one that
  can retreat, if any), otherwise the cheapest units go first (units landed from the sea before
  those that can retreat; AA losses from the mission with most planes); retreat: continue while
  the prediction still wins;
* non-combat move: transports load the idle infantry and armor next to them and sail toward the
  objective with the warships, empty ones go back for more; land units step toward the nearest
  enemy land; planes land, then fly toward the spots from which they can strike the objective;
* placement: transports next to the complex nearest the objective by sea, land units at that
  complex (amphibious powers) or at the complex nearest the enemy.
"""
from __future__ import annotations

from collections import deque

from arbiter.games.aachess import AAChessGame
from arbiter.games.aachess import library as lib

NAME = "aachess-heuristic"
TRANSPORTS = 4
"""Transports an amphibious power keeps (it buys at most two a turn)."""
CAPITAL_GUARD = 3
"""Land units an amphibious power keeps in its capital."""


def enemy_distance(state, start: int = 0) -> dict[int, int]:
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


def complexes(state, p: int | None = None) -> list[int]:
    """Where ``p`` may place units this turn (complexes it has held since the turn began)."""
    p = state.mover if p is None else p
    return sorted(u.at for u in state.units.values() if u.p == p and u.t == "ic" and state.start_owner[u.at] == p
                  and state.owner[u.at] == p)


def land_connected(state, s: int) -> set[int]:
    """Every land space connected to ``s`` over land."""
    b = state.board
    seen, queue = {s}, deque([s])
    while queue:
        x = queue.popleft()
        for y in b.adjacent[x]:
            if not b.sea[y] and y not in seen:
                seen.add(y)
                queue.append(y)
    return seen


def coast(state, s: int) -> list[int]:
    return [z for z in state.board.adjacent[s] if state.board.sea[z]]


def amphibious(state, p: int | None = None) -> bool:
    """``p`` fights from the sea: none of its complexes is within 3 land steps of enemy land."""
    p = state.mover if p is None else p
    dist = enemy_distance(state)
    return min((dist.get(s, 99) for s in complexes(state, p)), default=99) > 3


def objective(state, p: int | None = None) -> int | None:
    """The enemy capital an amphibious power works toward: one its alliance needs (the Allies need
    both Axis capitals; the Axis can also win on income, so they have none), nearest by sea from
    its complexes, capitals an ally can reach over land counting 3 more."""
    b = state.board
    p = state.mover if p is None else p
    if state.alliance(p) != "Allies":
        return None
    friendly = {s for s in range(len(b.names)) if state.friendly_land(p, s)}
    homes = [z for c in complexes(state, p) for z in coast(state, c)]
    best = None
    for pw in b.powers:
        cap = pw.capital
        if state.friends(p, state.owner[cap]) or state.alliance(b.powers.index(pw)) == state.alliance(p):
            continue
        zones = coast(state, cap)
        if not zones:
            continue
        sd = lib.sea_distances(state, zones, p)
        d = min((sd.get(z, 99) for z in homes), default=99)
        if land_connected(state, cap) & friendly:
            d += 3
        if best is None or d < best[0]:
            best = (d, cap)
    return best[1] if best else None


def home_zone(state, target: int) -> tuple[int | None, list[int]]:
    """The mover's complex nearest ``target`` by sea, and the zones next to it (for placement)."""
    sd = lib.sea_distances(state, coast(state, target))
    best = None
    for c in complexes(state):
        for z in coast(state, c):
            if not state.hostile(state.mover, z) and (best is None or (sd.get(z, 99), c) < best[0]):
                best = ((sd.get(z, 99), c), c)
    if best is None:
        return None, []
    c = best[1]
    zones = sorted(coast(state, c), key=lambda z: (sd.get(z, 99), z))
    return c, [z for z in zones if not state.hostile(state.mover, z)]


def forward_site(state, target: int) -> int | None:
    """Owned coastal land one sea move nearer ``target`` than any complex: where an amphibious power
    builds a complex (its ships and troops then start next to the objective)."""
    b, p = state.board, state.mover
    sd = lib.sea_distances(state, coast(state, target))
    home = min((sd.get(z, 99) for c in complexes(state) for z in coast(state, c)), default=99)
    if home <= 2:
        return None
    front = enemy_distance(state)
    sites = []
    for s in range(len(b.names)):
        if b.sea[s] or state.owner[s] != p or state.start_owner[s] != p or s == target:
            continue
        if any(u.t == "ic" and u.at == s for u in state.units.values()) or front.get(s, 99) <= 1:
            continue
        d = min((sd.get(z, 99) for z in coast(state, s)), default=99)
        if d <= 2:
            sites.append((d, -b.production[s], s))
    return min(sites)[2] if sites else None


def research(state) -> str:
    """Weapons development (option ``research``), a small fixed policy: with 30 PUs or more, one
    die a turn for heavy bombers if the power has bombers, else for jet fighters."""
    p = state.mover
    options = state.research_options()
    if state.pus[p] < 30 or not options:
        return "-"
    bombers = any(u.p == p and u.t == "bmb" for u in state.units.values())
    for dev in (("heavy", "jets") if bombers else ("jets", "heavy")):
        if dev in options:
            return f"1 {dev}"
    return "-"


def purchase(state) -> str:
    b, p = state.board, state.mover
    left = state.pus[p]
    dist = enemy_distance(state)
    near = min((dist.get(s, 99) for s in complexes(state)), default=99)
    bought: dict[str, int] = {}

    def buy(code: str, n: int = 1) -> None:
        nonlocal left
        n = min(n, left // b.units[code].cost)
        if n > 0:
            bought[code] = bought.get(code, 0) + n
            left -= n * b.units[code].cost

    target = objective(state) if near > 3 else None
    if near <= 3:
        while left >= 3:
            buy("arm" if left >= 5 and sum(bought.values()) % 3 == 2 else "inf")
    elif target is not None:
        if forward_site(state, target) is not None and left >= 15 + 8:
            buy("ic")
        home, zones = home_zone(state, target)
        trns = [u for u in state.units.values() if u.p == p and u.t == "trn"]
        if zones:
            buy("trn", min(2, TRANSPORTS - len(trns)))
        room = sum(2 - state._load(t) for t in trns) + 2 * bought.get("trn", 0)
        idle = sum(len(lib.loadable(state, s)) for z in zones for s in b.adjacent[z] if state.friendly_land(p, s))
        idle -= CAPITAL_GUARD if home == b.powers[p].capital else 0
        need = max(0, room - max(0, idle))
        while need > 0 and left >= 3:
            armor = need >= 2 and left >= 5 and bought.get("inf", 0) >= 4 * (bought.get("arm", 0) + 1)
            code = "arm" if armor else "inf"
            buy(code)
            need -= b.units[code].transport
        while left >= 12:
            buy("bmb" if left >= 15 else "ftr")
        while left >= 3:
            buy("inf")
    else:
        while left >= 12:
            buy("bmb" if left >= 15 and bought.get("ftr", 0) > bought.get("bmb", 0) else "ftr")
    return ", ".join(f"{n} {c}" for c, n in bought.items()) or "-"


def guards(state) -> dict[int, int]:
    """Land units that must not leave a territory: the capital's guard."""
    return {state.board.powers[state.mover].capital: CAPITAL_GUARD}


def combat_plan(state) -> str:
    b, p = state.board, state.mover
    work = state.clone()
    moves: list[str] = []
    used: set[int] = set()

    def commit(plan) -> bool:
        nonlocal work
        if plan is None:
            return False
        trial, more = plan
        before = {u.id: (u.at, u.used) for u in work.units.values() if u.p == p}
        work = trial
        moves.extend(more)
        used.update(i for i, was in before.items() if i in work.units and (work.units[i].at, work.units[i].used) != was)
        return True

    target = objective(state) if amphibious(state) else None
    if target is not None and work.enemies(p, work.owner[target]):
        if not commit(lib.amphibious_assault(work, target, keep=guards(work))):
            hostile = lib.enemy_spaces(work, p)
            for z in coast(work, target):
                if z in hostile:
                    commit(lib.sea_strike(work, z, exclude=frozenset(used)))
            commit(lib.bombing_raid(work, target, exclude=frozenset(used)))
        for s in sorted(b.adjacent[target]):
            if not b.sea[s] and work.enemies(p, work.owner[s]) and coast(work, s):
                commit(lib.amphibious_assault(work, s, exclude=frozenset(used), keep=guards(work), planes=False))
    targets = [s for s in range(len(b.names)) if not b.sea[s] and work.enemies(p, work.owner[s])]
    targets.sort(key=lambda s: (-b.production[s], len(work.defenders(s))))
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
        if not lib.captures(work, [x[0] for x in reach], defenders):
            continue
        for u, path in reach:
            text = lib.move_text(work, [u], path)
            if lib.try_move(work, text, True):
                moves.append(text)
                used.add(u.id)
    moves += lib.rocket_attacks(work)
    return "; ".join(moves) or "-"


def sail(work, units, goal: dict[int, int], moves: list[str]) -> None:
    """Move ``units`` (ships in one zone) as far toward the zones of ``goal`` (sea distances) as
    they can without meeting the enemy."""
    if not units:
        return
    x = units[0].at
    steps = min(work.remaining(u) for u in units)
    paths = lib.sea_paths(work, x, steps)
    best = min(paths, default=None, key=lambda z: (goal.get(z, 99), len(paths[z]), z))
    if best is not None and goal.get(best, 99) < goal.get(x, 99):
        text = lib.move_text(work, units, paths[best])
        if lib.try_move(work, text, False):
            moves.append(text)


def fleet_moves(work, target: int) -> list[str]:
    """Non-combat: load idle troops, sail loaded transports and warships toward ``target``, send
    empty transports back to where troops wait."""
    b, p = work.board, work.mover
    moves: list[str] = []
    keep = guards(work)
    to_target = lib.sea_distances(work, coast(work, target))
    home, home_zones = home_zone(work, target)
    pickup = set(home_zones)
    for s in range(len(b.names)):
        if not b.sea[s] and work.friendly_land(p, s) and len(lib.loadable(work, s, keep.get(s, 0))) >= 2:
            pickup.update(coast(work, s))
    to_pickup = lib.sea_distances(work, pickup)
    ships = [u for u in lib.movable(work, False) if work.kind(u) == "sea"]
    for x in sorted({u.at for u in ships if u.t == "trn"}):
        moves += lib.board_transports(work, x, keep)
        here = [u for u in ships if u.at == x and u.t == "trn"]
        sail(work, [u for u in here if work.cargo(u)], to_target, moves)
        empty = [u for u in here if not work.cargo(u) and u.at == x]
        if empty and x not in pickup:
            sail(work, empty, to_pickup, moves)
            moves += lib.board_transports(work, empty[0].at, keep)
    for x in sorted({u.at for u in ships if u.t != "trn"}):
        sail(work, [u for u in ships if u.at == x and u.t != "trn" and work.remaining(u) >= 1], to_target, moves)
    return moves


def noncombat_plan(state) -> str:
    b, p = state.board, state.mover
    work = state.clone()
    moves: list[str] = []
    target = objective(state) if amphibious(state) else None
    if target is not None and work.enemies(p, work.owner[target]):
        moves += fleet_moves(work, target)
    dist = enemy_distance(work)
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
    aim = target if target is not None else plane_objective(work)
    if aim is not None and work.enemies(p, work.owner[aim]):
        moves += stage_planes(work, aim)
    return "; ".join(moves) or "-"


def plane_objective(state) -> int | None:
    """Where a land power's planes gather (Allies only): the nearest enemy capital not yet held."""
    b, p = state.board, state.mover
    if state.alliance(p) != "Allies":
        return None
    caps = [pw.capital for i, pw in enumerate(b.powers) if state.alliance(i) != state.alliance(p)
            and not state.friends(p, state.owner[pw.capital])]
    if not caps:
        return None
    dist = lib.air_distances(state, b.powers[p].capital)
    return min(caps, key=lambda c: (dist.get(c, 99), c))


def stage_planes(work, target: int) -> list[str]:
    """Fly planes (already on a landing spot) toward friendly land from which they can strike
    ``target`` next turn."""
    b, p = work.board, work.mover
    moves: list[str] = []
    turns: dict[str, dict[int, int]] = {}
    dist = lib.air_distances(work, target)
    for u in sorted(lib.movable(work, False), key=lambda u: u.id):
        if work.kind(u) != "air" or b.sea[u.at] or work.remaining(u) <= 0:
            continue
        if u.t not in turns:
            turns[u.t] = lib.approach_turns(work, lib.strike_spots(work, target, u.t), u.t)
        tt = turns[u.t]
        here = (tt.get(u.at, 99), dist.get(u.at, 99))
        if here[0] == 0:
            continue
        paths = lib.paths_from(work, u, work.remaining(u))
        spots = sorted((tt.get(s, 99), dist.get(s, 99), s) for s in paths
                       if not b.sea[s] and work.landing_spot(p, s, u.t == "ftr"))
        for t, d, s in spots:
            if (t, d) >= here:
                break
            text = lib.move_text(work, [u], paths[s])
            if lib.try_move(work, text, False):
                moves.append(text)
                break
    return moves


def place(state) -> str:
    b, p = state.board, state.mover
    dist = enemy_distance(state)
    target = objective(state) if amphibious(state) else None
    home, zones = home_zone(state, target) if target is not None else (None, [])
    parts = []
    for code, n in state.bought.items():
        spots = state.placement_spots(code)
        if code == "ic":
            site = forward_site(state, target) if target is not None else None
            if site in spots:
                parts.append(f"{n} ic @ {b.names[site]}")
            continue
        if b.units[code].kind == "sea":
            sea = [z for z in zones if z in spots] or spots
            if sea:
                parts.append(f"{n} {code} @ {b.names[sea[0]]}")
            continue
        spots = [s for s in spots if not b.sea[s]]
        if home in spots:
            parts.append(f"{n} {code} @ {b.names[home]}")
        elif spots:
            best = min(spots, key=lambda s: (dist.get(s, 99), s))
            parts.append(f"{n} {code} @ {b.names[best]}")
    return "; ".join(parts) or "-"


def retreat(state) -> str:
    options = state.legal_moves()
    s = state.bt["at"]
    land = not state.board.sea[s]
    att, dfn = lib.predict(state, state.attackers(s), state.defenders(s), keep_land=1 if land else 0,
                           carry=tuple(state.bt["carry"]))
    wins = not dfn and att and (not land or any(state.kind(u) == "land" for u in att))
    if "continue" in options and wins:
        return "continue"
    return [o for o in options if o != "continue"][0] if any(o != "continue" for o in options) else "continue"


def make_decider(seed: int = 0):
    cache: dict[str, object] = {}

    def decide(request, new_game) -> str:
        if cache.get("id") != request.game_id:
            cache["id"] = request.game_id
            cache["game"] = AAChessGame(**dict(new_game.options or {}))
        state = cache["game"].from_text(request.position)
        kind = request.kind
        if kind == "research":
            return research(state)
        if kind == "purchase":
            return purchase(state)
        if kind == "combat_move":
            return combat_plan(state)
        if kind == "noncombat_move":
            return noncombat_plan(state)
        if kind == "casualties":
            return lib.choose_casualties(state)
        if kind == "battle":
            return state.legal_moves()[0]
        if kind == "retreat":
            return retreat(state)
        if kind == "place":
            return place(state)
        raise ValueError(f"unknown decision kind {kind!r}")
    return decide


def main(argv: list[str] | None = None) -> int:
    from protocol.kit import engine_arguments, run_engine

    args = engine_arguments(__doc__.splitlines()[0], NAME).parse_args(argv)
    return run_engine(make_decider(args.seed), name=args.name, author="arbiter project", version="1",
                      games=["aachess"], endpoint=args.endpoint)


if __name__ == "__main__":
    raise SystemExit(main())
