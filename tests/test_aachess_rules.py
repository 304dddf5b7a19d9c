"""A&A Chess rules on hand-built situations: movement, transports, carriers, canals, AA, bombing,
battles, capture and capital transfer, options and notation."""
from __future__ import annotations

import pytest

from arbiter.games.aachess import AAChessGame
from arbiter.games.aachess.rules import Unit
from arbiter.games.base import CHANCE, IllegalMove, OptionError


def blank(power="GE", phase="combat_move", **options):
    """The classic position emptied of units, ``power`` to make its ``phase`` decision."""
    game = AAChessGame(**options)
    s = game.new_initial_state()
    s.units, s.next_id = {}, 1
    s.turn, s.phase = s.board.power(power), phase
    s.start_owner = list(s.owner)
    return s


def put(s, code, power, space, n=1) -> list[Unit]:
    out = [s._new_unit(code, s.board.power(power), s.board.space(space)) for _ in range(n)]
    if s.board.sea[s.board.space(space)]:
        s._dock(s.board.space(space))
    return out


def where(s, unit: Unit) -> str:
    return s.board.names[s.units[unit.id].at]


def owner(s, space) -> str | None:
    o = s.owner[s.board.space(space)]
    return s.board.powers[o].code if o is not None else None


def test_options_and_seats():
    assert AAChessGame().seat_roles == ("RU+UK+US", "GE+JP") and AAChessGame().options["variant"] == "cof"
    assert AAChessGame(seats=5).seat_roles == ("RU", "GE", "UK", "JP", "US")
    assert AAChessGame(seats=3).num_seats == 3 and AAChessGame(seats=4).seat_roles[2] == "UK+US"
    for bad, match in (({"seats": 6}, "seats"), ({"variant": "dice"}, "variant"), ({"max_rounds": 0}, "max_rounds"),
                       ({"research": "maybe"}, "research"), ({"colour": 1}, "unknown option")):
        with pytest.raises(OptionError, match=match):
            AAChessGame(**bad)
    assert AAChessGame(seats=2).forfeit_returns(1) == [1.0, -1.0]
    assert AAChessGame(seats=5).forfeit_returns(2) == [-1.0, 1.0, -1.0, 1.0, -1.0]


def test_initial_position_and_text_round_trip():
    game = AAChessGame(seats=5)
    s = game.new_initial_state()
    assert s.current_player() == 0 and s.decision_kind() == "purchase"
    assert len(s.units) == 161
    assert game.from_text(s.to_text()).to_text() == s.to_text()
    with pytest.raises(ValueError, match="aachess position"):
        game.from_text("{}")


@pytest.mark.parametrize("field, value", [("power", 5), ("owners", None), ("tech", 3), ("pending", [1]),
                                          ("passes", []), ("casualties", {}), ("battle", {})])
def test_a_position_with_a_field_of_the_wrong_shape_is_a_value_error(field, value):
    """Game.from_text's contract: ValueError saying what is wrong. A field of the wrong JSON type
    raised AttributeError (e.g. 'int' object has no attribute 'upper'), and an empty casualties or
    battle object was read as a decision without fields (KeyError at the next step)."""
    import json

    game = AAChessGame()
    d = json.loads(game.new_initial_state().to_text())
    d[field] = value
    try:
        s = game.from_text(json.dumps(d))
    except ValueError:
        return
    assert s.current_player() == 0 and s.decision_kind() == "purchase"


def test_purchase_is_checked_against_the_treasury():
    s = AAChessGame().new_initial_state()
    with pytest.raises(IllegalMove, match="costs 27 PUs; RU has 24"):
        s.check_move("9 inf")
    with pytest.raises(IllegalMove, match="unknown unit 'tank'"):
        s.check_move("1 tank")
    s.apply("3 inf, 3 arm")
    assert s.bought == {"inf": 3, "arm": 3} and s.pus[0] == 0 and s.decision_kind() == "combat_move"


