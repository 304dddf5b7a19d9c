"""Helpers for engines: write plans, build legal plans, and fill in what the German cannot see.

``legal_moves`` cannot list movement plans (there are far too many), so an engine builds its
own; these functions do it with the rules module's own checks, which keeps sample engines short
and always legal. ``determinize`` turns an observation (face-down counters shown as ``?``) into a
full position by dealing the unseen counters at random: the basis of Monte Carlo over the dice
model using only what the German player can see.
"""
from __future__ import annotations

import random
import re
from collections import Counter

from .rules import StalingradGame, StalingradState

Move = tuple[int, tuple[int, ...], int]
"""(German counter index, areas entered in order, carried infantry index or -1)."""


def plan_text(state: StalingradState, moves: list[Move]) -> str:
    """The canonical text of a movement plan: ``A1:3-4-7+I2;L1:3-8`` (start area first), or
    ``-`` when nothing moves."""
    ids = state.ed.german_ids
    parts = []
    for i, path, carried in sorted(moves):
        if not path:
            continue
        areas = "-".join(str(a) for a in (state.g_area[i],) + tuple(path))
        parts.append(f"{ids[i]}:{areas}" + (f"+{ids[carried]}" if carried >= 0 else ""))
    return ";".join(parts) or "-"


def deployment_text(state: StalingradState, placements: dict[int, int]) -> str:
    """The text of a set-up: ``I1:2;I2:2;...`` in counter order."""
    ids = state.ed.german_ids
    return ";".join(f"{ids[i]}:{a}" for i, a in sorted(placements.items()))


def random_deployment(state: StalingradState, rng: random.Random) -> dict[int, int]:
    """A random legal set-up: units spread over the entry areas (at most 2 each), each leader in
    a different area that holds a unit."""
    ed = state.ed
    units = [i for i, k in enumerate(ed.german_kind) if k != "leader"]
    leaders = [i for i, k in enumerate(ed.german_kind) if k == "leader"]
    for _ in range(100):
        slots = [a for a in ed.entry for _ in range(2)]
        rng.shuffle(slots)
        placement = dict(zip(units, slots))
        held = sorted(set(placement.values()))
        if len(held) < len(leaders):
            continue
        placement.update(zip(leaders, rng.sample(held, len(leaders))))
        return placement
    return example_placement(state)


