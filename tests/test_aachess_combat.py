"""A&A Chess combat arithmetic: the rules' six worked examples verbatim, and each variant's rule."""
from __future__ import annotations

import pytest

from arbiter.games.aachess.combat import (ATTACKER, DEFENDER, aa_fire, bombing_damage, bombing_roll_needed,
                                          end_roll_needed, fire, first_strike, orthodox_round, plane_passes,
                                          rocket_damage, rolled_hit)

INF, ARM, FTR, BMB, BB, CV, TRN, SUB = 1, 3, 3, 4, 4, 1, 0, 2   # attack values
D_INF, D_ARM, D_FTR, D_BMB, D_BB, D_CV, D_TRN = 2, 2, 4, 1, 4, 3, 1  # defence values


def test_example_1_six_infantry_attack_three_infantry():
    # "6 infantry attack 3 infantry. Attack 6, defence 6. Defender loses 1, attacker loses 1."
    attack, defence = 6 * INF, 3 * D_INF
    assert (attack, defence) == (6, 6)
    assert orthodox_round(attack, defence) == (1, 1)


def test_example_2_four_tanks_attack_three_tanks_six_infantry():
    # "4 tanks attack 3 tanks + 6 infantry. Attack 12, defence 18. Defender loses 2, attacker loses 3."
    attack, defence = 4 * ARM, 3 * D_ARM + 6 * D_INF
    assert (attack, defence) == (12, 18)
    assert orthodox_round(attack, defence) == (2, 3)


def test_example_3_attacker_five_and_defender_four_count():
    # "4 tanks + 5 infantry (attack 17, remainder 5 counts) attack 3 tanks + 5 infantry (defence 16,
    # remainder 4 counts). Defender loses 3, attacker loses 3."
    attack, defence = 4 * ARM + 5 * INF, 3 * D_ARM + 5 * D_INF
    assert (attack, defence) == (17, 16)
    a, d = fire(attack, ATTACKER, "orthodox"), fire(defence, DEFENDER, "orthodox")
    assert a.remainder == 5 and a.remainder_hit and d.remainder == 4 and d.remainder_hit
    assert orthodox_round(attack, defence) == (3, 3)


def test_example_4_remainders_ignored():
    # "4 tanks + 4 infantry (attack 16, remainder 4 ignored) attack 3 tanks + 4 infantry + 1 bomber
    # (defence 15, remainder 3 ignored). Defender loses 2, attacker loses 2."
    attack, defence = 4 * ARM + 4 * INF, 3 * D_ARM + 4 * D_INF + D_BMB
    assert (attack, defence) == (16, 15)
    a, d = fire(attack, ATTACKER, "orthodox"), fire(defence, DEFENDER, "orthodox")
    assert not a.remainder_hit and not d.remainder_hit
    assert orthodox_round(attack, defence) == (2, 2)


def test_example_5_anti_aircraft_counts_plane_passes_across_territories():
    # "Germany sends 3 planes against the UK and 2 against Russia in one move, both territories
    # defended by AA: 5 plane-passes, so 1 plane is lost before the attack totals are computed."
    paths = [["Germany", "United Kingdom"]] * 3 + [["Germany", "Russia"]] * 2
    passes = plane_passes(paths, {"United Kingdom", "Russia"})
    assert passes == 5
    assert aa_fire(passes, "orthodox").hits == 1


def test_example_6_submarine_first_strike():
    # "Attack: 2 battleships, 1 carrier with 2 fighters and 5 submarines (total 25). Defence:
    # 1 battleship, 1 carrier with 2 fighters and 1 transport (16). The submarines' 10 gives one
    # first-strike hit (the defender chooses the transport), so the defence is 15. Defender loses 4
    # (remainder 1 ignored), attacker loses 2 (remainder 3 ignored)."
    subs = 5 * SUB
    attack = 2 * BB + CV + 2 * FTR + subs
    defence = D_BB + D_CV + 2 * D_FTR + D_TRN
    assert (attack, defence) == (25, 16)
    a = fire(attack, ATTACKER, "orthodox")
    assert first_strike(subs, a.hits) == 1
    defence -= D_TRN  # the defender chose the transport as the first-strike casualty
    d = fire(defence, DEFENDER, "orthodox")
    assert defence == 15 and (a.hits, a.remainder) == (4, 1) and (d.hits, d.remainder) == (2, 3)


@pytest.mark.parametrize("total,side,hits,roll", [
    (17, ATTACKER, 2, 5), (16, ATTACKER, 2, 4), (16, DEFENDER, 2, 4), (6, DEFENDER, 1, 0), (3, ATTACKER, 0, 3)])
def test_ryof6_rolls_every_remainder(total, side, hits, roll):
    f = fire(total, side, "ryof6")
    assert (f.hits, f.roll, f.carry_out) == (hits, roll, 0)


@pytest.mark.parametrize("total,side,hits,roll", [
    (17, ATTACKER, 3, 0), (16, ATTACKER, 2, 4), (16, DEFENDER, 3, 0), (15, DEFENDER, 2, 3), (12, ATTACKER, 2, 0)])
def test_ryof_rolls_only_what_orthodox_ignores(total, side, hits, roll):
    f = fire(total, side, "ryof")
    assert (f.hits, f.roll, f.carry_out) == (hits, roll, 0)


def test_rolled_hit_is_die_at_most_remainder():
    assert rolled_hit(3, 3) and not rolled_hit(3, 4) and not rolled_hit(0, 1)
    with pytest.raises(ValueError):
        rolled_hit(2, 7)


