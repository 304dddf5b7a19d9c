"""A&A Chess weapons development (option ``research``) and battleship shore bombardment on
hand-built situations."""
from __future__ import annotations

from collections import deque

import pytest

from arbiter.games.aachess import AAChessGame
from arbiter.games.aachess.rules import DEVELOPMENTS
from arbiter.games.base import CHANCE, IllegalMove, OptionError

from tests.test_aachess_rules import blank, put, where


def test_research_option_values():
    assert AAChessGame().research is False
    assert AAChessGame(research=True).research is True
    assert AAChessGame(research="on").research is True and AAChessGame(research="off").research is False
    with pytest.raises(OptionError, match="research"):
        AAChessGame(research="sometimes")
    # Off: the turn starts with the purchase.
    assert AAChessGame().new_initial_state().decision_kind() == "purchase"


def test_research_phase_dice_and_breakthrough():
    game = AAChessGame(research=True)
    s = game.new_initial_state()
    assert s.decision_kind() == "research" and s.current_player() == 0 and s.phase == "research"
    ru = s.pus[0]
    legal = s.legal_moves()
    assert legal[0] == "-" and "1 jets" in legal and f"{ru // 5} heavy" in legal and f"{ru // 5 + 1} heavy" not in legal
    assert len(legal) == 1 + len(DEVELOPMENTS) * (ru // 5)
    with pytest.raises(IllegalMove, match="unknown development"):
        s.check_move("2 lasers")
    with pytest.raises(IllegalMove, match="cost"):
        s.check_move(f"{ru // 5 + 1} jets")
    with pytest.raises(IllegalMove, match="cannot read"):
        s.check_move("two jets")
    s.apply("3 jets")
    assert s.pus[0] == ru - 15 and s.current_player() == CHANCE
    assert s.chance_outcomes() == [1, 2, 3, 4, 5, 6] and [str(o) for o in s.chance_outcomes()] == list("123456")
    s.apply_chance(4)
    assert s.current_player() == CHANCE and s.chance["left"] == 2 and s.tech[0] == []
    # The position round-trips in the middle of the research dice.
    assert game.from_text(s.to_text()).to_text() == s.to_text()
    s.apply_chance(6)  # breakthrough: the last die is not needed
    assert s.tech[0] == ["jets"] and s.decision_kind() == "purchase" and s.pus[0] == ru - 15
    assert s.to_data()["tech"]["RU"] == ["jets"]
    again = game.from_text(s.to_text())
    assert again.tech[0] == ["jets"] and again.to_text() == s.to_text()
    text = s.render()
    assert "breakthrough" in text and "RU jets" in text.splitlines()[-1]
    assert "developed: jets" in game.from_text(s.to_text()).render()


def test_research_without_breakthrough_and_no_research():
    game = AAChessGame(research=True)
    s = game.new_initial_state()
    s.apply("1 heavy")
    s.apply_chance(5)
    assert s.tech[0] == [] and s.decision_kind() == "purchase"
    s2 = game.new_initial_state()
    s2.apply("-")
    assert s2.decision_kind() == "purchase" and s2.pus[0] == 24
    assert any("does no research" in line for line in s2.log)


def test_research_is_skipped_when_poor_or_complete_and_refuses_a_known_development():
    s = blank("GE", "combat_move", research=True)
    s.tech[1] = ["jets"]
    put(s, "ic", "GE", "Germany")
    s.phase = "research"
    with pytest.raises(IllegalMove, match="already developed"):
        s.check_move("1 jets")
    s.pus[1] = 4
    s._advance()
    assert s.phase == "purchase"
    s.pus[1], s.phase = 40, "research"
    s.tech[1] = list(DEVELOPMENTS)
    s._advance()
    assert s.phase == "purchase"


def test_jet_fighters_defend_at_5():
    for tech, total in (([], 4), (["jets"], 5)):
        s = blank("GE")
        s.tech[0] = list(tech)
        put(s, "ftr", "RU", "Caucasus")
        put(s, "arm", "GE", "Ukraine S.S.R.")
        put(s, "inf", "RU", "Caucasus")
        s.apply("1 arm : Ukraine S.S.R. > Caucasus")
        assert any(f"defender {total + 2} →" in line for line in s.log), s.log


def test_super_submarines_attack_at_3_and_strike_first():
    for tech, total, first in (([], 4, False), (["supersubs"], 6, True)):
        s = blank("GE")
        s.tech[1] = list(tech)
        put(s, "sub", "GE", "Baltic Sea Zone", 2)
        put(s, "bb", "UK", "North Sea Zone")
        s.apply("2 sub : Baltic Sea Zone > North Sea Zone")
        assert any(line.startswith(f"round 1: attacker {total} →") for line in s.log), s.log
        assert any("first strike sinks 1 bb" in line for line in s.log) == first


def test_heavy_bombers_attack_with_12_and_raid_with_three_dice():
    for tech, total in (([], 4), (["heavy"], 12)):
        s = blank("GE")
        s.tech[1] = list(tech)
        put(s, "inf", "RU", "Karelia S.S.R.", 3)
        put(s, "bmb", "GE", "Germany")
        s.apply("1 bmb : Germany > East Europe > Karelia S.S.R.")
        assert any(line.startswith(f"round 1: attacker {total} →") for line in s.log), s.log
    for tech, lost in (([], 5), (["heavy"], 15)):
        s = blank("GE")
        s.tech[1] = list(tech)
        put(s, "ic", "UK", "United Kingdom")
        put(s, "bmb", "GE", "Germany", 2)
        s.pus[2] = 30
        s.apply("bomb 2 bmb : Germany > West Europe > North Sea Zone > United Kingdom")
        assert s.pus[2] == 30 - lost
    # ryof6: an odd number of bomber dice rolls the half PU (one heavy bomber: 3 dice, 7 + coin).
    s = blank("GE", variant="ryof6")
    s.tech[1] = ["heavy"]
    put(s, "ic", "UK", "United Kingdom")
    put(s, "bmb", "GE", "Germany")
    s.pus[2] = 30
    s.apply("bomb 1 bmb : Germany > West Europe > North Sea Zone > United Kingdom")
    assert s.current_player() == CHANCE
    s.apply_chance(1)
    assert s.pus[2] == 22


def _path(s, start: str, steps: int) -> list[str]:
    """A shortest flying path (no neutrals) from ``start`` to some space exactly ``steps`` away."""
    b = s.board
    a = b.space(start)
    parent = {a: None}
    queue, dist = deque([a]), {a: 0}
    while queue:
        x = queue.popleft()
        for y in b.adjacent[x]:
            if y not in dist and not b.neutral[y]:
                dist[y], parent[y] = dist[x] + 1, x
                queue.append(y)
    end = next(x for x in sorted(dist) if dist[x] == steps and b.sea[x])
    path = [end]
    while parent[path[-1]] is not None:
        path.append(parent[path[-1]])
    return [b.names[x] for x in reversed(path)]


def test_long_range_aircraft_move_two_more():
    for tech, ok in (([], False), (["longrange"], True)):
        s = blank("GE", "noncombat_move")
        s.tech[1] = list(tech)
        (f,) = put(s, "ftr", "GE", "Germany")
        (bm,) = put(s, "bmb", "GE", "Germany")
        (arm,) = put(s, "arm", "GE", "Germany")
        assert s.remaining(f) == (6 if ok else 4) and s.remaining(bm) == (8 if ok else 6)
        assert s.remaining(arm) == 2
        path = " > ".join(_path(s, "Germany", 5))
        if ok:
            s.move(f"1 ftr : {path}", False)
            assert s.remaining(s.units[f.id]) == 1
        else:
            with pytest.raises(IllegalMove, match="has 4 move"):
                s.move(f"1 ftr : {path}", False)


def test_shore_bombardment_adds_the_battleship_to_the_first_round_only():
    for bb, first in ((False, 2), (True, 6)):
        s = blank("UK")
        put(s, "trn", "UK", "North Sea Zone")
        if bb:
            (ship,) = put(s, "bb", "UK", "North Sea Zone")
        put(s, "inf", "UK", "United Kingdom", 2)
        put(s, "inf", "GE", "West Europe", 3)
        s.apply("2 inf : United Kingdom > North Sea Zone; 2 inf : North Sea Zone > West Europe")
        assert any(line.startswith(f"round 1: {'(bombardment +4) ' if bb else ''}attacker {first} →")
                   for line in s.log), s.log
        if bb:
            assert any("shore bombardment of West Europe: 1 battleship(s) from North Sea Zone, +4" in line
                       for line in s.log)
            assert ship.id in s.units and where(s, ship) == "North Sea Zone"  # never a casualty
            assert not any(line.startswith("round 2: (bombardment") for line in s.log)


def test_bombardment_needs_an_amphibious_assault_from_its_zone_and_no_sea_battle():
    s = blank("UK")
    put(s, "trn", "UK", "North Sea Zone")
    (ship,) = put(s, "bb", "UK", "North Sea Zone")
    (far,) = put(s, "bb", "UK", "Baltic Sea Zone")  # not the zone the troops landed from
    put(s, "inf", "UK", "United Kingdom", 2)
    put(s, "inf", "GE", "West Europe", 3)
    s.move("2 inf : United Kingdom > North Sea Zone", True)
    s.move("2 inf : North Sea Zone > West Europe", True)
    we = s.board.space("West Europe")
    assert [u.id for u in s.bombardment(we)] == [ship.id]
    s.units[ship.id].mark("sea")  # fought a sea battle this turn
    assert s.bombardment(we) == []
    # Land units that walked in do not bring bombardment.
    s2 = blank("GE")
    put(s2, "bb", "GE", "Black Sea Zone")  # next to the battle, but nobody landed from it
    put(s2, "inf", "RU", "Ukraine S.S.R.")
    put(s2, "arm", "GE", "East Europe")
    s2.apply("1 arm : East Europe > Ukraine S.S.R.")
    assert not any("bombardment" in line for line in s2.log)


def test_rockets_cost_three_pus_from_an_unmoved_aa_gun_within_three_spaces():
    s = blank("GE")
    put(s, "aa", "GE", "Germany", 2)
    put(s, "ic", "UK", "United Kingdom")
    put(s, "ic", "US", "East US")
    put(s, "inf", "GE", "Germany")
    s.pus[2], s.pus[4] = 30, 30
    with pytest.raises(IllegalMove, match="has not developed rockets"):
        s.check_move("rocket Germany @ United Kingdom")
    s.tech[1] = ["rockets"]
    assert s.rocket_distance(s.board.space("Germany"), s.board.space("United Kingdom")) <= 3
    with pytest.raises(IllegalMove, match="more than 3 spaces"):
        s.check_move("rocket Germany @ East US")
    with pytest.raises(IllegalMove, match="needs an enemy industrial complex"):
        s.check_move("rocket Germany @ Karelia S.S.R.")
    with pytest.raises(IllegalMove, match="no AA gun in West Europe"):
        s.check_move("rocket West Europe @ United Kingdom")
    with pytest.raises(IllegalMove, match="no AA gun in Germany"):  # two guns, two rockets
        s.check_move("rocket Germany @ United Kingdom; rocket Germany @ United Kingdom; rocket Germany @ United Kingdom")
    with pytest.raises(IllegalMove, match="may not move again"):  # a gun that fired stays
        s.check_move("rocket Germany @ United Kingdom; rocket Germany @ United Kingdom; 1 aa : Germany > East Europe")
    with pytest.raises(IllegalMove, match="no AA gun in Germany"):  # a gun that moved cannot fire
        s.check_move("2 aa : Germany > East Europe; rocket Germany @ United Kingdom")
    s.apply("rocket Germany @ United Kingdom; rocket Germany @ United Kingdom")
    assert s.pus[2] == 24 and sum("rocket (AA gun" in line for line in s.log) == 2
    assert s.decision_kind() == "noncombat_move"
    with pytest.raises(IllegalMove, match="combat move"):
        s.check_move("rocket Germany @ United Kingdom")


def test_rockets_roll_a_die_under_ryof6_and_round_trip():
    s = blank("GE", variant="ryof6")
    s.tech[1] = ["rockets"]
    put(s, "aa", "GE", "Germany")
    put(s, "ic", "UK", "United Kingdom")
    s.pus[2] = 4
    s.apply("rocket Germany @ United Kingdom")
    assert s.current_player() == CHANCE and s.chance["what"] == "rocket"
    data = s.to_data()
    assert data["rockets"] and data["rockets"][0][1] == "United Kingdom"
    assert s.game.from_text(s.to_text()).to_text() == s.to_text()
    s.apply_chance(5)
    assert s.pus[2] == 0  # 5 PUs, capped by the treasury


def test_engines_library_fires_rockets_and_predicts_with_developed_values():
    from arbiter.games.aachess import library as lib

    s = blank("GE")
    put(s, "aa", "GE", "Germany")
    put(s, "ic", "UK", "United Kingdom")
    s.pus[2] = 30
    assert lib.rocket_attacks(s.clone()) == []
    s.tech[1] = ["rockets"]
    assert lib.rocket_attacks(s.clone()) == ["rocket Germany @ United Kingdom"]
    # predict: one heavy bomber (12) destroys two infantry in one round; a plain one (4) does not.
    t = blank("GE", variant="orthodox")
    (bm,) = put(t, "bmb", "GE", "Germany")
    inf = put(t, "inf", "RU", "Karelia S.S.R.", 2)
    assert lib.predict(t, [bm], inf, max_rounds=1)[1] == inf
    t.tech[1] = ["heavy"]
    assert lib.predict(t, [bm], inf, max_rounds=1)[1] == []
