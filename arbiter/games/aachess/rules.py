"""A&A Chess: diceless Axis & Allies (classic board) for 2-5 seats.

Rules: ``docs/games/aachess.md``; notation, options, seats and project rules:
``docs/games/aachess.md``. Combat arithmetic lives in ``combat.py``, the map in ``board.py``.

Flow. Each round every power (Russia, Germany, United Kingdom, Japan, United States) takes a
turn of phases; each phase is one decision of the seat holding that power::

    research        (kind "research")        option ``research`` only: dice for one development,
                    each die a CHANCE node (a 6 develops it)
    purchase        (kind "purchase")        a purchase list
    combat_move     (kind "combat_move")     a plan: moves of unit sets along paths (and rockets)
      rockets       by themselves (CHANCE under ryof6)
      AA fire       CHANCE (ryof6 only) and  (kind "casualties") the attacker's AA losses
      raids         strategic bombing, by itself (CHANCE for ryof6's half PU)
      battles       (kind "battle") the attacker picks the next battle when several are pending;
                    every round: CHANCE for rolled fractions, (kind "casualties") first-strike,
                    defender's and attacker's losses, (kind "retreat") continue or retreat
    noncombat_move  (kind "noncombat_move")  a plan; unlanded planes are lost at its end
    place           (kind "place")           where the purchased units go
    income          by itself

A decision may be asked of a seat that is not the mover's (the defender's casualties):
``current_player()`` is the seat that decides now and ``decision_kind()`` says what.
Automatic steps (casualties where every choice leads to the same position, a single pending battle, a
retreat with nowhere to go) are taken without asking, so every request is a real choice.
"""
from __future__ import annotations

import json
import re
from typing import Annotated, Any, ClassVar

import msgspec

from ..base import CHANCE, TERMINAL, ChanceError, Game, GameOptions, GameType, IllegalMove, State, Utility, bad_option
from . import combat
from .board import Board, load_board

SEATINGS: dict[int, tuple[tuple[str, ...], ...]] = {
    2: (("RU", "UK", "US"), ("GE", "JP")),
    3: (("RU", "UK"), ("GE", "JP"), ("US",)),
    4: (("RU",), ("GE",), ("UK", "US"), ("JP",)),
    5: (("RU",), ("GE",), ("UK",), ("JP",), ("US",)),
}
"""Powers per seat for each number of seats; seat 0 always holds Russia, who moves first."""
DEFAULT_MAX_ROUNDS = 15
AXIS_INCOME_WIN = 84
MAX_BATTLE_ROUNDS = 200
"""Safety net: a battle this long ends as stalled (cannot happen with positive totals)."""
EMPTY = ("", "-", "none", "pass")
PHASES = ("research", "purchase", "combat_move", "aa", "battles", "noncombat_move", "place", "over")
RESEARCH_COST = 5
"""PUs per research die (weapons development, option ``research``)."""
DEVELOPMENTS = {
    "jets": "jet power: fighters defend at 5",
    "rockets": "rockets: an AA gun may fire a rocket at an enemy industrial complex within 3 spaces (3 PUs)",
    "supersubs": "super submarines: submarines attack at 3",
    "longrange": "long-range aircraft: fighters and bombers move 2 more",
    "heavy": "heavy bombers: a bomber attacks with 3 x 4 = 12 and raids with 3 x 2.5 PUs",
}
"""The developments a power may research (rules §7: the classic chart without industrial
technology, which the project does not offer)."""
ROCKET_RANGE = 3
RESEARCH_PATTERN = re.compile(r"^(?:(0|[1-9][0-9]{0,5})\s*)?([a-z]+)$")

_SELECTOR = re.compile(r"^(?:(0|[1-9][0-9]{0,5})\s*)?([a-z]+)$")
"""``N code``: N in ASCII digits without a leading zero, at most 6 of them (int() took '٣' for 3
and raised its own ValueError, not IllegalMove, on a 5000-digit count: a crash of the referee)."""


class Unit:
    """One piece. ``on``: the transport or carrier carrying it (-1: none). ``came``: the space
    it last moved from (for retreats). Flags: ``cm`` moved in the combat move, ``done`` may not
    move again this turn, ``amph`` landed from the sea into a battle, ``raid`` a bombing raider,
    ``unl`` a transport that has unloaded (it may not move on)."""

    __slots__ = ("id", "t", "p", "at", "used", "on", "came", "flags")

    def __init__(self, id: int, t: str, p: int, at: int, used: int = 0, on: int = -1, came: int = -1,
                 flags: str = ""):
        self.id, self.t, self.p, self.at, self.used, self.on, self.came, self.flags = id, t, p, at, used, on, came, flags

    def copy(self) -> "Unit":
        return Unit(self.id, self.t, self.p, self.at, self.used, self.on, self.came, self.flags)

    def has(self, flag: str) -> bool:
        return flag in self.flags.split(",")

    def mark(self, flag: str) -> None:
        if not self.has(flag):
            self.flags = f"{self.flags},{flag}" if self.flags else flag


