"""Stalingrad factory street fight: every rule on a hand-built position (docs/games/stalingrad.md)."""
from __future__ import annotations

import random

import pytest

from arbiter.games import CHANCE, TERMINAL, IllegalMove, OptionError, load_game
from arbiter.games.stalingrad import StalingradGame, combat_winner, dice_counts
from arbiter.games.stalingrad.library import (deployment_text, example_plan, plan_text, random_deployment,
                                              random_moves, solved_moves)

GAME = StalingradGame()


def pos(text: str, game: StalingradGame = GAME):
    s = game.from_text(text)
    assert game.from_text(s.to_text()).to_text() == s.to_text()
    return s


def where(s, cid: str) -> str:
    """'8' / '8d' / '8e' / 'x' (eliminated) for a German counter."""
    i = s.ed.german_ids.index(cid)
    if not s.g_area[i]:
        return "x"
    return f"{s.g_area[i]}{('e' if s.is_leader(i) else 'd') if s.g_flip[i] else ''}"


def problems(s, plan: str) -> str:
    with pytest.raises(IllegalMove) as exc:
        s.check_move(plan, 0)
    return str(exc.value)


def roll(s, *dice: int) -> None:
    for d in dice:
        assert s.current_player() == CHANCE and s.chance_outcomes() == [1, 2, 3, 4, 5, 6]
        s.apply_chance(d)


# --- the edition -----------------------------------------------------------------------------


def test_project_edition_matches_the_rules_file():
    ed = GAME.edition
    pairs = {tuple(sorted((a, b))) for a, ns in ed.adjacent.items() for b in ns}
    expected = "2-4 2-6 3-4 3-5 3-8 4-7 5-9 6-7 6-10 7-8 7-10 7-11 7-12 8-9 8-12 9-12 10-11 11-12"
    assert pairs == {tuple(map(int, p.split("-"))) for p in expected.split()}
    assert ed.entry == (2, 3, 4, 5)
    assert ed.shields == {8: 1, 9: 1, 10: 2, 11: 1, 12: 2}
    assert ed.german_ids == ("I1", "I2", "I3", "I4", "I5", "I6", "A1", "A2", "L1", "L2")
    assert {k: (t.count, t.movement, t.crosses) for k, t in ed.german.items()} == {
        "infantry": (6, 1, (2, 1)), "armor": (2, 2, (3, 2)), "leader": (2, 2, (1, 2))}
    assert ed.soviet_mix() == {"1": 3, "2": 2, "3": 1, "1s": 2, "2a": 1}


def test_options_are_validated():
    with pytest.raises(OptionError, match="max_turns"):
        load_game("stalingrad", max_turns=0)
    with pytest.raises(OptionError, match="unknown option"):
        load_game("stalingrad", turns=3)
    with pytest.raises(OptionError, match="(?s)map_file.*cannot read"):
        load_game("stalingrad", map_file="/nonexistent/map.toml")
    assert load_game("stalingrad", max_turns=5).max_turns == 5


# --- set-up ----------------------------------------------------------------------------------


def test_setup_shuffles_soviets_onto_the_shields_and_leaves_a_reserve_pool():
    s = GAME.new_initial_state()
    assert s.current_player() == CHANCE
    assert s.chance_outcomes() == ["1", "1", "1", "2", "2", "3", "1s", "1s", "2a"]  # pick one of the 9
    for code in ("3", "1s", "2a", "1", "2"):
        s.apply_chance(code)
    assert [s.ed.soviet_codes[s.s_type[a]] for a in (8, 9, 10, 11, 12)] == ["3", "1s", "2a", "1", "2"]
    assert not any(s.s_up) and sorted(s.ed.soviet_codes[t] for t in s.pool) == ["1", "1", "1s", "2"]
    assert s.current_player() == 0 and s.decision_kind() == "deploy"
    assert s.observation(0).split()[-3:] == ["soviet=8:?,9:?,10:?,11:?,12:?", "pool=?,?,?,?", "removed=-"]
    with pytest.raises(IllegalMove, match="draw is the code of a counter in the pool"):
        GAME.new_initial_state().apply_chance("4")


def deployed_state():
    s = GAME.new_initial_state()
    for code in ("1", "1", "1", "2", "2"):
        s.apply_chance(code)
    return s