def test_blitz_through_empty_enemy_territory():
    s = blank("RU")
    (tank,) = put(s, "arm", "RU", "Karelia S.S.R.")
    (inf,) = put(s, "inf", "RU", "Karelia S.S.R.")
    put(s, "inf", "GE", "Germany")
    s.move("#1 : Karelia S.S.R. > East Europe > Germany", True)  # East Europe is German and empty
    assert owner(s, "East Europe") == "RU" and where(s, tank) == "Germany"
    assert s.pending == [s.board.space("Germany")]
    with pytest.raises(IllegalMove, match="1 move"):  # infantry cannot go two spaces at all
        s.clone().move(f"#{inf.id} : Karelia S.S.R. > Ukraine S.S.R. > Caucasus", True)
    s2 = blank("RU")
    put(s2, "arm", "RU", "Karelia S.S.R.")
    put(s2, "inf", "GE", "East Europe")
    with pytest.raises(IllegalMove, match="cannot blitz through East Europe: enemy units"):
        s2.move("1 arm : Karelia S.S.R. > East Europe > Germany", True)


def test_non_combat_moves_stay_in_friendly_land():
    s = blank("RU", "noncombat_move")
    put(s, "arm", "RU", "Karelia S.S.R.")
    with pytest.raises(IllegalMove, match="non-combat"):
        s.move("1 arm : Karelia S.S.R. > East Europe", False)
    s.move("1 arm : Karelia S.S.R. > Caucasus", False)


def test_transport_capacity_load_and_amphibious_assault():
    s = blank("UK")
    put(s, "trn", "UK", "North Sea Zone")
    inf = put(s, "inf", "UK", "United Kingdom", 3)
    put(s, "arm", "UK", "United Kingdom")
    put(s, "inf", "GE", "West Europe")
    s.move("2 inf : United Kingdom > North Sea Zone", True)
    with pytest.raises(IllegalMove, match="no own transport in North Sea Zone has room"):
        s.clone().move("1 inf : United Kingdom > North Sea Zone", True)
    with pytest.raises(IllegalMove, match="no own transport"):
        s.clone().move("1 arm : United Kingdom > North Sea Zone", True)
    s.move("2 inf : North Sea Zone > West Europe", True)  # amphibious assault
    assert where(s, inf[0]) == "West Europe" and s.units[inf[0].id].has("amph")
    assert s.board.space("West Europe") in s.pending
    trn = next(u for u in s.units.values() if u.t == "trn")
    with pytest.raises(IllegalMove, match="unloaded and may not move on"):
        s.clone().move(f"#{trn.id} : North Sea Zone > Baltic Sea Zone", True)


def test_a_land_unit_loaded_in_the_combat_move_does_not_unload_in_the_non_combat_move():
    """Rules (docs/games/aachess.md, movement): land and sea units that moved in the combat move do
    not move in the non-combat move; only planes do. Loading onto a transport is a move, so a unit
    loaded in the combat move stays aboard for the non-combat move (one loaded and unloaded in
    the combat move itself is an amphibious assault, or a landing on friendly land)."""
    s = blank("UK")
    put(s, "trn", "UK", "North Sea Zone")
    (inf,) = put(s, "inf", "UK", "United Kingdom")
    s.apply("1 inf : United Kingdom > North Sea Zone")  # loaded in the combat move
    assert s.decision_kind() == "noncombat_move" and s.units[inf.id].has("cm")
    with pytest.raises(IllegalMove, match="moved in the combat move"):
        s.check_move("1 inf : North Sea Zone > United Kingdom")
    # Loaded in the non-combat move, it may sail and unload there too.
    t = blank("UK", "noncombat_move")
    put(t, "trn", "UK", "North Sea Zone")
    (inf,) = put(t, "inf", "UK", "United Kingdom")
    t.apply("1 inf : United Kingdom > North Sea Zone; 1 trn : North Sea Zone > East Canada Sea Zone; "
            "1 inf : East Canada Sea Zone > East Canada")
    assert where(t, inf) == "East Canada"


