"""A planning engine for Stalingrad factory street fight (the ``stalingrad`` game).

Usage: python -m sample_engines.stalingrad_planner [--plans N] [--samples N] [--seed N]

Design
    * Information: only what the German player sees (the request's ``position``, face-down
      counters shown as ``?``). Hidden counters are dealt at random from the unseen mix (the
      edition's counters less every revealed or removed one) for each sample: Monte Carlo over
      the referee's dice model, never over the truth.
    * Movement: build candidate plans (stay, random legal plans, and attack plans that send the
      strongest reachable groups, armor carrying infantry, and a leader for the tie-break, to
      Soviet areas while the rest close in or block likely infiltration areas), then score each
      by simulating the rest of the turn -- Deadly Surprise, the combats with this engine's own
      air-strike and depletion choices, the dice -- ``samples`` times with common random numbers
      and averaging a position evaluation (Soviets left, German strength, leaders, infiltration
      risk, distance to the remaining Soviets, time left). The best mean wins.
    * Air strike: used when the Germans would not otherwise have the dice advantage, or when
      the strikes left cover the Soviets left.  Depletion: a full infantry first, then a full
      armor, then depleted counters (keeps counters on the map against being outnumbered).
    * Deterministic: its random generator is seeded from the game's dice commitment and
      ``--seed``, and the budget is counted in simulations, not time, so a seeded suite replays.

``Planner`` works in-process too (``decide(request)`` takes a protocol ``Request``).
"""
from __future__ import annotations

import argparse
import hashlib
import random
from typing import Any

from arbiter.games import load_game
from arbiter.games.stalingrad.edition import AREA_NUMBERS
from arbiter.games.stalingrad.library import (deployment_text, determinize, plan_text,
                                              random_moves)
from arbiter.games.stalingrad.rules import (AIR, AMBUSH, DEPLETE, LOST, ROLL, WON, StalingradGame,
                                            StalingradState)

NAME = "stalingrad-planner"
AREA_PROBABILITY = {a: (6 - abs(7 - a)) / 36 for a in AREA_NUMBERS}
"""P(2d6 = a): how likely an infiltration roll names each area."""


