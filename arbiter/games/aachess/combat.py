"""A&A Chess combat arithmetic: every die of Axis & Allies replaced by division by 6.

Rules: ``docs/games/aachess.md`` §3-§6. This module is pure arithmetic with no game state,
so the rules file's worked examples can be checked directly. Random parts (the rolled fractions
of ``ryof``/``ryof6``/``cofr``) are *inputs*: a function says whether a roll is needed and what
it needs, and the game asks the referee's dice (a CHANCE node) for the value.

Variants (game option ``variant``):

==========  =================================================================================
orthodox    quotient of total ÷ 6, plus one hit for an attacker's remainder 5 or a defender's 4-5
ryof        as orthodox; the remainders orthodox ignores (attacker 1-4, defender 1-3) are rolled
ryof6       quotient only; every remainder 1-5 is rolled (also AA, rockets and bombing)
cof         remainders carried into the side's next round of the same battle; a qualifying
            remainder is a hit at once and leaves a deficit (remainder - 6), which a full hit
            pays first (after an attacker's 5, the next hit needs 6 + 1)
cofr        as cof; the positive carry left when the battle ends is rolled
==========  =================================================================================
A roll is one d6 and hits when the die is <= the remainder (AA remainders: one d5, r/5).
"""
from __future__ import annotations

from dataclasses import dataclass

VARIANTS = ("orthodox", "ryof", "ryof6", "cof", "cofr")
CARRY_VARIANTS = ("cof", "cofr")
"""Variants that carry remainders between rounds (so a stalled round cannot repeat forever)."""
ATTACKER, DEFENDER = "attacker", "defender"
QUALIFIES = {ATTACKER: 5, DEFENDER: 4}
"""The smallest remainder that counts as a hit: the attacker's 5, the defender's 4 or 5."""
AA_DIVISOR = 5
ROCKET_DAMAGE = 3
DIE = 6


def check_variant(variant: str) -> None:
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")


def _check_side(side: str) -> None:
    if side not in QUALIFIES:
        raise ValueError(f"side must be {ATTACKER!r} or {DEFENDER!r}, not {side!r}")


@dataclass(frozen=True)
class Fire:
    """One side's fire in one round, before any die.

    ``hits`` are certain; ``roll`` > 0 means one d6 is rolled and adds a hit when it shows
    <= ``roll``; ``carry_out`` is what this side carries into its next round (cof/cofr only)."""

    side: str
    total: int
    """The sum of the unit values fired this round."""
    carry_in: int
    """The carry (possibly a negative deficit) added to the total (cof/cofr), else 0."""
    quotient: int
    remainder: int
    remainder_hit: bool
    """The remainder counted as a hit (qualifying remainder, without a die)."""
    hits: int
    roll: int
    carry_out: int

    @property
    def effective(self) -> int:
        return self.total + self.carry_in

    def describe(self) -> str:
        """A line for the game record: total, carry, quotient, remainder and what it did."""
        carry = f" {self.carry_in:+d} carried = {self.effective}" if self.carry_in else ""
        if self.effective <= 0:
            return f"{self.side} {self.total}{carry}: no hit" + (f", carry {self.carry_out}" if self.carry_out else "")
        note = ("counts" if self.remainder_hit else
                f"rolled (hit on ≤{self.roll})" if self.roll else
                "carried" if self.carry_out > 0 else "ignored")
        text = f"{self.side} {self.total}{carry} → {self.quotient} r{self.remainder} ({note})"
        if self.carry_out < 0:
            text += f", deficit {self.carry_out}"
        elif self.carry_out > 0:
            text += f", carry {self.carry_out}"
        return text + f": {self.hits} hit{'s' if self.hits != 1 else ''}" + (" + roll" if self.roll else "")