def test_cargo_of_a_transport_that_fought_a_sea_battle_stays_aboard_for_the_turn():
    """Rules (docs/games/aachess.md): land and sea units in a battle stay there for the turn, and
    units cannot unload from a sea zone holding enemy units [project rule: clear the sea zone on an
    earlier turn]. A transport's cargo is in the battle with it: once the sea battle is won, the
    cargo does not unload in the non-combat move either, whenever it was loaded."""
    s = blank("UK")
    put(s, "trn", "GE", "North Sea Zone")
    put(s, "bb", "UK", "East Canada Sea Zone", 2)
    (trn,) = put(s, "trn", "UK", "East Canada Sea Zone")
    (inf,) = put(s, "inf", "UK", "East Canada Sea Zone")
    inf.on = trn.id  # loaded on an earlier turn
    s.apply("2 bb, 1 trn : East Canada Sea Zone > North Sea Zone")  # 8 against 1: the German transport sinks
    assert s.decision_kind() == "noncombat_move" and not s.hostile(s.mover, s.board.space("North Sea Zone"))
    assert s.units[inf.id].on == trn.id
    with pytest.raises(IllegalMove, match="may not move again"):
        s.check_move("1 inf : North Sea Zone > United Kingdom")


def test_transport_carries_its_cargo_and_one_armor_fills_it():
    s = blank("UK")
    (t,) = put(s, "trn", "UK", "North Sea Zone")
    (tank,) = put(s, "arm", "UK", "United Kingdom")
    s.move("1 arm : United Kingdom > North Sea Zone", True)
    s.move(f"#{t.id} : North Sea Zone > Baltic Sea Zone", True)
    assert where(s, tank) == "Baltic Sea Zone" and s.units[tank.id].on == t.id


def test_fighters_land_on_carriers_and_ride_with_them():
    s = blank("US", "noncombat_move")
    (cv,) = put(s, "cv", "US", "East US Sea Zone")
    put(s, "ftr", "US", "East US", 3)
    s.move("2 ftr : East US > East US Sea Zone", False)
    s._dock(s.board.space("East US Sea Zone"))
    assert s.carrier_room(s.board.power("US"), s.board.space("East US Sea Zone")) == 0
    s.move(f"#{cv.id} : East US Sea Zone > North Atlantic Sea Zone", False)
    assert sum(1 for u in s.units.values() if u.t == "ftr" and where(s, u) == "North Atlantic Sea Zone") == 2
    # A third fighter at sea without carrier room is lost when the non-combat move ends.
    s.move("1 ftr : East US > East US Sea Zone", False)
    s._land_planes()
    assert sum(1 for u in s.units.values() if u.t == "ftr") == 2


def test_planes_must_be_able_to_land_after_combat():
    s = blank("GE")
    put(s, "ftr", "GE", "Germany")
    put(s, "inf", "UK", "United Kingdom")
    put(s, "bmb", "GE", "Germany")
    # Germany > West Europe > North Sea Zone > United Kingdom uses 3 of 4: 1 left, no landing spot in reach.
    with pytest.raises(IllegalMove, match="could not land"):
        s.clone().move("1 ftr : Germany > West Europe > North Sea Zone > United Kingdom", True)
    s.move("1 bmb : Germany > West Europe > North Sea Zone > United Kingdom", True)  # 3 left: back home


def test_the_landing_spot_of_a_combat_flight_must_be_reachable_without_crossing_a_neutral():
    """Rules (docs/games/aachess.md, movement): planes may not fly over neutrals, and in the combat
    move a plane must keep enough moves to reach a landing spot. A landing spot it could reach
    only across a neutral is out of its reach: the flight is refused, not allowed to end in a
    plane that cannot land."""
    s = blank("US")
    for space in ("Panama", "New Zealand"):  # the landing spots near Peru Sea Zone become enemy land
        s.owner[s.board.space(space)] = s.board.power("JP")
    s.start_owner = list(s.owner)
    put(s, "sub", "JP", "Peru Sea Zone")
    bomber = put(s, "bmb", "US", "Brazil")[0]
    # 4 of its 6 moves to the battle: 2 left. Brazil is 2 away only across the neutral Peru or
    # Argentina-Chile; without them it is 4 away (West Panama, Carribean, North Brazil sea zones).
    with pytest.raises(IllegalMove, match="could not land"):
        s.clone().move("1 bmb : Brazil > North Brazil Sea Zone > Carribean Sea Zone > West Panama Sea Zone "
                       "> Peru Sea Zone", True)
    s.owner[s.board.space("Panama")] = s.board.power("US")
    s.start_owner = list(s.owner)  # Panama, 2 away by sea zones, is a landing spot again
    s.move("1 bmb : Brazil > North Brazil Sea Zone > Carribean Sea Zone > West Panama Sea Zone > Peru Sea Zone", True)
    assert where(s, bomber) == "Peru Sea Zone"


