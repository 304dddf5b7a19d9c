"""Helpers for A&A Chess engines: build legal decisions with the rules module as a library.

Every builder tries candidate moves on a clone of the state and keeps those the rules accept,
so what it returns is legal by construction (the referee validates it again as a whole).

Planning helpers (used by ``sample_engines/aachess_heuristic.py``): sea routes and distances
(``sea_paths``, ``sea_distances``; enemy fleets and canals honoured), flying distances and the
friendly land from which planes can strike a space (``air_distances``, ``strike_spots``,
``approach_turns``), the battle arithmetic with a land unit kept to take the territory and the
carries of a battle under way (``predict``, ``captures``, ``choose_casualties``), and whole
combat-move operations played on a copy of the position: ``amphibious_assault`` (load, sail,
unload, with the planes in reach), ``sea_strike`` (clear an enemy fleet) and ``bombing_raid``.
Weapons development: ``random_research``, ``rocket_attacks``; ``predict`` uses the developed
values (``state.attack_value``, ``state.defence_value``), plane ranges ``state.move_allowance``.
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
        if u.p != p or u.t == "ic" or u.has("done") or (combat and u.has("stop")):
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
    elif rng.random() < 0.5:
        moves += rocket_attacks(work)
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


# --- planning helpers: routes, distances, predictions with a capture, amphibious assaults --------

def enemy_spaces(state: AAChessState, p: int | None = None) -> set[int]:
    """Spaces holding fighting units of ``p``'s enemies (one pass over the units)."""
    p = state.mover if p is None else p
    return {u.at for u in state.units.values() if state.enemies(p, u.p) and state._fights(u)}


def canal_open(state: AAChessState, p: int, a: int, z: int) -> bool:
    """Ships of ``p`` may pass between the sea zones ``a`` and ``z`` (no canal, or one ``p``'s side holds)."""
    canal = state.board.canal_between(a, z)
    return canal is None or all(state.friends(p, state.owner[x]) for x in canal.controlled_by)


def sea_paths(state: AAChessState, start: int, steps: int, p: int | None = None, into_hostile: bool = False,
              hostile: set[int] | None = None) -> dict[int, list[int]]:
    """Shortest sea routes (start first) from the zone ``start`` within ``steps`` moves for ships of
    ``p``: through open canals and zones free of enemy units; a zone with enemies may only end a
    route, and only with ``into_hostile`` (a sea battle)."""
    b = state.board
    p = state.mover if p is None else p
    hostile = enemy_spaces(state, p) if hostile is None else hostile
    paths = {start: [start]}
    queue = deque([start])
    while queue:
        x = queue.popleft()
        if len(paths[x]) - 1 >= steps or (x != start and x in hostile):
            continue
        for y in b.adjacent[x]:
            if y in paths or not b.sea[y] or not canal_open(state, p, x, y):
                continue
            if y in hostile and not into_hostile:
                continue
            paths[y] = paths[x] + [y]
            queue.append(y)
    del paths[start]
    return paths


def sea_distances(state: AAChessState, goals, p: int | None = None) -> dict[int, int]:
    """Sea moves from every zone to the nearest zone of ``goals`` (enemy units ignored, canals as now)."""
    b = state.board
    p = state.mover if p is None else p
    dist = {g: 0 for g in goals if b.sea[g]}
    queue = deque(dist)
    while queue:
        x = queue.popleft()
        for y in b.adjacent[x]:
            if b.sea[y] and y not in dist and canal_open(state, p, y, x):
                dist[y] = dist[x] + 1
                queue.append(y)
    return dist


def air_distances(state: AAChessState, target: int) -> dict[int, int]:
    """Flying distance from every space to ``target`` (planes never cross an unheld neutral)."""
    b = state.board
    dist = {target: 0}
    queue = deque([target])
    while queue:
        x = queue.popleft()
        for y in b.adjacent[x]:
            if y not in dist and not (b.neutral[y] and state.owner[y] is None):
                dist[y] = dist[x] + 1
                queue.append(y)
    return dist


def strike_spots(state: AAChessState, target: int, code: str, p: int | None = None) -> set[int]:
    """Friendly land from which a plane of type ``code`` can attack ``target`` and still reach
    friendly land (other than the target) on the same turn."""
    b = state.board
    p = state.mover if p is None else p
    move = state.move_allowance(code, p)
    dist = air_distances(state, target)
    land = [s for s in range(len(b.names)) if s != target and s in dist and state.friendly_land(p, s)]
    if not land:
        return set()
    back = min(dist[s] for s in land)
    return {s for s in land if dist[s] + back <= move}


