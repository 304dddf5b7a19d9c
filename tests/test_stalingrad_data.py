"""The Stalingrad map/counter data file: the project's edition loads; a user's file loads through
the ``map_file`` option; every problem of a broken file is reported, each one named."""
from __future__ import annotations

import copy
import json
import tomllib

import pytest

from arbiter.games import OptionError, load_game
from arbiter.games.stalingrad.edition import EDITION_FILE, EditionError, edition_from_data, load_edition

BASE = tomllib.loads(EDITION_FILE.read_text())


def broken(change) -> list[str]:
    data = copy.deepcopy(BASE)
    change(data)
    with pytest.raises(EditionError) as exc:
        edition_from_data(data, "my-map.toml")
    assert str(exc.value).startswith("my-map.toml: ")
    return exc.value.problems


def only(problems: list[str], text: str) -> None:
    assert len(problems) == 1 and text in problems[0], problems


def test_the_project_edition_is_valid_and_round_trips_through_json(tmp_path):
    ed = load_edition()
    assert ed.name == "arbiter edition 1" and len(ed.german_ids) == 10 and sum(ed.soviet_mix().values()) == 9
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(BASE))
    game = load_game("stalingrad", map_file=str(path))
    assert game.edition.adjacent == ed.adjacent and game.edition.soviet == ed.soviet
    assert game.new_initial_state().chance_outcomes() == ["1", "1", "1", "2", "2", "3", "1s", "1s", "2a"]


def test_a_users_edition_changes_the_game(tmp_path):
    data = copy.deepcopy(BASE)
    data["german"]["infantry"]["count"] = 4
    data["soviet"].append({"count": 1, "stars": 2, "special": "sniper"})
    path = tmp_path / "printed.toml"
    path.write_text(_to_toml(data))
    game = load_game("stalingrad", map_file=str(path))
    assert game.edition.german_ids == ("I1", "I2", "I3", "I4", "A1", "A2", "L1", "L2")
    assert "2s" in game.new_initial_state().chance_outcomes()


def test_unknown_area():
    only(broken(lambda d: d["areas"]["7"]["adjacent"].append(13)), "area 7: adjacent area 13 is unknown")
    problems = broken(lambda d: d["areas"].update({"14": {"adjacent": [12]}}))
    assert any("area 14 is unknown" in p for p in problems), problems
    only(broken(lambda d: d["areas"].update({"x": {"adjacent": []}})), "key 'x' is not an area number")


def test_missing_area():
    def drop(d):
        del d["areas"]["6"]
        for a in ("2", "7", "10"):
            d["areas"][a]["adjacent"].remove(6)
    only(broken(drop), "area 6 is missing (every 2d6 total 2-12 must name an area)")


def test_asymmetric_adjacency():
    only(broken(lambda d: d["areas"]["2"]["adjacent"].append(3)),
         "asymmetric adjacency: area 2 lists 3 as adjacent but area 3 does not list 2")


def test_self_and_duplicate_adjacency():
    problems = broken(lambda d: d["areas"]["9"]["adjacent"].extend([9, 8]))
    assert any("area 9 lists itself as adjacent" in p for p in problems)
    assert any("area 9 lists adjacent area 8 twice" in p for p in problems)


def test_impossible_counts():
    only(broken(lambda d: d["german"]["infantry"].update(count=7)),
         "impossible counts: 9 German infantry and armor counters cannot set up in 4 entry area(s)")
    only(broken(lambda d: d["german"]["leader"].update(count=5)),
         "impossible counts: 5 German leaders cannot set up")
    only(broken(lambda d: d.update(soviet=[{"count": 4, "stars": 1}])),
         "impossible counts: 4 Soviet counters cannot fill the 5 red-shield areas")
    problems = broken(lambda d: (d["german"]["infantry"].update(count=0), d["german"]["armor"].update(count=0)))
    assert any("there is no German infantry or armor" in p for p in problems)
    assert any("would already outnumber the 2 German counters" in p for p in problems)
    only(broken(lambda d: d["soviet"][0].update(count=-1)), "soviet counter type #1: count must be at least 1")


def test_bad_values_and_unknown_keys_are_named():
    only(broken(lambda d: d["areas"]["8"].update(shield="one")), "area 8: 'shield' (stars on the shield) must be an integer")
    only(broken(lambda d: d["areas"]["8"].update(sheild=1)), "area 8: unknown key 'sheild'")
    only(broken(lambda d: d["german"]["armor"].update(crosses=[3])), "german.armor.crosses must be a list of two")
    only(broken(lambda d: d["german"].update(cavalry={"count": 1})), "german: unknown counter kind 'cavalry'")
    only(broken(lambda d: d["soviet"][3].update(special="mortar")), "special must be 'sniper' or 'ambush'")
    only(broken(lambda d: d.update(colour="red")), "unknown top-level key 'colour'")
    problems = broken(lambda d: d["areas"]["2"].update(entry="yes"))
    assert problems[0] == "area 2: 'entry' must be true or false, not 'yes'", problems


