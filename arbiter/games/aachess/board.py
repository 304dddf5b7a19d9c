"""The A&A Chess map as validated data: load ``classic_map.json`` (or a user's file) into a ``Board``.

The file is the project's own format (written once by ``make_map.py``; described in
``docs/games/aachess.md``). ``load_board`` checks it completely and reports *every* problem,
each naming the space, power or unit at fault, so a bad file is fixed in one pass. The game
works on indices (space ``i`` is ``board.names[i]``) for speed; names are for notation.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

MAP_FILE = Path(__file__).with_name("classic_map.json")
FORMAT = "aachess-map/1"
UNIT_KINDS = ("land", "air", "sea", "building")
EXPECTED = {"spaces": 128, "land": 70, "neutral": 14, "sea": 58, "start_units": 161}
"""The classic board's counts (the shared README); checked for the project's own file only."""


class MapError(ValueError):
    """A map file that cannot be played; ``problems`` lists every problem found."""

    def __init__(self, source: str, problems: list[str]):
        self.problems = list(problems)
        super().__init__(f"{source}: {len(problems)} problem(s):\n" + "\n".join(f"  - {p}" for p in problems))


@dataclass(frozen=True)
class UnitType:
    code: str
    name: str
    kind: str
    attack: int
    defence: int
    move: int
    cost: int
    transport: int = 0
    """Transport capacity used when carried (land units); 0: cannot be carried."""
    capacity: int = 0
    """Transport capacity (transports)."""
    carries: int = 0
    """Fighters carried (carriers)."""


@dataclass(frozen=True)
class Power:
    code: str
    name: str
    alliance: str
    pus: int
    capital: int


@dataclass(frozen=True)
class Canal:
    name: str
    sea_zones: tuple[int, int]
    controlled_by: tuple[int, ...]


@dataclass(frozen=True)
class Board:
    names: tuple[str, ...]
    sea: tuple[bool, ...]
    production: tuple[int, ...]
    owner: tuple[int | None, ...]
    """Starting owner (power index) per space; None for sea zones and neutrals."""
    neutral: tuple[bool, ...]
    complex: tuple[bool, ...]
    """Original industrial complexes."""
    adjacent: tuple[tuple[int, ...], ...]
    powers: tuple[Power, ...]
    """In turn order."""
    units: dict[str, UnitType]
    neutral_entry_cost: int
    canals: tuple[Canal, ...]
    start: tuple[tuple[int, int, str, int], ...]
    """(space, power, unit code, count)."""

    @property
    def index(self) -> dict[str, int]:
        return _index(self.names)

    def space(self, name: str) -> int:
        """Space index by name (ASCII, case-insensitive: 'Rußia' or a Kelvin sign for K is not a
        name); ValueError naming the unknown space."""
        key = name.strip()
        i = _folded(self.names).get(key.lower()) if key.isascii() else None
        if i is None:
            raise ValueError(f"unknown space {name.strip()!r}")
        return i

    def power(self, code: str) -> int:
        for i, p in enumerate(self.powers):
            if p.code == code.upper():
                return i
        raise ValueError(f"unknown power {code!r}; powers: {', '.join(p.code for p in self.powers)}")

    def canal_between(self, a: int, b: int) -> Canal | None:
        for c in self.canals:
            if set(c.sea_zones) == {a, b}:
                return c
        return None


@lru_cache(maxsize=8)
def _index(names: tuple[str, ...]) -> dict[str, int]:
    return {n: i for i, n in enumerate(names)}


@lru_cache(maxsize=8)
def _folded(names: tuple[str, ...]) -> dict[str, int]:
    return {n.lower(): i for i, n in enumerate(names)}


def board_from_data(doc: dict, source: str = "<data>", expect_classic: bool = False) -> Board:
    """Validate a map document and build the ``Board``; raise ``MapError`` listing every problem."""
    problems: list[str] = []
    if doc.get("format") != FORMAT:
        problems.append(f"format is {doc.get('format')!r}, expected {FORMAT!r}")
    for key in ("powers", "units", "spaces", "start", "canals", "neutral_entry_cost"):
        if key not in doc:
            problems.append(f"missing key {key!r}")
    if problems:
        raise MapError(source, problems)
    units: dict[str, UnitType] = {}
    for code, u in doc["units"].items():
        try:
            units[code] = UnitType(code=code, **u)
            if u["kind"] not in UNIT_KINDS:
                problems.append(f"unit {code}: kind {u['kind']!r} is not one of {UNIT_KINDS}")
        except TypeError as exc:
            problems.append(f"unit {code}: {exc}")
    for needed in ("inf", "arm", "ftr", "bmb", "bb", "cv", "trn", "sub", "aa", "ic"):
        if needed not in units:
            problems.append(f"unit type {needed!r} is missing")
    spaces = doc["spaces"]
    names = tuple(s["name"] for s in spaces)
    index = {n: i for i, n in enumerate(names)}
    if len(index) != len(names):
        problems.append("space names are not unique")
    for bad in (n for n in names if any(ch in n for ch in ";:,>#*")):
        problems.append(f"space {bad!r}: a name may not contain ; : , > # *")
    power_codes = [p["code"] for p in doc["powers"]]
    adjacent: list[tuple[int, ...]] = []
    for s in spaces:
        adj = []
        for n in s["adjacent"]:
            if n not in index:
                problems.append(f"space {s['name']!r}: unknown neighbour {n!r}")
            elif n == s["name"]:
                problems.append(f"space {s['name']!r} is adjacent to itself")
            else:
                adj.append(index[n])
        adjacent.append(tuple(sorted(adj)))
        if s["owner"] is not None and s["owner"] not in power_codes:
            problems.append(f"space {s['name']!r}: unknown owner {s['owner']!r}")
        if s["sea"] and (s["owner"] or s["production"] or s["complex"] or s["neutral"]):
            problems.append(f"sea zone {s['name']!r} has an owner, production, complex or neutral flag")
        if not s["sea"] and s["neutral"] != (s["owner"] is None):
            problems.append(f"land {s['name']!r}: a land space is neutral exactly when it has no owner")
        if s["production"] < 0:
            problems.append(f"space {s['name']!r}: negative production")
    for i, adj in enumerate(adjacent):
        for j in adj:
            if i not in adjacent[j]:
                problems.append(f"adjacency is not symmetric: {names[i]!r} lists {names[j]!r} but not back")
    powers = []
    for p in doc["powers"]:
        if p["capital"] not in index:
            problems.append(f"power {p['code']}: unknown capital {p['capital']!r}")
            continue
        cap = index[p["capital"]]
        if spaces[cap]["owner"] != p["code"]:
            problems.append(f"power {p['code']}: its capital {p['capital']!r} is not its own at the start")
        powers.append(Power(p["code"], p["name"], p["alliance"], int(p["pus"]), cap))
    if sorted({p["alliance"] for p in doc["powers"]}) != ["Allies", "Axis"]:
        problems.append("the alliances must be exactly 'Axis' and 'Allies'")
    canals = []
    for c in doc["canals"]:
        zones = [index.get(z) for z in c["sea_zones"]]
        lands = [index.get(z) for z in c["controlled_by"]]
        if None in zones or None in lands or len(zones) != 2:
            problems.append(f"canal {c['name']}: unknown or wrong spaces")
            continue
        if zones[1] not in adjacent[zones[0]] or not all(spaces[z]["sea"] for z in zones):
            problems.append(f"canal {c['name']}: its sea zones must be adjacent sea zones")
        canals.append(Canal(c["name"], (zones[0], zones[1]), tuple(lands)))
    start = []
    for s in doc["start"]:
        where, code, kind = index.get(s["space"]), s["unit"], units.get(s["unit"])
        if where is None or kind is None or s["power"] not in power_codes or s["count"] < 1:
            problems.append(f"starting stack {s}: unknown space, unit or power, or a bad count")
            continue
        at_sea = spaces[where]["sea"]
        if (kind.kind == "sea" and not at_sea) or (kind.kind in ("land", "building") and at_sea):
            problems.append(f"starting stack {s}: a {kind.name} cannot start in {s['space']!r}")
        if kind.kind == "air" and at_sea and not any(t["space"] == s["space"] and t["unit"] == "cv" for t in doc["start"]):
            problems.append(f"starting stack {s}: fighters at sea need a carrier")
        start.append((where, power_codes.index(s["power"]), code, int(s["count"])))
    for i, s in enumerate(spaces):
        has_ic = any(t[0] == i and t[2] == "ic" for t in start)
        if has_ic != bool(s["complex"]):
            problems.append(f"space {s['name']!r}: complex flag and starting complexes disagree")
    if expect_classic:
        counts = {"spaces": len(spaces), "land": sum(not s["sea"] for s in spaces),
                  "neutral": sum(s["neutral"] for s in spaces), "sea": sum(s["sea"] for s in spaces),
                  "start_units": sum(t[3] for t in start)}
        for key, want in EXPECTED.items():
            if counts[key] != want:
                problems.append(f"{key}: {counts[key]}, the classic board has {want}")
    if problems:
        raise MapError(source, problems)
    return Board(names=names, sea=tuple(bool(s["sea"]) for s in spaces),
                 production=tuple(int(s["production"]) for s in spaces),
                 owner=tuple(power_codes.index(s["owner"]) if s["owner"] else None for s in spaces),
                 neutral=tuple(bool(s["neutral"]) for s in spaces), complex=tuple(bool(s["complex"]) for s in spaces),
                 adjacent=tuple(adjacent), powers=tuple(powers), units=units,
                 neutral_entry_cost=int(doc["neutral_entry_cost"]), canals=tuple(canals), start=tuple(start))


@lru_cache(maxsize=4)
def load_board(path: str | None = None) -> Board:
    """The project's classic map (default) or a user's file, validated."""
    file = Path(path) if path else MAP_FILE
    try:
        doc = json.loads(file.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise MapError(str(file), [f"cannot read: {exc}"]) from None
    return board_from_data(doc, str(file), expect_classic=path is None)
