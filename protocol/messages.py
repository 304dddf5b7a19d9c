"""The message set of the arbiter protocol: the single source of truth.

Every message is a msgspec Struct encoded as a msgpack map; the map's ``type`` key names the
message (a tagged union). Every message carries ``game_id`` and ``seq``: a reply echoes the
``seq`` of the request it answers, so a late reply to an old request is recognised and dropped.
Times on the wire are integer milliseconds. The JSON Schema in ``protocol/schema.json`` and the
written spec in ``protocol/SPEC.md`` are generated from / checked against this file.
"""
from __future__ import annotations

import enum
import re
from typing import Annotated, Any, Union

import msgspec

PROTOCOL_VERSION = 1


class EndReason(enum.StrEnum):
    """Why a game ended: ``normal`` (by the rules) or why a seat forfeited it.

    On the wire and in records it is the lower-case text value."""

    NORMAL = "normal"
    TIME = "time"
    """The seat's flag fell: no reply within its allowance plus the referee's margin."""
    ILLEGAL_MOVE = "illegal_move"
    CRASH = "crash"
    """The engine process exited."""
    DISCONNECT = "disconnect"
    """The engine's connection went away while its process (if any) still ran."""
    PROTOCOL_ERROR = "protocol_error"
    """A message that is not valid here (garbage, a wrong type, a refused handshake)."""
    STALL = "stall"
    """Silent far too long where no clock runs (unlimited time, handshake, between games)."""
    NOT_STARTED = "not_started"
    """The engine could not be started or did not complete its handshake; ``detail`` says why."""
    MEMORY = "memory"
    """The engine's process tree used more memory than its limit."""
    ABSENT = "absent"
    """A remote participant had not connected by the event's deadline."""
    ADJUDICATED = "adjudicated"
    """Not a forfeit: the referee ended the game by the event's adjudication rules (a ply limit,
    or both engines' scores agreeing that one side has won); ``detail`` names the rule."""


class TimeControlKind(enum.StrEnum):
    """The kinds of time control (syntax in SPEC.md, 'Time controls')."""

    SUDDEN_DEATH = "sudden_death"
    FISCHER = "fischer"
    MOVES_IN_TIME = "moves_in_time"
    FIXED_PER_MOVE = "fixed_per_move"
    BYO_YOMI = "byo_yomi"
    UNLIMITED = "unlimited"


class ErrorCode(enum.StrEnum):
    """What an ``error`` message complains about."""

    MALFORMED = "malformed"
    """Bytes that are not a valid message."""
    UNEXPECTED = "unexpected"
    """A valid message at the wrong moment."""
    ILLEGAL_MOVE = "illegal_move"
    VERSION = "version"
    INTERNAL = "internal"


class OptionType(enum.StrEnum):
    """The kinds of engine option (as UCI's ``option type``)."""

    CHECK = "check"
    """A boolean."""
    SPIN = "spin"
    """An integer between ``min`` and ``max``."""
    COMBO = "combo"
    """One of the strings in ``choices``."""
    STRING = "string"
    """Any text."""


class EngineOption(msgspec.Struct, kw_only=True, omit_defaults=True):
    """An option an engine declares in ``hello``; the operator may set it, and the referee sends
    the values set in ``new_game.engine_options``."""

    name: str
    type: OptionType
    default: Any = None
    """The value the engine uses when the operator sets none (of the option's type)."""
    min: int | None = None
    """For ``spin``: the smallest value allowed (none: unbounded)."""
    max: int | None = None
    """For ``spin``: the largest value allowed (none: unbounded)."""
    choices: list[str] = []
    """For ``combo``: the allowed values."""
    description: str = ""
    """What the option does, for people (``arbiter engine-info`` prints it)."""

    def accept(self, value: Any) -> Any:
        """``value`` as this option's type; ``ValueError`` saying what it must be. Text is taken for
        any type (a command line gives text): ``true``/``false`` for a check, digits for a spin."""
        kind = OptionType(self.type)
        if kind is OptionType.CHECK:
            if isinstance(value, str) and value.lower() in ("true", "false"):
                value = value.lower() == "true"
            if not isinstance(value, bool):
                raise ValueError(f"must be true or false, not {value!r}")
        elif kind is OptionType.SPIN:
            if isinstance(value, str) and re.fullmatch(r"\s*[-+]?\d+\s*", value):
                value = int(value)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"must be an integer, not {value!r}")
            if (self.min is not None and value < self.min) or (self.max is not None and value > self.max):
                low = "" if self.min is None else self.min
                high = "" if self.max is None else self.max
                raise ValueError(f"must be in [{low}, {high}], not {value}")
        elif not isinstance(value, str):
            raise ValueError(f"must be a string, not {value!r}")
        elif kind is OptionType.COMBO and value not in self.choices:
            raise ValueError(f"must be one of {', '.join(self.choices)}, not {value!r}")
        return value