def test_canal_needs_both_suez_territories():
    s = blank("GE")
    put(s, "bb", "GE", "East Mediteranean Sea Zone")
    with pytest.raises(IllegalMove, match="Suez Canal is closed"):
        s.clone().move("1 bb : East Mediteranean Sea Zone > Red Sea Zone", True)
    s.owner[s.board.space("Anglo Sudan Egypt")] = s.board.power("GE")
    s.owner[s.board.space("Syria Jordan")] = s.board.power("JP")  # an ally's control opens it too
    s.move("1 bb : East Mediteranean Sea Zone > Red Sea Zone", True)


def test_neutral_entry_costs_three_pus():
    s = blank("GE")
    put(s, "inf", "GE", "West Europe")
    pus = s.pus[1]
    s.move("1 inf : West Europe > Spain", True)
    assert owner(s, "Spain") == "GE" and s.pus[1] == pus - 3


def test_aa_counts_plane_passes_across_territories_and_attacker_chooses():
    s = blank("GE")
    put(s, "aa", "UK", "United Kingdom")
    put(s, "inf", "UK", "United Kingdom")
    put(s, "aa", "RU", "Russia")
    put(s, "inf", "RU", "Russia")
    put(s, "bmb", "GE", "Germany", 3)
    put(s, "ftr", "GE", "Ukraine S.S.R.", 2)
    s.apply("3 bmb : Germany > West Europe > North Sea Zone > United Kingdom; "
            "2 ftr : Ukraine S.S.R. > Caucasus > Russia")
    assert sum(s.passes.values()) == 5
    # 5 passes -> one plane lost; the attacker chooses which (a bomber or a fighter).
    assert s.decision_kind() == "casualties" and s.cas["count"] == 1 and s.current_player() == 1
    s.apply("1 ftr")
    assert sum(1 for u in s.units.values() if u.t == "ftr") == 1
    assert any("AA fire: 5 plane-passes" in line for line in s.log)


def test_strategic_bombing_two_and_a_half_per_bomber_capped():
    s = blank("GE")
    put(s, "ic", "UK", "United Kingdom")
    put(s, "bmb", "GE", "Germany", 3)
    s.pus[2] = 30
    s.apply("bomb 3 bmb : Germany > West Europe > North Sea Zone > United Kingdom")
    assert s.pus[2] == 23  # 7 PUs
    s2 = blank("GE")
    put(s2, "ic", "UK", "United Kingdom")
    put(s2, "bmb", "GE", "Germany", 3)
    s2.pus[2] = 4
    s2.apply("bomb 3 bmb : Germany > West Europe > North Sea Zone > United Kingdom")
    assert s2.pus[2] == 0


def test_bombing_damage_is_the_total_of_every_raid_on_the_same_power_rounded_down_once():
    """Rules §5: each bomber that survives AA fire costs the enemy 2.5 PUs from its treasury, and
    the total is rounded down. One bomber on each of Russia's two complexes costs Russia 5 PUs
    (2 × 2.5), not 2 + 2: the half PUs of raids on the same power's complexes in one combat move
    add up before the total is rounded down; raids on different powers are counted apart."""
    s = blank("GE")
    put(s, "ic", "RU", "Russia")
    put(s, "ic", "RU", "Karelia S.S.R.")
    put(s, "ic", "UK", "United Kingdom")
    put(s, "bmb", "GE", "East Europe", 2)
    put(s, "bmb", "GE", "Germany")
    s.pus[0], s.pus[2] = 30, 30
    s.apply("bomb 1 bmb : East Europe > Karelia S.S.R.; bomb 1 bmb : East Europe > Karelia S.S.R. > Russia; "
            "bomb 1 bmb : Germany > West Europe > North Sea Zone > United Kingdom")
    assert s.pus[0] == 25 and s.pus[2] == 28
    # ryof6 rolls the half PU of the power's total: 2 bombers on Russia leave none to roll.
    r = blank("GE", variant="ryof6")
    put(r, "ic", "RU", "Russia")
    put(r, "ic", "RU", "Karelia S.S.R.")
    put(r, "bmb", "GE", "East Europe", 2)
    r.pus[0] = 30
    r.apply("bomb 1 bmb : East Europe > Karelia S.S.R.; bomb 1 bmb : East Europe > Karelia S.S.R. > Russia")
    assert r.current_player() != CHANCE and r.pus[0] == 25


