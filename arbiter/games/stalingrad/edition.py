"""The map and counters as data: load, validate and describe an edition of the game.

The printed map and counter values are not public, so the project ships its own edition
(``edition.toml`` beside this file) and anyone holding the printed original can load theirs
(game option ``map_file``). A file is checked completely before use and *every* problem is
reported, each naming the area, counter or key at fault, so a hand-typed map can be fixed in one
pass. The format is described in ``docs/games/stalingrad.md`` ("The data file").
"""
from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

EDITION_FILE = Path(__file__).with_name("edition.toml")
"""The project's edition, shipped as package data."""

AREA_NUMBERS = tuple(range(2, 13))
"""Areas are named by the 2d6 totals 2-12: an infiltration roll names an area."""
GERMAN_KINDS = ("infantry", "armor", "leader")
ID_PREFIX = {"infantry": "I", "armor": "A", "leader": "L"}
SPECIALS = ("sniper", "ambush")
SPECIAL_LETTER = {"sniper": "s", "ambush": "a", None: ""}
MAX_UNITS_PER_AREA = 2
"""Stacking: at most 2 infantry/armor counters plus 1 leader per area (a rule, not edition data)."""
MAX_LEADERS_PER_AREA = 1


class EditionError(ValueError):
    """A data file that cannot be played; ``problems`` lists every problem found."""

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{source}: {len(self.problems)} problem(s) in the map/counter data:\n{lines}")


@dataclass(frozen=True)
class GermanType:
    kind: str
    count: int
    movement: int
    crosses: tuple[int, int]
    """Crosses on the front (full / competent) and back (depleted / elite) side."""


@dataclass(frozen=True)
class SovietType:
    stars: int
    special: str | None
    count: int

    @property
    def code(self) -> str:
        """The counter's notation: its stars, then ``s`` for a sniper or ``a`` for an ambush."""
        return f"{self.stars}{SPECIAL_LETTER[self.special]}"


@dataclass(frozen=True)
class Edition:
    """A validated map and counter mix. Build with ``load_edition`` or ``edition_from_data``."""

    name: str
    source: str
    adjacent: dict[int, tuple[int, ...]]
    entry: tuple[int, ...]
    shields: dict[int, int]
    """Red-shield area -> stars printed on its shield."""
    german: dict[str, GermanType]
    soviet: tuple[SovietType, ...]
    """Soviet counter types, in file order; a counter is named by its type's ``code``."""
    german_ids: tuple[str, ...] = field(init=False)
    german_kind: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        ids, kinds = [], []
        for kind in GERMAN_KINDS:
            for n in range(1, self.german[kind].count + 1):
                ids.append(f"{ID_PREFIX[kind]}{n}")
                kinds.append(kind)
        object.__setattr__(self, "german_ids", tuple(ids))
        object.__setattr__(self, "german_kind", tuple(kinds))

    @property
    def areas(self) -> tuple[int, ...]:
        return AREA_NUMBERS

    @property
    def soviet_codes(self) -> tuple[str, ...]:
        return tuple(t.code for t in self.soviet)

    def soviet_mix(self) -> dict[str, int]:
        """Counter code -> how many counters of that type the edition has."""
        return {t.code: t.count for t in self.soviet}

    def describe(self) -> dict[str, Any]:
        """The edition as plain data (for the wire and for docs)."""
        return {
            "name": self.name,
            "areas": list(AREA_NUMBERS),
            "adjacent": {str(a): list(n) for a, n in self.adjacent.items()},
            "entry": list(self.entry),
            "shields": {str(a): s for a, s in self.shields.items()},
            "german": {k: {"count": t.count, "movement": t.movement, "crosses": list(t.crosses)}
                       for k, t in self.german.items()},
            "soviet": [{"code": t.code, "stars": t.stars, "special": t.special, "count": t.count}
                       for t in self.soviet],
        }


# --- loading ---------------------------------------------------------------------------------


def load_edition(path: str | Path | None = None) -> Edition:
    """The edition in ``path`` (``.toml`` or ``.json``), or the project's edition; raises
    ``EditionError`` listing every problem."""
    if path is None:
        return _project_edition()
    return _load_file(str(Path(path).resolve()))


@lru_cache(maxsize=1)
def _project_edition() -> Edition:
    return _load_file(str(EDITION_FILE))


@lru_cache(maxsize=16)
def _load_file(path: str) -> Edition:
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise EditionError(path, [f"cannot read the file: {exc.strerror or exc}"]) from None
    try:
        if p.suffix.lower() == ".json":
            data = json.loads(raw)
        else:
            data = tomllib.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        kind = "JSON" if p.suffix.lower() == ".json" else "TOML"
        raise EditionError(path, [f"not valid {kind}: {exc}"]) from None
    return edition_from_data(data, path)


