"""Stalingrad factory street fight: a solitaire game whose Soviets are run by the referee's dice.

Rules: ``docs/games/stalingrad.md``; notation, options and rule choices:
``docs/games/stalingrad.md``. One seat (0, the German player). The map and counters come from an
``Edition`` (``edition.py``): the project's own by default, or a user's file (option
``map_file``).

Flow (``step`` in the position text)::

    setup    CHANCE   draw a Soviet counter for each red-shield area, lowest area first
    deploy   seat 0   set up every German counter in the entry areas        (kind "deploy")
    -- each turn --
    infiltrate CHANCE two d6 (skipped when the reserve pool is empty)
    draw     CHANCE   a counter from the pool for the area the 2d6 named, if it is empty
    move     seat 0   the whole German movement plan                        (kind "movement_plan")
             -- Deadly Surprise resolves by itself, except an ambush's depletion choice:
    ambush   seat 0   which unit the ambush depletes                         (kind "deplete")
             -- then for each contested area, lowest first:
    air      seat 0   add an air strike to this combat? yes/no               (kind "air_strike")
    roll     CHANCE   German dice then Soviet dice, one d6 each
    deplete  seat 0   which unit the Bloody Aftermath depletes               (kind "deplete")
    won / lost        the game is over

Every chance outcome is equally likely: dice are d6 nodes with outcomes 1..6, a draw picks one
of the remaining counters (outcome: the counter's code, e.g. ``2a``), so each random event is one
verifiable roll. A depletion whose candidates are all alike (same kind, same side) or single is
made by the rules without asking.
"""
from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar

import msgspec

from ..base import CHANCE, TERMINAL, ChanceError, Game, GameOptions, GameType, IllegalMove, OptionError, State, Utility
from .edition import (AREA_NUMBERS, MAX_LEADERS_PER_AREA, MAX_UNITS_PER_AREA, Edition,
                      EditionError, load_edition)

AIR_STRIKES = 4
"""The Air Strike Track starts on 4."""
DEFAULT_MAX_TURNS = 20

SETUP, DEPLOY, INFILTRATE, DRAW, MOVE, AMBUSH, AIR, ROLL, DEPLETE, WON, LOST = (
    "setup", "deploy", "infiltrate", "draw", "move", "ambush", "air", "roll", "deplete", "won", "lost")
STEPS = (SETUP, DEPLOY, INFILTRATE, DRAW, MOVE, AMBUSH, AIR, ROLL, DEPLETE, WON, LOST)
_AREA_STEPS = (DRAW, AMBUSH, AIR, ROLL, DEPLETE)
_CHANCE_STEPS = (SETUP, INFILTRATE, DRAW, ROLL)
DECISION_KIND = {DEPLOY: "deploy", MOVE: "movement_plan", AMBUSH: "deplete", AIR: "air_strike",
                 DEPLETE: "deplete"}
_DICE = (1, 2, 3, 4, 5, 6)

_ENTRY_RE = re.compile(r"([A-Za-z]+[0-9]+):([0-9]+(?:-[0-9]+)*)(?:\+([A-Za-z]+[0-9]+))?")
_AREA_TEXT = {str(a): a for a in AREA_NUMBERS}
"""An area in a decision is written exactly as its number: ASCII digits, no leading zero (an engine's
'02', '٢' or a 5000-digit number is not an area; int() would take the first two and crash on the
last)."""
_EMPTY_PLANS = ("", "-", "none", "pass")


def combat_winner(german: list[int], soviet: list[int], leader: bool) -> tuple[str, str]:
    """Hellish combat: ``("german" | "soviet", why)``. The highest single die wins; if equal,
    the side with more dice showing it; if still equal, the Germans with a leader there, else
    the Soviets."""
    hg, hs = max(german), max(soviet)
    if hg != hs:
        return ("german" if hg > hs else "soviet"), "highest die"
    cg, cs = german.count(hg), soviet.count(hs)
    if cg != cs:
        return ("german" if cg > cs else "soviet"), "more high dice"
    return ("german", "tie, a leader is there") if leader else ("soviet", "tie, no leader there")


def dice_counts(crosses: int, stars: int) -> tuple[int, int]:
    """(German dice, Soviet dice) before any air strike."""
    if crosses > stars:
        return 2, 1
    if stars > crosses:
        return 1, 2
    return 2, 2