class BadOption(ValueError):
    """An option value an engine's declaration refuses; ``option`` is its name (so that the referee
    can point at the line of the operator's file that gave it)."""

    def __init__(self, option: str, message: str):
        super().__init__(message)
        self.option = option


def check_engine_options(declared: list[EngineOption], given: dict[str, Any]) -> dict[str, Any]:
    """``given`` checked against an engine's declaration and converted to the declared types;
    ``BadOption`` naming the first unknown or bad option."""
    by_name = {o.name: o for o in declared}
    out = {}
    for name, value in given.items():
        option = by_name.get(name)
        if option is None:
            known = ", ".join(sorted(by_name)) or "none"
            raise BadOption(name, f"unknown option {name!r} (the engine declares: {known})")
        try:
            out[name] = option.accept(value)
        except ValueError as exc:
            raise BadOption(name, f"option {name}: {exc}") from None
    return out


def declaration_problems(declared: list[EngineOption]) -> list[str]:
    """What is wrong with an engine's own option declarations (a name twice, a default its own
    declaration refuses, an empty spin range or combo): for engine authors (``arbiter check-engine``)."""
    problems, seen = [], set()
    for option in declared:
        if option.name in seen:
            problems.append(f"option {option.name} is declared twice")
        seen.add(option.name)
        if option.type == OptionType.SPIN and None not in (option.min, option.max) and option.min > option.max:
            problems.append(f"option {option.name}: min {option.min} is above max {option.max}")
        elif option.type == OptionType.COMBO and not option.choices:
            problems.append(f"option {option.name}: a combo without choices")
        else:
            try:
                option.accept(option.default)
            except ValueError as exc:
                problems.append(f"option {option.name}: its default {exc}")
    return problems


class Message(msgspec.Struct, tag_field="type", kw_only=True, forbid_unknown_fields=False):
    """Base of every message. ``game_id`` is empty outside a game (handshake, ping)."""

    game_id: str = ""
    seq: int = 0


# --- handshake -------------------------------------------------------------------------------


class Hello(Message, tag="hello", kw_only=True):
    """Engine -> referee, the first message an engine sends after connecting (a remote engine
    sends it again after every reconnection)."""

    name: str
    """The engine's own name; with ``author`` and ``version`` the referee prints it when it starts
    the engine. Tables and records name the seat by the operator's display name (``seats``)."""
    author: str = ""
    version: str = ""
    protocol_version: int = PROTOCOL_VERSION
    games: list[str] = []
    """Game names the engine plays (e.g. ``einstein``); empty means 'any'."""
    wants_legal_moves: bool = False
    """Ask the referee to attach the legal-move list to every decision request."""
    wants_state: bool = False
    """Ask the referee to attach the structured ``state`` to every decision request (the text
    ``position`` always comes; leaving ``state`` out keeps requests small and fast)."""
    wants_game_info: bool = False
    """Ask the referee to attach ``game_info`` to every ``new_game``: the fixed facts of the game as
    configured that its name and options do not spell out (Smess: the arrow board)."""
    options: list[EngineOption] = []
    """The options the operator may set (``new_game.engine_options`` carries the values set);
    like UCI's ``option`` lines. Values are checked against this before any game."""
    max_games: Annotated[int, msgspec.Meta(ge=1)] = 1
    """Games the engine plays at once over this connection (a remote engine in an event that runs
    games in parallel): each game's messages carry its ``game_id``, and the engine keeps one game
    state per id. 1 (the default): one game at a time; 0 or less is malformed."""
    secret: str = ""
    """The seat's session secret: the text of the file named by ``ARBITER_SECRET_FILE`` (local
    engines started by the referee). A hello without the right secret is ignored, so no other
    program can take the engine's seat."""


class Welcome(Message, tag="welcome", kw_only=True):
    """Referee -> engine: the handshake is accepted."""

    referee: str
    protocol_version: int = PROTOCOL_VERSION


class Reject(Message, tag="reject", kw_only=True):
    """Referee -> engine: the handshake is refused; the engine should exit."""

    reason: str


# --- a game ----------------------------------------------------------------------------------


class TimeControl(msgspec.Struct, kw_only=True):
    """A time control, both as its text form and decoded (all times in ms)."""

    text: str
    """The compact form, e.g. ``180`` or ``40/60+0.5`` (see SPEC.md, 'Time controls')."""
    kind: TimeControlKind
    base_ms: int = 0
    increment_ms: int = 0
    moves: int = 0
    """For ``moves_in_time``: the number of moves per period."""
    periods: int = 0
    """For ``byo_yomi``: the number of byo-yomi periods."""
    period_ms: int = 0
    """For ``byo_yomi``: the length of one period; for ``fixed_per_move``: the move time."""