class Planner:
    """Decisions for one game from the German player's view."""

    def __init__(self, game: StalingradGame, rng: random.Random, plans: int = 28, samples: int = 8):
        self.game, self.rng = game, rng
        self.plans, self.samples = plans, samples
        ed = game.edition
        self.dist = {a: _distances(ed.adjacent, a) for a in AREA_NUMBERS}

    # --- entry point -------------------------------------------------------------------------

    def decide(self, kind: str, position: str) -> str:
        state = determinize(self.game, position, self.rng)
        if kind == "deploy":
            return self.deploy(state)
        if kind == "movement_plan":
            return self.move(state)
        if kind == "air_strike":
            return "yes" if self.air_strike(state) else "no"
        if kind == "deplete":
            return state.ed.german_ids[self.deplete(state)]
        raise ValueError(f"unknown decision kind {kind!r}")

    # --- simple decisions ----------------------------------------------------------------------

    def deploy(self, state: StalingradState) -> str:
        """Armor, an infantry and a leader in the two entry areas next to the shields (or the
        entry areas nearest to them); the other infantry in pairs."""
        ed = state.ed
        kinds = ed.german_kind
        entry = sorted(ed.entry, key=lambda a: (min(self.dist[a][s] for s in ed.shields), a))
        units = sorted((i for i, k in enumerate(kinds) if k != "leader"),
                       key=lambda i: (kinds[i] != "armor", i))
        leaders = [i for i, k in enumerate(kinds) if k == "leader"]
        placement: dict[int, int] = {}
        slots = [a for a in entry for _ in range(2)]
        armor = [i for i in units if kinds[i] == "armor"]
        infantry = [i for i in units if kinds[i] != "armor"]
        order = []
        for k in range(len(entry)):  # one armor and one infantry per front area while they last
            if armor:
                order.append(armor.pop(0))
            if infantry:
                order.append(infantry.pop(0))
        order += armor + infantry
        placement.update(zip(order, slots))
        held = [a for a in entry if a in placement.values()]
        placement.update(zip(leaders, held))
        return deployment_text(state, placement)

    def air_strike(self, state: StalingradState) -> bool:
        if state.ast <= 0:
            return False
        g, s = state.combat_dice()
        return g <= s or state.ast >= state.soviet_count() + len(state.pool)

    def deplete(self, state: StalingradState) -> int:
        kinds = state.ed.german_kind
        cands = state.deplete_candidates()
        return min(cands, key=lambda i: (state.g_flip[i], kinds[i] == "armor", i))

    # --- movement ------------------------------------------------------------------------------

    def move(self, state: StalingradState) -> str:
        rng = self.rng
        candidates: dict[str, list] = {}
        for moves in self._candidates(state):
            text = plan_text(state, moves)
            if text not in candidates:
                candidates[text] = moves
        if len(candidates) == 1:
            return next(iter(candidates))
        seeds = [rng.getrandbits(32) for _ in range(self.samples)]
        best, best_value = None, None
        for text, moves in candidates.items():
            value = 0.0
            for seed in seeds:
                value += self._simulate(state, moves, random.Random(seed))
            if best_value is None or value > best_value:
                best, best_value = text, value
        return best

    def _candidates(self, state: StalingradState):
        rng = self.rng
        _, problems = state.plan_problems("-")
        if not problems:
            yield []
        for k in range(self.plans):
            if k % 3 == 0:
                yield random_moves(state, rng, stay=rng.choice((0.3, 0.6, 0.85)))
            else:
                moves = self._attack_plan(state)
                if moves is not None:
                    yield moves

    def _attack_plan(self, state: StalingradState):
        """Send strong groups at some Soviet areas; everyone else closes in or holds."""
        rng = self.rng
        ed = state.ed
        kinds = ed.german_kind
        on = [i for i, a in enumerate(state.g_area) if a]
        units = [i for i in on if kinds[i] != "leader"]
        leaders = [i for i in on if kinds[i] == "leader"]
        reach = {i: state.reachable(i) for i in on}
        start = {i: state.g_area[i] for i in on}
        final = dict(start)
        moved: dict[int, tuple[tuple[int, ...], int]] = {}
        decided: set[int] = set()
        occupancy = {a: 0 for a in AREA_NUMBERS}
        for i in units:
            occupancy[start[i]] += 1
        targets = [a for a in AREA_NUMBERS if state.s_type[a] >= 0]
        rng.shuffle(targets)
        crosses = {i: ed.german[kinds[i]].crosses[state.g_flip[i]] for i in on}

        def go(i: int, dest: int, rider: int = -1) -> None:
            need = 2 if rider >= 0 else 1
            occupancy[start[i]] -= need
            occupancy[dest] += need
            final[i] = dest
            decided.add(i)
            if dest != start[i]:
                moved[i] = (reach[i][dest], rider)
            if rider >= 0:
                final[rider] = dest
                decided.add(rider)

        attacked = set()
        for t in targets:
            if rng.random() < 0.25:
                continue
            here = [i for i in units if start[i] == t and i not in decided]
            options = []  # (crosses, [(unit, rider)])
            movers = [i for i in units if i not in decided and t in reach[i]]
            staying = here[:]
            room = 2 - sum(1 for i in units if final[i] == t and i in decided)
            # singles and pairs among movers and those already there
            pool = [(i, -1) for i in movers] + [(i, -1) for i in staying]
            for i in movers:
                if kinds[i] == "armor":
                    for j in units:
                        if j != i and j not in decided and kinds[j] == "infantry" and start[j] == start[i]:
                            pool.append((i, j))
            for x in range(len(pool)):
                a = pool[x]
                size_a = 2 if a[1] >= 0 else 1
                ca = crosses[a[0]] + (crosses[a[1]] if a[1] >= 0 else 0)
                if size_a <= room:
                    options.append((ca, [a]))
                for y in range(x + 1, len(pool)):
                    b = pool[y]
                    ids = {a[0], a[1], b[0], b[1]} - {-1}
                    size = size_a + (2 if b[1] >= 0 else 1)
                    if size <= room and len(ids) == size:
                        options.append((ca + crosses[b[0]] + (crosses[b[1]] if b[1] >= 0 else 0), [a, b]))
            if not options:
                continue
            options.sort(key=lambda o: -o[0] - rng.random() * 1.5)
            _, group = options[0]
            for i, rider in group:
                if i in decided or (rider >= 0 and rider in decided):
                    continue
                go(i, t, rider)
            attacked.add(t)
        # the rest: close in on the Soviets (never entering a Soviet area), fill empty areas, or hold
        soviet_areas = [a for a in AREA_NUMBERS if state.s_type[a] >= 0]
        rest = [i for i in units if i not in decided]
        rng.shuffle(rest)
        for i in rest:
            if rng.random() < 0.2 or not reach[i]:
                decided.add(i)
                continue

            def score(a: int) -> float:
                d = min((self.dist[a][s] for s in soviet_areas), default=0)
                return d - 2.5 * AREA_PROBABILITY[a] * (occupancy[a] == 0) + rng.random() * 0.8
            options = [a for a in reach[i] if state.s_type[a] < 0 and occupancy[a] < 2]
            options.append(start[i])
            dest = min(options, key=score)
            if dest == start[i]:
                decided.add(i)
            else:
                go(i, dest)
        # leaders: join the strongest attack they can reach, else any stack with a unit
        unit_area: dict[int, int] = {}
        for i in units:
            unit_area[final[i]] = unit_area.get(final[i], 0) + crosses[i]
        taken = set()
        for i in sorted(leaders, key=lambda _: rng.random()):
            must = i in state.must_leave()
            opts = [a for a in list(reach[i]) + ([] if must else [start[i]])
                    if a in unit_area and a not in taken]
            if not opts:
                return None
            dest = max(opts, key=lambda a: (a in attacked) * 3 + rng.random() * 2
                       - (state.s_type[a] >= 0 and not state.s_up[a]) * rng.random() * 3)
            taken.add(dest)
            if dest != start[i]:
                moved[i] = (reach[i][dest], -1)
        moves = [(i, path, rider) for i, (path, rider) in moved.items()]
        _, problems = state.plan_problems(plan_text(state, moves))
        return None if problems else moves

    def _simulate(self, state: StalingradState, moves, rng: random.Random) -> float:
        """Play the rest of this turn on a copy with the hidden counters dealt anew; evaluate."""
        s = state.clone()
        _redeal(s, rng)
        turn = s.turn
        s.apply_plan(moves)
        while s.turn == turn and s.step not in (WON, LOST):
            step = s.step
            if step == ROLL:
                s.roll(rng.randint(1, 6))
            elif step == AIR:
                s.apply_air_strike(self.air_strike(s))
            elif step in (AMBUSH, DEPLETE):
                s.apply_deplete(self.deplete(s))
            else:
                break
        return self.evaluate(s)

    def evaluate(self, s: StalingradState) -> float:
        if s.step == WON:
            return 1000.0 + (s.game.max_turns - s.turn)
        if s.step == LOST:
            return -1000.0
        ed = s.ed
        kinds = ed.german_kind
        soviet_areas = [a for a in AREA_NUMBERS if s.s_type[a] >= 0]
        n_soviet = len(soviet_areas)
        steps = counters = leaders = 0.0
        unit_areas = []
        for i, a in enumerate(s.g_area):
            if not a:
                continue
            counters += 1
            if kinds[i] == "leader":
                leaders += 1.2 if s.g_flip[i] else 1.0
            else:
                steps += 1 if s.g_flip[i] else 2
                unit_areas.append(a)
        occupied = set(s.g_area) | set(soviet_areas)
        empty_mass = sum(p for a, p in AREA_PROBABILITY.items() if a not in occupied)
        turns_left = s.game.max_turns - s.turn + 1
        distance = sum(min((self.dist[u][a] for u in unit_areas), default=6) for a in soviet_areas)
        value = -60.0 * n_soviet + 6.0 * steps + 12.0 * leaders + 4.0 * counters
        value -= 45.0 * empty_mass * min(len(s.pool), 2)
        value -= 6.0 * distance
        margin = counters - n_soviet
        if margin <= 2:
            value -= (3 - margin) * 40.0
        if n_soviet * 2 > turns_left:
            value -= 25.0 * (n_soviet * 2 - turns_left)
        return value