def test_ryof6_bombing_rolls_the_half_pu():
    s = blank("GE", variant="ryof6")
    put(s, "ic", "UK", "United Kingdom")
    put(s, "bmb", "GE", "Germany")
    s.pus[2] = 30
    s.apply("bomb 1 bmb : Germany > West Europe > North Sea Zone > United Kingdom")
    assert s.current_player() == CHANCE and s.chance_outcomes() == [1, 2, 3, 4, 5, 6]
    s.apply_chance(2)
    assert s.pus[2] == 27


def test_battle_rounds_casualties_and_capture_of_a_capital_takes_the_treasury():
    s = blank("GE")
    put(s, "inf", "RU", "Russia", 3)
    put(s, "inf", "GE", "Karelia S.S.R.", 6)
    s.owner[s.board.space("Karelia S.S.R.")] = s.board.power("GE")
    s.start_owner = list(s.owner)
    s.pus[0], ge = 17, s.pus[1]
    s.apply("6 inf : Karelia S.S.R. > Russia")
    # COF, round 1: attack 6 -> 1 hit, defence 6 -> 1 hit (remainder 0); all casualties forced (one type).
    assert any(line.startswith("round 1: attacker 6 → 1 r0") for line in s.log)
    assert s.decision_kind() in ("retreat",)
    while s.decision_kind() == "retreat":
        s.apply("continue")
    assert owner(s, "Russia") == "GE" and s.pus[0] == 0 and s.pus[1] == ge + 17
    assert any("capital of RU: 17 PUs taken" in line for line in s.log)


def test_defender_chooses_its_own_casualties():
    s = blank("GE")
    put(s, "inf", "RU", "Caucasus")
    put(s, "arm", "RU", "Caucasus")
    put(s, "arm", "GE", "Ukraine S.S.R.", 2)
    s.apply("2 arm : Ukraine S.S.R. > Caucasus")
    assert s.decision_kind() == "casualties" and s.current_player() == 0  # Russia's seat
    with pytest.raises(IllegalMove, match="exactly 1 casualties"):
        s.check_move("1 inf, 1 arm")
    s.apply("1 arm")
    assert [u.t for u in s.units.values() if u.p == 0] == ["inf"]


def test_stalled_battle_forces_a_retreat_under_orthodox():
    s = blank("GE", variant="orthodox")
    put(s, "inf", "RU", "Caucasus")
    put(s, "arm", "GE", "Ukraine S.S.R.")
    s.apply("1 arm : Ukraine S.S.R. > Caucasus")  # 3 against 2: nobody loses a unit
    assert s.decision_kind() == "retreat" and s.legal_moves() == ["retreat Ukraine S.S.R."]
    with pytest.raises(IllegalMove, match="must retreat"):
        s.check_move("continue")
    s.apply("retreat Ukraine S.S.R.")
    assert any("stalled" in line for line in s.log)
    assert s.units[2].at == s.board.space("Ukraine S.S.R.")


@pytest.mark.parametrize("reply", ["retreatUkraine S.S.R.", "retreat-Ukraine S.S.R.", "retreats Ukraine S.S.R."])
def test_retreat_is_a_word_then_the_space(reply):
    """'retreat <space>': the space was read from the 8th character on, so 'retreatUkraine S.S.R.'
    was taken as a retreat to Ukraine S.S.R. (and 'retreats ...' as one to 's ...')."""
    s = blank("GE", variant="orthodox")
    put(s, "inf", "RU", "Caucasus")
    put(s, "arm", "GE", "Ukraine S.S.R.")
    s.apply("1 arm : Ukraine S.S.R. > Caucasus")
    assert s.decision_kind() == "retreat"
    with pytest.raises(IllegalMove):
        s.check_move(reply)
    s.check_move("RETREAT  Ukraine S.S.R.")