class StalingradState(State):
    """One position. Mutable; ``clone`` is cheap (a few short lists)."""

    __slots__ = ("game", "ed", "turn", "ast", "step", "area", "queue", "die1", "air", "gdice",
                 "sdice", "g_area", "g_flip", "s_type", "s_up", "pool", "removed")

    def __init__(self, game: "StalingradGame"):
        self.game = game
        self.ed: Edition = game.edition
        n = len(self.ed.german_ids)
        self.turn = 1
        self.ast = AIR_STRIKES
        self.step = SETUP
        self.area = 0
        self.queue: list[int] = []
        self.die1 = 0
        self.air = False
        self.gdice: list[int] = []
        self.sdice: list[int] = []
        self.g_area = [0] * n
        """Area of each German counter (edition order I1.., A1.., L1..); 0 = not on the map."""
        self.g_flip = [False] * n
        """Back side up: depleted (infantry, armor) or elite (leader)."""
        self.s_type = [-1] * 13
        """Soviet counter type index by area (index into ``ed.soviet``), -1 = none."""
        self.s_up = [False] * 13
        """Revealed (face up) by area."""
        self.pool = sorted(i for i, t in enumerate(self.ed.soviet) for _ in range(t.count))
        self.removed: list[int] = []

    # --- small queries (also the engines' library) -----------------------------------------

    def is_leader(self, i: int) -> bool:
        return self.ed.german_kind[i] == "leader"

    def german_at(self, area: int) -> list[int]:
        """Indices of the German counters in ``area``."""
        return [i for i, a in enumerate(self.g_area) if a == area]

    def units_at(self, area: int) -> list[int]:
        """Infantry and armor (not leaders) in ``area``."""
        kinds = self.ed.german_kind
        return [i for i, a in enumerate(self.g_area) if a == area and kinds[i] != "leader"]

    def leader_at(self, area: int) -> bool:
        kinds = self.ed.german_kind
        return any(a == area and kinds[i] == "leader" for i, a in enumerate(self.g_area))

    def soviet_count(self) -> int:
        return sum(1 for t in self.s_type if t >= 0)

    def german_count(self) -> int:
        return sum(1 for a in self.g_area if a)

    def crosses_at(self, area: int) -> int:
        ed = self.ed
        return sum(ed.german[ed.german_kind[i]].crosses[self.g_flip[i]]
                   for i, a in enumerate(self.g_area) if a == area)

    def stars_at(self, area: int) -> int:
        t = self.s_type[area]
        return (self.ed.soviet[t].stars if t >= 0 else 0) + self.ed.shields.get(area, 0)

    def contested(self) -> list[int]:
        """Areas holding a Soviet counter and at least one German counter, ascending."""
        occupied = set(self.g_area)
        return [a for a in AREA_NUMBERS if self.s_type[a] >= 0 and a in occupied]

    def combat_dice(self, area: int | None = None) -> tuple[int, int]:
        """(German dice, Soviet dice) for the combat in ``area`` (default: the current one),
        counting the air strike of the current combat."""
        area = self.area if area is None else area
        g, s = dice_counts(self.crosses_at(area), self.stars_at(area))
        return g + (1 if self.air and area == self.area else 0), s

    def movement(self, i: int) -> int:
        return self.ed.german[self.ed.german_kind[i]].movement

    def reachable(self, i: int) -> dict[int, tuple[int, ...]]:
        """Where German counter ``i`` may end its own move: destination -> a shortest path (the
        areas entered, in order). Not the start area. Entering a Soviet-occupied area stops."""
        adj, s_type = self.ed.adjacent, self.s_type
        start = self.g_area[i]
        paths: dict[int, tuple[int, ...]] = {start: ()}
        frontier = [start]
        for _ in range(self.movement(i)):
            nxt = []
            for a in frontier:
                if a != start and s_type[a] >= 0:
                    continue  # stopped on entering a Soviet-occupied area
                for b in adj[a]:
                    if b not in paths:
                        paths[b] = paths[a] + (b,)
                        nxt.append(b)
            frontier = nxt
        del paths[start]
        return paths

    def must_leave(self) -> list[int]:
        """Leaders alone (no other German counter) in a Soviet-occupied area: they must leave it."""
        out = []
        for i, a in enumerate(self.g_area):
            if a and self.is_leader(i) and self.s_type[a] >= 0 and len(self.german_at(a)) == 1:
                out.append(i)
        return out

    def leaders_can_all_be_stacked(self) -> bool:
        """Whether some movement plan ends with every leader stacked with infantry or armor.

        [project rule] When none can (too few units left, or out of reach), the plan is exempt
        from that one requirement."""
        return self.leader_stacking_solution() is not None

    def lone_leaders_can_avoid_soviets(self) -> bool:
        """Whether some movement plan ends with no leader alone (without infantry or armor) in a
        Soviet-occupied area: the rule "a leader with no other friendly counter in a
        Soviet-occupied area must leave it", which still holds when the stacking of every leader
        with a unit is waived. [project rule] Waived only when no plan can meet it."""
        return self.leader_stacking_solution(lenient=True) is not None

    def leader_stacking_solution(self, lenient: bool = False) -> tuple[dict[int, int], dict[int, int]] | None:
        """One way to stack every leader with a unit: (leader -> area, unit -> area) for the
        leaders and the units that go with them (other units stay), or None when impossible.
        ``lenient``: only a leader ending in a Soviet-occupied area needs a unit with it (the
        fallback when stacking every leader is impossible).

        Carrying never helps here (the armor itself can stand with the leader), so this is a
        choice of distinct leader areas matched to distinct units that can end there."""
        leaders = [i for i, a in enumerate(self.g_area) if a and self.is_leader(i)]
        if not leaders:
            return {}, {}
        units = [i for i, a in enumerate(self.g_area) if a and not self.is_leader(i)]
        if len(units) < len(leaders) and not lenient:
            return None
        s_type = self.s_type
        leave = set(self.must_leave())
        options = []
        for i in leaders:
            dests = set(self.reachable(i))
            if i not in leave:
                dests.add(self.g_area[i])
            options.append(sorted(dests))
        unit_reach = {u: set(self.reachable(u)) | {self.g_area[u]} for u in units}

        def matching(areas: list[int]) -> dict[int, int] | None:
            match: dict[int, int] = {}  # unit -> index of the leader area it covers

            def augment(k: int, seen: set[int]) -> bool:
                for u in units:
                    if areas[k] in unit_reach[u] and u not in seen:
                        seen.add(u)
                        if u not in match or augment(match[u], seen):
                            match[u] = k
                            return True
                return False
            need = [k for k in range(len(areas)) if not lenient or s_type[areas[k]] >= 0]
            return match if all(augment(k, set()) for k in need) else None

        def choose(k: int, used: list[int]):
            if k == len(leaders):
                m = matching(used)
                return None if m is None else (used, m)
            for a in options[k]:
                if a not in used:
                    found = choose(k + 1, used + [a])
                    if found:
                        return found
            return None
        found = choose(0, [])
        if found is None:
            return None
        areas, match = found
        going = {u: areas[k] for u, k in match.items() if areas[k] != self.g_area[u]}
        while True:  # a unit joins a leader's area only where no unit stays: stacking holds
            staying = {self.g_area[u] for u in units if u not in going}
            late = [u for u, a in going.items() if a in staying]
            if not late:
                break
            for u in late:
                del going[u]
        return dict(zip(leaders, areas)), going

    def deplete_candidates(self, area: int | None = None) -> list[int]:
        return self.units_at(self.area if area is None else area)

    # --- the common interface ----------------------------------------------------------------

    def current_player(self) -> int:
        step = self.step
        if step in _CHANCE_STEPS:
            return CHANCE
        if step in (WON, LOST):
            return TERMINAL
        return 0

    def decision_kind(self, seat: int | None = None) -> str:
        return DECISION_KIND.get(self.step, "none")

    def legal_moves(self, seat: int | None = None) -> list[str] | None:
        """The full list for ``air_strike`` and ``deplete``; ``None`` for ``deploy`` and
        ``movement_plan`` (far too many to list): engines build their own plans (the library's
        ``example_plan`` is one) and ``check_move`` validates any plan with a precise reason."""
        if not self.seat_acts(seat):
            return []
        step = self.step
        if step == AIR:
            return ["no", "yes"]
        if step in (AMBUSH, DEPLETE):
            return [self.ed.german_ids[i] for i in self.deplete_candidates()]
        if step in (MOVE, DEPLOY):
            return None
        return []

    def check_move(self, move: str, seat: int | None = None) -> None:
        self.check_seat(seat)
        self._parse(move)

    def apply(self, move: str) -> None:
        parsed = self._parse(move)
        step = self.step
        if step == DEPLOY:
            for i, a in parsed:
                self.g_area[i] = a
            self._start_turn()
        elif step == MOVE:
            self.apply_plan(parsed)
        elif step == AIR:
            self.apply_air_strike(parsed)
        else:
            self.apply_deplete(parsed)

    def _parse(self, move: Any):
        step = self.step
        if step not in DECISION_KIND:
            what = "the game is over" if step in (WON, LOST) else "the referee's dice are due (a chance event)"
            raise IllegalMove(f"no decision is possible now: {what}")
        if not isinstance(move, str):
            raise IllegalMove(f"a decision is a string, not {type(move).__name__}")
        if not move.isascii():
            # str.upper()/strip() would read '\u0131' + '1' (dotless i) as I1 and a no-break space
            # as whitespace: the notation is ASCII only
            bad = next(c for c in move if not c.isascii())
            raise IllegalMove(f"a decision is written in ASCII; it holds {bad!r} (U+{ord(bad):04X})")
        if step == DEPLOY:
            placements, problems = self.deployment_problems(move)
            if problems:
                raise IllegalMove("; ".join(problems))
            return placements
        if step == MOVE:
            plan, problems = self.plan_problems(move)
            if problems:
                raise IllegalMove("; ".join(problems))
            return plan
        if step == AIR:
            answer = move.strip().lower()
            if answer not in ("yes", "no"):
                raise IllegalMove(f"air_strike: answer 'yes' or 'no', not {move!r}")
            if answer == "yes" and self.ast <= 0:
                raise IllegalMove("no air strikes remain (the Air Strike Track is at 0)")
            return answer == "yes"
        ids = self.ed.german_ids
        cid = move.strip().upper()
        cands = self.deplete_candidates()
        if cid not in ids:
            raise IllegalMove(f"deplete: {move!r} is not a German counter "
                              f"(candidates here: {', '.join(ids[i] for i in cands)})")
        i = ids.index(cid)
        if i not in cands:
            where = "eliminated" if not self.g_area[i] else f"in area {self.g_area[i]}"
            why = "leaders are never depleted" if self.is_leader(i) else where
            raise IllegalMove(f"deplete: {cid} cannot be depleted here ({why}); choose an infantry "
                              f"or armor counter in area {self.area}: {', '.join(ids[j] for j in cands)}")
        return i

    # --- decisions (validation) ----------------------------------------------------------------

    def _counter(self, name: str, problems: list[str]) -> int | None:
        ids = self.ed.german_ids
        cid = name.upper()
        if cid not in ids:
            problems.append(f"unknown counter {name!r} (German counters: {', '.join(ids)})")
            return None
        return ids.index(cid)

    def deployment_problems(self, text: str) -> tuple[list[tuple[int, int]], list[str]]:
        """Parse and check a set-up ``I1:2;I2:2;...``: every German counter in an entry area,
        stacking respected. Returns (placements, problems)."""
        ed = self.ed
        problems: list[str] = []
        placements: list[tuple[int, int]] = []
        seen: set[int] = set()
        for entry in [e.strip() for e in text.split(";") if e.strip()]:
            m = re.fullmatch(r"([A-Za-z]+[0-9]+):([0-9]+)", entry)
            if not m:
                problems.append(f"entry {entry!r}: expected <counter>:<entry area>, e.g. I1:2")
                continue
            i = self._counter(m.group(1), problems)
            if i is None:
                continue
            area = _AREA_TEXT.get(m.group(2), 0)
            if i in seen:
                problems.append(f"{ed.german_ids[i]} is placed twice")
                continue
            seen.add(i)
            if area not in ed.entry:
                problems.append(f"{ed.german_ids[i]}: area {m.group(2)[:12]} is not an entry area "
                                f"({', '.join(map(str, ed.entry))})")
                continue
            placements.append((i, area))
        missing = [ed.german_ids[i] for i in range(len(ed.german_ids)) if i not in seen]
        if missing:
            problems.append(f"every German counter must be set up; missing: {', '.join(missing)}")
        final = {i: a for i, a in placements}
        problems += self._stacking_problems(final, relax_leaders=False)
        return placements, problems

    def plan_problems(self, text: str) -> tuple[list[tuple[int, tuple[int, ...], int]], list[str]]:
        """Parse and check a whole movement plan. Returns (moves, problems); each move is
        (counter, path of areas entered, carried infantry or -1). Every problem is listed."""
        ed = self.ed
        ids = ed.german_ids
        problems: list[str] = []
        moves: list[tuple[int, tuple[int, ...], int]] = []
        moved: dict[int, str] = {}
        body = text.strip()
        entries = [] if body.lower() in _EMPTY_PLANS else [e.strip() for e in body.split(";") if e.strip()]
        for entry in entries:
            m = _ENTRY_RE.fullmatch(entry.replace(" ", ""))
            if not m:
                problems.append(f"entry {entry!r}: expected <counter>:<area>[-<area>][+<infantry>], "
                                f"e.g. I3:3-8 or A1:3-4-7+I2")
                continue
            i = self._counter(m.group(1), problems)
            carried = -1
            if m.group(3):
                c = self._counter(m.group(3), problems)
                carried = -2 if c is None else c
            if i is None or carried == -2:
                continue
            name = ids[i]
            start = self.g_area[i]
            if not start:
                problems.append(f"{name} is not on the map (eliminated)")
                continue
            if i in moved:
                problems.append(f"{name} is given twice ({moved[i]} and {entry!r})")
                continue
            moved[i] = repr(entry)
            written = m.group(2).split("-")
            bad = [a for a in written if a not in _AREA_TEXT]
            if bad:
                problems.append(f"{name}: {bad[0][:12]!r} is not an area (areas are 2-12)")
                continue
            path = [_AREA_TEXT[a] for a in written]
            if path[0] == start:
                path = path[1:]  # the start area may be written first
            if carried >= 0:
                cname = ids[carried]
                if carried in moved:
                    problems.append(f"{cname} is given twice ({moved[carried]} and carried in {entry!r})")
                    continue
                moved[carried] = f"carried by {name}"
                if ed.german_kind[i] != "armor":
                    problems.append(f"{name} cannot carry {cname}: only armor carries infantry")
                    continue
                if ed.german_kind[carried] != "infantry":
                    problems.append(f"{name} can carry only infantry, not {cname}")
                    continue
                if self.g_area[carried] != start:
                    where = f"area {self.g_area[carried]}" if self.g_area[carried] else "not on the map"
                    problems.append(f"{name} (area {start}) cannot carry {cname} ({where}): the infantry "
                                    f"must start in the same area")
                    continue
                if not path:
                    problems.append(f"{name} does not move, so it cannot carry {cname}")
                    continue
            allowance = self.movement(i)
            if len(path) > allowance:
                problems.append(f"{name} moves {len(path)} areas but its movement allowance is {allowance}")
                continue
            here, ok = start, True
            for k, a in enumerate(path):
                if a not in ed.adjacent[here]:
                    problems.append(f"{name}: area {a} is not adjacent to area {here}")
                    ok = False
                    break
                if k < len(path) - 1 and self.s_type[a] >= 0:
                    problems.append(f"{name} must stop on entering Soviet-occupied area {a}; it cannot "
                                    f"go on to {path[k + 1]}")
                    ok = False
                    break
                here = a
            if ok:
                moves.append((i, tuple(path), carried))
        final = {i: a for i, a in enumerate(self.g_area) if a}
        for i, path, carried in moves:
            if path:
                final[i] = path[-1]
                if carried >= 0:
                    final[carried] = path[-1]
        for i in self.must_leave():
            if final.get(i) == self.g_area[i]:
                problems.append(f"{ids[i]} is alone in Soviet-occupied area {self.g_area[i]} and must "
                                f"leave it")
        if not problems:
            problems += self._stacking_problems(final, relax_leaders=None)
        return moves, problems

    def _stacking_problems(self, final: dict[int, int], relax_leaders: bool | None) -> list[str]:
        """Stacking after set-up or movement: at most 2 units + 1 leader per area, and a leader
        with at least one unit (exempt when no plan can achieve it: ``relax_leaders=None``
        works that out only if needed)."""
        ids, kinds = self.ed.german_ids, self.ed.german_kind
        by_area: dict[int, list[int]] = {}
        for i, a in final.items():
            by_area.setdefault(a, []).append(i)
        problems, lonely = [], []
        for a in sorted(by_area):
            units = [ids[i] for i in by_area[a] if kinds[i] != "leader"]
            leaders = [ids[i] for i in by_area[a] if kinds[i] == "leader"]
            if len(units) > MAX_UNITS_PER_AREA:
                problems.append(f"area {a} would hold {len(units)} infantry/armor counters "
                                f"({', '.join(units)}); at most {MAX_UNITS_PER_AREA}")
            if len(leaders) > MAX_LEADERS_PER_AREA:
                problems.append(f"area {a} would hold {len(leaders)} leaders ({', '.join(leaders)}); "
                                f"at most {MAX_LEADERS_PER_AREA}")
            if leaders and not units:
                lonely.append((f"leader {leaders[0]} would be alone in area {a}: a leader must be "
                               f"stacked with an infantry or armor counter", (leaders[0], a)))
        if lonely:
            if relax_leaders is None:
                relax_leaders = not self.leaders_can_all_be_stacked()
            if not relax_leaders:
                problems += [why for why, _ in lonely]
            else:
                # waived: still no leader alone in a Soviet-occupied area, when any plan avoids it
                in_soviet = [(leader, a) for (_, (leader, a)) in lonely if self.s_type[a] >= 0]
                if in_soviet and self.lone_leaders_can_avoid_soviets():
                    problems += [f"leader {leader} would be alone in Soviet-occupied area {a}: a leader "
                                 f"with no other German counter there must leave it (no plan can stack "
                                 f"every leader with a unit, but this one can be kept out)"
                                 for leader, a in in_soviet]
        return problems

    # --- decisions (effects; the fast path skips validation) ----------------------------------

    def apply_plan(self, moves: list[tuple[int, tuple[int, ...], int]]) -> None:
        """Engine fast path: play a movement plan (as from ``plan_problems``) without checks."""
        for i, path, carried in moves:
            if path:
                self.g_area[i] = path[-1]
                if carried >= 0:
                    self.g_area[carried] = path[-1]
        self._deadly_surprise(self.contested_face_down())

    def contested_face_down(self) -> list[int]:
        occupied = set(self.g_area)
        return [a for a in AREA_NUMBERS if self.s_type[a] >= 0 and not self.s_up[a] and a in occupied]

    def apply_air_strike(self, yes: bool) -> None:
        if yes:
            self.ast -= 1
            self.air = True
        self.step = ROLL

    def apply_deplete(self, i: int) -> None:
        self._deplete(i)
        if self._check_end():
            return
        if self.step == AMBUSH:
            self._deadly_surprise(self.queue)
        else:
            self._next_combat()

    # --- chance ------------------------------------------------------------------------------

    def chance_outcomes(self) -> list[Any]:
        step = self.step
        if step in (INFILTRATE, ROLL):
            return list(_DICE)
        if step in (SETUP, DRAW):
            codes = self.ed.soviet_codes
            return [codes[t] for t in self.pool]
        raise ChanceError(f"not a chance node: the German player decides ({self.decision_kind()})"
                          if step in DECISION_KIND else "not a chance node: the game is over")

    def apply_chance(self, outcome: Any) -> None:
        step = self.step
        if step in (INFILTRATE, ROLL):
            if type(outcome) is not int or not 1 <= outcome <= 6:
                raise ChanceError(f"a die roll is an int 1..6, not {outcome!r}")
            self.roll(outcome)
            return
        if step in (SETUP, DRAW):
            codes = self.ed.soviet_codes
            if outcome not in codes or codes.index(outcome) not in self.pool:
                raise ChanceError(f"a draw is the code of a counter in the pool "
                                  f"({', '.join(self.chance_outcomes())}), not {outcome!r}")
            self.draw(codes.index(outcome))
            return
        self.chance_outcomes()  # raises with the reason

    def roll(self, die: int) -> None:
        """Engine fast path: a d6 at an ``infiltrate`` or ``roll`` node."""
        if self.step == INFILTRATE:
            if not self.die1:
                self.die1 = die
                return
            area = self.die1 + die
            self.die1 = 0
            if self.s_type[area] < 0 and area not in self.g_area:
                self.step, self.area = DRAW, area
            else:
                self.step = MOVE
            return
        g, s = self.combat_dice()
        if len(self.gdice) < g:
            self.gdice.append(die)
        else:
            self.sdice.append(die)
        if len(self.sdice) == s:
            self._aftermath()

    def draw(self, t: int) -> None:
        """Engine fast path: the counter of type ``t`` comes out of the pool."""
        self.pool.remove(t)
        if self.step == SETUP:
            free = [a for a in sorted(self.ed.shields) if self.s_type[a] < 0]
            self.s_type[free[0]] = t
            if len(free) == 1:
                self.step = DEPLOY
            return
        self.s_type[self.area] = t
        self.s_up[self.area] = False
        self.area = 0
        if not self._check_end():
            self.step = MOVE

    # --- the sequence of play ------------------------------------------------------------------

    def _start_turn(self) -> None:
        self.area, self.queue = 0, []
        if self._check_end():
            return
        self.step = INFILTRATE if self.pool else MOVE

    def _deadly_surprise(self, queue: list[int]) -> None:
        """Flip the face-down counters in contested areas in turn; stop for an ambush choice."""
        ed = self.ed
        queue = list(queue)
        while queue:
            area = queue.pop(0)
            t = self.s_type[area]
            self.s_up[area] = True
            special = ed.soviet[t].special
            if special == "sniper":
                killed = False
                for i in self.german_at(area):
                    if self.is_leader(i):
                        self.g_area[i] = 0
                        killed = True
                # the leader's removal is a change of the counters: a loss at once if the Soviets
                # now outnumber the Germans, before the sniper is removed in its turn
                if killed and self._check_end():
                    return
                self.s_type[area] = -1
                self.s_up[area] = False
                self.removed.append(t)
                if self._check_end():
                    return
            elif special == "ambush":
                if self._needs_choice(area):
                    self.step, self.area, self.queue = AMBUSH, area, queue
                    return
                cands = self.units_at(area)
                if cands:
                    self._deplete(cands[0])
                    if self._check_end():
                        return
        self.queue = self.contested()
        self._next_combat()

    def _needs_choice(self, area: int) -> bool:
        cands = self.units_at(area)
        kinds = self.ed.german_kind
        return len({(kinds[i], self.g_flip[i]) for i in cands}) > 1

    def _next_combat(self) -> None:
        self.air, self.gdice, self.sdice = False, [], []
        while self.queue:
            area = self.queue.pop(0)
            if self.s_type[area] < 0 or not self.german_at(area):
                continue
            self.area = area
            self.step = AIR if self.ast > 0 else ROLL
            return
        self._end_turn()

    def _aftermath(self) -> None:
        area = self.area
        winner, _ = combat_winner(self.gdice, self.sdice, self.leader_at(area))
        if winner == "german":
            self.removed.append(self.s_type[area])
            self.s_type[area] = -1
            self.s_up[area] = False
            if self._check_end():
                return
        for i in self.german_at(area):
            if self.is_leader(i):
                self.g_flip[i] = True
        if self._needs_choice(area):
            self.step = DEPLETE
            return
        cands = self.units_at(area)
        if cands:
            self._deplete(cands[0])
            if self._check_end():
                return
        self._next_combat()

    def _deplete(self, i: int) -> None:
        if self.g_flip[i]:
            self.g_area[i] = 0
        else:
            self.g_flip[i] = True

    def _end_turn(self) -> None:
        self.area = 0
        if self.turn >= self.game.max_turns:
            self.step = LOST
            return
        self.turn += 1
        self._start_turn()

    def _check_end(self) -> bool:
        """Victory and defeat are checked at once after every change of the counters."""
        soviets = self.soviet_count()
        if soviets == 0:
            self.step = WON
        elif soviets > self.german_count():
            self.step = LOST
        else:
            return False
        self.queue, self.area = [], 0
        return True

    # --- results -----------------------------------------------------------------------------

    def is_terminal(self) -> bool:
        return self.step in (WON, LOST)

    def returns(self) -> list[float]:
        """``[1.0]`` won, ``[-1.0]`` lost, ``[0.0]`` while playing."""
        return [1.0] if self.step == WON else [-1.0] if self.step == LOST else [0.0]

    def end_detail(self) -> str:
        s, g = self.soviet_count(), self.german_count()
        if self.step == WON:
            return f"all Soviet counters cleared from the map on turn {self.turn}"
        if self.step == LOST:
            if s > g:
                return f"the Soviet counters on the map ({s}) outnumber the German counters ({g}) on turn {self.turn}"
            return f"turn limit: {self.game.max_turns} turns played and {s} Soviet counter(s) remain on the map"
        return ""

    # --- text --------------------------------------------------------------------------------

    def _step_text(self) -> str:
        step = self.step
        if step == INFILTRATE and self.die1:
            return f"{step}:{self.die1}"
        if step in _AREA_STEPS:
            return f"{step}:{self.area}"
        return step

    def _text(self, hide: bool) -> str:
        ed = self.ed
        codes = ed.soviet_codes
        german = ",".join(f"{ed.german_ids[i]}@{a}{('e' if self.is_leader(i) else 'd') if self.g_flip[i] else ''}"
                          for i, a in enumerate(self.g_area) if a) or "-"
        soviet = []
        for a in AREA_NUMBERS:
            t = self.s_type[a]
            if t >= 0:
                if self.s_up[a]:
                    soviet.append(f"{a}:{codes[t]}")
                else:
                    soviet.append(f"{a}:?" if hide else f"{a}:{codes[t]}?")
        pool = ",".join("?" if hide else codes[t] for t in self.pool) or "-"
        removed = ",".join(codes[t] for t in self.removed) or "-"
        fields = [f"turn={self.turn}", f"ast={self.ast}", f"step={self._step_text()}"]
        if self.step in (ROLL, DEPLETE):
            fields.append(f"combat={int(self.air)}:{''.join(map(str, self.gdice))}:"
                          f"{''.join(map(str, self.sdice))}")
        fields += [f"queue={','.join(map(str, self.queue)) or '-'}", f"german={german}",
                   f"soviet={','.join(soviet) or '-'}", f"pool={pool}", f"removed={removed}"]
        return " ".join(fields)

    def to_text(self) -> str:
        return self._text(hide=False)

    def observation(self, seat: int) -> str:
        """The position as the German player sees it: face-down counters (on the map and in the
        pool) are ``?``; everything else is public."""
        return self._text(hide=True)

    def observation_data(self, seat: int) -> dict[str, Any]:
        """The request's ``state`` (documented in docs/games/stalingrad.md): nothing hidden leaks."""
        ed = self.ed
        codes = ed.soviet_codes
        german = []
        for i, a in enumerate(self.g_area):
            if not a:
                continue
            kind = ed.german_kind[i]
            german.append({"id": ed.german_ids[i], "kind": kind, "area": a,
                           "side": ("elite" if self.g_flip[i] else "competent") if kind == "leader"
                           else ("depleted" if self.g_flip[i] else "full"),
                           "crosses": ed.german[kind].crosses[self.g_flip[i]],
                           "movement": ed.german[kind].movement})
        soviet, unseen = [], {c: 0 for c in codes}
        for a in AREA_NUMBERS:
            t = self.s_type[a]
            if t < 0:
                continue
            if self.s_up[a]:
                st = ed.soviet[t]
                soviet.append({"area": a, "revealed": True, "code": st.code, "stars": st.stars,
                               "special": st.special})
            else:
                soviet.append({"area": a, "revealed": False})
                unseen[codes[t]] += 1
        for t in self.pool:
            unseen[codes[t]] += 1
        data: dict[str, Any] = {
            "step": self.step, "decision": DECISION_KIND.get(self.step),
            "turn": self.turn, "max_turns": self.game.max_turns, "ast": self.ast,
            "area": self.area or None, "queue": list(self.queue),
            "german": german,
            "eliminated": [ed.german_ids[i] for i, a in enumerate(self.g_area)
                           if not a and self.step not in (SETUP, DEPLOY)],
            "soviet": soviet, "pool": len(self.pool),
            "removed": [codes[t] for t in self.removed],
            "unseen": {c: n for c, n in unseen.items() if n},
            "edition": ed.describe(),
        }
        if self.step in (ROLL, DEPLETE, AIR):
            g, s = self.combat_dice()
            if self.step == DEPLETE and self.sdice:  # the roll is over: the Soviet counter may be
                g, s = len(self.gdice), len(self.sdice)  # gone and leaders promoted since
            data["combat"] = {"area": self.area, "crosses": self.crosses_at(self.area),
                              "stars": self.stars_at(self.area), "air_strike": self.air,
                              "german_dice": g, "soviet_dice": s,
                              "german_rolled": list(self.gdice), "soviet_rolled": list(self.sdice),
                              "result": combat_winner(self.gdice, self.sdice, self.leader_at(self.area))[0]
                              if self.step == DEPLETE and self.gdice and self.sdice else None}
        if self.step in (AMBUSH, DEPLETE):
            data["candidates"] = [ed.german_ids[i] for i in self.deplete_candidates()]
        if self.step == MOVE:
            data["must_leave"] = [ed.german_ids[i] for i in self.must_leave()]
            data["moves"] = {ed.german_ids[i]: [list(p) for p in self.reachable(i).values()]
                             for i, a in enumerate(self.g_area) if a}
        return data

    def render_svg(self, reveal: bool = False) -> str:
        return _render_svg(self, reveal)

    def render(self) -> str:
        ed = self.ed
        codes = ed.soviet_codes
        lines = [f"Stalingrad ({ed.name}) · turn {self.turn}/{self.game.max_turns} · air strikes {self.ast} "
                 f"· step {self._step_text()}"]
        lines.append("area  adjacent         shield  soviet        german")
        for a in AREA_NUMBERS:
            t = self.s_type[a]
            sov = "" if t < 0 else (codes[t] if self.s_up[a] else f"({codes[t]}) face down")
            ger = " ".join(f"{ed.german_ids[i]}{('*' if self.g_flip[i] else '')}" for i in self.german_at(a))
            shield = "★" * ed.shields[a] if a in ed.shields else ("entry" if a in ed.entry else "")
            adj = ",".join(map(str, ed.adjacent[a]))
            lines.append(f"{a:>4}  {adj:<16} {shield:<7} {sov:<13} {ger}")
        lines.append(f"pool: {', '.join(codes[t] for t in self.pool) or 'empty'} · removed: "
                     f"{', '.join(codes[t] for t in self.removed) or 'none'} · * = depleted / elite")
        if self.step in (ROLL, DEPLETE):
            lines.append(f"combat in area {self.area}: German dice {self.gdice} vs Soviet dice {self.sdice}"
                         f"{' (air strike)' if self.air else ''}")
        if self.is_terminal():
            lines.append(("WON: " if self.step == WON else "LOST: ") + self.end_detail())
        return "\n".join(lines)

    def clone(self) -> "StalingradState":
        s = object.__new__(StalingradState)
        s.game, s.ed, s.turn, s.ast, s.step, s.area = self.game, self.ed, self.turn, self.ast, self.step, self.area
        s.queue, s.die1, s.air = self.queue[:], self.die1, self.air
        s.gdice, s.sdice = self.gdice[:], self.sdice[:]
        s.g_area, s.g_flip = self.g_area[:], self.g_flip[:]
        s.s_type, s.s_up = self.s_type[:], self.s_up[:]
        s.pool, s.removed = self.pool[:], self.removed[:]
        return s

    def __repr__(self) -> str:
        return f"StalingradState({self.to_text()!r})"


