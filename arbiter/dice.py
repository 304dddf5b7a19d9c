"""Verifiable dice: the referee commits to a seed, derives every roll from it, reveals it at the end.

A game's dice are a *stream*, named ``f"{match_id}|{game_number}"`` unless games share dice on
purpose (duplicate dice: two games, one stream). Roll ``i`` with ``n`` equally likely outcomes is
HMAC-SHA256(key=seed, msg=f"{stream}|{i}|{attempt}"), first 8 bytes big-endian as u, accepted when
u < 2**64 - 2**64 % n (rejection sampling, so no modulo bias), outcome ``u % n``. The commitment
``sha256(seed)`` goes out before the game; the seed comes out after it, so anyone can recompute
every roll and nobody (engine or referee) can have chosen them after the fact.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import struct
from typing import Iterable

import msgspec

_TWO64 = 1 << 64


def shared_dice_remembered(remote: list[str]) -> str:
    """Why duplicate dice (or openings, which imply them) are weak with these remote engines: the
    warning ``arbiter match --openings`` and a tournament's file give (SECURITY.md)."""
    return (f"games in pairs share their dice, and the remote engine(s) {', '.join(remote)} can remember the "
            f"first game's: they know every roll of the second before it is rolled (nothing restarts a remote "
            f"engine; SECURITY.md)")


class Roll(msgspec.Struct, array_like=True):
    """One recorded roll: its index in the game, the number of outcomes, the outcome index."""

    index: int
    outcomes: int
    value: int


def commitment(seed: bytes) -> str:
    return hashlib.sha256(seed).hexdigest()


def stream_name(match_id: str, game_number: int) -> str:
    """The default dice stream of a game."""
    return f"{match_id}|{game_number}"


def _draw(seed: bytes, stream: str, index: int, attempt: int, keyed: hmac.HMAC | None = None) -> int:
    """The 64-bit number of roll ``index``, try ``attempt`` (it does not depend on the outcomes).
    ``keyed``: an HMAC already keyed with ``seed``, to start from a copy (keying costs about as
    much as the rest)."""
    message = f"{stream}|{index}|{attempt}".encode()
    if keyed is None:
        return struct.unpack_from(">Q", hmac.digest(seed, message, "sha256"))[0]
    mac = keyed.copy()
    mac.update(message)
    return struct.unpack_from(">Q", mac.digest())[0]


def derive_roll(seed: bytes, stream: str, index: int, outcomes: int, first: int | None = None) -> int:
    """The outcome index of roll ``index``: a pure function of its inputs (``first``: its
    attempt-0 number, if already drawn)."""
    if outcomes < 1:
        raise ValueError("a roll needs at least one outcome")
    limit = _TWO64 - _TWO64 % outcomes
    attempt = 0
    while True:
        u = first if attempt == 0 and first is not None else _draw(seed, stream, index, attempt)
        if u < limit:
            return u % outcomes
        attempt += 1


def seed_for(master: bytes | None, stream: str) -> bytes:
    """A stream's seed: fresh randomness, or derived from a master seed for reproducible runs."""
    if master is None:
        return os.urandom(32)
    return hmac.new(master, f"seed|{stream}".encode(), hashlib.sha256).digest()


class Dice:
    """The dice of one game; every roll is recorded in ``rolls``."""

    def __init__(self, seed: bytes, stream: str):
        self.seed = seed
        self.stream = stream
        self.rolls: list[Roll] = []
        self._ahead: tuple[int, int] | None = None
        """(index, attempt-0 number) of the next roll, drawn by ``prefetch``."""
        self._keyed: hmac.HMAC | None = None

    @property
    def commitment(self) -> str:
        return commitment(self.seed)

    def roll(self, outcomes: int) -> int:
        index = len(self.rolls)
        ahead, self._ahead = self._ahead, None
        value = derive_roll(self.seed, self.stream, index, outcomes,
                            ahead[1] if ahead is not None and ahead[0] == index else None)
        self.rolls.append(Roll(index, outcomes, value))
        return value

    def prefetch(self) -> None:
        """Draw the next roll's number now (the HMAC is most of a roll's cost), so that the roll
        itself is quick: the referee calls it while engines think. The outcome is the same."""
        index = len(self.rolls)
        if self._ahead is None or self._ahead[0] != index:
            if self._keyed is None:
                self._keyed = hmac.new(self.seed, digestmod=hashlib.sha256)
            self._ahead = (index, _draw(self.seed, self.stream, index, 0, self._keyed))


def verify_rolls(seed_hex: str, commitment_hex: str, stream: str, rolls: Iterable[Roll]) -> list[str]:
    """Problems found re-deriving a game's rolls (empty list: consistent)."""
    problems: list[str] = []
    try:
        seed = bytes.fromhex(seed_hex)
    except ValueError:
        return [f"seed {seed_hex!r} is not hex"]
    if commitment(seed) != commitment_hex:
        problems.append(f"sha256(seed) = {commitment(seed)} does not match the commitment {commitment_hex}")
    for expected_index, roll in enumerate(rolls):
        if roll.index != expected_index:
            problems.append(f"roll {expected_index} is recorded with index {roll.index}")
        value = derive_roll(seed, stream, roll.index, roll.outcomes)
        if value != roll.value:
            problems.append(f"roll {roll.index}: recorded {roll.value}, the seed gives {value}")
    return problems