def test_the_stalled_battle_rule_covers_every_variant_that_carries_nothing():
    """Project rule (docs/games/aachess.md, rules §3 *Stalled battles*): under a variant with
    nothing carried from round to round (`orthodox`, `ryof` and `ryof6` alike), a round in which
    neither side loses a unit ends the battle: the attacker must retreat. The rules page names every
    such variant."""
    from pathlib import Path

    from arbiter.games.aachess.combat import CARRY_VARIANTS, VARIANTS
    plain = [v for v in VARIANTS if v not in CARRY_VARIANTS]
    assert plain == ["orthodox", "ryof", "ryof6"]
    for variant in plain:
        s = blank("GE", variant=variant)
        put(s, "inf", "RU", "Caucasus")
        put(s, "arm", "GE", "Ukraine S.S.R.")
        s.apply("1 arm : Ukraine S.S.R. > Caucasus")  # 3 against 2
        while s.current_player() == CHANCE:
            s.apply_chance(6)  # every rolled remainder misses
        assert s.decision_kind() == "retreat" and s.legal_moves() == ["retreat Ukraine S.S.R."], variant
    doc = (Path(__file__).resolve().parent.parent / "docs" / "games" / "aachess.md").read_text(encoding="utf-8")
    section = doc[doc.index("**Stalled battles**"):doc.index("### §4")]
    bullet = doc[doc.index("* **Stalled battle**"):doc.index("* `cofr`: when the battle ends")]
    for variant in plain:
        assert f"`{variant}`" in section and f"`{variant}`" in bullet, variant


def test_stalled_amphibious_attackers_are_destroyed():
    s = blank("UK", variant="orthodox")
    put(s, "trn", "UK", "North Sea Zone")
    put(s, "inf", "UK", "United Kingdom")
    put(s, "inf", "GE", "West Europe")
    s.apply("1 inf : United Kingdom > North Sea Zone; 1 inf : North Sea Zone > West Europe")
    # 1 against 2, orthodox: no hits either side -> stalled, no retreat for a landed unit.
    assert not any(u.t == "inf" and u.p == 2 for u in s.units.values())


def test_ryof_rolls_the_ignored_fraction_on_the_referee_dice():
    s = blank("GE", variant="ryof")
    put(s, "inf", "RU", "Caucasus")
    put(s, "arm", "GE", "Ukraine S.S.R.")
    s.apply("1 arm : Ukraine S.S.R. > Caucasus")
    assert s.current_player() == CHANCE  # attacker's 3: hit on 1-3
    s.apply_chance(3)
    assert s.current_player() == CHANCE  # defender's 2: hit on 1-2
    s.apply_chance(6)
    assert owner(s, "Caucasus") == "GE"


def test_wrong_decisions_are_refused_with_reasons():
    s = blank("GE")
    put(s, "inf", "GE", "Germany")
    for move, match in (("1 inf Germany > Poland", "expected 'units : from > to'"),
                        ("1 inf : Germany > Atlantis", "unknown space 'Atlantis'"),
                        ("1 inf : Germany > Russia", "not adjacent"),
                        ("2 inf : Germany > East Europe", "only 1 inf"),
                        ("1 inf : Germany > East Europe > Ukraine S.S.R.", "1 move"),
                        ("#99 : Germany > East Europe", "#99 is not one of")):
        with pytest.raises(IllegalMove, match=match):
            s.check_move(move)
    with pytest.raises(IllegalMove, match=r"move 2 \("):
        s.check_move("1 inf : Germany > East Europe; 1 inf : Germany > East Europe")


@pytest.mark.parametrize("count", ["٣", "03", "9" * 5000])
def test_a_count_is_ascii_digits_without_a_leading_zero(count):
    """An engine's reply is adversarial: int() read a Unicode digit ('٣ inf' bought 3 infantry)
    and a 5000-digit count raised int()'s ValueError, not IllegalMove: the referee crashed."""
    s = AAChessGame().new_initial_state()
    with pytest.raises(IllegalMove, match="cannot read"):
        s.check_move(f"{count} inf")
    s = blank("GE")
    put(s, "inf", "GE", "Germany")
    with pytest.raises(IllegalMove, match="cannot read"):
        s.check_move(f"{count} inf : Germany > East Europe")