def test_deployment_in_the_entry_areas_with_stacking():
    s = deployed_state()
    good = "I1:2;I2:2;I3:3;I4:3;I5:4;I6:4;A1:5;A2:5;L1:5;L2:3"
    s.check_move(good, 0)
    assert "missing: L2" in problems(s, "I1:2;I2:2;I3:3;I4:3;I5:4;I6:4;A1:5;A2:5;L1:5")
    assert "area 7 is not an entry area" in problems(s, good.replace("L1:5", "L1:7"))
    assert "area 2 would hold 3 infantry/armor counters" in problems(s, good.replace("I3:3", "I3:2"))
    assert "area 5 would hold 2 leaders" in problems(s, good.replace("L2:3", "L2:5"))
    bad = "I1:2;I2:2;I3:3;I4:3;I5:4;I6:4;A1:5;A2:3;L1:5;L2:3"
    assert "area 3 would hold 3" in problems(s, bad)
    s.apply(good)
    assert s.step in ("infiltrate", "move") and where(s, "L1") == "5"
    rng = random.Random(3)
    for _ in range(20):
        deployed_state().check_move(deployment_text(s, random_deployment(s, rng)), 0)


# --- infiltration ----------------------------------------------------------------------------

BASE = "german=I1@3,I2@3,A1@4,L1@3 soviet=8:1?,9:1?"


def test_infiltration_draws_for_the_area_named_by_2d6():
    s = pos(f"turn=2 step=infiltrate {BASE} pool=2,3")
    roll(s, 3)
    assert s.to_text().startswith("turn=2 ast=4 step=infiltrate:3 ")
    roll(s, 4)  # 7: empty
    assert s.step == "draw" and s.area == 7 and s.chance_outcomes() == ["2", "3"]
    s.apply_chance("3")
    assert "7:3?" in s.to_text() and "7:?" in s.observation(0)
    assert s.step == "move" and s.pool == [s.ed.soviet_codes.index("2")]


@pytest.mark.parametrize("dice, why", [((1, 2), "German-occupied 3"), ((4, 4), "Soviet-occupied 8")])
def test_infiltration_is_skipped_when_the_area_is_occupied(dice, why):
    s = pos(f"turn=2 step=infiltrate {BASE} pool=2,3")
    roll(s, *dice)
    assert s.step == "move" and len(s.pool) == 2, why


def test_no_infiltration_roll_when_the_pool_is_empty():
    s = pos("turn=1 ast=0 step=roll:8 queue=- german=A1@8,I1@8 soviet=8:1,9:1? pool=-")
    roll(s, 1, 1, 6)  # Soviets win; A1 vs I1 -> choose
    s.apply("I1")
    assert s.turn == 2 and s.step == "move"


# --- movement --------------------------------------------------------------------------------

MOVE = "turn=1 step=move german=I1@3,I2@3,I3@2,A1@4,A2@5,L1@3,L2@4 soviet=8:1?,9:2?,12:1? pool=-"


def test_movement_allowances_and_adjacency():
    s = pos(MOVE)
    s.check_move("I1:3-4;A1:4-7-6;A2:5-9;L1:3-5-9", 0)
    assert "I1 moves 2 areas but its movement allowance is 1" in problems(s, "I1:3-4-7")
    assert "area 7 is not adjacent to area 3" in problems(s, "I1:3-7")
    assert "A1 moves 3 areas" in problems(s, "A1:4-7-6-10")
    assert "unknown counter 'X1'" in problems(s, "X1:3-4")
    assert "expected <counter>:<area>" in problems(s, "I1-4")
    assert "I1 is given twice" in problems(s, "I1:3-4;I1:3-5")
    s.check_move("I1:4", 0)  # the start area may be left out
    s.check_move("-", 0)
    s.check_move("", 0)


@pytest.mark.parametrize("plan", ["I1:3-٤", "I1:03-04", "I1:04", "I1:3-" + "4" * 5000, "A1:4-07", "A1:٤-7"])
def test_an_area_is_written_as_its_number_in_ascii(plan):
    """An engine's reply is adversarial: a Unicode digit or a leading zero is not the documented
    notation (it was taken as the area), and a 5000-digit area crashed the referee with int()'s
    ValueError instead of being an illegal move."""
    why = problems(pos(MOVE), plan)
    assert "is not an area" in why or "expected <counter>" in why or "ASCII" in why


@pytest.mark.parametrize("area", ["٢", "02", "2" * 5000])
def test_a_deployment_area_is_written_as_its_number_in_ascii(area):
    good = "I1:2;I2:2;I3:3;I4:3;I5:4;I6:4;A1:5;A2:5;L1:5;L2:3"
    problems(deployed_state(), good.replace("I1:2", f"I1:{area}"))


def test_letters_in_either_case_and_surrounding_whitespace_are_read_as_documented():
    """docs/games/stalingrad.md, Decisions: the page now says what the parser always took."""
    s = pos("turn=1 ast=2 step=air:8 german=I1@8,A1@8d soviet=8:3,9:1")
    s.check_move(" YES ", 0)
    s = pos("turn=1 ast=2 step=deplete:8 combat=0:66:1 german=I1@8,A1@8d soviet=9:1")
    s.check_move(" i1 ", 0)
    s = pos("turn=1 step=move german=I1@8,A1@8d soviet=9:1")
    s.check_move(" None ", 0)
    s.check_move(" a1:8-7 ; i1:8-7 ", 0)