def test_cof_carries_remainders_and_leaves_a_deficit():
    # Attacker 17: 2 r5 -> the 5 is a hit at once and leaves a deficit of -1.
    a1 = fire(17, ATTACKER, "cof")
    assert (a1.hits, a1.carry_out) == (3, -1)
    # "after an attacker's 5 he needs a full 6 plus 1 for the next hit": 6 with the deficit
    # leaves 5, carried without a hit (before, the 5 counted at once: a hit for a 6)...
    a2 = fire(6, ATTACKER, "cof", a1.carry_out)
    assert (a2.effective, a2.hits, a2.carry_out) == (5, 0, 5)
    assert (fire(7, ATTACKER, "cof", -1).hits, fire(7, ATTACKER, "cof", -1).carry_out) == (1, 0)  # ... 7 scores
    # A full hit pays the deficit; the remainder after it counts again (12 - 1 = 11: 6 + 5).
    assert (fire(12, ATTACKER, "cof", -1).hits, fire(12, ATTACKER, "cof", -1).carry_out) == (2, -1)
    a3 = fire(4, ATTACKER, "cof", -1)
    assert (a3.hits, a3.carry_out) == (0, 3)
    # The defender's deficit of -2 needs 6 + 2 likewise.
    assert (fire(6, DEFENDER, "cof", -2).hits, fire(6, DEFENDER, "cof", -2).carry_out) == (0, 4)
    assert (fire(8, DEFENDER, "cof", -2).hits, fire(8, DEFENDER, "cof", -2).carry_out) == (1, 0)
    # Defender 4 qualifies and leaves -2; a remainder of 3 is carried.
    d1 = fire(16, DEFENDER, "cof")
    assert (d1.hits, d1.carry_out) == (3, -2)
    d2 = fire(9, DEFENDER, "cof")
    assert (d2.hits, d2.carry_out) == (1, 3)
    assert fire(2, DEFENDER, "cof", 3).hits == 1  # 3 carried + 2 = 5 -> a hit
    assert fire(0, DEFENDER, "cof", -2).carry_out == -2  # a deficit survives a silent round


def test_cof_one_infantry_against_one_infantry_eventually_hits():
    carry_a = carry_d = 0
    losses = []
    for _ in range(3):
        a, d = fire(1, ATTACKER, "cof", carry_a), fire(2, DEFENDER, "cof", carry_d)
        carry_a, carry_d = a.carry_out, d.carry_out
        losses.append((a.hits, d.hits))
    assert losses == [(0, 0), (0, 1), (0, 0)] and carry_a == 3


def test_orthodox_and_ryof_carry_nothing():
    assert fire(10, ATTACKER, "orthodox", carry=5).carry_in == 0
    assert fire(10, ATTACKER, "ryof", carry=5).carry_out == 0


def test_cofr_rolls_the_positive_carry_at_the_end_only():
    f = fire(9, ATTACKER, "cofr")
    assert (f.hits, f.roll, f.carry_out) == (1, 0, 3)
    assert end_roll_needed("cofr", f.carry_out) == 3
    assert end_roll_needed("cofr", -1) == 0 and end_roll_needed("cof", 3) == 0


def test_first_strike_is_the_subs_quotient_capped_by_all_hits():
    assert first_strike(10, 4) == 1 and first_strike(12, 1) == 1 and first_strike(5, 3) == 0


def test_aa_fire_divides_passes_by_five():
    assert aa_fire(4).hits == 0 and aa_fire(9).hits == 1 and aa_fire(10).hits == 2
    assert aa_fire(9, "ryof6").roll == 4 and aa_fire(9, "cof").roll == 0
    # 3 planes crossing two AA territories count 6.
    assert plane_passes([["A", "X", "Y"]] * 3, {"X", "Y"}) == 6


def test_bombing_two_and_a_half_per_bomber_capped_by_treasury():
    assert bombing_damage(3, 100) == 7
    assert bombing_damage(1, 100) == 2 and bombing_damage(2, 100) == 5
    assert bombing_damage(3, 4) == 4
    assert bombing_roll_needed(3, "ryof6") and not bombing_roll_needed(2, "ryof6")
    assert bombing_damage(3, 100, "ryof6", die=3) == 8 and bombing_damage(3, 100, "ryof6", die=4) == 7
    with pytest.raises(ValueError):
        bombing_damage(1, 10, "ryof6")


def test_rockets_count_three():
    assert rocket_damage(20) == 3 and rocket_damage(2) == 2 and rocket_damage(20, "ryof6", die=5) == 5


def test_bad_input_is_refused_with_reasons():
    with pytest.raises(ValueError, match="unknown variant"):
        fire(3, ATTACKER, "dice")
    with pytest.raises(ValueError, match="side"):
        fire(3, "red")
    with pytest.raises(ValueError, match="negative"):
        aa_fire(-1)


def test_plane_passes_do_not_count_the_start_space():
    """A plane taking off from an AA-defended space has not flown over or into it."""
    assert plane_passes([["X", "Y"]], {"X"}) == 0
    assert plane_passes([["X", "Y"]], {"X", "Y"}) == 1
    assert plane_passes([["X", "Y", "X"]], {"X"}) == 1  # back into it later: that counts
    assert plane_passes([["X"]], {"X"}) == 0  # a plane that stays put
    assert plane_passes([["X", "Y", "Z"], ["Y", "Z"]], {"X", "Y", "Z"}) == 3