@pytest.mark.parametrize("unit_id", ["#+{}", "# {}", "#0{}", "#{}_0", "#{}\u0660"])
def test_a_unit_id_is_hash_and_its_number(unit_id):
    """'#17' names unit 17; int() also read '#+17', '# 17', '#017' and '#1_7' (and '#1٠' as #10)."""
    s = blank("GE")
    inf = put(s, "inf", "GE", "Germany", 11)
    s.check_move(f"#{inf[0].id} : Germany > East Europe")
    with pytest.raises(IllegalMove, match="is not one of those"):
        s.check_move(unit_id.format(inf[0].id) + " : Germany > East Europe")


@pytest.mark.parametrize("name", ["Germ\u0430ny", "\u212Aarelia S.S.R.", "Ru\u00dfia"])
def test_a_space_name_is_ascii(name):
    """Names are case-insensitive (documented), but casefold() also took 'Rußia' for Russia and a
    Kelvin sign for K: non-ASCII look-alikes are not names."""
    s = blank("GE")
    put(s, "inf", "GE", "Germany")
    with pytest.raises(IllegalMove, match="unknown space"):
        s.check_move(f"1 inf : Germany > {name}")
    s.check_move("1 inf : GERMANY > east europe")


def test_placement_at_complexes_and_unplaced_units_are_lost():
    s = blank("GE", "place")
    put(s, "ic", "GE", "Germany")
    s.bought = {"inf": 2, "bb": 1, "arm": 1}
    with pytest.raises(IllegalMove, match="cannot be placed in East Europe"):
        s.check_move("2 inf @ East Europe")
    s.apply("2 inf @ Germany; 1 bb @ Baltic Sea Zone")
    assert sorted(u.t for u in s.units.values()) == ["bb", "ic", "inf", "inf"]
    assert any("unplaced and lost: 1 arm" in line for line in s.log)


def test_income_needs_the_capital_and_victory_ends_the_game():
    game = AAChessGame(max_rounds=1)
    s = game.new_initial_state()
    s.owner[s.board.space("Russia")] = s.board.power("GE")
    s.owner[s.board.space("United Kingdom")] = s.board.power("GE")
    s.turn, s.phase = 4, "place"
    s.bought = {}
    s._advance()
    assert s.is_terminal() and s.result == "Axis" and s.returns() == [-1.0, 1.0]
    assert "2 Allied capitals" in s.end_detail()


def test_round_limit_is_a_draw():
    s = AAChessGame(max_rounds=1).new_initial_state()
    s.turn, s.phase, s.bought = 4, "place", {}
    s._advance()
    assert s.is_terminal() and s.returns() == [0.0, 0.0] and "round limit" in s.end_detail()


def test_axis_income_victory_does_not_need_the_axis_capitals():
    # Rules §2: "the Axis win at the end of a round in which they hold two of the three Allied
    # capitals (...) plus both their own, or their total income reaches 84": the income victory
    # is an alternative of its own, with no condition on the capitals.
    s = AAChessGame(max_rounds=5).new_initial_state()
    b = s.board
    for sp in range(len(b.names)):
        if not b.sea[sp] and not b.neutral[sp]:
            s.owner[sp] = b.power("GE")
    for space, power in (("Japan", "US"), ("Russia", "RU"), ("United Kingdom", "UK"), ("East US", "US")):
        s.owner[b.space(space)] = b.power(power)
    assert s.alliance_income("Axis") >= 84
    s.turn, s.phase, s.bought = 4, "place", {}
    s._advance()
    assert s.is_terminal() and s.result == "Axis" and "income" in s.end_detail()
    # Below 84 and without two Allied capitals, losing Japan leaves the game running.
    s2 = AAChessGame(max_rounds=5).new_initial_state()
    s2.owner[b.space("Japan")] = b.power("US")
    s2.turn, s2.phase, s2.bought = 4, "place", {}
    s2._advance()
    assert not s2.is_terminal()