class StalingradOptions(GameOptions):
    max_turns: Annotated[int, msgspec.Meta(ge=1, description="a whole number >= 1")] = DEFAULT_MAX_TURNS
    map_file: Annotated[str | None, msgspec.Meta(description="a file path")] = None


class StalingradGame(Game):
    """Stalingrad factory street fight, solitaire: seat 0 is the German player.

    Options: ``max_turns`` (default 20: a loss after that turn) and ``map_file`` (a TOML or JSON
    data file with the map and counters; default: the project's edition)."""

    game_type: ClassVar[GameType] = GameType(
        name="stalingrad", min_seats=1, max_seats=1, utility=Utility.SOLO, chance=True,
        simultaneous=False, hidden_information=True, options=StalingradOptions, enumerates_moves=False)
    """Hidden information: the face-down Soviet counters (on the map and in the pool)."""
    seat_roles: tuple[str, ...] = ("german",)

    def configure(self) -> None:
        self.max_turns = self.settings.max_turns
        try:
            self.edition = load_edition(self.settings.map_file or None)
        except EditionError as exc:
            raise OptionError(f"stalingrad: option map_file: {exc}") from None

    def new_initial_state(self) -> StalingradState:
        return StalingradState(self)

    def forfeit_returns(self, seat: int) -> list[float]:
        return [-1.0]

    def from_text(self, text: str) -> StalingradState:
        """Parse a full position (``to_text``). Fields are ``key=value`` separated by spaces, in
        any order; ``ast`` (default 4), ``queue``, ``pool`` (default empty) and ``removed``
        (default: the edition's counters not on the map or in the pool) may be left out.
        Raises ``ValueError`` saying what is wrong."""
        ed = self.edition
        fields: dict[str, str] = {}
        for token in text.split():
            if "=" not in token:
                raise ValueError(f"stalingrad position: {token!r} is not key=value")
            key, value = token.split("=", 1)
            if key not in ("turn", "ast", "step", "combat", "queue", "german", "soviet", "pool", "removed"):
                raise ValueError(f"stalingrad position: unknown field {key!r}")
            if key in fields:
                raise ValueError(f"stalingrad position: field {key!r} given twice")
            fields[key] = value
        for key in ("turn", "step", "german", "soviet"):
            if key not in fields:
                raise ValueError(f"stalingrad position: field {key!r} is missing")
        s = StalingradState(self)
        s.pool = []
        s.turn = _number(fields["turn"], "turn", 1)
        s.ast = _number(fields.get("ast", str(AIR_STRIKES)), "ast", 0)
        if s.ast > AIR_STRIKES:
            raise ValueError(f"stalingrad position: ast {s.ast} is above {AIR_STRIKES} (the Air Strike Track "
                             f"starts on {AIR_STRIKES} and only goes down)")
        if s.turn > self.max_turns:
            raise ValueError(f"stalingrad position: turn {s.turn} is beyond max_turns {self.max_turns}")
        step, _, arg = fields["step"].partition(":")
        if step not in STEPS:
            raise ValueError(f"stalingrad position: step {step!r} is not one of {', '.join(STEPS)}")
        s.step = step
        if step in _AREA_STEPS:
            s.area = _area(arg, f"step {step}")
        elif step == INFILTRATE and arg:
            s.die1 = _number(arg, "first infiltration die", 1)
            if s.die1 > 6:
                raise ValueError(f"stalingrad position: first infiltration die {arg!r} is not 1-6")
        elif arg:
            raise ValueError(f"stalingrad position: step {step!r} takes no ':{arg}'")
        queue = fields.get("queue", "-")
        s.queue = [] if queue == "-" else [_area(a, "queue") for a in queue.split(",")]
        if "combat" in fields:
            if step not in (ROLL, DEPLETE):
                raise ValueError("stalingrad position: 'combat' belongs to a roll or deplete step")
            m = re.fullmatch(r"([01]):([1-6]*):([1-6]*)", fields["combat"])
            if not m:
                raise ValueError(f"stalingrad position: combat {fields['combat']!r} is not "
                                 f"<air 0|1>:<German dice>:<Soviet dice>, e.g. 1:54:6")
            s.air = m.group(1) == "1"
            s.gdice, s.sdice = [int(c) for c in m.group(2)], [int(c) for c in m.group(3)]
        if fields["german"] != "-":
            for entry in fields["german"].split(","):
                m = re.fullmatch(r"([A-Za-z]+\d+)@(\d+)([de]?)", entry)
                if not m or m.group(1).upper() not in ed.german_ids:
                    raise ValueError(f"stalingrad position: german entry {entry!r} is not <counter>@<area>"
                                     f"[d|e] with a counter of {', '.join(ed.german_ids)}")
                i = ed.german_ids.index(m.group(1).upper())
                if s.g_area[i]:
                    raise ValueError(f"stalingrad position: {ed.german_ids[i]} appears twice")
                s.g_area[i] = _area(m.group(2), ed.german_ids[i])
                flag = m.group(3)
                if flag and flag != ("e" if s.is_leader(i) else "d"):
                    raise ValueError(f"stalingrad position: {entry!r}: use 'e' (elite) for leaders and "
                                     f"'d' (depleted) for infantry and armor")
                s.g_flip[i] = bool(flag)
        codes = ed.soviet_codes
        used = {c: 0 for c in codes}

        def code(c: str, where: str) -> int:
            if c == "?":
                raise ValueError(f"stalingrad position: {where} is hidden ('?'): a full position names "
                                 f"every counter")
            if c not in codes:
                raise ValueError(f"stalingrad position: {where}: {c!r} is not a Soviet counter of this "
                                 f"edition ({', '.join(codes)})")
            used[c] += 1
            return codes.index(c)
        if fields["soviet"] != "-":
            for entry in fields["soviet"].split(","):
                a_text, _, c = entry.partition(":")
                a = _area(a_text, "soviet")
                if s.s_type[a] >= 0:
                    raise ValueError(f"stalingrad position: two Soviet counters in area {a}")
                face_down = c.endswith("?") and len(c) > 1
                s.s_type[a] = code(c[:-1] if face_down else c, f"soviet counter in area {a}")
                s.s_up[a] = not face_down
        pool = fields.get("pool", "-")
        if pool != "-":
            s.pool = sorted(code(c, "pool") for c in pool.split(","))
        mix = ed.soviet_mix()
        if "removed" in fields:
            removed = fields["removed"]
            s.removed = [] if removed == "-" else [code(c, "removed") for c in removed.split(",")]
            for c, n in mix.items():
                if used[c] != n:
                    raise ValueError(f"stalingrad position: {used[c]} counter(s) {c} on the map, in the "
                                     f"pool and removed; the edition has {n}")
        else:
            for c, n in mix.items():
                if used[c] > n:
                    raise ValueError(f"stalingrad position: {used[c]} counter(s) {c}; the edition has {n}")
                s.removed += [codes.index(c)] * (n - used[c])
        if step in (AMBUSH, DEPLETE) and not s.units_at(s.area):
            raise ValueError(f"stalingrad position: step {step}:{s.area} needs infantry or armor in area {s.area}")
        if step in (AIR, ROLL, DEPLETE) and not (s.german_at(s.area) and (s.s_type[s.area] >= 0 or step == DEPLETE)):
            raise ValueError(f"stalingrad position: step {step}:{s.area} needs a combat in area {s.area}")
        if step in (AIR, ROLL) and not s.s_up[s.area]:
            raise ValueError(f"stalingrad position: step {step}:{s.area} needs the Soviet counter in area "
                             f"{s.area} face up (Deadly Surprise reveals it before the combat)")
        if step in (DRAW, INFILTRATE) and not s.pool:
            raise ValueError(f"stalingrad position: step {step} needs counters in the pool (with an empty "
                             f"pool there is no infiltration)")
        if step == DRAW and (s.s_type[s.area] >= 0 or s.area in s.g_area):
            raise ValueError(f"stalingrad position: step draw:{s.area} needs an empty area {s.area}")
        if step == WON and s.soviet_count():
            raise ValueError(f"stalingrad position: step won with {s.soviet_count()} Soviet counter(s) on the "
                             f"map (the player wins when none is left)")
        if step == LOST and s.soviet_count() <= s.german_count() and s.turn < self.max_turns:
            raise ValueError(f"stalingrad position: step lost on turn {s.turn} of {self.max_turns} with the Soviet "
                             f"counters ({s.soviet_count()}) not outnumbering the German ({s.german_count()})")
        if step == SETUP:
            free = [a for a in ed.shields if s.s_type[a] < 0]
            if not free or len(s.pool) < len(free):
                raise ValueError(f"stalingrad position: step setup needs a red-shield area without a counter "
                                 f"and a counter in the pool for each ({len(free)} free, {len(s.pool)} in the pool)")
        if step == ROLL:
            g, sv = s.combat_dice()
            if len(s.gdice) > g or len(s.sdice) >= sv or (s.sdice and len(s.gdice) < g):
                raise ValueError(f"stalingrad position: combat {fields.get('combat')!r} does not fit a roll "
                                 f"of {g} German and {sv} Soviet dice in area {s.area} (German dice first)")
        return s


