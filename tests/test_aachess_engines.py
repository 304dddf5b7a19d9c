"""A&A Chess engine helpers (``arbiter.games.aachess.library``) on hand-built positions, and whole
in-process games of the heuristic sample engine against the random one (both alliances)."""
from __future__ import annotations

import random
from types import SimpleNamespace

from arbiter.games.aachess import AAChessGame
from arbiter.games.aachess import library as lib
from arbiter.games.base import CHANCE, TERMINAL
from sample_engines import aachess_heuristic as heuristic
from sample_engines import aachess_random
from tests.test_aachess_rules import blank  # the classic position emptied of units


def put(s, code, power, space, n=1, on=None):
    out = [s._new_unit(code, s.board.power(power), s.board.space(space)) for _ in range(n)]
    for u in out:
        if on is not None:
            u.on = on.id
    return out


def sp(s, name):
    return s.board.space(name)


def hold(s, space, power):
    s.owner[sp(s, space)] = s.start_owner[sp(s, space)] = s.board.power(power)


def fight(s):
    """Play the pending battles with the heuristic engine's casualties and retreat choices."""
    while s.decider() is not None and s.phase == "battles":
        kind = s.decision_kind()
        assert kind in ("casualties", "retreat"), kind
        s.apply(lib.choose_casualties(s) if kind == "casualties" else heuristic.retreat(s))


def test_sea_paths_stop_at_enemy_fleets_and_closed_canals():
    s = blank("US")
    put(s, "bb", "JP", "North Pacific Sea Zone")
    routes = lib.sea_paths(s, sp(s, "Midway Sea Zone"), 2)
    assert sp(s, "North Pacific Sea Zone") not in routes and sp(s, "Japan Sea Zone") not in routes
    assert sp(s, "Alaska Sea Zone") in routes
    battle = lib.sea_paths(s, sp(s, "Midway Sea Zone"), 2, into_hostile=True)
    assert battle[sp(s, "North Pacific Sea Zone")][-1] == sp(s, "North Pacific Sea Zone")
    assert sp(s, "Japan Sea Zone") not in battle  # a zone with enemies ends the route
    s = blank("UK")
    assert sp(s, "Red Sea Zone") in lib.sea_paths(s, sp(s, "East Mediteranean Sea Zone"), 1)
    hold(s, "Syria Jordan", "GE")
    assert sp(s, "Red Sea Zone") not in lib.sea_paths(s, sp(s, "East Mediteranean Sea Zone"), 1)
    dist = lib.sea_distances(s, [sp(s, "Japan Sea Zone")])
    assert dist[sp(s, "Japan Sea Zone")] == 0 and dist[sp(s, "North Pacific Sea Zone")] == 1


def test_predict_keeps_a_land_unit_and_uses_the_carry():
    s = blank("US")
    att = put(s, "inf", "US", "Manchuria") + put(s, "ftr", "US", "Manchuria", 3)
    dfn = put(s, "inf", "JP", "Kwangtung", 2)
    # Round 1: attack 10 -> 1 hit (carry 4), defence 4 -> 1 hit (a counted 4). Round 2: 11 -> 2 hits.
    survivors, left = lib.predict(s, att, dfn)
    assert not left and not any(u.t == "inf" for u in survivors)  # cheapest first: the infantry dies
    survivors, left = lib.predict(s, att, dfn, keep_land=1)
    assert not left and [u.t for u in survivors].count("inf") == 1
    assert lib.captures(s, att, dfn)
    # A battle under way: the carries change the outcome of 1 fighter against 1 infantry (afresh,
    # both die in round 2; after a defender's counted 4, its deficit of 2 saves the fighter).
    one = att[1:2]
    assert lib.predict(s, one, dfn[:1]) == ([], [])
    assert lib.predict(s, one, dfn[:1], carry=(0, -2)) == (one, [])


def test_amphibious_assault_on_an_island_capital():
    s = blank("US")
    hold(s, "Manchuria", "RU")
    put(s, "inf", "JP", "Japan", 2)
    put(s, "ic", "JP", "Japan")
    (trn,) = put(s, "trn", "US", "North Pacific Sea Zone")
    put(s, "inf", "US", "North Pacific Sea Zone", 2, on=trn)
    put(s, "bmb", "US", "Manchuria", 3)
    japan = sp(s, "Japan")
    trial, moves = lib.amphibious_assault(s, japan)
    assert moves[0] == f"#{trn.id} : North Pacific Sea Zone > Japan Sea Zone"
    assert any(m.endswith("Japan Sea Zone > Japan") and "#" in m for m in moves)
    assert sorted(u.t for u in trial.attackers(japan)) == ["bmb", "bmb", "bmb", "inf", "inf"]
    # The plan is legal as a whole; the battle is fought with the engine's casualty choice.
    s.apply("; ".join(moves))
    fight(s)
    assert s.owner[japan] == s.board.power("US")
    assert any(u.t == "inf" and u.at == japan for u in s.units.values())