def fire(total: int, side: str, variant: str = "cof", carry: int = 0) -> Fire:
    """One side's round of fire under ``variant`` (carry ignored unless cof/cofr)."""
    check_variant(variant)
    _check_side(side)
    if total < 0:
        raise ValueError(f"a fire total cannot be negative ({total})")
    carry_in = carry if variant in CARRY_VARIANTS else 0
    effective = total + carry_in
    if effective <= 0:
        return Fire(side, total, carry_in, 0, 0, False, 0, 0, effective if variant in CARRY_VARIANTS else 0)
    quotient, remainder = divmod(effective, DIE)
    qualifies = remainder >= QUALIFIES[side] and not (carry_in < 0 and quotient == 0)
    # a deficit is paid by a full hit before a remainder may count again: "after an attacker's 5
    # he needs a full 6 plus 1 for the next hit" (a deficit of -1 and 6 leave 5: carried, no hit)
    roll, carry_out = 0, 0
    if variant == "ryof6":
        qualifies = False
        roll = remainder
    elif variant == "ryof":
        roll = 0 if qualifies else remainder
    elif variant in CARRY_VARIANTS:
        carry_out = remainder - DIE if qualifies else remainder
    hits = quotient + (1 if qualifies else 0)
    return Fire(side, total, carry_in, quotient, remainder, qualifies, hits, roll, carry_out)


def rolled_hit(need: int, die: int, sides: int = DIE) -> bool:
    """A rolled remainder hits when the die (1..sides) shows ``need`` or less."""
    if not 1 <= die <= sides:
        raise ValueError(f"a die shows 1..{sides}, not {die}")
    return 0 < need and die <= need


def end_roll_needed(variant: str, carry: int) -> int:
    """cofr: the positive carry left when the battle ends is rolled (0: no roll)."""
    return carry if variant == "cofr" and carry > 0 else 0


def first_strike(sub_total: int, all_hits: int) -> int:
    """Attacking submarines' first-strike hits: ``sub_total // 6`` of the attacker's hits (the
    subs' remainder merges with the rest of the attack, which ``all_hits`` already counts)."""
    if sub_total < 0 or all_hits < 0:
        raise ValueError("totals and hits cannot be negative")
    return min(sub_total // DIE, all_hits)


@dataclass(frozen=True)
class AAFire:
    passes: int
    hits: int
    roll: int
    """ryof6: the remainder, rolled on a d5 (a hit when the die <= roll); else 0."""


def aa_fire(passes: int, variant: str = "cof") -> AAFire:
    """Anti-aircraft fire over a whole combat move: plane-passes ÷ 5, remainder ignored
    (ryof6: rolled)."""
    check_variant(variant)
    if passes < 0:
        raise ValueError(f"plane-passes cannot be negative ({passes})")
    hits, remainder = divmod(passes, AA_DIVISOR)
    return AAFire(passes, hits, remainder if variant == "ryof6" else 0)


def plane_passes(paths: list[list[str]], aa_defended: set[str]) -> int:
    """Plane-passes of a combat move: each plane (one path per plane, start space first)
    counts once for every AA-defended space it flies over or into."""
    return sum(1 for path in paths for space in path[1:] if space in aa_defended)


def bombing_damage(bombers: int, treasury: int, variant: str = "cof", die: int | None = None) -> int:
    """PUs a power loses to the strategic raids on its complexes: 2.5 per surviving bomber, the
    total rounded down and capped by the treasury. Under ryof6 the half PU of an odd number of
    bombers is a coin (d6 <= 3), so ``die`` must be given then (see ``bombing_roll_needed``)."""
    check_variant(variant)
    if bombers < 0 or treasury < 0:
        raise ValueError("bombers and treasury cannot be negative")
    damage = 5 * bombers // 2
    if bombing_roll_needed(bombers, variant):
        if die is None:
            raise ValueError("ryof6 bombing with an odd number of bombers needs a die")
        damage += 1 if rolled_hit(3, die) else 0
    return min(damage, treasury)


def bombing_roll_needed(bombers: int, variant: str) -> bool:
    return variant == "ryof6" and bombers % 2 == 1


def rocket_damage(treasury: int, variant: str = "cof", die: int | None = None) -> int:
    """A rocket attack (weapons development) costs 3 PUs; a normal die under ryof6."""
    check_variant(variant)
    if variant == "ryof6":
        if die is None or not 1 <= die <= DIE:
            raise ValueError("ryof6 rockets need a die 1..6")
        return min(die, treasury)
    return min(ROCKET_DAMAGE, treasury)


def orthodox_round(attack: int, defence: int) -> tuple[int, int]:
    """(defender losses, attacker losses) of one orthodox round: the rules' worked examples."""
    return fire(attack, ATTACKER, "orthodox").hits, fire(defence, DEFENDER, "orthodox").hits