def _number(text: str, what: str, minimum: int) -> int:
    if not (text.isascii() and text.isdigit()) or int(text) < minimum:
        raise ValueError(f"stalingrad position: {what} {text!r} is not a whole number >= {minimum}")
    return int(text)


def _area(text: str, what: str) -> int:
    if text not in _AREA_TEXT:
        raise ValueError(f"stalingrad position: {what}: {text!r} is not an area 2-12")
    return int(text)


def _render_svg(state: "StalingradState", reveal: bool = False) -> str:
    """The street map as a graph (areas in columns by their distance from the German entry areas),
    the Soviet counters (face down ``?`` unless ``reveal``) and the German counters beside them."""
    from ..svg import document, esc

    ed = state.ed
    codes = ed.soviet_codes
    depth = {a: 0 for a in ed.entry}
    frontier = list(ed.entry)
    while frontier:
        nxt = []
        for a in frontier:
            for b in ed.adjacent.get(a, ()):
                if b not in depth:
                    depth[b] = depth[a] + 1
                    nxt.append(b)
        frontier = nxt
    columns: dict[int, list[int]] = {}
    for a in AREA_NUMBERS:
        columns.setdefault(depth.get(a, max(depth.values(), default=0) + 1), []).append(a)
    pos, cw, rh = {}, 150, 78
    for col, areas in sorted(columns.items()):
        for row, a in enumerate(areas):
            pos[a] = (40 + col * cw, 40 + row * rh)
    width = 40 + len(columns) * cw + 40
    height = 40 + max(len(v) for v in columns.values()) * rh + 30
    body = ['<rect width="100%" height="100%" fill="#ece7dc"/>']
    for a, ns in ed.adjacent.items():
        for b in ns:
            if a < b and a in pos and b in pos:
                body.append(f'<line x1="{pos[a][0]}" y1="{pos[a][1]}" x2="{pos[b][0]}" y2="{pos[b][1]}" stroke="#9a917e"/>')
    for a in AREA_NUMBERS:
        x, y = pos[a]
        fill = "#f6d9a8" if a in ed.shields else "#d7e4c8" if a in ed.entry else "#fbf8f2"
        body.append(f'<circle cx="{x}" cy="{y}" r="24" fill="{fill}" stroke="#555"/>'
                    f'<text x="{x}" y="{y - 10}" font-size="11" text-anchor="middle">{a}'
                    f'{" " + "★" * ed.shields[a] if a in ed.shields else ""}</text>')
        t = state.s_type[a]
        if t >= 0:
            shown = codes[t] if state.s_up[a] or reveal else "?"
            face = "#b71c1c" if state.s_up[a] else "#7a5b5b"
            body.append(f'<rect class="soviet" x="{x - 16}" y="{y - 4}" width="32" height="18" fill="{face}"/>'
                        f'<text class="soviet-code" x="{x}" y="{y + 9}" font-size="11" fill="#fff" text-anchor="middle">'
                        f'{esc(shown)}</text>')
        for k, i in enumerate(state.german_at(a)):
            gx, gy = x + 28, y - 22 + 15 * k
            flipped = "*" if state.g_flip[i] else ""
            body.append(f'<rect class="german" x="{gx}" y="{gy}" width="44" height="13" fill="#4a5a3a"/>'
                        f'<text x="{gx + 22}" y="{gy + 10}" font-size="9" fill="#fff" text-anchor="middle">'
                        f'{esc(ed.german_ids[i] + flipped)}</text>')
    over = (" · " + ("won: " if state.step == WON else "lost: ") + state.end_detail()) if state.is_terminal() else ""
    body.append(f'<text x="10" y="{height - 10}" font-size="12">turn {state.turn}/{state.game.max_turns} · '
                f'air strikes {state.ast} · {esc(state._step_text())}{esc(over)}</text>')
    return document(width, height, body, f"Stalingrad ({ed.name})")
