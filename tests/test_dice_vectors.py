"""Known-answer vectors for the dice: the documented formulas, recomputed here from hmac/hashlib,
and the same values written out, so a changed derivation message cannot slip through (a change
would silently give every tournament different dice for the same seed)."""
from __future__ import annotations

import hashlib
import hmac

import pytest

from arbiter.dice import Dice, Roll, commitment, derive_roll, seed_for, verify_rolls

SPEC_SEED = bytes(range(32))  # protocol/SPEC.md's test vector


def spec_roll(seed: bytes, stream: str, index: int, n: int) -> int:
    """SPEC.md 'Dice', step 2, written out independently of arbiter.dice."""
    attempt = 0
    while True:
        mac = hmac.new(seed, f"{stream}|{index}|{attempt}".encode(), hashlib.sha256).digest()
        u = int.from_bytes(mac[:8], "big")
        if u < 2**64 - 2**64 % n:
            return u % n
        attempt += 1


SEED_VECTORS = [
    # (master, stream, HMAC-SHA256(master, "seed|" + stream))
    (b"arbiter-test-master", "m|1", "31621d1606459a5223bfd7f484b6146ef7e5e5ff0fc80fbf04ad30ed3556b26d"),
    (bytes(32), "einstein-match|7", "0a4416b6133fa48fd8c8139755e77d8f203a8e53022e9ec496a678901add7d3b"),
]


@pytest.mark.parametrize("master, stream, expected", SEED_VECTORS)
def test_seed_for_known_answers(master, stream, expected):
    independent = hmac.new(master, b"seed|" + stream.encode(), hashlib.sha256).hexdigest()
    assert independent == expected  # the vector itself is the documented formula
    assert seed_for(master, stream).hex() == expected


def test_spec_test_vector_rolls():
    assert commitment(SPEC_SEED) == "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd"
    expected = [2, 0, 1, 4, 0, 2, 1, 3, 5, 4, 3, 1]  # SPEC.md: rolls 0-11, n = 6, stream m6|1
    assert [spec_roll(SPEC_SEED, "m6|1", i, 6) for i in range(12)] == expected
    dice = Dice(SPEC_SEED, "m6|1")
    assert [dice.roll(6) for _ in range(12)] == expected


@pytest.mark.parametrize("seed, stream, n, expected", [
    (SPEC_SEED, "m|1", 6, [0, 1, 2, 1, 3, 5, 1, 5, 4, 4]),
    (SPEC_SEED, "m|1", 720, [372, 517, 200, 307, 219]),  # an EinStein random set-up
    (bytes.fromhex(SEED_VECTORS[0][2]), "m|1", 2, [1, 0, 0, 0, 0, 0, 0, 1]),
])
def test_derive_roll_known_answers(seed, stream, n, expected):
    assert [spec_roll(seed, stream, i, n) for i in range(len(expected))] == expected
    assert [derive_roll(seed, stream, i, n) for i in range(len(expected))] == expected


def test_a_tournament_game_seed_end_to_end():
    """Master seed -> stream seed -> rolls, as a tournament derives a game's dice."""
    master = b"arbiter-test-master"
    seed = hmac.new(master, b"seed|m|1", hashlib.sha256).digest()
    dice = Dice(seed_for(master, "m|1"), "m|1")
    assert [dice.roll(2) for _ in range(8)] == [spec_roll(seed, "m|1", i, 2) for i in range(8)]


def test_verify_rolls_names_a_renumbered_roll():
    """Values that match the seed but sit under the wrong index are still a lie about the order."""
    dice = Dice(SPEC_SEED, "m6|1")
    for _ in range(6):
        dice.roll(6)
    rolls = list(dice.rolls)
    ok = verify_rolls(SPEC_SEED.hex(), commitment(SPEC_SEED), "m6|1", rolls)
    assert ok == []
    # Roll 3 recorded again as index 4 with roll 4's true value: each value is right for its index.
    forged = rolls[:3] + [Roll(4, 6, rolls[4].value), Roll(4, 6, rolls[4].value), rolls[5]]
    problems = verify_rolls(SPEC_SEED.hex(), commitment(SPEC_SEED), "m6|1", forged)
    assert problems == ["roll 3 is recorded with index 4"]
    dropped = rolls[:2] + rolls[3:]  # a roll left out of the record
    problems = verify_rolls(SPEC_SEED.hex(), commitment(SPEC_SEED), "m6|1", dropped)
    assert "roll 2 is recorded with index 3" in problems


def test_a_roll_needs_an_outcome():
    with pytest.raises(ValueError, match="at least one outcome"):
        derive_roll(SPEC_SEED, "m|1", 0, 0)
    assert derive_roll(SPEC_SEED, "m|1", 0, 1) == 0


def test_prefetched_rolls_are_the_same_rolls():
    """``Dice.prefetch`` draws the next number early (off the referee's hot path); the outcomes,
    rejections included, are those of ``derive_roll``. With n = 2**63 + 1 about half of the
    first attempts are rejected, so later attempts are exercised too."""
    for n in (6, 720, 2 ** 63 + 1):
        plain, early = Dice(SPEC_SEED, "m|1"), Dice(SPEC_SEED, "m|1")
        got = []
        for i in range(40):
            if i % 3:  # sometimes twice, sometimes not at all
                early.prefetch()
                early.prefetch()
            got.append(early.roll(n))
        assert got == [plain.roll(n) for _ in range(40)] == [derive_roll(SPEC_SEED, "m|1", i, n) for i in range(40)]
        assert early.rolls == plain.rolls
    rejected = [i for i in range(40) if int.from_bytes(hmac.digest(SPEC_SEED, f"m|1|{i}|0".encode(), "sha256")[:8],
                                                       "big") >= (1 << 64) - (1 << 64) % (2 ** 63 + 1)]
    assert rejected  # the case the test is for