class NewGame(Message, tag="new_game", kw_only=True):
    """Referee -> engine: a game starts. The engine answers with ``ready`` (same seq)."""

    game: str
    options: dict[str, Any] = {}
    engine_options: dict[str, Any] = {}
    """The values the operator set for the options this engine declared in ``hello`` (checked
    against the declaration; options not set are absent: the engine uses its defaults)."""
    game_info: dict[str, Any] | None = None
    """The game's fixed facts as configured (documented per game: Smess's arrow board), attached
    when the engine set ``wants_game_info`` in ``hello``; ``{}`` when the game has none to add."""
    seat: int
    """This engine's seat (0-based). Seat 0 makes the first decision of the game."""
    seats: list[str]
    """Every seat's player name, indexed by seat."""
    seat_roles: list[str] = []
    """Every seat's role in the game, indexed by seat, as the game's document names them (EinStein:
    ``first``, ``second``; its colours are in ``options`` and the position)."""
    time_control: TimeControl
    dice_commitment: str = ""
    """Hex SHA-256 of the dice seed; the seed is revealed in ``game_over``."""
    match_id: str = ""
    game_number: int = 0
    dice_stream: str = ""
    """The name every roll of this game is derived from: ``{match_id}|{game_number}`` unless
    games share dice on purpose (duplicate dice)."""


class Ready(Message, tag="ready", kw_only=True):
    """Engine -> referee: acknowledges ``new_game``."""


class Request(Message, tag="request", kw_only=True):
    """Referee -> engine: make a decision now."""

    kind: str
    """The kind of decision: ``move``, ``setup``, or a game-specific kind (a target choice...)."""
    seat: int
    """The seat that decides (the receiving engine's seat)."""
    position: str
    """The full position in the game's text notation, as this seat may see it."""
    state: Any = None
    """The same position as structured data (game-specific, documented per game); attached when
    the engine asked for it in ``hello``."""
    ply: int = 0
    """Events so far (decisions and rolls alike): the index this decision's event gets in the
    record. Simultaneous requests all carry the ply of the first; their events follow in seat order."""
    clocks_ms: list[int] = []
    """Every seat's remaining main time, indexed by seat (byo-yomi periods not included)."""
    time_left_ms: int = 0
    """Time this decision may take before the engine's flag falls (0 = unlimited)."""
    legal_moves: list[str] | None = None
    """Attached when the engine asked for it in ``hello`` (and the game can list them)."""
    last_moves: list[str] = []
    """The decisions made since this engine's previous request, in game notation."""


class Info(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Optional search information an engine may attach to a reply."""

    score: float | None = None
    nodes: int | None = None
    depth: int | None = None
    pv: list[str] | None = None
    time_ms: int | None = None
    """Time the engine measured for itself; logged beside the referee's measurement."""
    comment: str | None = None


MAX_MOVE_CHARS = 4096
"""Longest decision an engine may send, in characters (the longest seen from the sample engines:
1,759, an A&A Chess plan moving every unit)."""


class Reply(Message, tag="reply", kw_only=True):
    """Engine -> referee: the decision, echoing the request's ``seq``."""

    move: Annotated[str, msgspec.Meta(max_length=MAX_MOVE_CHARS)]
    """At most ``MAX_MOVE_CHARS`` characters: the referee passes every decision on to the other
    seats and to a reconnecting engine, so a padded one would make their messages too big."""
    info: Info | None = None


class GameOver(Message, tag="game_over", kw_only=True):
    """Referee -> engine: the game ended."""

    returns: list[float]
    """Each seat's result, indexed by seat (e.g. 1/-1 for a win/loss; equal for cooperation)."""
    reason: EndReason
    """Why it ended, with detail in ``detail``."""
    detail: str = ""
    dice_seed: str = ""
    """The hex seed behind ``dice_commitment``; anyone can now recompute every roll."""


# --- housekeeping ----------------------------------------------------------------------------


class Ping(Message, tag="ping", kw_only=True):
    """Either side: are you alive? The peer answers ``pong`` with the same seq."""


class Pong(Message, tag="pong", kw_only=True):
    pass


class Error(Message, tag="error", kw_only=True):
    """Either side: the peer sent something wrong. Not an answer to a request."""

    code: ErrorCode
    message: str


class Quit(Message, tag="quit", kw_only=True):
    """Referee -> engine: exit now (the referee kills the engine shortly after)."""


AnyMessage = Union[Hello, Welcome, Reject, NewGame, Ready, Request, Reply, GameOver, Ping, Pong, Error, Quit]

ALL_MESSAGES: tuple[type[Message], ...] = AnyMessage.__args__  # type: ignore[attr-defined]
