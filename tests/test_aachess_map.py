"""The project's A&A Chess map file: generated from the shared facts, validated by the loader."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from arbiter.games.aachess.board import MAP_FILE, MapError, board_from_data, load_board
from arbiter.games.aachess.make_map import dumps


def test_counts_of_the_classic_board():
    b = load_board()
    assert len(b.names) == 128
    assert sum(b.sea) == 58 and sum(not s for s in b.sea) == 70 and sum(b.neutral) == 14
    assert sum(c for _, _, _, c in b.start) == 161
    assert sum(len(a) for a in b.adjacent) == 2 * 310


def test_adjacency_is_symmetric_and_irreflexive():
    b = load_board()
    for i, adj in enumerate(b.adjacent):
        assert i not in adj
        for j in adj:
            assert i in b.adjacent[j], (b.names[i], b.names[j])


def test_powers_pus_capitals_and_complexes():
    b = load_board()
    assert [p.code for p in b.powers] == ["RU", "GE", "UK", "JP", "US"]
    assert {p.code: p.pus for p in b.powers} == {"RU": 24, "GE": 32, "UK": 30, "JP": 25, "US": 36}
    assert {p.code: b.names[p.capital] for p in b.powers} == {
        "RU": "Russia", "GE": "Germany", "UK": "United Kingdom", "JP": "Japan", "US": "East US"}
    assert {p.code: p.alliance for p in b.powers} == {"RU": "Allies", "GE": "Axis", "UK": "Allies",
                                                       "JP": "Axis", "US": "Allies"}
    assert sorted(b.names[i] for i, c in enumerate(b.complex) if c) == [
        "East US", "Germany", "Japan", "Karelia S.S.R.", "Russia", "South Europe", "United Kingdom", "West US"]
    assert b.neutral_entry_cost == 3
    suez = next(c for c in b.canals if c.name == "Suez Canal")
    assert sorted(b.names[i] for i in suez.controlled_by) == ["Anglo Sudan Egypt", "Syria Jordan"]


def test_starting_income_is_the_production_owned():
    b = load_board()
    income = [sum(b.production[i] for i, o in enumerate(b.owner) if o == p) for p in range(5)]
    assert income == [24, 32, 30, 25, 36]


def test_the_committed_file_is_in_make_maps_own_format():
    assert MAP_FILE.read_text() == dumps(json.loads(MAP_FILE.read_text()))  # written by make_map.dumps


def test_bad_files_are_refused_with_every_problem_named():
    doc = json.loads(MAP_FILE.read_text())
    bad = copy.deepcopy(doc)
    bad["spaces"][0]["adjacent"].append("Atlantis")
    russia = next(s for s in bad["spaces"] if s["name"] == "Germany")
    russia["adjacent"].remove("Poland") if "Poland" in russia["adjacent"] else russia["adjacent"].pop()
    bad["start"][0]["unit"] = "zeppelin"
    with pytest.raises(MapError) as info:
        board_from_data(bad, "bad.json", expect_classic=True)
    text = str(info.value)
    assert "unknown neighbour 'Atlantis'" in text and "not symmetric" in text and "zeppelin" in text
    assert "start_units" in text


def test_unreadable_file(tmp_path: Path):
    (tmp_path / "x.json").write_text("{")
    with pytest.raises(MapError, match="cannot read"):
        load_board(str(tmp_path / "x.json"))


def test_the_rules_document_states_the_units_and_powers_of_the_map_file():
    """docs/games/aachess.md §1 and §2 carry the unit values and the powers as tables: they are
    the map file's."""
    import re

    doc = (Path(__file__).resolve().parent.parent / "docs" / "games" / "aachess.md").read_text(encoding="utf-8")
    data = json.loads(MAP_FILE.read_text(encoding="utf-8"))
    units = {m[1]: m[2:] for m in re.findall(
        r"^\| ([a-zA-Z ]+) \(`(\w+)`\) \| (\S+) \| (\S+) \| (\S+) \| (\S+) \|", doc, re.M)}
    assert units.keys() == data["units"].keys()
    for code, (attack, defence, move, cost) in units.items():
        u = data["units"][code]
        shown = [0 if v == "—" else int(v) for v in (attack, defence, move, cost)]
        assert shown == [u["attack"], u["defence"], u["move"], u["cost"]], code
    powers = re.findall(r"^\| [A-Za-z ]+ \(`(\w\w)`\) \| (\w+) \| ([A-Za-z ]+) \| (\d+) \|$", doc, re.M)
    assert [(p["code"], p["alliance"], p["capital"], p["pus"]) for p in data["powers"]] \
        == [(c, a, cap, int(pus)) for c, a, cap, pus in powers]
