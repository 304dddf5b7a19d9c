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
