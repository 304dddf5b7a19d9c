"""A&A Chess audit: each test pins one rule of docs/games/aachess.md that the referee did not
enforce (or enforced differently), and hostile replies that crashed the referee."""
from __future__ import annotations

import pytest

from arbiter.games.base import IllegalMove

from test_aachess_rules import blank, put


@pytest.mark.parametrize("units", ["0 inf", "0 inf, 0 arm", "0 inf, 1 inf", "bomb 0 bmb"])
def test_a_zero_count_in_a_move_is_refused_not_a_crash(units):
    """'0 inf : A > B' selected no unit and the move raised KeyError (pop from an empty set):
    an exception other than IllegalMove crashes the referee. A count is at least 1."""
    s = blank("GE")
    put(s, "inf", "GE", "Germany", 2)
    put(s, "arm", "GE", "Germany")
    put(s, "bmb", "GE", "Germany")
    with pytest.raises(IllegalMove, match="at least 1"):
        s.check_move(f"{units} : Germany > East Europe")


def test_a_complex_placed_this_turn_does_not_take_new_units_until_the_next_turn():
    """Rules: units are placed at complexes owned since the start of the turn. A complex placed
    in the same placement is not one of them: '1 ic @ East Europe; 3 inf @ East Europe' was
    accepted, and ships could be placed beside the new complex too."""
    s = blank("GE", phase="place")
    put(s, "ic", "GE", "Germany")
    s.bought = {"ic": 1, "inf": 3, "trn": 1}
    for plan in ("1 ic @ East Europe; 3 inf @ East Europe", "1 ic @ Finland Norway; 1 trn @ North Sea Zone"):
        with pytest.raises(IllegalMove, match="cannot be placed"):
            s.check_move(plan)
    s.check_move("1 ic @ East Europe; 3 inf @ Germany; 1 trn @ Baltic Sea Zone")
    s.apply("1 ic @ East Europe; 3 inf @ Germany")
    new = next(u for u in s.units.values() if u.t == "ic" and s.board.names[u.at] == "East Europe")
    assert s.game.from_text(s.to_text()).to_text() == s.to_text()
    # on Germany's next turn the complex is one of its own since the start of the turn
    s.turn, s.phase = s.board.power("GE"), "place"
    s._begin_turn()
    s.phase, s.bought = "place", {"inf": 1}
    assert s.units[new.id].flags == ""
    s.check_move("1 inf @ East Europe")


def test_hits_fired_by_submarines_alone_are_taken_from_ships_only():
    """Rules §1: a submarine hits only ships. Where the whole of a side's fire in a round (its
    carry included) comes from submarines, none of its hits may fall on a plane. 2 attacking subs
    (ryof: 4, rolled, a hit on 1) let the defender give up a fighter instead of its carrier."""
    s = blank("GE", variant="ryof")
    put(s, "sub", "GE", "Baltic Sea Zone", 2)
    put(s, "cv", "UK", "North Sea Zone")
    put(s, "ftr", "UK", "North Sea Zone", 2)
    s.apply("2 sub : Baltic Sea Zone > North Sea Zone")
    s.apply_chance(1)  # the attacker's remainder 4 hits
    assert s.decision_kind() != "casualties" or s.cas["power"] != s.board.power("UK"), s.cas
    assert any("defender loses 1 cv," in line for line in s.log), s.log
    # defending submarines alone: their hit sinks the battleship, never the fighter
    s = blank("GE", variant="orthodox")
    put(s, "bb", "GE", "Baltic Sea Zone")
    put(s, "ftr", "GE", "Germany")
    put(s, "sub", "UK", "North Sea Zone", 2)
    s.apply("1 bb : Baltic Sea Zone > North Sea Zone; 1 ftr : Germany > West Europe > North Sea Zone")
    assert any("attacker loses 1 bb" in line for line in s.log), s.log
    # a pooled total (carrier 3 + sub 2 = 5, a hit) may still hit the plane: the attacker chooses
    s = blank("GE", variant="orthodox")
    put(s, "bb", "GE", "Baltic Sea Zone")
    put(s, "ftr", "GE", "Germany")
    put(s, "cv", "UK", "North Sea Zone")
    put(s, "sub", "UK", "North Sea Zone")
    s.apply("1 bb : Baltic Sea Zone > North Sea Zone; 1 ftr : Germany > West Europe > North Sea Zone")
    while s.decision_kind() == "casualties" and s.cas["side"] == "defender":
        s.apply(s.legal_moves()[0])
    assert s.decision_kind() == "casualties" and s.cas["side"] == "attacker" and len(s.cas["candidates"]) == 2


def test_a_plane_counts_a_pass_each_time_it_flies_over_or_into_an_aa_territory():
    """[ambiguity, made explicit in the rules] 'each plane counts once for every AA-defended
    territory it flies over or into': a plane-pass is counted per pass, so a plane whose path
    enters the same AA territory twice counts 2."""
    s = blank("GE")
    bmb = put(s, "bmb", "GE", "Germany")[0]
    put(s, "aa", "RU", "Karelia S.S.R.")
    put(s, "inf", "RU", "Karelia S.S.R.")
    s.check_move("1 bmb : Germany > East Europe > Karelia S.S.R. > Baltic Sea Zone > Karelia S.S.R.")
    trial = s.clone()
    trial.move("1 bmb : Germany > East Europe > Karelia S.S.R. > Baltic Sea Zone > Karelia S.S.R.", True)
    assert trial.passes == {bmb.id: 2}


def test_an_allys_fighters_carried_into_a_sea_battle_are_lost_with_the_carrier():
    """Docs (project rules): an ally's fighters riding the mover's carrier do not fight; when the
    carrier sinks they are left without a carrier and are lost with the defenders' (stated now)."""
    s = blank("US", variant="orthodox")
    cv = put(s, "cv", "US", "East Canada Sea Zone")[0]
    uk = put(s, "ftr", "UK", "East Canada Sea Zone")[0]
    assert s.units[uk.id].on == cv.id
    put(s, "bb", "GE", "North Atlantic Sea Zone", 2)
    s.apply("1 cv : East Canada Sea Zone > North Atlantic Sea Zone")
    assert uk.id not in s.units and cv.id not in s.units
    assert any("without a carrier are lost: 1 ftr" in line for line in s.log), s.log