def approach_turns(state: AAChessState, spots: set[int], code: str, p: int | None = None) -> dict[int, int]:
    """Turns a plane of type ``code`` needs to fly from each friendly land to one of ``spots``,
    hopping from friendly land to friendly land (0 on a spot)."""
    b = state.board
    p = state.mover if p is None else p
    move = state.move_allowance(code, p)
    friendly = {s for s in range(len(b.names)) if state.friendly_land(p, s)}
    turns = {s: 0 for s in spots}
    level = set(spots)
    n = 0
    while level:
        n += 1
        dist = {s: 0 for s in level}
        queue = deque(level)
        while queue:
            x = queue.popleft()
            if dist[x] >= move:
                continue
            for y in b.adjacent[x]:
                if y not in dist and not (b.neutral[y] and state.owner[y] is None):
                    dist[y] = dist[x] + 1
                    queue.append(y)
        level = {s for s in dist if s in friendly and s not in turns}
        for s in level:
            turns[s] = n
    return turns


def attack_order(state: AAChessState, units: list[Unit], keep_land: int = 0) -> list[Unit]:
    """The order an attacker loses its units: cheapest first, except that the ``keep_land``
    strongest land units go last (a land unit must survive to take a territory). Among equals,
    units landed from the sea go first: they cannot retreat, the others keep a retreat open."""
    b = state.board
    order = sorted(units, key=lambda u: (b.units[u.t].cost, not u.has("amph"), u.id))
    if keep_land:
        land = [u for u in order if state.kind(u) == "land"]
        keep = sorted(land, key=lambda u: (-b.units[u.t].attack, b.units[u.t].cost, u.has("amph"), u.id))[:keep_land]
        order = [u for u in order if u not in keep] + keep[::-1]
    return order


def rocket_attacks(state: AAChessState) -> list[str]:
    """Rocket attacks (development ``rockets``) played on ``state``: every AA gun that may still
    fire targets the enemy complex in range whose owner has the most PUs."""
    p, b = state.mover, state.board
    if not state.has_tech(p, "rockets"):
        return []
    moves = []
    complexes = sorted({u.at for u in state.units.values() if u.t == "ic" and state.enemies(p, state.owner[u.at])})
    for a in sorted({u.at for u in state.units.values() if u.t == "aa" and u.p == p}):
        for _ in state.rocket_guns(a):
            targets = [t for t in complexes if state.rocket_distance(a, t) is not None]
            if not targets:
                break
            t = max(targets, key=lambda t: (state.pus[state.owner[t]], -t))
            text = f"rocket {b.names[a]} @ {b.names[t]}"
            if not try_move(state, text, True):
                break
            moves.append(text)
    return moves


def random_research(state: AAChessState, rng: random.Random) -> str:
    """Weapons development for a random engine: now and then one die for a random development."""
    options = state.research_options()
    if not options or state.pus[state.mover] < 5 or rng.random() < 0.7:
        return "-"
    return f"1 {rng.choice(options)}"


def predict(state: AAChessState, attackers: list[Unit], defenders: list[Unit], max_rounds: int = 30,
            keep_land: int = 0, carry: tuple[int, int] = (0, 0)) -> tuple[list[Unit], list[Unit]]:
    """The battle as the A&A Chess arithmetic plays it: the survivors of each side. The attacker
    loses units in ``attack_order`` (``keep_land`` land units last), the defender its weakest
    defenders first (the worst case for the attacker); a rolled fraction counts as a hit when it
    is 4 or more. ``carry``: the (attacker, defender) carries of a battle under way (cof, cofr)."""
    from . import combat

    b = state.board
    variant = state.variant
    att = attack_order(state, attackers, keep_land)
    dfn = sorted(defenders, key=lambda u: (state.defence_value(u), b.units[u.t].cost, u.id))
    carry = list(carry) if variant in combat.CARRY_VARIANTS else [0, 0]
    for _ in range(max_rounds):
        if not att or not dfn:
            break
        fa = combat.fire(sum(state.attack_value(u) for u in att), combat.ATTACKER, variant, carry[0])
        fd = combat.fire(sum(state.defence_value(u) for u in dfn), combat.DEFENDER, variant, carry[1])
        ha = fa.hits + (1 if fa.roll >= 4 else 0)
        hd = fd.hits + (1 if fd.roll >= 4 else 0)
        carry = [fa.carry_out, fd.carry_out]
        if ha == 0 and hd == 0 and variant not in combat.CARRY_VARIANTS:
            break
        dfn, att = dfn[ha:], att[hd:]
    return att, dfn


def captures(state: AAChessState, attackers: list[Unit], defenders: list[Unit]) -> bool:
    """``predict`` says the attack destroys every defender and a land unit survives to take the space."""
    att, dfn = predict(state, attackers, defenders, keep_land=1)
    return not dfn and any(state.kind(u) == "land" for u in att)