def test_map_structure_problems():
    only(broken(lambda d: d["areas"]["8"].update(entry=True)), "area 8 is both an entry area and a red-shield area")

    def cut_off(d):
        for a, b in ((7, 12), (8, 12), (9, 12), (11, 12)):
            d["areas"][str(a)]["adjacent"].remove(b)
        d["areas"]["12"]["adjacent"] = []
    only(broken(cut_off), "red-shield area 12 cannot be reached from any entry area")


def test_every_problem_is_reported_at_once():
    def many(d):
        d["areas"]["2"]["adjacent"].append(3)        # asymmetric
        d["areas"]["5"]["adjacent"].append(15)       # unknown area
        d["german"]["leader"]["count"] = 9           # impossible count
        d["soviet"][1]["stars"] = "two"              # bad value
    problems = broken(many)
    assert len(problems) == 4, problems
    text = "\n".join(problems)
    for part in ("asymmetric adjacency", "adjacent area 15 is unknown", "9 German leaders", "stars must be an integer"):
        assert part in text


def test_file_errors_reach_the_option(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[areas\n2 = {")
    with pytest.raises(OptionError, match="not valid TOML"):
        load_game("stalingrad", map_file=str(bad))
    asym = tmp_path / "asym.json"
    data = copy.deepcopy(BASE)
    data["areas"]["2"]["adjacent"].append(3)
    data["soviet"] = [{"count": 2, "stars": 1}]
    asym.write_text(json.dumps(data))
    with pytest.raises(OptionError) as exc:
        load_game("stalingrad", map_file=str(asym))
    message = str(exc.value)
    assert "2 problem(s)" in message and "area 2 lists 3" in message and "2 Soviet counters cannot fill" in message


def _to_toml(data: dict) -> str:
    """Just enough TOML writing for these tests."""
    lines = [f'name = "{data["name"]}"', "[areas]"]
    for a, spec in data["areas"].items():
        fields = [f"adjacent = {spec['adjacent']}"] + [f"{k} = {str(v).lower()}" for k, v in spec.items()
                                                       if k != "adjacent"]
        lines.append(f"{a} = {{ {', '.join(fields)} }}")
    for kind, spec in data["german"].items():
        lines += [f"[german.{kind}]"] + [f"{k} = {v}" for k, v in spec.items()]
    for spec in data["soviet"]:
        lines += ["[[soviet]]"] + [f"{k} = {json.dumps(v)}" for k, v in spec.items()]
    return "\n".join(lines) + "\n"


def test_the_rules_document_states_the_project_edition():
    """docs/games/stalingrad.md carries the map and the counters as tables (a reader of the
    repository alone can write an engine): they are the edition the game loads."""
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "docs" / "games" / "stalingrad.md").read_text(encoding="utf-8")
    ed = load_edition()
    map_section = doc[doc.index("### Map"):doc.index("### Counters")]
    areas = {int(m[0]): ([int(x) for x in m[1].split(",")], m[2].strip() == "yes", m[3].strip())
             for m in re.findall(r"^\| (\d+) +\| ([\d, ]+?) +\|([^|]*)\|([^|]*)\|$", map_section, re.M)}
    assert sorted(areas) == list(ed.areas)
    for area, (adjacent, entry, shield) in areas.items():
        assert tuple(adjacent) == ed.adjacent[area], area
        assert entry == (area in ed.entry), area
        assert shield == str(ed.shields.get(area, "—")), area
    soviets = re.findall(r"^\| (\d) +\| (\d) +\| (\S+) +\| `(\w+)` +\|$", doc, re.M)
    assert {code: (int(n), int(stars), None if special == "—" else special) for n, stars, special, code in soviets} \
        == {t.code: (t.count, t.stars, t.special) for t in ed.soviet}
    for kind, t in ed.german.items():
        row = next(line for line in doc.splitlines() if line.startswith(f"| {t.count} (`") and f"| {kind} " in line)
        assert f"| {t.movement} |" in row and f"{t.crosses[0]} cross" in row.split("|")[4] \
            and f"{t.crosses[1]} cross" in row.split("|")[5], row


def test_the_rules_document_examples_are_one_valid_position():
    """The position text example of docs/games/stalingrad.md is a full position from_text reads
    (every counter of the edition on the map, in the pool or removed), and the example request
    state beside it shows what the German player sees of that position (an armor's reachable
    areas stop at the Soviet areas it enters)."""
    import re
    from pathlib import Path

    from arbiter.games.stalingrad import StalingradGame

    doc = (Path(__file__).resolve().parent.parent / "docs" / "games" / "stalingrad.md").read_text(encoding="utf-8")
    text = re.search(r"^turn=\S+ .*$", doc[doc.index("## Position text"):], re.M).group(0)
    state = StalingradGame().from_text(text)
    assert state.to_text() == text
    data = state.observation_data(0)
    example = doc[doc.index("```python", doc.index("## What the engine sees")):]
    example = re.sub(r"#[^\n]*", "", example).replace("True", "true").replace("False", "false")
    for key in ("turn", "ast", "eliminated", "soviet", "pool", "removed", "unseen", "must_leave"):
        at = example.index(f'"{key}": ') + len(key) + 4
        assert json.JSONDecoder().raw_decode(example, at)[0] == data[key], key
    at = example.index('"A1": ', example.index('"moves": ')) + 6
    assert json.JSONDecoder().raw_decode(example, at)[0] == data["moves"]["A1"]
