"""Game records: everything needed to replay, audit and verify one game.

A record is a msgspec Struct; its JSON form (one record per line in ``games.jsonl``) is the
documented open export format (docs/records.md). The SQLite results database keeps the same
JSON per game beside indexed columns.
"""
from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from protocol.messages import EndReason, Info

from ..adjudication import Adjudication
from ..dice import Roll

RECORD_FORMAT = "arbiter-game/1"


class Event(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One step of a game: a chance outcome (seat -1) or a seat's decision."""

    ply: int
    seat: int
    kind: str
    """``chance``, or the decision kind (``move``, ``setup``, ...)."""
    move: str
    """The decision in game notation, or the chance outcome as text."""
    roll: int | None = None
    """For chance events: the index of the roll in ``GameRecord.rolls``."""
    measured_ms: float | None = None
    """Referee-measured time from sending the request to receiving the reply."""
    reported_ms: int | None = None
    """The engine's own measurement (``info.time_ms``), for latency."""
    clock_ms: int | None = None
    """The seat's main time left after this decision."""
    info: Info | None = None
    note: str | None = None
    """What the step did beyond its notation, in the game's words (``State.event_note``)."""
    info_truncated: bool = False
    """The engine's ``info`` (``pv``, ``comment``) was longer than its limit and is cut here."""
    offturn_cpu_ms: float | None = None
    """CPU time the engine used since its previous reply, while it was not asked anything
    (measured for engines allowed to ponder; others are stopped off-turn)."""
    lag_ms: float | None = None
    """Remote engines: network lag of this decision (measured − reported, SPEC.md 'Fair lag')."""
    compensated_ms: float | None = None
    """Remote engines: the part of ``lag_ms`` not charged to the clock (the lag policy)."""


class Opening(msgspec.Struct, kw_only=True, frozen=True):
    """The start position a game was played from, out of an openings file (``arbiter.openings``)."""

    index: int
    """The position's number in its file (1-based, in file order, comments and blank lines not counted)."""
    position: str
    """The position in the game's text notation, as the file gives it: the game starts here."""


class GameRecord(msgspec.Struct, kw_only=True):
    format: str = RECORD_FORMAT
    game_id: str
    match_id: str
    game_number: int
    game: str
    options: dict[str, Any]
    players: list[str]
    """Player names indexed by seat."""
    seat_roles: list[str]
    time_control: str
    margin_ms: int
    started_at: float
    """Wall-clock (Unix) start time."""
    ended_at: float = 0.0
    events: list[Event] = []
    rolls: list[Roll] = []
    returns: list[float] = []
    reason: EndReason = EndReason.NORMAL
    detail: str = ""
    forfeit_seat: int | None = None
    forfeit_seats: list[int] | msgspec.UnsetType = msgspec.UNSET
    """Every seat that forfeited, when more than one did (engines that could not start the same
    game: each loses, ``Game.forfeits_returns``); ``forfeit_seat`` is the lowest. Absent otherwise."""
    final_position: str = ""
    dice_stream: str = ""
    """The name every roll is derived from (``match_id|game_number`` unless dice are shared)."""
    dice_commitment: str = ""
    dice_seed: str = ""
    dropped_messages: int = 0
    """Late or stray engine messages recognised by seq / game id and ignored."""
    insecure: bool | msgspec.UnsetType = msgspec.UNSET
    """True when a seat was reached over plain tcp without CURVE (absent otherwise)."""
    opening: Opening | msgspec.UnsetType = msgspec.UNSET
    """The start position out of an openings file (absent: the game's own initial position)."""
    engine_options: list[dict[str, Any]] | msgspec.UnsetType = msgspec.UNSET
    """Per seat, the engine options set for it (``new_game.engine_options``); absent when none were."""
    adjudication: Adjudication | msgspec.UnsetType = msgspec.UNSET
    """The event's adjudication rules (``arbiter.adjudication``), when it had any: ``verify`` re-judges by them."""
    played_on: str | msgspec.UnsetType = msgspec.UNSET
    """The machine that played the game when it was not the referee's own (cluster backend):
    host, CPU model, cores."""
    tc_scale: float | msgspec.UnsetType = msgspec.UNSET
    """The factor the time control was scaled by for that machine's speed (cluster backend with
    ``scale_time_control``; absent otherwise): every time of the game was ``time_control`` × it."""
    # Tamper evidence (docs/records.md, "Chains and signatures"); set by the results store when the
    # record is saved. Records written before chaining have the defaults and stay loadable.
    match_seq: int = 0
    """1-based position of this record in its match's chain (commit order); 0: not chained."""
    prev_hash: str = ""
    """SHA-256 (hex) of the stored JSON of the match's previous record; empty for the first."""
    event_id: str = ""
    """The event (tournament) whose chain this record is also in; empty outside tournaments."""
    event_seq: int = 0
    event_prev_hash: str = ""
    """Like ``match_seq``/``prev_hash``, over every game of the event in commit order."""
    key_id: str = ""
    """Id of the referee key that signed the record (``arbiter keygen``); empty: unsigned."""
    signature: str = ""
    """Ed25519 signature (hex) of ``signed_bytes(record)``."""

    def winner(self) -> int | None:
        """The seat with the strictly highest return, if there is one."""
        return winner(self.returns)


def winner(returns: list[float]) -> int | None:
    """The seat with the strictly highest return, if there is one."""
    if not returns:
        return None
    best = max(returns)
    seats = [s for s, r in enumerate(returns) if r == best]
    return seats[0] if len(seats) == 1 else None


def winners(returns: list[float]) -> list[int]:
    """Every seat that won: those with the highest return when not all returns are equal (an
    alliance wins together); in a one-seat game the seat, if its return is positive."""
    if len(returns) == 1:
        return [0] if returns[0] > 0 else []
    if not returns or min(returns) == max(returns):
        return []
    return [s for s, r in enumerate(returns) if r == max(returns)]


_json_encoder = msgspec.json.Encoder()
_json_decoder = msgspec.json.Decoder(GameRecord)


def to_json(record: GameRecord) -> bytes:
    return _json_encoder.encode(record)


def from_json(data: bytes | str) -> GameRecord:
    return _json_decoder.decode(data)


def record_hash(stored: bytes) -> str:
    """The chain hash of a record: SHA-256 of its JSON exactly as stored (``to_json``)."""
    return hashlib.sha256(stored).hexdigest()


def signed_bytes(record: GameRecord) -> bytes:
    """What a record's signature covers: its JSON with ``signature`` empty (every other field,
    the chain links and ``key_id`` included)."""
    return to_json(msgspec.structs.replace(record, signature=""))