@pytest.mark.parametrize("text, step", [
    ("\u0131" + "1", "turn=1 ast=2 step=deplete:8 combat=0:66:1 german=I1@8,A1@8d soviet=9:1"),  # dotless i
    ("\u00a0I1\u00a0", "turn=1 ast=2 step=deplete:8 combat=0:66:1 german=I1@8,A1@8d soviet=9:1"),
    ("\u0131" + "1", "turn=1 ast=2 step=ambush:8 german=I1@8,A1@8d soviet=8:2a,9:1"),
    ("yes\u3000", "turn=1 ast=2 step=air:8 german=I1@8,A1@8d soviet=8:3,9:1"),
    ("\u00a0-", "turn=1 step=move german=I1@8,A1@8d soviet=9:1"),
    ("\u2003a1:8-7", "turn=1 step=move german=I1@8,A1@8d soviet=9:1"),
])
def test_a_decision_with_non_ascii_characters_is_refused(text, step):
    """Letters in either case and whitespace around an answer are read (Decisions), but only ASCII
    ones: Python's upper() made the dotless '\u0131' + '1' the counter I1, and strip() took
    no-break and ideographic spaces as whitespace."""
    assert "ASCII" in problems(pos(step), text)


def test_stop_on_entering_a_soviet_area():
    s = pos(MOVE)
    assert "A2 must stop on entering Soviet-occupied area 9; it cannot go on to 12" in problems(s, "A2:5-9-12")
    s.check_move("A2:5-9", 0)


def test_armor_carries_one_infantry_from_its_area():
    s = pos("turn=1 step=move german=I1@3,A1@3,I2@2,I3@4,L1@3 soviet=8:1?,9:2?,12:1? pool=-")
    s.apply("A1:3-4-7+I1;L1:3-4")
    assert where(s, "A1") == where(s, "I1") == "7" and where(s, "L1") == "4"
    s = pos("turn=1 step=move german=I1@3,A1@3,I2@2,I3@4,L1@3 soviet=8:1?,9:2?,12:1? pool=-")
    assert "cannot carry I2 (area 2)" in problems(s, "A1:3-4+I2")
    assert "only armor carries infantry" in problems(s, "I1:3-4+I2")
    assert "can carry only infantry, not L1" in problems(s, "A1:3-4+L1")
    assert "I1 is given twice" in problems(s, "A1:3-4-7+I1;I1:3-4")
    assert "does not move, so it cannot carry" in problems(s, "A1:3+I1")


def test_stacking_after_movement():
    s = pos(MOVE)
    assert "area 4 would hold 3 infantry/armor counters (I1, I2, A1)" in problems(s, "I1:3-4;I2:3-4;L1:3-4-7")
    assert "area 4 would hold 2 leaders (L1, L2)" in problems(s, "L1:3-4")
    assert "leader L1 would be alone in area 7" in problems(s, "L1:3-4-7")
    # every problem of a plan is reported at once
    msg = problems(s, "I1:3-4-7;A2:5-9-12")
    assert "I1 moves 2 areas" in msg and "A2 must stop" in msg


def test_contested_area_may_be_left_at_the_start_of_a_move():
    s = pos("turn=2 step=move german=A1@8,I1@8,L1@8,I2@3 soviet=8:1,9:1? pool=-")
    s.check_move("A1:8-7-6", 0)          # leaves the contested area and goes on
    s.check_move("A1:8-9", 0)            # from one Soviet area into another: stops there
    assert "must stop on entering Soviet-occupied area 9" in problems(s, "A1:8-9-5")


def test_a_leader_alone_in_a_soviet_area_must_leave():
    s = pos("turn=3 step=move german=L1@8,I1@3,I2@12 soviet=8:1,9:1? pool=-")
    assert s.must_leave() == [s.ed.german_ids.index("L1")]
    assert "L1 is alone in Soviet-occupied area 8 and must leave it" in problems(s, "-")
    assert "must leave" in problems(s, "L1:8-3-8")  # back where it started: it did not leave
    s.check_move("L1:8-3", 0)
    s.check_move("L1:8-12", 0)
    assert s.legal_moves() is None and example_plan(s) != "-"  # plans are too many to list
    s.check_move(example_plan(s), 0)


