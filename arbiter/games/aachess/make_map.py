"""Generate ``classic_map.json``, the project's own A&A Chess map data file, once.

Run: ``python -m arbiter.games.aachess.make_map PATH/TO/classic_summary.json``

The facts (spaces, adjacency, production, owners, capitals, original complexes, canals, starting
units and PUs) come from ``classic_summary.json``, the flattened form of TripleA's community
encoding of the Milton Bradley classic board (``triplea-maps/world_war_ii_classic``,
``map/games/classic.xml``). Those are facts; this script only re-expresses them in the project's
format (powers and unit types by short codes, one list of spaces with their adjacency), adds the
rule constants of the rules (``docs/games/aachess.md``) (unit values, the neutral entry cost) and
writes the file. The generated file is committed; the game never reads the source, which is not
part of this repository.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

TARGET = Path(__file__).with_name("classic_map.json")

POWERS = {"Russians": ("RU", "Russia"), "Germans": ("GE", "Germany"), "British": ("UK", "United Kingdom"),
          "Japanese": ("JP", "Japan"), "Americans": ("US", "United States")}
UNIT_CODES = {"infantry": "inf", "armour": "arm", "fighter": "ftr", "bomber": "bmb", "battleship": "bb",
              "carrier": "cv", "transport": "trn", "submarine": "sub", "aaGun": "aa", "factory": "ic"}
UNITS = {  # rules §1 (classic values); kind decides where a unit may be
    "inf": dict(name="infantry", kind="land", attack=1, defence=2, move=1, cost=3, transport=1),
    "arm": dict(name="armor", kind="land", attack=3, defence=2, move=2, cost=5, transport=2),
    "ftr": dict(name="fighter", kind="air", attack=3, defence=4, move=4, cost=12),
    "bmb": dict(name="bomber", kind="air", attack=4, defence=1, move=6, cost=15),
    "bb": dict(name="battleship", kind="sea", attack=4, defence=4, move=2, cost=24),
    "cv": dict(name="aircraft carrier", kind="sea", attack=1, defence=3, move=2, cost=18, carries=2),
    "trn": dict(name="transport", kind="sea", attack=0, defence=1, move=2, cost=8, capacity=2),
    "sub": dict(name="submarine", kind="sea", attack=2, defence=2, move=2, cost=8),
    "aa": dict(name="AA gun", kind="land", attack=0, defence=0, move=1, cost=5, transport=2),
    "ic": dict(name="industrial complex", kind="building", attack=0, defence=0, move=0, cost=15),
}
NEUTRAL_ENTRY_COST = 3


def convert(summary: dict) -> dict:
    """The project's map document from the shared summary (pure; checked by the tests)."""
    spaces, start = [], []
    for name in sorted(summary["territories"]):
        t = summary["territories"][name]
        owner = POWERS[t["owner"]][0] if t["owner"] else None
        space = {"name": name, "sea": bool(t["sea"]), "production": int(t["production"]), "owner": owner,
                 "neutral": (not t["sea"] and owner is None), "complex": bool(t["original_factory"]),
                 "adjacent": sorted(t["adjacent"])}
        spaces.append(space)
        for u in t["units"]:
            start.append({"space": name, "power": POWERS[u["owner"]][0], "unit": UNIT_CODES[u["type"]],
                          "count": int(u["count"])})
    capitals = {POWERS[t["capital"]][0]: name for name, t in summary["territories"].items() if t["capital"]}
    powers = [{"code": POWERS[p][0], "name": POWERS[p][1], "alliance": summary["alliances"][p],
               "pus": int(summary["starting_PUs"][p]), "capital": capitals[POWERS[p][0]]}
              for p in summary["players_in_turn_order"]]
    canals: dict[str, dict] = {}
    for c in summary["canals"]:
        entry = canals.setdefault(c["canal"], {"name": c["canal"], "sea_zones": [], "controlled_by": c["land_territories"]})
        entry["sea_zones"].append(c["sea_zone"])
    return {"format": "aachess-map/1",
            "source": {"from": "classic_summary.json (TripleA classic.xml, triplea-maps/world_war_ii_classic)",
                       "commit": summary.get("source", {}).get("commit", "")},
            "powers": powers, "units": UNITS, "neutral_entry_cost": NEUTRAL_ENTRY_COST,
            "canals": sorted(canals.values(), key=lambda c: c["name"]), "spaces": spaces, "start": start}


def dumps(document: dict) -> str:
    """JSON with one line per power, unit type, canal, space and starting stack (diff-friendly)."""
    parts = []
    for key, value in document.items():
        if isinstance(value, list):
            body = ",\n".join("  " + json.dumps(v, ensure_ascii=False) for v in value)
            parts.append(f" {json.dumps(key)}: [\n{body}\n ]")
        elif isinstance(value, dict) and key == "units":
            body = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in value.items())
            parts.append(f" {json.dumps(key)}: {{\n{body}\n }}")
        else:
            parts.append(f" {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m arbiter.games.aachess.make_map PATH/TO/classic_summary.json", file=sys.stderr)
        return 2
    source = Path(argv[0])
    document = convert(json.loads(source.read_text()))
    TARGET.write_text(dumps(document))
    print(f"wrote {TARGET} ({len(document['spaces'])} spaces, "
          f"{sum(s['count'] for s in document['start'])} starting units)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