def test_no_assault_when_the_island_is_too_strong_or_its_sea_zone_is_held():
    s = blank("US")
    hold(s, "Manchuria", "RU")
    put(s, "arm", "JP", "Japan", 8)
    (trn,) = put(s, "trn", "US", "North Pacific Sea Zone")
    put(s, "inf", "US", "North Pacific Sea Zone", 2, on=trn)
    put(s, "bmb", "US", "Manchuria", 2)
    assert lib.amphibious_assault(s, sp(s, "Japan")) is None
    s = blank("US")
    hold(s, "Manchuria", "RU")
    put(s, "inf", "JP", "Japan")
    (bb,) = put(s, "bb", "JP", "Japan Sea Zone")
    (trn,) = put(s, "trn", "US", "North Pacific Sea Zone")
    put(s, "inf", "US", "North Pacific Sea Zone", 2, on=trn)
    put(s, "bmb", "US", "Manchuria", 2)
    put(s, "bb", "US", "North Pacific Sea Zone")
    assert lib.amphibious_assault(s, sp(s, "Japan")) is None  # no unloading from a contested zone
    trial, moves = lib.sea_strike(s, sp(s, "Japan Sea Zone"))
    assert moves[0].endswith("North Pacific Sea Zone > Japan Sea Zone") and f"#{trn.id}" not in moves[0]
    s.apply("; ".join(moves))
    fight(s)
    assert bb.id not in s.units and any(u.t == "bb" for u in s.units.values())


def test_bombing_raid_sends_just_enough_bombers():
    s = blank("US")
    hold(s, "Manchuria", "RU")
    put(s, "ic", "JP", "Japan")
    put(s, "bmb", "US", "Manchuria", 8)
    s.pus[s.board.power("JP")] = 16
    trial, moves = lib.bombing_raid(s, sp(s, "Japan"))
    assert len(moves) == 7 and all(m.startswith("bomb ") for m in moves)
    s.pus[s.board.power("JP")] = 5
    assert len(lib.bombing_raid(s, sp(s, "Japan"))[1]) == 2
    s.pus[s.board.power("JP")] = 0
    assert lib.bombing_raid(s, sp(s, "Japan")) is None


def test_strike_spots_and_approach_turns():
    s = blank("US")
    hold(s, "Manchuria", "RU")
    japan = sp(s, "Japan")
    fighters = lib.strike_spots(s, japan, "ftr")
    bombers = lib.strike_spots(s, japan, "bmb")
    assert sp(s, "Manchuria") in fighters and sp(s, "Soviet Far East") not in fighters
    assert {sp(s, "Soviet Far East"), sp(s, "Alaska")} <= bombers  # Alaska: 4 out, 2 back to Manchuria
    turns = lib.approach_turns(s, bombers, "bmb")
    assert turns[sp(s, "Alaska")] == 0 and turns[sp(s, "West US")] == 1 and turns[sp(s, "East US")] == 1


def test_objectives_of_the_heuristic():
    s = blank("US", phase="purchase")
    put(s, "ic", "US", "East US")
    put(s, "ic", "US", "West US")
    assert heuristic.amphibious(s) and s.board.names[heuristic.objective(s)] == "Japan"
    assert s.board.names[heuristic.forward_site(s, heuristic.objective(s))] == "Alaska"
    s.turn = s.board.power("UK")
    put(s, "ic", "UK", "United Kingdom")
    assert s.board.names[heuristic.objective(s)] == "Germany"
    s.turn = s.board.power("JP")
    assert heuristic.objective(s) is None  # the Axis can win on income


def play(allies, axis, seed, max_rounds=8):
    game = AAChessGame(seats=2, max_rounds=max_rounds)
    st = game.new_initial_state()
    deciders = [allies, axis]
    new_game = SimpleNamespace(options=dict(game.options), dice_commitment=f"test{seed}")
    rng = random.Random(seed)
    while st.current_player() != TERMINAL:
        seat = st.current_player()
        if seat == CHANCE:
            st.apply_chance(rng.choice(st.chance_outcomes()))
            continue
        request = SimpleNamespace(game_id=f"g{seed}", position=st.to_text(), kind=st.decision_kind(), seat=seat)
        st.apply(deciders[seat](request, new_game))
    return st


def test_heuristic_beats_random_as_either_alliance():
    st = play(heuristic.make_decider(), aachess_random.make_decider(7), seed=7)
    assert st.result == "Allies" and st.round <= 8
    st = play(aachess_random.make_decider(8), heuristic.make_decider(), seed=8)
    assert st.result == "Axis"