def test_leader_stacking_is_waived_only_when_no_plan_can_meet_it():
    # L1 must leave area 10; the only unit (I1 on 5) cannot reach any area L1 can reach.
    s = pos("turn=3 step=move german=L1@10,I1@5 soviet=10:1,12:1? pool=-")
    assert not s.leaders_can_all_be_stacked()
    s.check_move("L1:10-7", 0)
    # with a unit in reach, the leader must end with it
    s = pos("turn=3 step=move german=L1@10,I1@2 soviet=10:1,12:1? pool=-")
    assert s.leaders_can_all_be_stacked()
    assert "would be alone in area 7" in problems(s, "L1:10-7")
    s.check_move("L1:10-6-2", 0)


def test_a_leader_never_ends_its_move_alone_in_a_soviet_area_even_when_stacking_is_waived():
    """Rules: "A leader with no other friendly counter in a Soviet-occupied area must leave it."
    When the stacking of every leader with a unit is waived (one unit, two leaders), a leader
    without a unit may still not move into, or be left in, a Soviet-occupied area alone: it would
    fight alone, never depleted and winning ties."""
    s = pos("turn=3 step=move german=I1@2,L1@6,L2@4 soviet=10:1,11:2 pool=-")
    assert not s.leaders_can_all_be_stacked()
    assert "L1 would be alone in Soviet-occupied area 10" in problems(s, "L1:6-10")
    s.check_move("L1:6-7", 0)  # alone, but not in a Soviet-occupied area
    s = pos("turn=3 step=move german=I1@10,L1@10,L2@2 soviet=10:1,11:2 pool=-")
    assert "L1 would be alone in Soviet-occupied area 10" in problems(s, "I1:10-6")
    s.check_move("I1:10-6;L1:10-6", 0)
    s.check_move("-", 0)
    # the library's plans keep to it
    rng = random.Random(3)
    for text in ("turn=3 step=move german=I1@2,L1@6,L2@4 soviet=10:1,11:2 pool=-",
                 "turn=3 step=move german=I1@10,L1@10,L2@2 soviet=10:1,11:2 pool=-",
                 "turn=3 step=move german=L1@10,I1@5 soviet=10:1,12:1? pool=-"):
        s = pos(text)
        s.check_move(plan_text(s, solved_moves(s)), 0)
        for _ in range(50):
            s.check_move(plan_text(s, random_moves(s, rng)), 0)
    # only when no plan can keep every lone leader out of Soviet areas is that waived too:
    # L1 must leave 5, and both its neighbours (3, 9) hold Soviet counters
    s = pos("turn=3 step=move german=L1@5,I1@10,I2@11 soviet=5:1,3:1,9:2 pool=-")
    s.check_move("L1:5-3", 0)
    s.check_move(plan_text(s, solved_moves(s)), 0)


def test_the_exact_leader_solution_respects_stacking():
    """The library's exact plan (``solved_moves``, the fallback of ``random_moves``) stacks every
    leader with a unit without breaking the stacking limit: a unit joins a leader only where no
    unit stays, never as a third infantry/armor counter."""
    s = pos("turn=1 step=move german=I1@3,I2@4,I3@2,I4@2,I5@5,I6@4,A1@3,A2@5,L1@2,L2@3 "
            "soviet=8:1?,9:1?,10:2?,11:1?,12:1s? pool=2,3,1s,2a")
    s.check_move(plan_text(s, solved_moves(s)), 0)
    s = pos("turn=2 step=move german=I1@9d,I2@4,I3@6,I4@2,I5@3,I6@3,A1@9,A2@5,L1@2,L2@3 "
            "soviet=8:1?,9:1,10:2?,11:1?,12:1s? pool=2,3,1s,2a")
    s.check_move(plan_text(s, solved_moves(s)), 0)
    s = pos("turn=3 step=move german=L1@10,I1@2 soviet=10:1,12:1? pool=-")  # L1 must leave
    assert plan_text(s, solved_moves(s)) in ("L1:10-6-2", "I1:2-6;L1:10-6")
    s.check_move(plan_text(s, solved_moves(s)), 0)


def test_random_plans_are_always_legal():
    rng = random.Random(5)
    for text in (MOVE, "turn=3 step=move german=L1@10,I1@5 soviet=10:1,12:1? pool=-",
                 "turn=3 step=move german=L1@8,L2@9,I1@3 soviet=8:1,9:1,12:1? pool=-"):
        s = pos(text)
        for _ in range(50):
            s.check_move(plan_text(s, random_moves(s, rng)), 0)


# --- Deadly Surprise -------------------------------------------------------------------------


def test_sniper_kills_the_leader_and_is_removed():
    s = pos("turn=1 step=move german=I1@3,I2@3,L1@3,A1@4 soviet=8:1s?,9:1? pool=-")
    s.apply("I1:3-8;L1:3-8")
    assert where(s, "L1") == "x" and where(s, "I1") == "8" and s.s_type[8] == -1
    assert s.removed[-1] == s.ed.soviet_codes.index("1s")
    assert s.step == "move" and s.turn == 2  # no combat: area 8 is no longer Soviet-occupied