def aa_losses(state: AAChessState, planes: int) -> int:
    """Planes lost to AA fire if ``planes`` more plane-passes are added to this combat move's."""
    before = sum(state.passes.values())
    return (before + planes) // 5 - before // 5


def choose_casualties(state: AAChessState) -> str:
    """Casualties for the side that must choose: an attacker in a land battle keeps its strongest
    land unit to the last (to take the territory), one that can retreat if it can; AA losses and
    everything else: cheapest first, AA losses among equals from the mission with most planes."""
    cas, b = state.cas, state.board
    cands = state.casualty_candidates()
    if cas["side"] == "attacker" and cas["step"] != "aa" and state.bt is not None and not b.sea[state.bt["at"]]:
        order = attack_order(state, cands, keep_land=1)
    else:
        mission = {u.id: sum(1 for v in cands if (v.at, v.has("raid")) == (u.at, u.has("raid"))) for u in cands}
        order = sorted(cands, key=lambda u: (b.units[u.t].cost + 10 * len(state.cargo(u)),
                                             -mission[u.id] if cas["step"] == "aa" else 0, u.id))
    return ", ".join(f"#{u.id}" for u in order[:cas["count"]])


def loadable(state: AAChessState, land: int, keep: int = 0, exclude=frozenset()) -> list[Unit]:
    """The mover's infantry and armor in ``land`` that may still board a transport (not moved this
    turn), infantry first, leaving ``keep`` of them behind."""
    p = state.mover
    units = sorted((u for u in state.units.values() if u.at == land and u.p == p and u.t in ("inf", "arm")
                    and u.used == 0 and u.on < 0 and not u.has("cm") and u.id not in exclude),
                   key=lambda u: (u.t != "inf", u.id))
    return units[:max(0, len(units) - keep)]


def board_transports(state: AAChessState, zone: int, keep: dict[int, int] | None = None,
                     exclude=frozenset()) -> list[str]:
    """Load the mover's land units from the territories next to ``zone`` onto its transports
    there (played on ``state``); ``keep`` maps a territory to the units that must stay in it."""
    b, p = state.board, state.mover
    moves: list[str] = []
    keep = keep or {}

    def room() -> int:
        return sum(2 - state._load(t) for t in state.units.values()
                   if t.at == zone and t.p == p and t.t == "trn" and not t.has("unl"))

    for land in sorted(b.adjacent[zone]):
        if b.sea[land] or not state.friendly_land(p, land):
            continue
        for u in loadable(state, land, keep.get(land, 0), exclude):
            need = b.units[u.t].transport
            if room() < need:
                break
            text = move_text(state, [u], [land, zone])
            if try_move(state, text, state.phase == "combat_move"):
                moves.append(text)
    return moves


def amphibious_assault(state: AAChessState, target: int, exclude=frozenset(), keep: dict[int, int] | None = None,
                       planes: bool = True) -> tuple[AAChessState, list[str]] | None:
    """Plan a combat-move assault on the coastal ``target``: transports that can reach a sea zone
    next to it free of enemy units (loading land units next to them first, and next to that zone
    on arrival), land units that can walk in, and planes in reach. The moves are played on a copy
    of ``state``; returns (that copy, the moves) when ``captures`` predicts the territory is taken,
    else None. ``exclude``: unit ids not to use; ``keep``: units that must stay in a territory."""
    b, p = state.board, state.mover
    hostile = enemy_spaces(state, p)
    zones = [z for z in b.adjacent[target] if b.sea[z] and z not in hostile]
    trial = state.clone()
    moves: list[str] = []
    # 1. transports: load where they are, sail to a zone next to the target, load there, unload.
    by_zone: dict[int, list[Unit]] = {}
    for t in trial.units.values():
        if t.p == p and t.t == "trn" and not t.has("unl") and not t.has("stop") and t.id not in exclude:
            by_zone.setdefault(t.at, []).append(t)
    arrivals: set[int] = set()
    for x in sorted(by_zone):
        if not zones:
            break
        paths = sea_paths(trial, x, 2, p, hostile=hostile)
        paths[x] = [x]
        goal = [z for z in zones if z in paths]
        if not goal:
            continue
        z = min(goal, key=lambda z: (len(paths[z]), z))
        moves += board_transports(trial, x, keep, exclude)
        for t in sorted(by_zone[x], key=lambda t: t.id):
            if z != x and trial.cargo(t) and trial.remaining(t) >= len(paths[z]) - 1:
                text = move_text(trial, [t], paths[z])
                if try_move(trial, text, True):
                    moves.append(text)
        arrivals.add(z)
    for z in sorted(arrivals):
        moves += board_transports(trial, z, keep, exclude)
        cargo = [c for c in trial.units.values() if c.at == z and c.p == p and c.on >= 0 and trial.kind(c) == "land"]
        if cargo:
            text = move_text(trial, sorted(cargo, key=lambda u: u.id), [z, target])
            if try_move(trial, text, True):
                moves.append(text)
    # 2. land units that can walk in, 3. planes in reach.
    left = {}
    for u in sorted(movable(trial, True), key=lambda u: u.id):
        kind = trial.kind(u)
        if u.id in exclude or u.t == "aa" or kind == "sea" or (kind == "air" and not planes) or u.on >= 0:
            continue
        if kind == "land" and keep and u.at in keep:
            if u.at not in left:
                left[u.at] = sum(1 for x in trial.at(u.at) if x.p == p and trial.kind(x) == "land") - keep[u.at]
            if left[u.at] <= 0:
                continue
        paths = paths_from(trial, u, trial.remaining(u))
        if target in paths:
            start = u.at
            text = move_text(trial, [u], paths[target])
            if try_move(trial, text, True):
                moves.append(text)
                if start in left:
                    left[start] -= 1
    att, dfn = trial.attackers(target), trial.defenders(target)
    if not any(trial.kind(u) == "land" for u in att):
        return None
    air = sorted((u for u in att if trial.kind(u) == "air"), key=lambda u: (b.units[u.t].cost, u.id))
    lost = aa_losses(state, sum(trial.passes.values()) - sum(state.passes.values())) if air else 0
    att = [u for u in att if u not in air[:lost]]
    if not captures(trial, att, dfn):
        return None
    return trial, moves