def edition_from_data(data: Any, source: str = "<data>") -> Edition:
    """Validate parsed data (a dict as read from TOML or JSON); raise ``EditionError`` listing
    every problem, or return the ``Edition``."""
    problems: list[str] = []
    if not isinstance(data, dict):
        raise EditionError(source, [f"the top level must be a table/object, not {_type(data)}"])
    for key in sorted(set(data) - {"name", "areas", "german", "soviet"}):
        problems.append(f"unknown top-level key {key!r} (known: name, areas, german, soviet)")
    name = data.get("name", Path(source).stem)
    if not isinstance(name, str):
        problems.append(f"name must be a string, not {_type(name)}")
        name = str(name)
    adjacent, entry, shields = _check_areas(data.get("areas"), problems)
    german = _check_german(data.get("german"), problems)
    soviet = _check_soviet(data.get("soviet"), problems)
    if adjacent is not None:
        _check_reachable(adjacent, entry, shields, problems)
    if entry or shields:
        _check_counts(entry, shields, german, soviet, problems)
    if problems:
        raise EditionError(source, problems)
    return Edition(name=name, source=source, adjacent=adjacent, entry=tuple(entry), shields=shields,
                   german=german, soviet=tuple(soviet))


def _type(value: Any) -> str:
    return {dict: "a table", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number"}.get(type(value), type(value).__name__)


def _int(value: Any, what: str, problems: list[str], minimum: int) -> int | None:
    if type(value) is not int:
        problems.append(f"{what} must be an integer, not {_type(value)} {value!r}")
        return None
    if value < minimum:
        problems.append(f"{what} must be at least {minimum}, not {value}")
        return None
    return value


def _check_areas(areas: Any, problems: list[str]):
    if areas is None:
        problems.append("the [areas] table is missing")
        return None, [], {}
    if not isinstance(areas, dict):
        problems.append(f"areas must be a table keyed by area number, not {_type(areas)}")
        return None, [], {}
    listed: dict[int, Any] = {}
    for key, value in areas.items():
        try:
            number = int(str(key).strip())
        except ValueError:
            problems.append(f"areas: key {key!r} is not an area number (areas are named 2-12)")
            continue
        if number not in AREA_NUMBERS:
            problems.append(f"area {number} is unknown: areas are named by the 2d6 totals 2-12")
            continue
        if number in listed:
            problems.append(f"area {number} is defined twice")
            continue
        listed[number] = value
    for number in AREA_NUMBERS:
        if number not in listed:
            problems.append(f"area {number} is missing (every 2d6 total 2-12 must name an area)")
    adjacent: dict[int, tuple[int, ...]] = {}
    entry: list[int] = []
    shields: dict[int, int] = {}
    for number in sorted(listed):
        spec = listed[number]
        where = f"area {number}"
        if not isinstance(spec, dict):
            problems.append(f"{where} must be a table like {{ adjacent = [..] }}, not {_type(spec)}")
            adjacent[number] = ()
            continue
        for key in sorted(set(spec) - {"adjacent", "entry", "shield"}):
            problems.append(f"{where}: unknown key {key!r} (known: adjacent, entry, shield)")
        neighbours = spec.get("adjacent")
        clean: list[int] = []
        if neighbours is None:
            problems.append(f"{where}: 'adjacent' is missing")
        elif not isinstance(neighbours, list):
            problems.append(f"{where}: 'adjacent' must be a list of area numbers, not {_type(neighbours)}")
        else:
            for n in neighbours:
                if type(n) is not int:
                    problems.append(f"{where}: adjacent area {n!r} is not an area number")
                elif n not in AREA_NUMBERS:
                    problems.append(f"{where}: adjacent area {n} is unknown (areas are 2-12)")
                elif n == number:
                    problems.append(f"{where} lists itself as adjacent")
                elif n in clean:
                    problems.append(f"{where} lists adjacent area {n} twice")
                else:
                    clean.append(n)
        adjacent[number] = tuple(sorted(clean))
        is_entry = spec.get("entry", False)
        if type(is_entry) is not bool:
            problems.append(f"{where}: 'entry' must be true or false, not {is_entry!r}")
        elif is_entry:
            entry.append(number)
        if "shield" in spec:
            stars = _int(spec["shield"], f"{where}: 'shield' (stars on the shield)", problems, 0)
            if stars is not None:
                shields[number] = stars
    for a in sorted(adjacent):
        for b in adjacent[a]:
            if b in adjacent and a not in adjacent[b]:
                problems.append(f"asymmetric adjacency: area {a} lists {b} as adjacent but area {b} "
                                f"does not list {a}")
    if not entry:
        problems.append("no entry area: mark the German arrow areas with entry = true")
    if not shields:
        problems.append("no red-shield area: mark them with shield = <stars>")
    for a in entry:
        if a in shields:
            problems.append(f"area {a} is both an entry area and a red-shield area: the set-up "
                            f"would put German counters on a Soviet counter")
    if any(n not in AREA_NUMBERS for n in listed) or len(listed) != len(AREA_NUMBERS):
        return None, entry, shields
    return adjacent, entry, shields


def _check_reachable(adjacent, entry, shields, problems) -> None:
    seen = set(entry)
    frontier = list(entry)
    while frontier:
        a = frontier.pop()
        for b in adjacent.get(a, ()):
            if b not in seen:
                seen.add(b)
                frontier.append(b)
    for a in sorted(shields):
        if entry and a not in seen:
            problems.append(f"red-shield area {a} cannot be reached from any entry area")


def _check_german(german: Any, problems: list[str]) -> dict[str, GermanType] | None:
    if german is None:
        problems.append("the [german] table is missing")
        return None
    if not isinstance(german, dict):
        problems.append(f"german must be a table with infantry, armor and leader, not {_type(german)}")
        return None
    for key in sorted(set(german) - set(GERMAN_KINDS)):
        problems.append(f"german: unknown counter kind {key!r} (known: infantry, armor, leader)")
    out: dict[str, GermanType] = {}
    ok = True
    for kind in GERMAN_KINDS:
        spec = german.get(kind)
        where = f"german.{kind}"
        if spec is None:
            problems.append(f"{where} is missing")
            ok = False
            continue
        if not isinstance(spec, dict):
            problems.append(f"{where} must be a table, not {_type(spec)}")
            ok = False
            continue
        for key in sorted(set(spec) - {"count", "movement", "crosses"}):
            problems.append(f"{where}: unknown key {key!r} (known: count, movement, crosses)")
        count = _int(spec.get("count"), f"{where}.count", problems, 0)
        movement = _int(spec.get("movement"), f"{where}.movement", problems, 1)
        crosses = spec.get("crosses")
        pair: tuple[int, int] | None = None
        if not isinstance(crosses, list) or len(crosses) != 2:
            problems.append(f"{where}.crosses must be a list of two integers [front, back], "
                            f"not {crosses!r}")
        else:
            a = _int(crosses[0], f"{where}.crosses front", problems, 0)
            b = _int(crosses[1], f"{where}.crosses back", problems, 0)
            if a is not None and b is not None:
                pair = (a, b)
        if count is None or movement is None or pair is None:
            ok = False
            continue
        out[kind] = GermanType(kind, count, movement, pair)
    return out if ok else None


def _check_soviet(soviet: Any, problems: list[str]) -> list[SovietType] | None:
    if soviet is None:
        problems.append("the [[soviet]] list is missing")
        return None
    if not isinstance(soviet, list):
        problems.append(f"soviet must be a list of counter types ([[soviet]] tables), not {_type(soviet)}")
        return None
    merged: dict[tuple[int, str | None], int] = {}
    ok = True
    for i, spec in enumerate(soviet, 1):
        where = f"soviet counter type #{i}"
        if not isinstance(spec, dict):
            problems.append(f"{where} must be a table, not {_type(spec)}")
            ok = False
            continue
        for key in sorted(set(spec) - {"count", "stars", "special"}):
            problems.append(f"{where}: unknown key {key!r} (known: count, stars, special)")
        count = _int(spec.get("count"), f"{where}: count", problems, 1)
        stars = _int(spec.get("stars"), f"{where}: stars", problems, 0)
        special = spec.get("special")
        if special in ("", "none"):
            special = None
        if special is not None and special not in SPECIALS:
            problems.append(f"{where}: special must be 'sniper' or 'ambush' (or absent), not {special!r}")
            ok = False
            continue
        if count is None or stars is None:
            ok = False
            continue
        merged[(stars, special)] = merged.get((stars, special), 0) + count
    if not ok:
        return None
    if not merged:
        problems.append("there are no Soviet counters")
        return None
    return [SovietType(stars, special, count) for (stars, special), count in merged.items()]


def _check_counts(entry, shields, german, soviet, problems) -> None:
    """Counts that cannot be set up or played; each part runs when its data is valid."""
    if soviet is not None:
        total = sum(t.count for t in soviet)
        if total < len(shields):
            problems.append(f"impossible counts: {total} Soviet counters cannot fill the {len(shields)} "
                            f"red-shield areas (one each)")
    if german is None:
        return
    units = german["infantry"].count + german["armor"].count
    leaders = german["leader"].count
    cap = MAX_UNITS_PER_AREA * len(entry)
    if units == 0:
        problems.append("impossible counts: there is no German infantry or armor (count 0)")
    if units > cap:
        problems.append(f"impossible counts: {units} German infantry and armor counters cannot set up "
                        f"in {len(entry)} entry area(s) (at most {MAX_UNITS_PER_AREA} per area, {cap} in all)")
    most_leaders = min(len(entry), units) * MAX_LEADERS_PER_AREA
    if leaders > most_leaders:
        problems.append(f"impossible counts: {leaders} German leaders cannot set up: each needs its own "
                        f"entry area holding infantry or armor, and only {most_leaders} can")
    germans = units + leaders
    if len(shields) > germans:
        problems.append(f"impossible counts: the {len(shields)} Soviet counters set up on the shields "
                        f"would already outnumber the {germans} German counters (an instant loss)")