def test_sniper_without_a_leader_has_no_effect_but_is_removed():
    s = pos("turn=1 step=move german=I1@3,I2@3,A1@4 soviet=8:1s?,9:1? pool=-")
    s.apply("I1:3-8")
    assert where(s, "I1") == "8" and s.s_type[8] == -1 and s.turn == 2


def test_ambush_depletes_a_unit_of_the_players_choice_once():
    s = pos("turn=1 step=move german=I1@3,A1@3,I2@4 soviet=8:2a?,9:1? pool=-")
    s.apply("A1:3-8+I1")
    assert s.step == "ambush" and s.decision_kind() == "deplete" and s.area == 8
    assert s.legal_moves() == ["I1", "A1"]
    with pytest.raises(IllegalMove, match="I2 cannot be depleted here"):
        s.check_move("I2", 0)
    s.apply("A1")
    assert where(s, "A1") == "8d" and s.s_up[8] and s.s_type[8] >= 0  # the ambusher stays
    assert s.step == "air" and s.area == 8  # then combat: 3 stars vs 2 + 2 crosses
    # once revealed, it never ambushes again
    s = pos("turn=2 step=move german=I1@3,A1@3,I2@4 soviet=8:2a,9:1? pool=-")
    s.apply("A1:3-8+I1")
    assert s.step == "air" and where(s, "A1") == "8" and where(s, "I1") == "8"


def test_ambush_on_alike_units_needs_no_choice():
    s = pos("turn=1 step=move german=I1@3,I2@3,I3@4 soviet=8:2a?,9:1? pool=-")
    s.apply("I1:3-8;I2:3-8")
    assert s.step == "air" and where(s, "I1") == "8d" and where(s, "I2") == "8"


# --- combat ------------------------------------------------------------------------------------


def test_dice_from_crosses_against_stars():
    assert dice_counts(4, 2) == (2, 1)
    assert dice_counts(2, 4) == (1, 2)
    assert dice_counts(3, 3) == (2, 2)
    s = pos("turn=1 step=air:10 german=A1@10,I1@10,L1@10 soviet=10:3,9:1? pool=-")
    assert s.crosses_at(10) == 3 + 2 + 1 and s.stars_at(10) == 3 + 2
    assert s.combat_dice() == (2, 1)


def test_worked_example_a_highest_die_wins():
    assert combat_winner([4], [2, 3], leader=False) == ("german", "highest die")
    # In play: 2 crosses against 2 + 2 stars -> Germans 1 die, Soviets 2; no air strikes left.
    s = pos("turn=1 ast=0 step=roll:10 german=I1@10,I2@3 soviet=10:2,9:1? pool=-")
    roll(s, 4, 2, 3)
    assert s.s_type[10] == -1 and where(s, "I1") == "10d"  # Soviet removed, still one depletion


def test_worked_example_b_more_high_dice_wins():
    assert combat_winner([4, 5], [5, 5], leader=True) == ("soviet", "more high dice")
    s = pos("turn=1 ast=0 step=roll:12 german=A1@12,I2@3 soviet=12:1,9:1? pool=-")
    assert s.combat_dice() == (2, 2)  # 3 crosses vs 1 + 2 stars
    roll(s, 4, 5, 5, 5)
    assert s.s_type[12] >= 0 and where(s, "A1") == "12d"


@pytest.mark.parametrize("leader, winner", [(False, "soviet"), (True, "german")])
def test_worked_example_c_a_tie_goes_to_the_leader(leader, winner):
    assert combat_winner([6, 5, 4], [6], leader=leader) == (winner, "tie, a leader is there" if leader
                                                             else "tie, no leader there")
    extra = ",L1@8" if leader else ""
    s = pos(f"turn=1 ast=2 step=air:8 german=A1@8{extra},I2@3 soviet=8:1,9:1? pool=-")
    s.apply("yes")  # the air strike: a third German die, the track moves down
    assert s.ast == 1 and s.combat_dice() == (3, 1)
    roll(s, 6, 5, 4, 6)
    assert (s.s_type[8] == -1) == (winner == "german")


def test_air_strike_needs_the_track_above_zero():
    s = pos("turn=1 ast=0 step=roll:8 german=A1@8,I2@3 soviet=8:1,9:1? pool=-")
    assert s.current_player() == CHANCE  # no air-strike question at 0
    s = pos("turn=1 ast=1 step=air:8 german=A1@8,I2@3 soviet=8:1,9:1? pool=-")
    assert s.legal_moves() == ["no", "yes"]
    with pytest.raises(IllegalMove, match="'yes' or 'no'"):
        s.check_move("maybe", 0)
    s.apply("no")
    assert s.ast == 1 and s.combat_dice() == (2, 1)