def _distances(adjacent: dict[int, tuple[int, ...]], start: int) -> dict[int, int]:
    dist = {start: 0}
    frontier = [start]
    while frontier:
        nxt = []
        for a in frontier:
            for b in adjacent[a]:
                if b not in dist:
                    dist[b] = dist[a] + 1
                    nxt.append(b)
        frontier = nxt
    return dist


def _redeal(s: StalingradState, rng: random.Random) -> None:
    """Deal the face-down counters (map and pool) anew from the same unseen multiset."""
    hidden = [a for a in AREA_NUMBERS if s.s_type[a] >= 0 and not s.s_up[a]]
    types = [s.s_type[a] for a in hidden] + s.pool
    rng.shuffle(types)
    for a, t in zip(hidden, types):
        s.s_type[a] = t
    s.pool = sorted(types[len(hidden):])


def game_rng(new_game: Any, seed: int) -> random.Random:
    """A generator per game from the public dice commitment: the same game replays the same."""
    digest = hashlib.sha256(f"{seed}|{getattr(new_game, 'dice_commitment', '')}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def make_decider(seed: int = 0, plans: int = 28, samples: int = 8):
    """``decide(request, new_game) -> move`` for ``protocol.kit.run_engine`` or in-process use."""
    cache: dict[str, Planner] = {}

    def decide(request, new_game) -> str:
        planner = cache.get(request.game_id)
        if planner is None:
            cache.clear()
            game = load_game("stalingrad", **dict(new_game.options or {}))
            planner = cache[request.game_id] = Planner(game, game_rng(new_game, seed), plans, samples)
        return planner.decide(request.kind, request.position)
    return decide


def main(argv: list[str] | None = None) -> int:
    from protocol.kit import run_engine

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plans", type=int, default=28, help="candidate movement plans per turn")
    parser.add_argument("--samples", type=int, default=8, help="simulations per candidate plan")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default=NAME)
    parser.add_argument("--endpoint", default=None)
    args = parser.parse_args(argv)
    return run_engine(make_decider(args.seed, args.plans, args.samples), name=args.name,
                      author="arbiter project", version="1", games=["stalingrad"], endpoint=args.endpoint)


if __name__ == "__main__":
    raise SystemExit(main())