def example_placement(state: StalingradState) -> dict[int, int]:
    ed = state.ed
    units = [i for i, k in enumerate(ed.german_kind) if k != "leader"]
    leaders = [i for i, k in enumerate(ed.german_kind) if k == "leader"]
    placement = {u: ed.entry[k // 2] for k, u in enumerate(units)}
    held = sorted(set(placement.values()))
    placement.update(zip(leaders, held))
    return placement


def example_deployment(state: StalingradState) -> str:
    return deployment_text(state, example_placement(state))


def random_moves(state: StalingradState, rng: random.Random, stay: float = 0.3,
                 carry: float = 0.5) -> list[Move]:
    """A random legal movement plan (as moves). Units decide one by one in random order, each
    staying with probability ``stay`` or moving to a random reachable area with room; an armor
    carries an infantry of its area with probability ``carry``. Leaders then pick an area with a
    unit and no other leader. Undecided counters are counted where they stand, so capacity is
    never exceeded; a rare dead end for leaders is retried, then solved exactly."""
    ed = state.ed
    kinds = ed.german_kind
    on = [i for i, a in enumerate(state.g_area) if a]
    units = [i for i in on if kinds[i] != "leader"]
    leaders = [i for i in on if kinds[i] == "leader"]
    must = set(state.must_leave())
    reach = {i: state.reachable(i) for i in on}
    relaxed = None
    keep_out = False
    for attempt in range(40):
        occupancy = Counter(state.g_area[i] for i in units)
        final = {i: state.g_area[i] for i in on}
        moves: list[Move] = []
        decided: set[int] = set()
        order = units[:]
        rng.shuffle(order)
        for i in order:
            if i in decided:
                continue
            decided.add(i)
            start = state.g_area[i]
            if rng.random() < stay or not reach[i]:
                continue
            rider = -1
            if kinds[i] == "armor" and rng.random() < carry:
                riders = [j for j in units if j not in decided and kinds[j] == "infantry"
                          and state.g_area[j] == start]
                if riders:
                    rider = rng.choice(riders)
            need = 2 if rider >= 0 else 1
            dests = [d for d in reach[i] if occupancy[d] + need <= 2]
            if not dests:
                continue
            dest = rng.choice(dests)
            occupancy[start] -= need
            occupancy[dest] += need
            final[i] = dest
            if rider >= 0:
                decided.add(rider)
                final[rider] = dest
            moves.append((i, reach[i][dest], rider))
        unit_areas = {final[i] for i in units}
        taken = {state.g_area[i] for i in leaders}
        ok = True
        for i in rng.sample(leaders, len(leaders)):
            start = state.g_area[i]
            taken.discard(start)
            options = [d for d in reach[i] if d not in taken]
            if i not in must:
                options.append(start)
            if relaxed is None and attempt >= 20:
                relaxed = not state.leaders_can_all_be_stacked()
                keep_out = relaxed and state.lone_leaders_can_avoid_soviets()
            if not relaxed:
                options = [d for d in options if d in unit_areas]
            elif keep_out:  # waived stacking: a lone leader still stays out of Soviet areas
                options = [d for d in options if d in unit_areas or state.s_type[d] < 0]
            if not options:
                ok = False
                break
            if i not in must and start in options and rng.random() < stay:
                dest = start
            else:
                dest = rng.choice(options)
            taken.add(dest)
            if dest != start:
                moves.append((i, reach[i][dest], -1))
        if ok:
            return moves
    return solved_moves(state)


def solved_moves(state: StalingradState) -> list[Move]:
    """A legal plan from the exact leader-stacking solution (everyone else stays)."""
    solution = state.leader_stacking_solution()
    if solution is None:  # stacking waived: lone leaders out of Soviet areas if possible
        solution = state.leader_stacking_solution(lenient=True)
    if solution is None:  # exempt: leaders go anywhere free, away when they must
        must = set(state.must_leave())
        moves, taken = [], {a for i, a in enumerate(state.g_area) if a and state.is_leader(i)}
        for i in must:
            for dest, path in state.reachable(i).items():
                if dest not in taken:
                    moves.append((i, path, -1))
                    taken.discard(state.g_area[i])
                    taken.add(dest)
                    break
        return moves
    leader_area, unit_area = solution
    moves = []
    for i, dest in list(leader_area.items()) + list(unit_area.items()):
        if dest != state.g_area[i]:
            moves.append((i, state.reachable(i)[dest], -1))
    return moves


def random_plan(state: StalingradState, rng: random.Random, **kw) -> str:
    return plan_text(state, random_moves(state, rng, **kw))


def example_plan(state: StalingradState) -> str:
    """One legal plan: stay put if that is legal, else a deterministic random one."""
    _, problems = state.plan_problems("-")
    if not problems:
        return "-"
    return random_plan(state, random.Random(0))


def unseen_codes(state_or_text: StalingradState | str, game: StalingradGame | None = None) -> list[str]:
    """The codes of the counters the German player has not seen (face down or in the pool): the
    edition's mix less every revealed or removed counter. Public knowledge."""
    if isinstance(state_or_text, StalingradState):
        codes = state_or_text.ed.soviet_codes
        s = state_or_text
        out = [codes[s.s_type[a]] for a in range(13) if s.s_type[a] >= 0 and not s.s_up[a]]
        return sorted(out + [codes[t] for t in s.pool])
    mix = Counter(game.edition.soviet_mix())
    fields = dict(tok.split("=", 1) for tok in state_or_text.split())
    for entry in fields["soviet"].split(","):
        if entry != "-" and not entry.endswith("?"):
            mix[entry.split(":", 1)[1]] -= 1
    for c in fields.get("removed", "-").split(","):
        if c != "-":
            mix[c] -= 1
    return sorted(mix.elements())


def determinize(game: StalingradGame, observation: str, rng: random.Random) -> StalingradState:
    """A full position consistent with an observation: the unseen counters are dealt at random
    to the face-down places (on the map, then the pool)."""
    hidden = unseen_codes(observation, game)
    rng.shuffle(hidden)
    it = iter(hidden)

    def fill(match: re.Match) -> str:
        return f"{match.group(1)}{next(it)}?"

    text = re.sub(r"(\b\d+:)\?", fill, observation)
    text = re.sub(r"(?<=pool=)[^ ]*", lambda m: ",".join(next(it) if c == "?" else c
                                                         for c in m.group(0).split(",")) if m.group(0) != "-" else "-",
                  text)
    return game.from_text(text)