def test_combats_are_fought_area_by_area_in_ascending_order():
    s = pos("turn=1 step=move german=I1@3,A1@3,I2@5,A2@5,I3@4 soviet=8:1,9:1,12:1? pool=-")
    s.apply("I1:3-8;A1:3-8;I2:5-9;A2:5-9")
    assert (s.step, s.area, s.queue) == ("air", 8, [9])


# --- Bloody Aftermath ------------------------------------------------------------------------


def test_aftermath_promotes_the_leader_and_always_depletes_by_choice():
    s = pos("turn=1 ast=0 step=roll:8 german=A1@8,I1@8d,L1@8,I2@3 soviet=8:1,9:1? pool=-")
    roll(s, 6, 6, 1)  # Germans win
    assert s.s_type[8] == -1 and where(s, "L1") == "8e"
    assert s.step == "deplete" and s.legal_moves() == ["I1", "A1"]
    assert "combat=0:66:1" in s.to_text()
    s.apply("I1")  # a second depletion eliminates
    assert where(s, "I1") == "x" and where(s, "A1") == "8"
    assert s.turn == 2


def test_aftermath_after_a_soviet_win_keeps_the_counter():
    s = pos("turn=1 ast=0 step=roll:10 german=A1@10d,L1@10e,I2@3 soviet=10:3,9:1? pool=-")
    assert s.combat_dice() == (1, 2)  # 2 + 2 crosses vs 3 + 2 stars
    roll(s, 2, 6, 1)
    assert s.s_type[10] >= 0 and where(s, "A1") == "x" and where(s, "L1") == "10e"


def test_the_combat_result_shown_at_a_deplete_step_comes_from_the_position():
    """At a deplete step the request's state says who won the combat (``combat.result``); the
    position text holds the dice, so a position read back with from_text shows the same result."""
    s = pos("turn=1 ast=0 step=roll:8 german=A1@8,I1@8,I2@3 soviet=8:1,9:1? pool=-")
    roll(s, 2, 6, 6)  # a tie and no leader: the Soviets win; A1 or I1 is depleted
    assert s.step == "deplete" and s.observation_data(0)["combat"]["result"] == "soviet"
    again = GAME.from_text(s.to_text())
    assert again.observation_data(0) == s.observation_data(0)


def test_leaders_are_never_depleted():
    s = pos("turn=1 ast=0 step=deplete:8 combat=0:66:1 german=A1@8,I1@8d,L1@8,I2@3 soviet=9:1? pool=-")
    with pytest.raises(IllegalMove, match="leaders are never depleted"):
        s.check_move("L1", 0)


# --- victory and defeat, at once ---------------------------------------------------------------


def test_victory_at_once_when_no_soviet_counter_is_on_the_map():
    s = pos("turn=4 ast=0 step=roll:8 german=A1@8,I1@3 soviet=8:1 pool=2,3")  # pool not empty
    roll(s, 6, 6, 1)
    assert s.current_player() == TERMINAL and s.returns() == [1.0]
    assert where(s, "A1") == "8"  # won before the aftermath's depletion
    assert s.end_detail() == "all Soviet counters cleared from the map on turn 4"


def test_defeat_at_once_when_the_soviets_outnumber_the_germans():
    s = pos("turn=5 step=infiltrate german=I1@3,I2@3 soviet=8:1?,9:1? pool=2")
    roll(s, 3, 4)
    s.apply_chance("2")
    assert s.returns() == [-1.0] and "outnumber the German counters (2)" in s.end_detail()
    s = pos("turn=5 ast=0 step=roll:8 german=I1@8d,I2@3 soviet=8:1,9:1 pool=-")
    roll(s, 1, 6, 6)
    assert s.returns() == [-1.0] and where(s, "I1") == "x"


def test_sniper_removing_the_last_soviet_wins_at_once():
    s = pos("turn=2 step=move german=I1@3,I2@3,L1@3 soviet=8:1s? pool=1")
    s.apply("I1:3-8;L1:3-8")
    assert s.returns() == [1.0] and where(s, "L1") == "x"


def test_a_sniper_killing_a_leader_loses_at_once_before_it_is_removed():
    """Victory and defeat are checked after every change of the counters. A sniper removes the
    leader there, then is removed itself: when the leader's removal leaves the Soviet counters on
    the map outnumbering the German counters, the game is lost at once; the sniper's own removal
    comes too late to save it."""
    s = pos("turn=1 step=move german=I1@3,L1@3,I2@4 soviet=8:1s?,9:1?,10:1? pool=-")
    s.apply("I1:3-8;L1:3-8")  # 3 Soviet counters against 3 German; the sniper kills L1
    assert where(s, "L1") == "x" and s.returns() == [-1.0]
    assert s.end_detail() == "the Soviet counters on the map (3) outnumber the German counters (2) on turn 1"