class AAChessState(State):
    """One position of A&A Chess (mutable; ``clone`` copies it)."""

    def __init__(self, game: "AAChessGame", empty: bool = False):
        self.game = game
        self.board: Board = game.board
        self.variant: str = game.options["variant"]
        self.log: list[str] = []
        self._rendered = 0
        if empty:
            return
        b = self.board
        self.round = 1
        self.turn = 0
        self.phase = "purchase"
        self.pus = [p.pus for p in b.powers]
        self.tech: list[list[str]] = [[] for _ in b.powers]
        self.owner: list[int | None] = list(b.owner)
        self.units: dict[int, Unit] = {}
        self.next_id = 1
        for space, power, code, count in b.start:
            for _ in range(count):
                self._new_unit(code, power, space)
        for s in range(len(b.names)):  # starting fighters at sea sit on their side's carriers
            if b.sea[s]:
                self._dock(s)
        self.start_owner = list(self.owner)
        self.bought: dict[str, int] = {}
        self.passes: dict[int, int] = {}
        self.pending: list[int] = []
        self.raids: dict[int, list[int]] = {}
        self.rockets: list[list[int]] = []
        self.bt: dict[str, Any] | None = None
        self.cas: dict[str, Any] | None = None
        self.chance: dict[str, Any] | None = None
        self.retreat_forced = False
        self.raid_die: int | None = None
        self.result: str | None = None
        self.detail = ""
        self._begin_turn()
        self._advance()

    # --- small queries (also the engines' library) -----------------------------------------

    @property
    def mover(self) -> int:
        return self.turn

    def alliance(self, p: int) -> str:
        return self.board.powers[p].alliance

    def friends(self, p: int, q: int | None) -> bool:
        return q is not None and self.alliance(p) == self.alliance(q)

    def enemies(self, p: int, q: int | None) -> bool:
        return q is not None and self.alliance(p) != self.alliance(q)

    def seat_of(self, p: int) -> int:
        return self.game.seat_of_power[p]

    def kind(self, u: Unit) -> str:
        return self.board.units[u.t].kind

    def at(self, s: int) -> list[Unit]:
        return [u for u in self.units.values() if u.at == s]

    def fighters_of(self, p: int, s: int) -> list[Unit]:
        """Units of p's enemies at s that fight (not buildings, AA guns or cargo at sea)."""
        return [u for u in self.units.values() if u.at == s and self.enemies(p, u.p) and self._fights(u)]

    def _fights(self, u: Unit) -> bool:
        if u.t in ("aa", "ic"):
            return False
        return not (self.board.sea[u.at] and self.kind(u) == "land")

    def hostile(self, p: int, s: int) -> bool:
        """Enemy fighting units are at s."""
        return any(self.enemies(p, u.p) and self._fights(u) for u in self.units.values() if u.at == s)

    def enemy_land(self, p: int, s: int) -> bool:
        b = self.board
        return not b.sea[s] and (self.enemies(p, self.owner[s]) or (self.owner[s] is None and b.neutral[s]))

    def friendly_land(self, p: int, s: int) -> bool:
        return not self.board.sea[s] and self.friends(p, self.owner[s])

    def remaining(self, u: Unit) -> int:
        return self.move_allowance(u.t, u.p) - u.used

    # weapons development: the values developed units fight and move with

    def has_tech(self, p: int, dev: str) -> bool:
        return dev in self.tech[p]

    def move_allowance(self, code: str, p: int) -> int:
        """Moves of a unit of ``code`` owned by ``p`` (long-range aircraft: planes +2)."""
        extra = 2 if code in ("ftr", "bmb") and self.has_tech(p, "longrange") else 0
        return self.board.units[code].move + extra

    def attack_value(self, u: Unit) -> int:
        """Attack of ``u`` in a battle total (super submarines 3, heavy bombers 3 x 4)."""
        value = self.board.units[u.t].attack
        if u.t == "sub" and self.has_tech(u.p, "supersubs"):
            return 3
        if u.t == "bmb" and self.has_tech(u.p, "heavy"):
            return 3 * value
        return value

    def defence_value(self, u: Unit) -> int:
        """Defence of ``u`` in a battle total (jet fighters 5)."""
        if u.t == "ftr" and self.has_tech(u.p, "jets"):
            return 5
        return self.board.units[u.t].defence

    def research_options(self, p: int | None = None) -> list[str]:
        """Developments ``p`` (default: the mover) may still research."""
        p = self.mover if p is None else p
        return [d for d in DEVELOPMENTS if d not in self.tech[p]]

    def cargo(self, u: Unit) -> list[Unit]:
        return [c for c in self.units.values() if c.on == u.id]

    def income(self, p: int) -> int:
        """Production of the land p owns (what p collects while holding its capital)."""
        return sum(self.board.production[s] for s, o in enumerate(self.owner) if o == p)

    def alliance_income(self, name: str) -> int:
        return sum(self.board.production[s] for s, o in enumerate(self.owner) if o is not None and self.alliance(o) == name)

    def landing_spot(self, p: int, s: int, fighter: bool) -> bool:
        """Where a plane of p may end its turn: friendly land held since the start of the turn,
        or (fighters) a sea zone with a friendly carrier that has room."""
        b = self.board
        if not b.sea[s]:
            return self.friends(p, self.owner[s]) and self.friends(p, self.start_owner[s])
        return fighter and self.carrier_room(p, s) > 0

    def carrier_room(self, p: int, s: int) -> int:
        here = [u for u in self.units.values() if u.at == s and self.friends(p, u.p)]
        return 2 * sum(1 for u in here if u.t == "cv") - sum(1 for u in here if u.t == "ftr")

    def landing_distance(self, p: int, s: int, fighter: bool, limit: int) -> int | None:
        """Fewest steps from s to a landing spot within ``limit`` (None: none in reach), flown
        as planes fly: not over or into a neutral."""
        b = self.board
        frontier, seen = [s], {s}
        for d in range(limit + 1):
            for x in frontier:
                if self.landing_spot(p, x, fighter):
                    return d
            nxt = []
            for x in frontier:
                for y in b.adjacent[x]:
                    if y not in seen and not (b.neutral[y] and self.owner[y] is None):
                        seen.add(y)
                        nxt.append(y)
            frontier = nxt
        return None

    def decider(self) -> int | None:
        """The power that decides now (None at chance or terminal nodes)."""
        if self.phase == "over" or self.chance is not None:
            return None
        if self.cas is not None:
            return self.cas["power"]
        return self.mover

    # --- the interface ---------------------------------------------------------------------

    def current_player(self) -> int:
        if self.phase == "over":
            return TERMINAL
        if self.chance is not None:
            return CHANCE
        return self.seat_of(self.decider())

    def decision_kind(self, seat: int | None = None) -> str:
        if self.phase == "over" or self.chance is not None:
            return "none"
        if self.cas is not None:
            return "casualties"
        if self.phase == "battles":
            return "retreat" if self.bt is not None else "battle"
        return self.phase

    def legal_moves(self, seat: int | None = None) -> list[str] | None:
        """Only the small decisions are listed (research, battle order, retreat, casualties with at
        most 256 distinct outcomes); for the rest (purchases, movement plans, placements, larger
        casualty choices: far too many) ``None``."""
        if not self.seat_acts(seat):
            return []
        kind = self.decision_kind(seat)
        if kind == "research":
            dice = self.pus[self.mover] // RESEARCH_COST
            return ["-"] + [f"{n} {d}" for d in self.research_options() for n in range(1, dice + 1)]
        if kind == "battle":
            return [self.board.names[s] for s in self.pending]
        if kind == "casualties":
            return self.casualty_choices()
        if kind == "retreat":
            options = [] if self.retreat_forced else ["continue"]
            dests = self.retreat_options()
            return options + ([f"retreat {self.board.names[d]}" for d in dests] if dests else ["retreat"])
        return [] if kind == "none" else None

    def check_move(self, move: str, seat: int | None = None) -> None:
        if self.phase == "over" or self.chance is not None:
            raise IllegalMove("no decision is due now")
        self.check_seat(seat)
        self.clone()._apply(move)

    def apply(self, move: str) -> None:
        trial = self.clone()
        trial._apply(move)
        log, rendered = self.log, self._rendered
        self.__dict__.update(trial.__dict__)
        self.log = log + trial.log
        self._rendered = rendered

    def _apply(self, move: str) -> None:
        kind = self.decision_kind()
        if kind == "none":
            raise IllegalMove("no decision is due now")
        text = move.strip()
        if kind == "research":
            self._research(text)
        elif kind == "purchase":
            self._purchase(text)
        elif kind in ("combat_move", "noncombat_move"):
            self._plan(text, combat=kind == "combat_move")
        elif kind == "casualties":
            self._casualties(text)
        elif kind == "battle":
            self._choose_battle(text)
        elif kind == "retreat":
            self._retreat(text)
        elif kind == "place":
            self._place(text)
        self._advance()

    def chance_outcomes(self) -> list[Any]:
        if self.chance is None:
            raise ChanceError("no roll is due")
        return list(range(1, self.chance["sides"] + 1))

    def apply_chance(self, outcome: Any) -> None:
        if self.chance is None:
            raise ChanceError("no roll is due")
        if outcome not in self.chance_outcomes():
            raise ChanceError(f"a d{self.chance['sides']} shows 1..{self.chance['sides']}, not {outcome!r}")
        die = int(outcome)
        event, self.chance = self.chance, None
        self._rolled(event, die)
        self._advance()

    def returns(self) -> list[float]:
        n = self.game.num_seats
        if self.result not in ("Axis", "Allies"):
            return [0.0] * n
        return [1.0 if self.alliance(self.game.powers_of_seat[s][0]) == self.result else -1.0 for s in range(n)]

    def end_detail(self) -> str:
        return self.detail

    # --- turn flow --------------------------------------------------------------------------

    def _begin_turn(self) -> None:
        p = self.mover
        for u in self.units.values():
            if u.p == p:
                u.used, u.came, u.flags = 0, -1, ""
        self.start_owner = list(self.owner)
        self.bought, self.passes, self.pending, self.raids, self.rockets = {}, {}, [], {}, []
        self.bt = self.cas = self.chance = None
        self.phase = "research" if self.game.research else "purchase"
        self.log.append(f"— round {self.round}, {self.board.powers[p].name}: {self.pus[p]} PUs")

    def _has_movers(self) -> bool:
        return any(u.p == self.mover and u.t != "ic" for u in self.units.values())

    def _advance(self) -> None:
        """Run automatic steps until a decision or a roll is due."""
        while self.phase != "over" and self.chance is None and self.cas is None:
            p = self.mover
            if self.phase == "research":
                if self.pus[p] >= RESEARCH_COST and self.research_options(p):
                    return
                self.phase = "purchase"
            elif self.phase == "purchase":
                if self.pus[p] >= 3 and any(u.p == p and u.t == "ic" for u in self.units.values()):
                    return
                self.phase = "combat_move"
            elif self.phase in ("combat_move", "noncombat_move"):
                if self._has_movers():
                    return
                self.phase = "aa" if self.phase == "combat_move" else "place"
                if self.phase == "aa":
                    self._start_aa()
            elif self.phase == "aa":
                self._start_aa()
            elif self.phase == "battles":
                if self.bt is not None:
                    if self._battle_step():
                        return
                    continue
                if self.rockets:
                    self._rocket()
                    continue
                if self.raids:
                    self._raid()
                    continue
                self.pending = [s for s in self.pending if self._battle_alive(s)]
                if not self.pending:
                    self._end_combat()
                    self.phase = "noncombat_move"
                elif len(self.pending) == 1:
                    self._open_battle(self.pending.pop(0))
                else:
                    return
            elif self.phase == "place":
                if sum(self.bought.values()):
                    return
                self._income()
                self._next_turn()

    def _next_turn(self) -> None:
        if self.turn == len(self.board.powers) - 1:
            if self._check_victory():
                return
            if self.round >= self.game.options["max_rounds"]:
                self.phase, self.result = "over", "draw"
                self.detail = f"round limit {self.round} reached"
                self.log.append(f"draw: {self.detail}")
                return
            self.round += 1
            self.turn = 0
        else:
            self.turn += 1
        self._begin_turn()

    def _check_victory(self) -> bool:
        b = self.board
        caps = {p.code: self.owner[p.capital] for p in b.powers}
        axis_own = all(caps[c] is not None and self.alliance(caps[c]) == "Axis" for c in ("GE", "JP"))
        allied_held = sum(1 for c in ("RU", "UK", "US") if caps[c] is not None and self.alliance(caps[c]) == "Axis")
        allies_own = all(caps[c] is not None and self.alliance(caps[c]) == "Allies" for c in ("RU", "UK", "US"))
        axis_lost = all(caps[c] is not None and self.alliance(caps[c]) == "Allies" for c in ("GE", "JP"))
        income = self.alliance_income("Axis")
        # Rules §2: two Allied capitals plus both Axis capitals, *or* an Axis income of 84 (the
        # income victory is a condition of its own, whoever holds the capitals).
        if (axis_own and allied_held >= 2) or income >= AXIS_INCOME_WIN:
            self.result = "Axis"
            self.detail = (f"Axis hold {allied_held} Allied capitals" if axis_own and allied_held >= 2
                           else f"Axis income {income} ≥ {AXIS_INCOME_WIN}")
        elif allies_own and axis_lost:
            self.result, self.detail = "Allies", "Allies hold both Axis capitals"
        else:
            return False
        self.phase = "over"
        self.log.append(f"{self.result} win at the end of round {self.round}: {self.detail}")
        return True

    def _income(self) -> None:
        p = self.mover
        power = self.board.powers[p]
        if self.owner[power.capital] == p:
            gain = self.income(p)
            self.pus[p] += gain
            self.log.append(f"{power.code} income +{gain} → {self.pus[p]} PUs")
        else:
            self.log.append(f"{power.code} collects nothing: {self.board.names[power.capital]} is not held")

    # --- weapons development (option research) -------------------------------------------

    def _research(self, text: str) -> None:
        """``N dev`` (``dev`` alone: one die) or ``-``: buy N dice at 5 PUs for the named
        development; the dice are rolled one by one (CHANCE) until a 6 or none is left."""
        p, code = self.mover, self.board.powers[self.mover].code
        self.phase = "purchase"
        if text.lower() in EMPTY:
            self.log.append(f"{code} does no research")
            return
        m = RESEARCH_PATTERN.match(text.lower())
        if not m:
            raise IllegalMove(f"research: cannot read {text!r} (expected e.g. '2 jets' or '-')")
        n, dev = int(m.group(1) or 1), m.group(2)
        if dev not in DEVELOPMENTS:
            raise IllegalMove(f"research: unknown development {dev!r}; developments: {', '.join(DEVELOPMENTS)}")
        if dev in self.tech[p]:
            raise IllegalMove(f"research: {code} has already developed {dev}")
        if n < 1:
            raise IllegalMove("research: buy at least 1 die (or '-')")
        cost = RESEARCH_COST * n
        if cost > self.pus[p]:
            raise IllegalMove(f"research: {n} dice cost {cost} PUs; {code} has {self.pus[p]}")
        self.pus[p] -= cost
        self.log.append(f"{code} buys {n} research {'die' if n == 1 else 'dice'} for {dev} ({cost} PUs, {self.pus[p]} left)")
        self.chance = {"sides": 6, "what": "research", "dev": dev, "left": n}

    def _research_rolled(self, event: dict, die: int) -> None:
        p = self.mover
        code, dev, left = self.board.powers[p].code, event["dev"], event["left"] - 1
        if die == 6:
            self.tech[p].append(dev)
            self.log.append(f"{code} research die 6: breakthrough, {code} develops {DEVELOPMENTS[dev]}"
                            + (f" ({left} unrolled {'die' if left == 1 else 'dice'} not needed)" if left else ""))
        else:
            self.log.append(f"{code} research die {die}: no breakthrough")
            if left:
                self.chance = {**event, "left": left}

    # --- purchase and placement -------------------------------------------------------------

    def parse_counts(self, text: str, what: str) -> dict[str, int]:
        """``3 inf, 1 arm`` -> {"inf": 3, "arm": 1}."""
        counts: dict[str, int] = {}
        if text.lower() in EMPTY:
            return counts
        for item in text.split(","):
            m = _SELECTOR.match(item.strip().lower())
            if not m:
                raise IllegalMove(f"{what}: cannot read {item.strip()!r} (expected e.g. '3 inf')")
            n, code = int(m.group(1) or 1), m.group(2)
            if code not in self.board.units:
                raise IllegalMove(f"{what}: unknown unit {code!r}; units: {', '.join(self.board.units)}")
            if n < 1:
                raise IllegalMove(f"{what}: a count must be at least 1 ({item.strip()!r})")
            counts[code] = counts.get(code, 0) + n
        return counts

    def _purchase(self, text: str) -> None:
        p = self.mover
        counts = self.parse_counts(text, "purchase")
        cost = sum(self.board.units[c].cost * n for c, n in counts.items())
        if cost > self.pus[p]:
            raise IllegalMove(f"purchase costs {cost} PUs; {self.board.powers[p].code} has {self.pus[p]}")
        self.pus[p] -= cost
        self.bought = counts
        self.log.append(f"{self.board.powers[p].code} buys {_counts_text(counts)} for {cost} PUs "
                        f"({self.pus[p]} left)")
        self.phase = "combat_move"

    def placement_spots(self, code: str) -> list[int]:
        """Where the mover may place a unit of ``code`` now: at (or, for ships and fighters, beside)
        a complex it has owned since the start of the turn, not one placed this turn."""
        p, b = self.mover, self.board
        complexes = [s for s in range(len(b.names)) if not b.sea[s] and self.owner[s] == p and self.start_owner[s] == p
                     and any(u.t == "ic" and u.at == s and not u.has("new") for u in self.units.values())]
        kind = b.units[code].kind
        if code == "ic":
            return [s for s in range(len(b.names)) if not b.sea[s] and self.owner[s] == p and self.start_owner[s] == p
                    and not any(u.t == "ic" and u.at == s for u in self.units.values())]
        seas = sorted({z for s in complexes for z in b.adjacent[s] if b.sea[z] and not self.hostile(p, z)})
        if kind == "sea":
            return seas
        return complexes + (seas if code == "ftr" else [])

    def _place(self, text: str) -> None:
        p, b = self.mover, self.board
        left = dict(self.bought)
        placed: list[tuple[str, int, int]] = []
        if text.lower() not in EMPTY:
            for part in text.split(";"):
                if not part.strip():
                    continue
                if "@" not in part:
                    raise IllegalMove(f"place: {part.strip()!r} needs '@ space' (e.g. '3 inf @ Germany')")
                what, where = part.split("@", 1)
                try:
                    s = b.space(where)
                except ValueError as exc:
                    raise IllegalMove(f"place: {exc}") from None
                for code, n in self.parse_counts(what.strip(), "place").items():
                    if left.get(code, 0) < n:
                        raise IllegalMove(f"place: {n} {code} but only {left.get(code, 0)} bought and unplaced")
                    if s not in self.placement_spots(code):
                        raise IllegalMove(f"place: a {b.units[code].name} cannot be placed in {b.names[s]}"
                                          + (" (one complex per territory)" if code == "ic" else ""))
                    if b.sea[s] and code == "ftr" and self.carrier_room(p, s) < n:
                        raise IllegalMove(f"place: no carrier room for {n} fighter(s) in {b.names[s]}")
                    left[code] -= n
                    placed.append((code, s, n))
                    for _ in range(n):
                        unit = self._new_unit(code, p, s)
                        if code == "ic":
                            unit.mark("new")  # it takes new units from its owner's next turn on
                    if b.sea[s]:
                        self._dock(s)
        lost = {c: n for c, n in left.items() if n}
        self.log.append(f"{b.powers[p].code} places " + ("; ".join(f"{n} {c} @ {b.names[s]}" for c, s, n in placed) or "nothing")
                        + (f"; unplaced and lost: {_counts_text(lost)}" if lost else ""))
        self.bought = {}

    # --- movement -------------------------------------------------------------------------------

    def _plan(self, text: str, combat: bool) -> None:
        moves = [m.strip() for m in text.split(";")] if text.lower() not in EMPTY else []
        for i, m in enumerate(moves):
            if not m:
                continue
            try:
                self.move(m, combat)
            except IllegalMove as exc:
                raise IllegalMove(f"move {i + 1} ({m!r}): {exc}") from None
        if combat:
            self.log.append(f"{self.board.powers[self.mover].code} combat moves: {text or '-'}")
            self.phase = "aa"
            self._start_aa()
        else:
            self.log.append(f"{self.board.powers[self.mover].code} non-combat moves: {text or '-'}")
            self._land_planes()
            self.phase = "place"

    def parse_move(self, text: str) -> tuple[bool, str, list[int]]:
        """``[bomb] units : A > B > C`` -> (raid, units text, path of space indices)."""
        raid = False
        body = text.strip()
        if body.lower().startswith("bomb "):
            raid, body = True, body[5:]
        if ":" not in body:
            raise IllegalMove("expected 'units : from > to' (e.g. '2 inf : Germany > Poland')")
        units_text, path_text = body.split(":", 1)
        try:
            path = [self.board.space(n) for n in path_text.split(">")]
        except ValueError as exc:
            raise IllegalMove(str(exc)) from None
        if len(path) < 2:
            raise IllegalMove("a path needs at least two spaces")
        for a, c in zip(path, path[1:]):
            if c not in self.board.adjacent[a]:
                raise IllegalMove(f"{self.board.names[a]} and {self.board.names[c]} are not adjacent")
        return raid, units_text.strip(), path

    def select(self, text: str, pool: list[Unit], need: int = 0) -> list[Unit]:
        """Units named by ``text`` (``2 inf, #17``) from ``pool``; by type, the units with the
        fewest moves left that still have ``need`` moves are taken (then lowest id)."""
        chosen: list[Unit] = []
        by_id = {u.id: u for u in pool}
        for item in (x.strip() for x in text.split(",")):
            if not item:
                raise IllegalMove(f"empty unit item in {text!r}")
            if item.startswith("#"):
                digits = item[1:]  # ASCII digits, no leading zero: int() also read '٣', '+3', ' 3', '3_0'
                u = by_id.get(int(digits)) if re.fullmatch(r"[1-9][0-9]{0,8}", digits) else None
                if u is None:
                    raise IllegalMove(f"unit {item[:20]} is not one of those that can be chosen here")
                if u in chosen:
                    raise IllegalMove(f"unit {item} named twice")
                chosen.append(u)
                continue
            m = _SELECTOR.match(item.lower())
            if not m or m.group(2) not in self.board.units:
                raise IllegalMove(f"cannot read unit item {item!r} (e.g. '2 inf' or '#17')")
            n, code = int(m.group(1) or 1), m.group(2)
            if n < 1:  # '0 inf' chose nothing, and a move of no unit crashed (KeyError)
                raise IllegalMove(f"a count must be at least 1 ({item!r})")
            cands = sorted((u for u in pool if u.t == code and u not in chosen),
                           key=lambda u: (self.remaining(u) < need, self.remaining(u), u.id))
            if len(cands) < n:
                raise IllegalMove(f"only {len(cands)} {code} can be chosen here, not {n}")
            chosen.extend(cands[:n])
        return chosen

    def move(self, text: str, combat: bool) -> None:
        """Play one move of the current plan (raises IllegalMove with the reason)."""
        p = self.mover
        if text.strip().lower().startswith("rocket "):
            self._launch(text.strip()[7:], combat)
            return
        raid, units_text, path = self.parse_move(text)
        start, steps = path[0], len(path) - 1
        pool = [u for u in self.units.values() if u.p == p and u.at == start and u.t != "ic"]
        units = self.select(units_text, pool, steps)
        kinds = {self.kind(u) for u in units}
        if len(kinds) > 1 and not kinds <= {"land"}:
            raise IllegalMove("move land, air and sea units in separate moves")
        kind = kinds.pop()
        for u in units:
            if not combat and u.has("cm") and kind != "air":
                raise IllegalMove(f"{u.t} #{u.id} moved in the combat move; only planes move again")
            if u.has("done"):  # also cargo that was in a sea battle: it stays there for the turn
                raise IllegalMove(f"{u.t} #{u.id} may not move again this turn")
            if kind == "land" and u.on >= 0:
                continue  # unloading: checked in _move_land
            if self.remaining(u) < steps:
                raise IllegalMove(f"{u.t} #{u.id} has {self.remaining(u)} move(s) left, the path needs {steps}")
            if combat and u.has("stop"):
                raise IllegalMove(f"{u.t} #{u.id} entered a battle space and stops there")
        if raid and (kind != "air" or any(u.t != "bmb" for u in units) or not combat):
            raise IllegalMove("only bombers fly bombing raids, in the combat move")
        if kind == "air":
            self._move_air(units, path, combat, raid)
        elif kind == "sea":
            self._move_sea(units, path, combat)
        else:
            self._move_land(units, path, combat)

    def _move_land(self, units: list[Unit], path: list[int], combat: bool) -> None:
        b, p = self.board, self.mover
        start, dest, steps = path[0], path[-1], len(path) - 1
        names = b.names
        if any(u.t == "aa" for u in units) and (self.enemy_land(p, dest) and combat):
            raise IllegalMove("AA guns cannot attack")
        if b.sea[start]:  # unloading
            if steps != 1 or b.sea[dest]:
                raise IllegalMove("units at sea can only unload, one step onto land")
            if any(u.on < 0 for u in units):
                raise IllegalMove("land units at sea must be aboard a transport")
            if self.hostile(p, start):
                raise IllegalMove(f"cannot unload from {names[start]}: enemy units are there "
                                  "[project rule: clear the sea zone on an earlier turn]")
            self._enter_land(units, dest, combat, amphibious=True)
            for u in units:
                self.units[u.on].mark("unl")
                u.on, u.came, u.used = -1, start, b.units[u.t].move
                u.mark("done")
            return
        if b.sea[dest]:  # loading
            if steps != 1:
                raise IllegalMove("land units load onto a transport in one step from an adjacent territory")
            if any(u.used for u in units):
                raise IllegalMove("a land unit must not have moved this turn to load")
            if self.hostile(p, dest):
                raise IllegalMove(f"cannot load in {names[dest]}: enemy units are there")
            for u in sorted(units, key=lambda u: -b.units[u.t].transport):
                size = b.units[u.t].transport
                transports = sorted((t for t in self.units.values() if t.t == "trn" and t.p == p and t.at == dest
                                     and not t.has("unl")), key=lambda t: (-self._load(t), t.id))
                room = [t for t in transports if 2 - self._load(t) >= size]
                if not room:
                    raise IllegalMove(f"no own transport in {names[dest]} has room for {u.t} #{u.id}")
                u.on, u.at, u.came, u.used = room[0].id, dest, start, b.units[u.t].move
                if combat:
                    u.mark("cm")
            return
        for i, s in enumerate(path[1:], 1):
            if b.sea[s]:
                raise IllegalMove(f"land units cannot cross {names[s]} by themselves")
            last = i == steps
            if last:
                break
            if self.friendly_land(p, s):
                continue
            if not combat:
                raise IllegalMove(f"non-combat moves stay in friendly land; {names[s]} is not")
            if b.neutral[s] and self.owner[s] is None:
                raise IllegalMove(f"entering the neutral {names[s]} ends the move")
            if any(u.t != "arm" for u in units):
                raise IllegalMove(f"only armor blitzes through enemy territory ({names[s]})")
            if any(self.enemies(p, x.p) and x.t not in ("aa", "ic") for x in self.at(s)):
                raise IllegalMove(f"cannot blitz through {names[s]}: enemy units are there")
            self._capture(s, p, "blitz")
        self._enter_land(units, dest, combat, amphibious=False)
        for u in units:
            u.at, u.came, u.used = dest, path[-2], u.used + steps
            if combat:
                u.mark("cm")

    def _enter_land(self, units: list[Unit], dest: int, combat: bool, amphibious: bool) -> None:
        b, p = self.board, self.mover
        if self.friendly_land(p, dest):
            for u in units:
                u.at = dest
            return
        if not combat:
            raise IllegalMove(f"non-combat moves stay in friendly land; {b.names[dest]} is not")
        for u in units:
            u.at = dest
            if amphibious:
                u.mark("amph")
            u.mark("done")
        if self.owner[dest] is None and b.neutral[dest]:
            cost = b.neutral_entry_cost
            if self.pus[p] < cost:
                raise IllegalMove(f"entering the neutral {b.names[dest]} costs {cost} PUs; {self.pus[p]} left")
            self.pus[p] -= cost
            self.log.append(f"{b.powers[p].code} pays {cost} PUs to enter the neutral {b.names[dest]}")
            self._capture(dest, p, "neutral entered")
        elif not self.hostile(p, dest):
            self._capture(dest, p, "taken unopposed")
        else:
            for u in units:
                u.mark("stop")
            if dest not in self.pending:
                self.pending.append(dest)

    def _load(self, t: Unit) -> int:
        return sum(self.board.units[c.t].transport for c in self.cargo(t))

    def _move_sea(self, units: list[Unit], path: list[int], combat: bool) -> None:
        b, p = self.board, self.mover
        for a, s in zip(path, path[1:]):
            if not b.sea[s]:
                raise IllegalMove(f"ships cannot enter the land {b.names[s]}")
            canal = b.canal_between(a, s)
            if canal and not all(self.friends(p, self.owner[x]) for x in canal.controlled_by):
                raise IllegalMove(f"the {canal.name} is closed: {', '.join(b.names[x] for x in canal.controlled_by)} "
                                  "must all be held by your side")
            if s != path[-1] and self.hostile(p, s):
                raise IllegalMove(f"cannot sail through {b.names[s]}: enemy units are there")
        for u in units:
            if u.has("unl"):
                raise IllegalMove(f"transport #{u.id} has unloaded and may not move on")
        dest = path[-1]
        if self.hostile(p, dest):
            if not combat:
                raise IllegalMove(f"non-combat moves cannot enter {b.names[dest]}: enemy units are there")
            if dest not in self.pending:
                self.pending.append(dest)
            for u in units:
                u.mark("stop")
        for u in units:
            for c in self.cargo(u):
                c.at = dest
            u.at, u.came, u.used = dest, path[-2], u.used + len(path) - 1
            if combat:
                u.mark("cm")

    def _move_air(self, units: list[Unit], path: list[int], combat: bool, raid: bool) -> None:
        b, p = self.board, self.mover
        dest, steps = path[-1], len(path) - 1
        for s in path[1:]:
            if b.neutral[s] and self.owner[s] is None:
                raise IllegalMove(f"planes may not fly over or into the neutral {b.names[s]}")
        if combat:
            aa = [s for s in path[1:] if not b.sea[s] and self.enemies(p, self.owner[s])
                  and any(x.t == "aa" and self.enemies(p, x.p) for x in self.at(s))]
            if raid:
                if not (self.enemies(p, self.owner[dest]) and any(x.t == "ic" for x in self.at(dest))):
                    raise IllegalMove(f"a bombing raid needs an enemy industrial complex; {b.names[dest]} has none")
            elif self.hostile(p, dest):
                if dest not in self.pending:
                    self.pending.append(dest)
                for u in units:
                    u.mark("stop")
            elif not (self.friendly_land(p, dest) or b.sea[dest]):
                raise IllegalMove(f"planes cannot take {b.names[dest]}; only land units capture territory")
        else:
            aa = []
            if self.hostile(p, dest) or (not b.sea[dest] and not self.landing_spot(p, dest, False)):
                raise IllegalMove(f"non-combat flights end on friendly land held since the start of the turn, "
                                  f"or at sea; not in {b.names[dest]}")
        for u in units:
            left = self.remaining(u) - steps
            if combat:
                d = self.landing_distance(p, dest, u.t == "ftr", left)
                if d is None and not (u.t == "ftr" and b.sea[dest] and self.carrier_room(p, dest) > 0):
                    raise IllegalMove(f"{u.t} #{u.id} could not land: no landing spot within {left} move(s) "
                                      f"of {b.names[dest]}")
            u.on = -1
            u.at, u.came, u.used = dest, path[-2], u.used + steps
            if combat:
                u.mark("cm")
                if aa:
                    self.passes[u.id] = self.passes.get(u.id, 0) + len(aa)
                if raid:
                    u.mark("raid")
                    u.mark("stop")
                    self.raids.setdefault(dest, []).append(u.id)

    def rocket_distance(self, a: int, target: int) -> int | None:
        """Spaces from ``a`` to ``target`` counted like a flight (not through neutrals), None
        beyond the rocket range."""
        b = self.board
        frontier, seen = [a], {a}
        for d in range(ROCKET_RANGE + 1):
            if target in frontier:
                return d
            nxt = []
            for x in frontier:
                for y in b.adjacent[x]:
                    if y not in seen and (y == target or not (b.neutral[y] and self.owner[y] is None)):
                        seen.add(y)
                        nxt.append(y)
            frontier = nxt
        return None

    def rocket_guns(self, s: int) -> list[Unit]:
        """The mover's AA guns in ``s`` that may still fire a rocket (not moved, not fired)."""
        return sorted((u for u in self.units.values() if u.t == "aa" and u.p == self.mover and u.at == s
                       and u.used == 0 and u.on < 0 and not u.has("rkt") and not u.has("cm")), key=lambda u: u.id)

    def _launch(self, body: str, combat: bool) -> None:
        """``rocket <the AA gun's space> @ <target>`` (weapons development: rockets)."""
        b, p = self.board, self.mover
        if not combat:
            raise IllegalMove("rockets are fired in the combat move")
        if not self.has_tech(p, "rockets"):
            raise IllegalMove(f"{b.powers[p].code} has not developed rockets")
        if "@" not in body:
            raise IllegalMove("expected 'rocket <AA gun's space> @ <target>' (e.g. 'rocket Germany @ United Kingdom')")
        a_text, t_text = body.split("@", 1)
        try:
            a, t = b.space(a_text), b.space(t_text)
        except ValueError as exc:
            raise IllegalMove(str(exc)) from None
        guns = self.rocket_guns(a)
        if not guns:
            raise IllegalMove(f"no AA gun in {b.names[a]} that has neither moved nor fired this turn")
        if b.sea[t] or not self.enemies(p, self.owner[t]) or not any(u.t == "ic" for u in self.at(t)):
            raise IllegalMove(f"a rocket needs an enemy industrial complex; {b.names[t]} has none")
        if self.rocket_distance(a, t) is None:
            raise IllegalMove(f"{b.names[t]} is more than {ROCKET_RANGE} spaces from {b.names[a]}")
        gun = guns[0]
        gun.mark("rkt")
        gun.mark("done")  # [project rule] an AA gun that fires a rocket does not move this turn
        self.rockets.append([gun.id, t])

    def _dock(self, s: int) -> None:
        """Put fighters at sea in s without a carrier link onto friendly carriers with room."""
        for f in sorted((u for u in self.units.values() if u.at == s and u.t == "ftr"), key=lambda u: u.id):
            if f.on >= 0 and f.on in self.units and self.units[f.on].at == s:
                continue
            f.on = -1
            for cv in sorted((u for u in self.units.values() if u.at == s and u.t == "cv" and self.friends(f.p, u.p)),
                             key=lambda u: (u.p != f.p, u.id)):
                if len(self.cargo(cv)) < 2:
                    f.on = cv.id
                    break

    def _land_planes(self) -> None:
        """End of the non-combat move: planes not on a landing spot are lost."""
        p, b = self.mover, self.board
        lost = []
        for s in sorted({u.at for u in self.units.values() if u.p == p and self.kind(u) == "air"}):
            planes = [u for u in self.units.values() if u.p == p and u.at == s and self.kind(u) == "air"]
            if b.sea[s]:
                self._dock(s)
                lost += [u for u in planes if u.t == "bmb" or u.on < 0]
            elif not self.landing_spot(p, s, False):
                lost += planes
        for u in lost:
            del self.units[u.id]
        if lost:
            self.log.append(f"{b.powers[p].code} loses planes that could not land: "
                            + ", ".join(f"{u.t}#{u.id} in {b.names[u.at]}" for u in lost))

    # --- capture --------------------------------------------------------------------------------

    def _capture(self, s: int, p: int, why: str) -> None:
        b = self.board
        old = self.owner[s]
        new = p
        original = b.owner[s]
        if original is not None and original != p and self.friends(p, original) and (
                self.owner[b.powers[original].capital] == original or b.powers[original].capital == s):
            new = original  # liberation: back to the ally who held it at the start of the game
        self.owner[s] = new
        for u in self.units.values():
            if u.at == s and u.t in ("aa", "ic") and self.enemies(p, u.p):
                u.p = new
        text = f"{b.powers[p].code} takes {b.names[s]} ({why})"
        if new != p:
            text += f", liberated for {b.powers[new].code}"
        if old is not None and b.powers[old].capital == s:
            loot = self.pus[old]
            self.pus[p] += loot
            self.pus[old] = 0
            text += f"; capital of {b.powers[old].code}: {loot} PUs taken"
        self.log.append(text)

    # --- AA fire, raids ---------------------------------------------------------------------------

    def _start_aa(self) -> None:
        self.phase = "battles"
        passes = sum(self.passes.values())
        if not passes:
            return
        fire = combat.aa_fire(passes, self.variant)
        self.log.append(f"AA fire: {passes} plane-passes ÷ 5 → {fire.hits} plane(s) lost"
                        + (f", remainder {fire.roll} rolled (d5)" if fire.roll else ""))
        if fire.roll:
            self.chance = {"sides": 5, "what": "aa", "need": fire.roll, "hits": fire.hits}
        else:
            self._aa_losses(fire.hits)

    def _aa_losses(self, hits: int) -> None:
        cands = [i for i in self.passes if i in self.units]
        self._ask_casualties(self.mover, "attacker", hits, cands, "aa", "AA fire")

    def _rocket(self) -> None:
        gun, s = self.rockets[0]
        victim = self.owner[s]
        if victim is None or not self.enemies(self.mover, victim):
            self.rockets.pop(0)
            return
        if self.variant == "ryof6" and self.raid_die is None:
            self.chance = {"sides": 6, "what": "rocket"}
            return
        die, self.raid_die = self.raid_die, None
        damage = combat.rocket_damage(self.pus[victim], self.variant, die)
        self.pus[victim] -= damage
        self.rockets.pop(0)
        self.log.append(f"rocket (AA gun #{gun}) on {self.board.names[s]}"
                        + (f": d6 {die}" if die is not None else "")
                        + f" → {self.board.powers[victim].code} loses {damage} PUs ({self.pus[victim]} left)")

    def _raid(self) -> None:
        """Resolve the raids on one enemy power's complexes. Rules §5: each surviving bomber costs
        the enemy 2.5 PUs and the total is rounded down (capped by its treasury), so the raids of
        this combat move on the same power's complexes are added up before the rounding."""
        s, ids = next(iter(self.raids.items()))
        victim = self.owner[s]
        if victim is None or not self.enemies(self.mover, victim) or not any(i in self.units for i in ids):
            del self.raids[s]
            return
        spaces = [t for t in self.raids if self.owner[t] == victim]
        bombers = [i for t in spaces for i in self.raids[t] if i in self.units]
        heavy = self.has_tech(self.mover, "heavy")
        dice = 3 * len(bombers) if heavy else len(bombers)  # a heavy bomber raids with three dice
        if combat.bombing_roll_needed(dice, self.variant) and self.raid_die is None:
            self.chance = {"sides": 6, "what": "raid"}
            return
        die, self.raid_die = self.raid_die, None
        damage = combat.bombing_damage(dice, self.pus[victim], self.variant, die)
        self.pus[victim] -= damage
        for t in spaces:
            del self.raids[t]
        self.log.append(f"raid on {', '.join(self.board.names[t] for t in spaces)}: {len(bombers)} "
                        f"{'heavy ' if heavy else ''}bomber(s) × {'7.5' if heavy else '2.5'} → "
                        f"{self.board.powers[victim].code} loses {damage} PUs ({self.pus[victim]} left)")

    # --- battles ----------------------------------------------------------------------------------

    def attackers(self, s: int) -> list[Unit]:
        return [u for u in self.units.values() if u.at == s and u.p == self.mover and self._fights(u)
                and not u.has("raid")]

    def defenders(self, s: int) -> list[Unit]:
        return self.fighters_of(self.mover, s)

    def _battle_alive(self, s: int) -> bool:
        if not self.attackers(s):
            return False
        if not self.defenders(s):
            if not self.board.sea[s] and self.enemy_land(self.mover, s) and \
                    any(self.kind(u) == "land" for u in self.attackers(s)):
                self._capture(s, self.mover, "defenders gone")
            return False
        return True

    def _choose_battle(self, text: str) -> None:
        try:
            s = self.board.space(text)
        except ValueError as exc:
            raise IllegalMove(str(exc)) from None
        if s not in self.pending:
            raise IllegalMove(f"no pending battle in {self.board.names[s]}; pending: "
                              + ", ".join(self.board.names[x] for x in self.pending))
        self.pending.remove(s)
        self._open_battle(s)

    def defending_power(self, s: int) -> int:
        if not self.board.sea[s] and self.owner[s] is not None and self.enemies(self.mover, self.owner[s]):
            return self.owner[s]
        counts: dict[int, int] = {}
        for u in self.defenders(s):
            counts[u.p] = counts.get(u.p, 0) + 1
        return min(counts, key=lambda q: (-counts[q], q))

    def _open_battle(self, s: int) -> None:
        self.bt = {"at": s, "round": 0, "carry": [0, 0], "step": "round", "hits": [0, 0], "first": 0,
                   "lost": [0, 0], "def": self.defending_power(s), "marked": [], "line": ""}
        self.log.append(f"battle in {self.board.names[s]}: {self.board.powers[self.mover].code} attacks "
                        f"{_units_text(self.attackers(s))} against {_units_text(self.defenders(s))}")
        if self.board.sea[s]:
            for u in self.attackers(s):
                if self.kind(u) == "sea":
                    u.mark("sea")  # fought a sea battle: it may not bombard this turn
            return
        bombard = self.bombardment(s)
        if bombard:
            for u in bombard:
                u.mark("shore")
            self.bt["bombard"] = [u.id for u in bombard]
            self.log.append(f"shore bombardment of {self.board.names[s]}: {len(bombard)} battleship(s) from "
                            + ", ".join(sorted({self.board.names[u.at] for u in bombard}))
                            + f", +{sum(self.attack_value(u) for u in bombard)} to the first round")

    def bombardment(self, s: int) -> list[Unit]:
        """The mover's battleships that bombard the amphibious assault on land space ``s``: in a
        sea zone from which an attacker landed there, that fought no sea battle this turn and have
        not bombarded another assault (each battleship bombards once)."""
        zones = {u.came for u in self.attackers(s) if u.has("amph") and u.came >= 0 and self.board.sea[u.came]}
        return sorted((u for u in self.units.values() if u.t == "bb" and u.p == self.mover and u.at in zones
                       and not u.has("sea") and not u.has("shore")), key=lambda u: u.id)

    def _ask_casualties(self, power: int, side: str, count: int, cands: list[int], step: str, why: str) -> None:
        """Ask ``power`` to choose ``count`` of ``cands``; take them without asking (lowest ids)
        only when every choice leads to the same position (rules §3 step 4, §4)."""
        units = [self.units[i] for i in cands if i in self.units]
        count = min(count, len(units))
        if count == 0:
            self._casualties_chosen(step, [])
            return
        fate_step = self._fate_step(step)
        if count == len(units) or len(self.casualty_outcomes(units, count, fate_step, limit=1)) == 1:
            self._casualties_chosen(step, sorted(units, key=lambda u: u.id)[:count])
            return
        self.cas = {"power": power, "side": side, "count": count, "candidates": sorted(u.id for u in units),
                    "step": step, "why": why, "groups": self._casualty_groups(units, fate_step)}

    def casualty_candidates(self) -> list[Unit]:
        return [self.units[i] for i in self.cas["candidates"]] if self.cas else []

    # Which units are interchangeable as casualties. A unit's "fate" is what about it can still
    # matter once the casualties are removed; everything else is reset or settled before it is
    # read: another power's moves, origins and flags at the start of its turn; the 'stop' flag and
    # AA passes once the combat move is over; a land or sea unit in a battle stays there for the
    # turn ('done' after it), so its moves and its 'cm', 'done' and 'unl' flags are settled; an
    # origin counts only while a retreat can follow. Transports and carriers with their cargo are
    # one "stack": choosing casualties is choosing what is left of each stack.

    def _fate_step(self, step: str) -> str:
        """``step`` for ``_fate``: "attacker" (origins count) only while a retreat may follow, i.e.
        some defender outlives the round."""
        if step != "attacker" or self.bt is None:
            return step
        marked = set(self.bt["marked"])
        return step if any(u.id not in marked for u in self.defenders(self.bt["at"])) else "attacker_last"

    def _fate(self, u: Unit, step: str) -> tuple:
        if u.p != self.mover:
            return (u.t, u.p, u.at, -1, -1, "")
        air = self.kind(u) == "air"
        moves = self.remaining(u) if air else -1
        came = u.came if step == "attacker" and not air and not u.has("amph") else -1
        flags = ",".join(sorted(f for f in u.flags.split(",") if f in _FATE_FLAGS))
        return (u.t, u.p, u.at, moves, came, flags)

    def _stacks(self, units: list[Unit], step: str) -> list[tuple[tuple, list[Unit], list[bool]]]:
        """The stacks holding ``units``: (description, members top first, which are candidates)."""
        ids = {u.id for u in units}
        tops: dict[int, Unit] = {}
        for u in units:
            top = self.units.get(u.on) if u.on >= 0 else None
            top = top if top is not None and top.at == u.at else u
            tops[top.id] = top
        out = []
        for top in sorted(tops.values(), key=lambda t: t.id):
            cargo = sorted((c for c in self.cargo(top) if c.at == top.at), key=lambda c: (self._fate(c, step), c.id))
            members = [top] + cargo
            cand = [m.id in ids for m in members]
            desc = (self._fate(top, step), tuple((self._fate(c, step), c.id in ids) for c in cargo), top.id in ids)
            out.append((desc, members, cand))
        return out

    def _stack_left(self, members: list[Unit], dead: set[int], step: str) -> tuple:
        """What is left of a stack once ``dead`` are removed (as ``_kill`` removes them): a sunk
        transport takes its cargo down, a carrier's fighters stay (without a carrier)."""
        top, cargo = members[0], members[1:]
        if top.id in dead:
            if top.t == "trn":
                return ()
            return tuple(sorted((self._fate(c, step), ()) for c in cargo
                                if c.id not in dead and self.kind(c) != "land"))
        return ((self._fate(top, step), tuple(sorted(self._fate(c, step) for c in cargo if c.id not in dead))),)

    def casualty_outcomes(self, units: list[Unit], count: int, step: str, limit: int = 10_000) -> list[list[Unit]]:
        """One choice of ``count`` of ``units`` per distinct position it leads to (at most
        ``limit`` + 1 of them: more than ``limit`` says "too many to list")."""
        groups: dict[tuple, list[tuple[list[Unit], list[bool]]]] = {}
        for desc, members, cand in self._stacks(units, step):
            groups.setdefault(desc, []).append((members, cand))
        plans = []  # per group: its stacks and the distinct ways to thin one of them
        for stacks in groups.values():
            members, cand = stacks[0]
            picks = [i for i, c in enumerate(cand) if c]
            patterns: dict[tuple, tuple[int, ...]] = {}
            for n in range(len(picks) + 1):
                for sub in _subsets(picks, n):
                    patterns.setdefault((self._stack_left(members, {members[i].id for i in sub}, step), n), sub)
            plans.append((stacks, list(patterns.items())))
        most = [len(stacks) * max(len(sub) for _, sub in pats) for stacks, pats in plans]
        seen: set[tuple] = set()
        found: list[list[Unit]] = []

        def walk(g: int, need: int, left: list, chosen: list[Unit]) -> bool:
            if g == len(plans):
                if need == 0:
                    key = tuple(sorted(left))
                    if key not in seen:
                        seen.add(key)
                        found.append(list(chosen))
                return len(found) > limit
            if need > sum(most[g:]):
                return False
            stacks, pats = plans[g]
            for combo in _multisets(len(pats), len(stacks)):
                size = sum(len(pats[i][1]) for i in combo)
                if size > need:
                    continue
                dead = [stacks[j][0][k] for j, i in enumerate(sorted(combo, reverse=True)) for k in pats[i][1]]
                pieces = [piece for i in combo for piece in pats[i][0][0]]
                if walk(g + 1, need - size, left + pieces, chosen + dead):
                    return True
            return False

        walk(0, count, [], [])
        return found

    def _casualty_groups(self, units: list[Unit], step: str) -> list[list]:
        """The candidates in classes of interchangeable units: [[label, [ids]], ...]."""
        b = self.board
        where = len({u.at for u in units}) > 1
        powers = len({u.p for u in units}) > 1
        classes: dict[tuple, list[Unit]] = {}
        for desc, members, cand in self._stacks(units, step):
            for i, m in enumerate(members):
                if cand[i]:
                    others = tuple(sorted(self._fate(x, step) for x in members if x is not m))
                    classes.setdefault((self._fate(m, step), i == 0, others), []).append(m)
        out = []
        for (fate, top, _), ms in sorted(classes.items(), key=lambda kv: min(u.id for u in kv[1])):
            u = ms[0]
            label = u.t + (f" ({b.powers[u.p].code})" if powers else "") + (f" @ {b.names[u.at]}" if where else "")
            if fate[5]:
                label += "".join(f" {f}" for f in fate[5].split(",") if f in ("amph", "raid"))
            if fate[4] >= 0:
                label += f" from {b.names[fate[4]]}"
            if fate[3] >= 0 and self.kind(u) == "air":
                label += f", {fate[3]} move{'s' if fate[3] != 1 else ''} left"
            if not top:
                label += f", aboard a {self.units[u.on].t}"
            elif self.cargo(u):
                label += f", carrying {_units_text(self.cargo(u))}"
            out.append([label, sorted(x.id for x in ms)])
        return out

    def casualty_choices(self, limit: int = 256) -> list[str] | None:
        """The casualty decision's choices, one per distinct position it can lead to, in notation
        (None when there are more than ``limit``). Each is spelled by code and qualifiers
        (``1 bmb @ Russia``) when those name it exactly, else by unit ids."""
        cas = self.cas
        if cas is None:
            return None
        pool, step = self.casualty_candidates(), self._fate_step(cas["step"])
        found = self.casualty_outcomes(pool, cas["count"], step, limit)
        if len(found) > limit:
            return None
        stacks = self._stacks(pool, step)
        where = len({u.at for u in pool}) > 1
        out = []
        for units in found:
            counts: dict[str, int] = {}
            for u in sorted(units, key=lambda u: u.id):
                item = self._casualty_item(u, step, where)
                counts[item] = counts.get(item, 0) + 1
            text = ", ".join(f"{n} {item}" for item, n in counts.items())
            try:
                same = _left(self, stacks, {u.id for u in self._pick_casualties(text)}, step) == \
                    _left(self, stacks, {u.id for u in units}, step)
            except IllegalMove:
                same = False
            out.append(text if same else ", ".join(f"#{u.id}" for u in sorted(units, key=lambda u: u.id)))
        return sorted(out)

    def _casualty_item(self, u: Unit, step: str, where: bool) -> str:
        """``code`` and the qualifiers that tell ``u`` from other units of its code."""
        fate = self._fate(u, step)
        text = u.t + (f" @ {self.board.names[u.at]}" if where else "")
        text += "".join(f" {f}" for f in ("raid", "amph") if f in fate[5].split(","))
        return text + (f" from {self.board.names[fate[4]]}" if fate[4] >= 0 else "")

    def _pick_casualties(self, text: str) -> list[Unit]:
        """The candidates named by ``text``: unit items (``2 inf``, ``#17``), each optionally
        narrowed by ``@ space`` (where it is: a plane's destination), ``from space`` (where it
        came from), ``amph`` (landed from the sea) or ``raid`` (a bombing raider)."""
        chosen: list[Unit] = []
        pool = self.casualty_candidates()
        for item in (x.strip() for x in text.split(",")):
            part = _QUALIFIER.split(item)
            keep = [u for u in pool if u not in chosen]
            for word, arg in zip(part[1::2], part[2::2]):
                word, arg = word.strip().lower(), arg.strip()
                if word in ("amph", "raid"):
                    if arg:
                        raise IllegalMove(f"cannot read {item!r}: '{word}' takes no space name")
                    keep = [u for u in keep if u.has(word)]
                    continue
                try:
                    s = self.board.space(arg)
                except ValueError as exc:
                    raise IllegalMove(f"{item!r}: {exc}") from None
                keep = [u for u in keep if (u.at if word == "@" else u.came) == s]
            chosen += self.select(part[0], keep)
        return chosen

    def _casualties(self, text: str) -> None:
        cas = self.cas
        chosen = self._pick_casualties(text)
        if len(chosen) != cas["count"]:
            raise IllegalMove(f"{cas['why']}: choose exactly {cas['count']} casualties, not {len(chosen)}")
        self.cas = None
        self._casualties_chosen(cas["step"], chosen)

    def _kill(self, units: list[Unit]) -> None:
        for u in units:
            if u.id not in self.units:
                continue
            for c in self.cargo(u):
                if self.kind(c) == "land" or (u.t == "trn"):
                    self.units.pop(c.id, None)
                else:
                    c.on = -1
            del self.units[u.id]
            self.passes.pop(u.id, None)

    def _casualties_chosen(self, step: str, chosen: list[Unit]) -> None:
        if step == "aa":
            if chosen:
                self.log.append("AA losses: " + _units_text(chosen))
            self._kill(chosen)
            return
        bt = self.bt
        if step == "first":
            bt["lost"][1] += len(chosen)
            bt["line"] += f"; first strike sinks {_units_text(chosen) or 'nothing'}"
            self._kill(chosen)
            bt["step"] = "defender_fire"
        elif step in ("defender", "end_defender"):
            bt["marked"] = [u.id for u in chosen]
            bt["step"] = "attacker_losses" if step == "defender" else "end_attacker_losses"
        elif step in ("attacker", "end_attacker"):
            dead_d = [self.units[i] for i in bt["marked"] if i in self.units]
            bt["lost"][0] += len(chosen)
            bt["lost"][1] += len(dead_d)
            bt["line"] += f"; defender loses {_units_text(dead_d) or 'nothing'}, attacker loses {_units_text(chosen) or 'nothing'}"
            self._kill(dead_d + chosen)
            bt["marked"] = []
            if step == "attacker":
                bt["step"] = "round_over"
            else:
                self.log.append(bt["line"])
                bt["step"] = "conclude"

    def _rolled(self, event: dict, die: int) -> None:
        what = event["what"]
        if what == "aa":
            hit = combat.rolled_hit(event["need"], die, 5)
            self.log.append(f"AA remainder {event['need']}: d5 {die} → {'a hit' if hit else 'no hit'}")
            self._aa_losses(event["hits"] + hit)
        elif what in ("raid", "rocket"):
            self.raid_die = die
        elif what == "research":
            self._research_rolled(event, die)
        else:  # a battle fraction: attacker / defender / end_attacker / end_defender
            bt = self.bt
            hit = combat.rolled_hit(event["need"], die)
            side = 0 if what in ("attacker", "end_attacker") else 1
            bt["hits"][side] += 1 if hit else 0
            bt["line"] += f"; {'attacker' if side == 0 else 'defender'} rolls {die} for {event['need']}: {'hit' if hit else 'miss'}"
            bt["step"] = event["next"]

    def _battle_step(self) -> bool:
        """Advance the current battle; True when a decision or roll is due.

        Steps: round (attacker's fire, its roll) → first_strike (defender picks ships) →
        defender_fire (its roll) → defender_losses → attacker_losses → round_over (retreat
        question) ... → end (cofr end rolls) → end_rolls → conclude."""
        bt, s, p = self.bt, self.bt["at"], self.mover
        step = bt["step"]
        if step == "round":
            att, dfn = self.attackers(s), self.defenders(s)
            if not att or not dfn:
                bt["step"] = "end"
                return False
            bt["round"] += 1
            bt["lost"] = [0, 0]
            total = sum(self.attack_value(u) for u in att)
            subs = sum(self.attack_value(u) for u in att if u.t == "sub")
            shore = 0
            if bt["round"] == 1:  # shore bombardment: the first round only
                shore = sum(self.attack_value(self.units[i]) for i in bt.get("bombard", []) if i in self.units)
                total += shore
            carry_in = bt["carry"][0]
            fire = combat.fire(total, combat.ATTACKER, self.variant, carry_in)
            self._sub_fire(0, att, self.attack_value, shore, carry_in, fire.carry_out)
            bt["hits"][0], bt["carry"][0] = fire.hits, fire.carry_out
            bt["subs"], bt["atotal"] = subs, total
            bt["line"] = f"round {bt['round']}: " + (f"(bombardment +{shore}) " if shore else "") + fire.describe()
            bt["step"] = "first_strike"
            if fire.roll:
                self.chance = {"sides": 6, "what": "attacker", "need": fire.roll, "next": "first_strike"}
                return True
            return False
        if step == "first_strike":
            bt["step"] = "defender_fire"
            ships = [u.id for u in self.defenders(s) if self.kind(u) == "sea"]
            first = min(combat.first_strike(bt["subs"], bt["hits"][0]), len(ships))
            bt["first"] = first
            if first:
                self._ask_casualties(bt["def"], "defender", first, ships, "first", "first-strike casualties")
            return self.cas is not None
        if step == "defender_fire":
            dfn = self.defenders(s)
            total = sum(self.defence_value(u) for u in dfn)
            carry_in = bt["carry"][1]
            fire = combat.fire(total, combat.DEFENDER, self.variant, carry_in)
            self._sub_fire(1, dfn, self.defence_value, 0, carry_in, fire.carry_out)
            bt["hits"][1], bt["carry"][1], bt["dtotal"] = fire.hits, fire.carry_out, total
            bt["line"] += f"; {fire.describe()}"
            bt["step"] = "defender_losses"
            if fire.roll:
                self.chance = {"sides": 6, "what": "defender", "need": fire.roll, "next": "defender_losses"}
                return True
            return False
        if step in ("defender_losses", "end_defender_losses"):
            end = step.startswith("end")
            hits = bt["hits"][0] - (0 if end else bt["first"])
            self._ask_casualties(bt["def"], "defender", hits, self._targets(self.defenders(s), 0),
                                 "end_defender" if end else "defender",
                                 f"{'end roll' if end else 'round ' + str(bt['round'])}: defender's casualties")
            return self.cas is not None
        if step in ("attacker_losses", "end_attacker_losses"):
            end = step.startswith("end")
            self._ask_casualties(p, "attacker", bt["hits"][1], self._targets(self.attackers(s), 1),
                                 "end_attacker" if end else "attacker",
                                 f"{'end roll' if end else 'round ' + str(bt['round'])}: attacker's casualties")
            return self.cas is not None
        if step == "round_over":
            self.log.append(bt["line"])
            if not self.attackers(s) or not self.defenders(s):
                bt["step"] = "end"
                return False
            stalled = (sum(bt["lost"]) == 0 and (self.variant not in combat.CARRY_VARIANTS
                                                 or (bt["atotal"] == 0 and bt["dtotal"] == 0))) \
                or bt["round"] >= MAX_BATTLE_ROUNDS
            self.retreat_forced = stalled
            options = self.retreat_options()
            if stalled:
                self.log.append("stalled round: nobody lost a unit, the attacker must retreat [project rule]")
                if not options:
                    self._retreat("retreat")
                    return False
            elif not options and not self._can_break_off():
                bt["step"] = "round"
                return False
            bt["step"] = "decide"
            return True
        if step == "decide":
            return True
        if step == "end":
            bt["step"] = "conclude"
            if self.variant == "cofr" and not bt.get("end_rolled"):
                bt["end_rolled"] = True
                a_alive = bool(self.attackers(s))
                d_alive = bool(self.defenders(s))
                rolls = []
                if bt["carry"][0] > 0 and d_alive:
                    rolls.append(["end_attacker", bt["carry"][0]])
                if bt["carry"][1] > 0 and a_alive:
                    rolls.append(["end_defender", bt["carry"][1]])
                if rolls:
                    bt["hits"], bt["first"] = [0, 0], 0
                    # a positive carry not marked mixed came from submarines alone
                    bt["sonly"] = [not m for m in bt.get("cmix", [True, True])]
                    bt["end_rolls"] = rolls
                    bt["line"] = "end of battle (cofr):"
                    bt["step"] = "end_rolls"
            return False
        if step == "end_rolls":
            if bt["end_rolls"]:
                what, need = bt["end_rolls"].pop(0)
                self.chance = {"sides": 6, "what": what, "need": need, "next": "end_rolls"}
                return True
            bt["step"] = "end_defender_losses" if any(bt["hits"]) else "conclude"
            if not any(bt["hits"]):
                self.log.append(bt["line"])
            return False
        if step == "conclude":
            self._conclude()
            return False
        raise AssertionError(f"unknown battle step {step}")

    def _sub_fire(self, side: int, units: list[Unit], value, extra: int, carry_in: int, carry_out: int) -> None:
        """Record whether ``side``'s fire this round came from submarines alone (rules §1: a
        submarine hits only ships), its carry included: ``sonly`` (this round's hits go to ships
        only) and ``cmix`` (the carry left holds value of other units)."""
        bt = self.bt
        mixed = extra > 0 or any(value(u) > 0 and u.t != "sub" for u in units)
        cmix = bt.setdefault("cmix", [False, False])
        sonly = bt.setdefault("sonly", [False, False])
        sonly[side] = any(u.t == "sub" for u in units) and not mixed and not (cmix[side] and carry_in > 0)
        cmix[side] = (mixed or (cmix[side] and carry_in > 0)) and carry_out > 0

    def _targets(self, units: list[Unit], firing: int) -> list[int]:
        """The ids among ``units`` that side ``firing``'s hits may fall on: only ships when its
        fire came from submarines alone (``_sub_fire``), else any."""
        sonly = (self.bt or {}).get("sonly", [False, False])[firing]
        return [u.id for u in units if not sonly or self.kind(u) == "sea"]

    def _can_break_off(self) -> bool:
        """Planes (and units that cannot retreat) may always break off an attack."""
        return any(self.kind(u) == "air" for u in self.attackers(self.bt["at"]))

    def retreat_options(self) -> list[int]:
        """Spaces the attacker may retreat to from the current battle."""
        if self.bt is None:
            return []
        s, p, b = self.bt["at"], self.mover, self.board
        out = set()
        for u in self.attackers(s):
            if u.came < 0 or u.has("amph") or self.kind(u) == "air":
                continue
            if b.sea[s] and b.sea[u.came] and not self.hostile(p, u.came):
                out.add(u.came)
            elif not b.sea[s] and not b.sea[u.came] and self.friendly_land(p, u.came):
                out.add(u.came)
        return sorted(out)

    def _retreat(self, text: str) -> None:
        bt = self.bt
        words = text.strip()
        if words.lower() == "continue":
            if self.retreat_forced:
                raise IllegalMove("the battle stalled: the attacker must retreat [project rule]")
            self.log.append(f"{self.board.powers[self.mover].code} continues the battle in {self.board.names[bt['at']]}")
            bt["step"] = "round"
            return
        if not (words.lower() == "retreat" or words.lower().startswith("retreat ")):  # not 'retreatRussia'
            raise IllegalMove("expected 'continue', 'retreat' or 'retreat <space>'")
        dest_text = words[7:].strip()
        options = self.retreat_options()
        if dest_text:
            try:
                dest = self.board.space(dest_text)
            except ValueError as exc:
                raise IllegalMove(str(exc)) from None
            if dest not in options:
                raise IllegalMove(f"cannot retreat to {self.board.names[dest]}; options: "
                                  + (", ".join(self.board.names[x] for x in options) or "none"))
        else:
            if options:
                raise IllegalMove("say where to retreat: " + ", ".join(self.board.names[x] for x in options))
            dest = None
        bt["retreat"] = -1 if dest is None else dest
        bt["step"] = "end"

    def _do_retreat(self, dest: int) -> None:
        s = self.bt["at"]
        stay, gone, lost = [], [], []
        for u in self.attackers(s):
            if self.kind(u) == "air":
                stay.append(u)
            elif dest >= 0 and not u.has("amph") and self.board.sea[s] == self.board.sea[dest]:
                gone.append(u)
            else:
                lost.append(u)
        for u in gone:
            u.at = dest
            u.mark("done")
            u.mark("stop")
            for c in self.cargo(u):
                c.at = dest
        self._kill(lost)
        self.log.append("attacker retreats" + (f" to {self.board.names[dest]}" if dest >= 0 else "")
                        + (f" ({_units_text(gone)})" if gone else "")
                        + ("; planes break off" if stay else "")
                        + (f"; left behind and lost: {_units_text(lost)}" if lost else ""))

    def _conclude(self) -> None:
        bt, s, p, b = self.bt, self.bt["at"], self.mover, self.board
        if bt.get("retreat") is not None:
            self._do_retreat(bt["retreat"])
        att, dfn = self.attackers(s), self.defenders(s)
        if not dfn and att and not b.sea[s] and any(self.kind(u) == "land" for u in att):
            self._capture(s, p, "battle won")
        elif not dfn and att:
            self.log.append(f"battle in {b.names[s]}: defenders destroyed")
        elif not att and bt.get("retreat") is None:
            self.log.append(f"battle in {b.names[s]}: the attack failed")
        if b.sea[s]:
            self._dock(s)
            lost = [u for u in self.at(s) if u.t == "ftr" and u.p != p and u.on < 0]
            if lost:
                self._kill(lost)
                self.log.append(f"defending fighters without a carrier are lost: {_units_text(lost)}")
        for u in self.at(s):
            if u.p == p and self.kind(u) != "air":
                u.mark("done")
        self.bt = None
        self.retreat_forced = False

    def _end_combat(self) -> None:
        self.passes = {}

    # --- text, data, rendering -----------------------------------------------------------------

    def to_data(self) -> dict[str, Any]:
        """The full position (see docs/games/aachess.md, "State on the wire")."""
        b = self.board
        return {
            "round": self.round, "power": b.powers[self.mover].code, "phase": self.phase,
            "decision": self.decision_kind(), "decider": (b.powers[self.decider()].code if self.decider() is not None else None),
            "variant": self.variant, "max_rounds": self.game.options["max_rounds"],
            "pus": {pw.code: self.pus[i] for i, pw in enumerate(b.powers)},
            "tech": {pw.code: list(self.tech[i]) for i, pw in enumerate(b.powers)},
            "owners": {b.names[s]: (b.powers[o].code if o is not None else None) for s, o in enumerate(self.owner) if not b.sea[s]},
            "start_owners": {b.names[s]: (b.powers[o].code if o is not None else None) for s, o in enumerate(self.start_owner)
                             if not b.sea[s] and o != self.owner[s]},
            "units": [[u.id, u.t, b.powers[u.p].code, b.names[u.at], u.used, u.on,
                       b.names[u.came] if u.came >= 0 else None, u.flags] for u in sorted(self.units.values(), key=lambda u: u.id)],
            "next_id": self.next_id, "bought": self.bought, "passes": {str(k): v for k, v in self.passes.items()},
            "pending": [b.names[s] for s in self.pending],
            "raids": {b.names[s]: ids for s, ids in self.raids.items()},
            "rockets": [[gun, b.names[s]] for gun, s in self.rockets],
            "battle": ({**self.bt, "at": b.names[self.bt["at"]], "def": b.powers[self.bt["def"]].code} if self.bt else None),
            "casualties": ({**self.cas, "power": b.powers[self.cas["power"]].code} if self.cas else None),
            "chance": self.chance, "retreat_forced": self.retreat_forced,
            "raid_die": self.raid_die,
            "result": self.result, "detail": self.detail,
        }

    def to_text(self) -> str:
        return json.dumps(self.to_data(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    def observation_data(self, seat: int) -> dict[str, Any]:
        return self.to_data()

    def render_svg(self, reveal: bool = False) -> str:
        return _render_svg(self, reveal)

    def render(self) -> str:
        """What happened since the previous render (purchases, moves, battle rounds, income),
        then a one-line summary; a position without history shows the board by power."""
        b = self.board
        new = self.log[self._rendered:]
        self._rendered = len(self.log)
        lines = list(new)
        if not self.log:
            for i, pw in enumerate(b.powers):
                held = [b.names[s] for s, o in enumerate(self.owner) if o == i]
                units: dict[str, list[str]] = {}
                for u in self.units.values():
                    if u.p == i:
                        units.setdefault(b.names[u.at], []).append(u.t)
                lines.append(f"{pw.code} {pw.name}: {self.pus[i]} PUs, income {self.income(i)}, {len(held)} territories"
                             + (f", developed: {', '.join(self.tech[i])}" if self.tech[i] else ""))
                for where in sorted(units):
                    lines.append(f"    {where}: {_counts_text(_count(units[where]))}")
        status = (f"[round {self.round} · {b.powers[self.mover].code} · {self.phase}"
                  + (f" · next: {self.decision_kind()} by {b.powers[self.decider()].code}" if self.decider() is not None else "")
                  + " · PUs " + " ".join(f"{pw.code} {self.pus[i]}" for i, pw in enumerate(b.powers))
                  + "".join(f" · {pw.code} {'+'.join(self.tech[i])}" for i, pw in enumerate(b.powers) if self.tech[i])
                  + "]")
        return "\n".join(lines + [status])

    def clone(self) -> "AAChessState":
        c = AAChessState.__new__(AAChessState)
        c.__dict__.update(self.__dict__)
        c.log, c._rendered = [], 0
        c.pus, c.owner, c.start_owner = list(self.pus), list(self.owner), list(self.start_owner)
        c.tech = [list(t) for t in self.tech]
        c.units = {i: u.copy() for i, u in self.units.items()}
        c.bought, c.passes, c.pending = dict(self.bought), dict(self.passes), list(self.pending)
        c.raids = {s: list(v) for s, v in self.raids.items()}
        c.rockets = [list(r) for r in self.rockets]
        c.bt = _deep(self.bt)
        c.cas = _deep(self.cas)
        c.chance = dict(self.chance) if self.chance else None
        return c

    def _new_unit(self, code: str, p: int, s: int) -> Unit:
        u = Unit(self.next_id, code, p, s)
        self.units[u.id] = u
        self.next_id += 1
        return u


_FATE_FLAGS = ("amph", "raid", "sea", "shore")
"""The flags of the mover's casualty candidates that still matter (retreat, raids, bombardment)."""
_QUALIFIER = re.compile(r"\s*(@|\bfrom\b|\bamph\b|\braid\b)\s*", re.IGNORECASE)
"""Qualifiers of a casualty item: ``2 bmb @ Russia``, ``1 inf from East Europe``, ``inf amph``."""


def _left(state: AAChessState, stacks: list, dead: set[int], step: str) -> tuple:
    """What is left of ``stacks`` once ``dead`` are removed, in an order-free form."""
    return tuple(sorted(piece for _, members, _ in stacks for piece in state._stack_left(members, dead, step)))


def _subsets(items: list[int], n: int):
    if n == 0:
        yield ()
        return
    for i, x in enumerate(items):
        for rest in _subsets(items[i + 1:], n - 1):
            yield (x,) + rest


def _multisets(kinds: int, n: int):
    """Every sorted tuple of ``n`` values in range(kinds) (one per multiset)."""
    if n == 0:
        yield ()
        return
    for first in range(kinds):
        for rest in _multisets(kinds - first, n - 1):
            yield (first,) + tuple(first + r for r in rest)


def _deep(d):
    return json.loads(json.dumps(d)) if d is not None else None


def _count(codes: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in codes:
        out[c] = out.get(c, 0) + 1
    return out


def _counts_text(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {c}" for c, n in counts.items() if n) or "nothing"


def _units_text(units: list[Unit]) -> str:
    return _counts_text(_count([u.t for u in units]))


_RESEARCH_WORDS = {False: (False, 0, "off", "no", "false", "0"), True: (True, 1, "on", "yes", "true", "1")}


class AAChessOptions(GameOptions):
    variant: Annotated[str, msgspec.Meta(description=f"one of {', '.join(combat.VARIANTS)}")] = "cof"
    seats: Annotated[int, msgspec.Meta(ge=min(SEATINGS), le=max(SEATINGS), description="2, 3, 4 or 5")] = 2
    max_rounds: Annotated[int, msgspec.Meta(ge=1, description="a positive integer")] = DEFAULT_MAX_ROUNDS
    research: Annotated[bool | int | str, msgspec.Meta(description="true or false")] = False
    """Kept as given (``"on"``, ``1``...); ``AAChessGame.research`` is the bool."""

    def check(self, game: str) -> None:
        if self.variant not in combat.VARIANTS:
            raise bad_option(game, "variant", self.variant, f"one of {', '.join(combat.VARIANTS)}")
        if self.research_on() is None:
            raise bad_option(game, "research", self.research, "true or false")

    def research_on(self) -> bool | None:
        word = self.research.strip().lower() if isinstance(self.research, str) else self.research
        return next((on for on, words in _RESEARCH_WORDS.items() if word in words), None)


class AAChessGame(Game):
    """A&A Chess on the classic map. Options: ``variant``, ``seats``, ``max_rounds``, ``research``.

    The seats (and their roles) come from the ``seats`` option, so ``seat_roles`` is per game."""

    game_type: ClassVar[GameType] = GameType(
        name="aachess", min_seats=min(SEATINGS), max_seats=max(SEATINGS), utility=Utility.GENERAL_SUM,
        chance=True, simultaneous=False, hidden_information=False, options=AAChessOptions,
        enumerates_moves=False)
    """General-sum: every seat of the winning alliance gets 1, every other -1 (with 3+ seats the
    returns need not sum to 0); a game that reaches ``max_rounds`` undecided gives 0 to all."""

    def configure(self) -> None:
        o = self.settings
        self.research = bool(o.research_on())
        self.board = load_board()
        codes = [p.code for p in self.board.powers]
        self.powers_of_seat = [[codes.index(c) for c in seat] for seat in SEATINGS[o.seats]]
        self.seat_of_power = {p: s for s, ps in enumerate(self.powers_of_seat) for p in ps}
        self.seat_roles = tuple("+".join(seat) for seat in SEATINGS[o.seats])

    def new_initial_state(self) -> AAChessState:
        return AAChessState(self)

    def forfeit_returns(self, seat: int) -> list[float]:
        """A forfeit loses for the forfeiting seat's whole alliance."""
        side = self.board.powers[self.powers_of_seat[seat][0]].alliance
        return [-1.0 if self.board.powers[ps[0]].alliance == side else 1.0 for ps in self.powers_of_seat]

    def from_text(self, text: str) -> AAChessState:
        try:
            d = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"aachess position: not a JSON object ({exc}); the position is the JSON "
                             f"an engine gets in request.position (docs/games/aachess.md)") from None
        try:
            if not isinstance(d, dict):
                raise TypeError(f"expected a JSON object, got {type(d).__name__}")
            return self._from_data(d)
        except KeyError as exc:
            raise ValueError(f"aachess position: missing field {exc}") from None
        except (ValueError, TypeError, AttributeError, IndexError) as exc:  # a field of the wrong shape
            raise ValueError(f"aachess position: {exc}") from None

    def _from_data(self, d: dict) -> AAChessState:
        b = self.board
        st = AAChessState(self, empty=True)
        st.round, st.phase = int(d["round"]), d["phase"]
        st.turn = b.power(d["power"])
        st.pus = [int(d["pus"][p.code]) for p in b.powers]
        st.tech = [[str(x) for x in d.get("tech", {}).get(p.code, [])] for p in b.powers]
        for devs in st.tech:
            for dev in devs:
                if dev not in DEVELOPMENTS:
                    raise ValueError(f"unknown development {dev!r}")
        st.owner = [None] * len(b.names)
        for name, code in d["owners"].items():
            st.owner[b.space(name)] = b.power(code) if code else None
        st.start_owner = list(st.owner)
        for name, code in d.get("start_owners", {}).items():
            st.start_owner[b.space(name)] = b.power(code) if code else None
        st.units = {}
        for uid, t, p, at, used, on, came, flags in d["units"]:
            if t not in b.units:
                raise ValueError(f"unknown unit type {t!r}")
            st.units[uid] = Unit(uid, t, b.power(p), b.space(at), used, on, b.space(came) if came else -1, flags)
        st.next_id = int(d["next_id"])
        st.bought = dict(d["bought"])
        st.passes = {int(k): v for k, v in d["passes"].items()}
        st.pending = [b.space(n) for n in d["pending"]]
        st.raids = {b.space(n): list(v) for n, v in d["raids"].items()}
        st.rockets = [[int(gun), b.space(n)] for gun, n in d.get("rockets", [])]
        st.bt = d["battle"] or None  # an empty object is no battle (as null), not one without fields
        if st.bt:
            st.bt = {**st.bt, "at": b.space(st.bt["at"]), "def": b.power(st.bt["def"])}
        st.cas = d["casualties"] or None
        if st.cas:
            st.cas = {**st.cas, "power": b.power(st.cas["power"])}
        st.chance = d["chance"] or None
        st.retreat_forced = bool(d["retreat_forced"])
        st.raid_die = d.get("raid_die")
        st.result, st.detail = d["result"], d["detail"]
        return st


_LAYOUTS: dict[tuple, list[tuple[float, float]]] = {}


def _layout(board) -> list[tuple[float, float]]:
    """Where each space goes on the schematic: a force-directed layout of the adjacency graph
    (deterministic: it starts from a circle), made once per map (keyed by what it is made of: a
    board's id could be another board's once the first is gone)."""
    key = (board.names, board.adjacent)
    if key not in _LAYOUTS:
        import numpy as np

        n = len(board.names)
        angle = np.arange(n) * 2 * np.pi / n
        pos = np.stack([np.cos(angle), np.sin(angle)], axis=1)
        adj = np.zeros((n, n))
        for a, ns in enumerate(board.adjacent):
            adj[a, list(ns)] = 1
        k = 1.0 / np.sqrt(n)
        temp = 0.1
        for _ in range(200):
            dx = pos[:, 0:1] - pos[:, 0]
            dy = pos[:, 1:2] - pos[:, 1]
            dist2 = np.maximum(dx * dx + dy * dy, 1e-6)
            scale = k * k / dist2 - adj * np.sqrt(dist2) / k
            move = np.stack([(scale * dx).sum(axis=1), (scale * dy).sum(axis=1)], axis=1)
            length = np.maximum(np.sqrt((move * move).sum(axis=1)), 1e-9)[:, None]
            pos += move / length * np.minimum(length, temp)
            temp *= 0.98
        pos -= pos.min(axis=0)
        pos /= np.maximum(pos.max(axis=0), 1e-9)
        _LAYOUTS[key] = [(float(x), float(y)) for x, y in pos]
    return _LAYOUTS[key]


_POWER_COLOURS = ("#b33a3a", "#5a5a5a", "#c9a227", "#d9822b", "#3f7f3f", "#7a4fa0", "#2f6f9f")


def _render_svg(state: "AAChessState", reveal: bool = False) -> str:
    """A schematic of the map: spaces placed by their adjacency (not geography), land coloured by
    its owner, sea zones small and blue, each with the number of units on it."""
    from ..svg import document, esc

    b = state.board
    pos = _layout(b)
    W, H, m = 900, 620, 30
    xy = [(m + x * (W - 2 * m), m + y * (H - 2 * m)) for x, y in pos]
    counts: dict[int, dict[int, int]] = {}
    for u in state.units.values():
        counts.setdefault(u.at, {}).setdefault(u.p, 0)
        counts[u.at][u.p] += 1
    body = ['<rect width="100%" height="100%" fill="#f2f0e8"/>']
    for a, ns in enumerate(b.adjacent):
        for c in ns:
            if a < c:
                body.append(f'<line x1="{xy[a][0]:.1f}" y1="{xy[a][1]:.1f}" x2="{xy[c][0]:.1f}" y2="{xy[c][1]:.1f}" '
                            f'stroke="#c8c2b0" stroke-width="0.8"/>')
    for s, name in enumerate(b.names):
        x, y = xy[s]
        owner = state.owner[s]
        if b.sea[s]:
            fill, r = "#9cc3e4", 6
        else:
            fill = _POWER_COLOURS[owner % len(_POWER_COLOURS)] if owner is not None else "#d8d2c0"
            r = 9 if b.production[s] else 7
        body.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" fill="{fill}" stroke="#333" stroke-width="0.6">'
                    f'<title>{esc(name)}</title></circle>')
        here = counts.get(s)
        if here:
            label = " ".join(f"{b.powers[p].code}{n}" for p, n in sorted(here.items()))
            body.append(f'<text x="{x + r + 1:.1f}" y="{y + 3:.1f}" font-size="8" fill="#111">{esc(label)}</text>')
    legend = " · ".join(f'<tspan fill="{_POWER_COLOURS[i % len(_POWER_COLOURS)]}">■</tspan> {esc(p.code)} {state.pus[i]} PU'
                        for i, p in enumerate(b.powers))
    decider = state.decider()
    status = f"round {state.round} · {b.powers[state.mover].code} · {state.phase}"
    if decider is not None:
        status += f" · {state.decision_kind()} by {b.powers[decider].code}"
    body.append(f'<text x="10" y="{H + 14}" font-size="12">{legend}</text>')
    body.append(f'<text x="10" y="{H + 30}" font-size="12">{esc(status)} (a schematic: spaces placed by '
                f'adjacency)</text>')
    return document(W, H + 38, body, "Axis & Allies")