def sea_strike(state: AAChessState, zone: int, exclude=frozenset()) -> tuple[AAChessState, list[str]] | None:
    """Plan a combat-move attack on the enemy units in the sea ``zone`` with the mover's warships
    (not transports) and planes in reach, on a copy of ``state``; returns (copy, moves) when
    ``predict`` says every defender is destroyed, else None."""
    b, p = state.board, state.mover
    hostile = enemy_spaces(state, p)
    trial = state.clone()
    moves: list[str] = []
    by_zone: dict[int, list[Unit]] = {}
    for u in trial.units.values():
        if u.p == p and trial.kind(u) == "sea" and u.t != "trn" and u.id not in exclude and not u.has("stop") \
                and not u.has("done") and trial.remaining(u) > 0:
            by_zone.setdefault(u.at, []).append(u)
    for x in sorted(by_zone):
        paths = sea_paths(trial, x, 2, p, into_hostile=True, hostile=hostile)
        if zone not in paths:
            continue
        ships = [u for u in by_zone[x] if trial.remaining(u) >= len(paths[zone]) - 1]
        if ships:
            text = move_text(trial, ships, paths[zone])
            if try_move(trial, text, True):
                moves.append(text)
    att = trial.attackers(zone)
    if att and _sea_win(trial, state, zone):
        return trial, moves
    for u in sorted(movable(trial, True), key=lambda u: (b.units[u.t].move, u.id)):
        if u.id in exclude or trial.kind(u) != "air":
            continue
        paths = paths_from(trial, u, trial.remaining(u))
        if zone in paths:
            text = move_text(trial, [u], paths[zone])
            if try_move(trial, text, True):
                moves.append(text)
                if _sea_win(trial, state, zone):
                    return trial, moves
    return None


def _sea_win(trial: AAChessState, before: AAChessState, zone: int) -> bool:
    b = trial.board
    att, dfn = trial.attackers(zone), trial.defenders(zone)
    air = sorted((u for u in att if trial.kind(u) == "air"), key=lambda u: (b.units[u.t].cost, u.id))
    lost = aa_losses(before, sum(trial.passes.values()) - sum(before.passes.values())) if air else 0
    survivors, left = predict(trial, [u for u in att if u not in air[:lost]], dfn)
    return bool(survivors) and not left


def bombing_raid(state: AAChessState, target: int, exclude=frozenset()) -> tuple[AAChessState, list[str]] | None:
    """Plan a strategic raid on the enemy complex in ``target`` with just enough of the mover's
    bombers in reach to empty its owner's treasury (2.5 PUs a bomber), on a copy of ``state``;
    returns (copy, moves), or None when no bomber can fly it or the treasury is empty."""
    owner = state.owner[target]
    if owner is None or not state.enemies(state.mover, owner) \
            or not any(u.at == target and u.t == "ic" for u in state.units.values()):
        return None
    need = (2 * state.pus[owner] + 4) // 5
    trial = state.clone()
    moves: list[str] = []
    for u in sorted(movable(trial, True), key=lambda u: u.id):
        if len(moves) >= need:
            break
        if u.t != "bmb" or u.id in exclude:
            continue
        paths = paths_from(trial, u, trial.remaining(u))
        if target in paths:
            text = move_text(trial, [u], paths[target], raid=True)
            if try_move(trial, text, True):
                moves.append(text)
    return (trial, moves) if moves else None