@pytest.mark.parametrize("max_turns, over", [(20, True), (21, False)])
def test_turn_limit(max_turns, over):
    game = StalingradGame(max_turns=max_turns)
    s = pos("turn=20 ast=0 step=roll:8 queue=- german=A1@8,I1@3,I2@3 soviet=8:1,9:1 pool=-", game)
    roll(s, 1, 1, 6)  # Soviets win, A1 depleted, turn 20 ends
    if over:
        assert s.returns() == [-1.0]
        assert s.end_detail() == "turn limit: 20 turns played and 2 Soviet counter(s) remain on the map"
    else:
        assert not s.is_terminal() and s.turn == 21


# --- notation ----------------------------------------------------------------------------------


def test_position_text_errors_are_precise():
    with pytest.raises(ValueError, match="field 'step' is missing"):
        GAME.from_text("turn=1 german=- soviet=-")
    with pytest.raises(ValueError, match="hidden"):
        GAME.from_text("turn=1 step=move german=I1@3 soviet=8:?")
    with pytest.raises(ValueError, match="4 counter\\(s\\) 1"):
        GAME.from_text("turn=1 step=move german=I1@3 soviet=8:1,9:1,10:1,11:1")
    with pytest.raises(ValueError, match="not an area 2-12"):
        GAME.from_text("turn=1 step=move german=I1@13 soviet=-")
    with pytest.raises(ValueError, match="'e' \\(elite\\) for leaders"):
        GAME.from_text("turn=1 step=move german=I1@3e soviet=8:1")


@pytest.mark.parametrize("text, error", [
    ("turn=2 step=infiltrate german=I1@3 soviet=8:1? pool=-", "step infiltrate needs counters in the pool"),
    ("turn=2 step=draw:8 german=I1@3 soviet=8:1 pool=2", "needs an empty area 8"),
    ("turn=2 step=draw:3 german=I1@3 soviet=8:1 pool=2", "needs an empty area 3"),
    ("turn=1 step=setup german=- soviet=8:1?,9:1?,10:1?,11:2?,12:2? pool=3,1s,1s,2a", "step setup needs"),
    ("turn=1 step=setup german=- soviet=8:1?,9:1?,10:1? pool=3", "step setup needs"),
    ("turn=1 ast=0 step=roll:8 combat=0:666:6 german=A1@8,I1@3 soviet=8:1,9:1? pool=-", "does not fit a roll"),
    ("turn=1 ast=0 step=roll:8 combat=0:6:6 german=A1@8,I1@3 soviet=8:1,9:1? pool=-", "does not fit a roll"),
])
def test_from_text_refuses_positions_play_cannot_go_on_from(text, error):
    """from_text names what is wrong with a position the game could not continue from, instead
    of accepting it and leaving the referee a chance node with no outcome (an infiltration or a
    set-up draw with an empty pool), a draw that would overwrite a counter (the infiltrating
    counter goes only to an empty area), a set-up with no shield left to fill, or a combat whose
    dice never end (more dice rolled than the crosses and stars give, or Soviet dice before all
    the German ones)."""
    with pytest.raises(ValueError, match=error):
        GAME.from_text(text)
    ok = text.replace("combat=0:666:6", "combat=0:66:").replace("combat=0:6:6", "combat=0:6:")
    if ok != text:  # the same combat with dice that fit is accepted
        s = pos(ok)
        roll(s, *([6] * (3 - len(s.gdice) - len(s.sdice))))


def test_a_combat_is_never_against_a_face_down_counter():
    """Deadly Surprise turns every face-down counter in a contested area face up before the
    combats, so a position at a combat step with the defender still face down cannot occur:
    from_text refuses it (the request's state would show the hidden counter's stars)."""
    for step in ("air:8", "roll:8"):
        with pytest.raises(ValueError, match="face up"):
            GAME.from_text(f"turn=1 ast=2 step={step} german=A1@8,I2@3 soviet=8:3?,9:1? pool=-")
        s = pos(f"turn=1 ast=2 step={step} german=A1@8,I2@3 soviet=8:3,9:1? pool=-")
        assert s.observation_data(0)["combat"]["stars"] == 3 + 1


