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