def test_random_games_round_trip_and_observations_hide_face_down_counters():
    rng = random.Random(11)
    for _ in range(40):
        s = GAME.new_initial_state()
        while not s.is_terminal():
            text = s.to_text()
            assert GAME.from_text(text).to_text() == text
            obs = s.observation(0)
            hidden = [a for a in range(2, 13) if s.s_type[a] >= 0 and not s.s_up[a]]
            for a in hidden:
                assert f" {a}:?" in obs.replace("soviet=", " ").replace(",", " ")
            assert "pool=-" in obs or set(obs.split("pool=")[1].split()[0].split(",")) == {"?"}
            data = s.observation_data(0)
            assert all(set(c) == {"area", "revealed"} for c in data["soviet"] if not c["revealed"])
            if s.current_player() == CHANCE:
                s.apply_chance(rng.choice(s.chance_outcomes()))
            elif s.decision_kind() == "movement_plan":
                s.apply(plan_text(s, random_moves(s, rng)))
            elif s.decision_kind() == "deploy":
                s.apply(deployment_text(s, random_deployment(s, rng)))
            else:
                s.apply(rng.choice(s.legal_moves()))
        assert s.returns() in ([1.0], [-1.0]) and s.end_detail()


def test_the_request_state_at_a_deplete_step_gives_the_dice_that_were_rolled():
    """3 crosses against 3 + 1 stars: 1 German die against 2. The German win removes the Soviet
    counter, after which the area's values alone would give 2 dice against 1."""
    s = pos("turn=1 ast=0 step=roll:8 german=I1@8d,I2@8 soviet=8:3,9:1,10:1")
    assert s.combat_dice() == (1, 2)
    roll(s, 6, 1, 1)
    assert s.step == "deplete" and s.s_type[8] < 0
    combat = s.observation_data(0)["combat"]
    assert (combat["german_dice"], combat["soviet_dice"], combat["result"]) == (1, 2, "german")
    assert (combat["german_rolled"], combat["soviet_rolled"]) == ([6], [1, 1])


@pytest.mark.parametrize("text, why", [
    ("turn=1 ast=9 step=air:8 german=I1@8,A1@8d soviet=8:3,9:1", "ast 9 is above 4"),
    ("turn=21 step=move german=I1@8,A1@8d soviet=8:3,9:1", "beyond max_turns"),
    ("turn=1 step=won german=I1@8 soviet=8:3", "step won with 1 Soviet"),
    ("turn=3 step=lost german=I1@8,I2@8 soviet=8:3", "not outnumbering"),
])
def test_from_text_refuses_positions_the_rules_cannot_reach(text, why):
    """A won position with Soviet counters on the map returned [1.0] ('all Soviet counters cleared'),
    and an Air Strike Track above 4 gave more air strikes than the game has."""
    with pytest.raises(ValueError, match=why):
        GAME.from_text(text)
    pos("turn=20 step=lost german=I1@8,I2@8 soviet=8:3")  # the turn limit
    pos("turn=3 step=lost german=I1@8 soviet=8:3,9:1")    # outnumbered
    pos("turn=3 step=won german=I1@8 soviet=-")


_HOSTILE = ["\x00", "yes\x00", "I1:3-8" * 20000, "9" * 5000, "I1:3-4;" * 20000, "A1:3-4-7+I2+I3", "A1:3-4+L1",
            "L1:3-8+I2", "I1:02-4", "I1:3\t-4", "I1:-4", "I1:", ":", "+", "A1:+I2", "I1:3-4-", "L1:3-4;L1:3-8",
            "I7", "L1", "maybe", "I1;I2", "yes;no", "I1:2;" * 5000, None, 5, b"I1", ["I1"]]
_HOSTILE_STEPS = [
    "turn=3 step=move german=I1@2,I2@3,A1@3,L1@3 soviet=8:1?,9:1,12:2? pool=-",
    "turn=3 step=air:8 german=I1@8,A1@8,L1@8 soviet=8:1,12:2? pool=-",
    "turn=3 step=deplete:8 combat=0:65:4 german=I1@8,A1@8,L1@8e soviet=12:2? pool=-",
    "turn=3 step=ambush:8 german=I1@8,A1@8,L1@8 soviet=8:2a,12:2? pool=-",
    "turn=3 step=roll:8 german=I1@8,A1@8,L1@8 soviet=8:1,12:2? pool=-",
    "turn=3 step=won german=I1@8 soviet=- pool=-",
]


@pytest.mark.parametrize("text", _HOSTILE_STEPS)
def test_hostile_decisions_are_refused_with_a_reason_at_every_step(text):
    """Malformed, huge or wrong-kind decisions, and decisions from a seat that does not exist, are
    IllegalMove with a reason: never another exception, never accepted."""
    s = pos(text)
    for move in _HOSTILE:
        for seat in (0, 1, None):
            with pytest.raises(IllegalMove) as exc:
                s.clone().check_move(move, seat)
            assert str(exc.value)
