"""The common game interface, in the spirit of OpenSpiel's.

A game is a ``Game`` (its name, seats, options and how to make the first state) and a ``State``
(one position). The referee drives every game the same way::

    while not state.is_terminal():
        p = state.current_player()
        if p == CHANCE:        state.apply_chance(referee_rolls(state.chance_outcomes()))
        elif p == SIMULTANEOUS: state.apply_joint({seat: ask(seat) for seat in state.acting_seats()})
        else:                  state.apply(ask(p))
    state.returns()

Why this shape: chance nodes make dice the referee's (engines never roll); simultaneous nodes
serve hidden set-ups; ``decision_kind`` lets a decision be something other than "a move" (a
set-up, a bomb target); ``returns`` per seat serves zero-sum, cooperative (equal returns) and
solo (one seat) games alike; ``observation`` hides what a seat may not see.

Moves are strings in the game's documented notation: the protocol carries them as they are.
Chance outcomes are *equally likely* by contract; a game models a weighted chance event (2d6) as
several uniform ones, which keeps every roll a plain verifiable draw from the referee's dice.

Every game declares a ``GameType`` (OpenSpiel's is the model): what kind of game it is, so that
match formats and tournaments read it instead of guessing, and its typed options, decoded and
checked in one place (``Game.__init__``). ``tests/test_game_contract.py`` holds every registered
game to this contract.
"""
from __future__ import annotations

import abc
import enum
import functools
import typing
from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

import msgspec

CHANCE = -1
"""``current_player()`` when the next event is a roll of the referee's dice."""
SIMULTANEOUS = -2
"""``current_player()`` when several seats decide at once without seeing each other's choice."""
TERMINAL = -4
"""``current_player()`` when the game is over."""


class IllegalMove(ValueError):
    """A decision that the rules do not allow here; the message says why."""


class ChanceError(IllegalMove):
    """``chance_outcomes`` or ``apply_chance`` misused: no roll is due now, or the outcome is not one
    of ``chance_outcomes()``. The one error every game raises for it (a referee or replay bug, or a
    tampered record; never an engine's fault)."""


class OptionError(ValueError):
    """A game option that is unknown or has a bad value; the message names it and the value."""


class Utility(enum.Enum):
    """How the seats' returns relate; formats and tournaments choose how to pair engines by it."""

    ZERO_SUM = "zero_sum"
    """Competitive, the returns sum to 0 (a win is the other's loss; a draw is 0 for all)."""
    GENERAL_SUM = "general_sum"
    """Competitive, the returns need not sum to 0 (several seats may share a side's win)."""
    IDENTICAL = "identical"
    """Cooperative: every seat gets the same return (the team's score)."""
    SOLO = "solo"
    """One seat plays against the game itself."""


class GameOptions(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A game's options as a typed Struct: one field per option with its default.

    A field's type (``Annotated`` with ``msgspec.Meta`` bounds) is what a good value is; the Meta
    ``description`` says it in words and ends the ``OptionError``. Rules a type cannot say go in
    ``check``."""

    def check(self, game: str) -> None:
        """Raise ``OptionError`` (see ``bad_option``) for a value the field types let through."""


def bad_option(game: str, name: str, value: Any, must: str) -> OptionError:
    """The one shape of a bad-value error: the game, the option, what it must be, the value."""
    return OptionError(f"{game}: option {name} must be {must}, not {value!r}")


def option_takes(annotation: Any) -> str:
    """What an option field's annotation asks for, in words (its Meta description if any)."""
    for meta in typing.get_args(annotation)[1:] if typing.get_origin(annotation) is typing.Annotated else ():
        if isinstance(meta, msgspec.Meta) and meta.description:
            return meta.description
    return f"of type {getattr(annotation, '__name__', annotation)}"


def decode_options(game: str, options_type: type[GameOptions], given: dict[str, Any]) -> GameOptions:
    """``given`` (names -> values, as from a tournament file or ``--option``) as ``options_type``;
    raise ``OptionError`` naming the unknown option or the bad value. Values are checked strictly
    (no "3" for 3) and kept as given, so records store what was asked for."""
    fields = {f.name: f for f in msgspec.structs.fields(options_type)}
    unknown = sorted(set(given) - set(fields))
    if unknown:
        raise OptionError(f"{game}: unknown option(s) {', '.join(unknown)}; "
                          f"known: {', '.join(sorted(fields)) or 'none'}")
    for name, value in given.items():
        try:
            msgspec.convert(value, fields[name].type, strict=True)
        except msgspec.ValidationError:
            raise bad_option(game, name, value, option_takes(fields[name].type)) from None
    options = options_type(**given)
    options.check(game)
    return options


@dataclass(frozen=True)
class GameType:
    """What kind of game a ``Game`` is, declared once per game class."""

    name: str
    min_seats: int
    max_seats: int
    """Seat count bounds; a game whose count depends on an option (A&A's ``seats``) spans them."""
    utility: Utility
    chance: bool
    """The referee's dice take part (the game may reach CHANCE nodes)."""
    simultaneous: bool
    """Seats may decide at once (SIMULTANEOUS nodes), e.g. a hidden set-up."""
    hidden_information: bool
    """``observation`` may hide part of the position from a seat."""
    options: type[GameOptions] = GameOptions
    """The typed options; ``Game.options`` is this Struct as a plain dict (what records store)."""
    enumerates_moves: bool = True
    """False: ``legal_moves`` returns ``None`` for decisions too many to list (plans, set-ups)."""


class State(abc.ABC):
    """One position of a game. Mutable: ``apply`` changes it; ``clone`` copies it."""

    game: "Game"

    @abc.abstractmethod
    def current_player(self) -> int:
        """The seat that decides next, or CHANCE, SIMULTANEOUS or TERMINAL."""

    def acting_seats(self) -> list[int]:
        """The seats that decide now (several at a SIMULTANEOUS node)."""
        p = self.current_player()
        return [p] if p >= 0 else []

    def decision_kind(self, seat: int | None = None) -> str:
        """What the deciding seat is asked for: ``move`` unless the game says otherwise."""
        return "move"

    def seat_acts(self, seat: int | None) -> bool:
        """Whether ``seat`` decides now (``None``: whoever does)."""
        return seat is None or seat in self.acting_seats()

    def check_seat(self, seat: int | None) -> None:
        """The one "is it this seat's turn" check: raise ``IllegalMove`` if some seat decides now
        and ``seat`` is not one of them. (When nobody decides, the game's own check says why.)"""
        acting = self.acting_seats()
        if seat is not None and acting and seat not in acting:
            who = " and ".join(str(s) for s in acting)
            raise IllegalMove(f"it is seat {who}'s turn, not seat {seat}'s")

    @abc.abstractmethod
    def legal_moves(self, seat: int | None = None) -> list[str] | None:
        """Every legal decision for ``seat`` (default: the current player), in notation; ``[]``
        when ``seat`` does not decide now. ``None`` means "too many to list" (a movement plan, a
        set-up): only games whose ``GameType.enumerates_moves`` is False return it, and they
        override ``check_move`` to validate any decision with a reason."""

    def check_move(self, move: str, seat: int | None = None) -> None:
        """Raise ``IllegalMove`` with a reason unless ``move`` is legal for ``seat`` now."""
        self.check_seat(seat)
        legal = self.legal_moves(seat)
        if legal is None:
            raise NotImplementedError(f"{type(self).__name__} cannot list its moves: it must override check_move")
        if move not in legal:
            raise IllegalMove(f"{move!r} is not a legal {self.decision_kind(seat)} here")

    @abc.abstractmethod
    def apply(self, move: str) -> None:
        """Play the current player's decision (validated; raises ``IllegalMove``)."""

    def apply_joint(self, moves: dict[int, str]) -> None:
        """Play the decisions of every acting seat at a SIMULTANEOUS node."""
        raise NotImplementedError(f"{type(self).__name__} has no simultaneous decisions")

    def chance_outcomes(self) -> list[Any]:
        """The equally likely outcomes at a CHANCE node; ``ChanceError`` anywhere else."""
        raise ChanceError(f"{type(self).__name__} has no chance events")

    def apply_chance(self, outcome: Any) -> None:
        """Play one of ``chance_outcomes()``; ``ChanceError`` if no roll is due or it is not one."""
        raise ChanceError(f"{type(self).__name__} has no chance events")

    def is_terminal(self) -> bool:
        return self.current_player() == TERMINAL

    @abc.abstractmethod
    def returns(self) -> list[float]:
        """Each seat's result (meaningful once terminal)."""

    def truncated_returns(self) -> list[float]:
        """Each seat's result when the referee stops the game before its end (an event's ply limit,
        ``arbiter.adjudication``): by default equal returns, 0 for every seat (a draw in a
        competitive game, nothing scored in a cooperative or solo one). A game whose own rules
        score an unfinished position (points so far) overrides it."""
        return [0.0] * self.game.num_seats

    def event_note(self) -> str:
        """What the step just played did that its notation alone does not say (a chain scored, a
        pit dug), for the record; the referee calls it once after every step."""
        return ""

    def end_detail(self) -> str:
        """Why the game ended, in the game's words ('corner reached', 'five-turn rule');
        recorded as the record's ``detail`` when the game ends normally."""
        return ""

    @abc.abstractmethod
    def to_text(self) -> str:
        """The full position in the game's text notation (round-trips through ``Game.from_text``)."""

    def observation(self, seat: int) -> str:
        """The position as ``seat`` may see it (default: everything)."""
        return self.to_text()

    def observation_data(self, seat: int) -> Any:
        """The same as ``observation`` as structured data for the wire (game-specific)."""
        return None

    def render(self) -> str:
        """A board drawing for people (``arbiter show``)."""
        return self.to_text()

    def render_svg(self, reveal: bool = False) -> str:
        """The board as an SVG drawing for spectators (the web view). It shows only what every seat
        may know (face-down counters stay face down) unless ``reveal`` (the game is over). Games
        draw their own; this default sets ``render()`` as text (which must then hide nothing)."""
        from .svg import text_board

        return text_board(self.render() if reveal or not self.game.game_type.hidden_information
                          else self.observation(0))

    @abc.abstractmethod
    def clone(self) -> "State": ...

    def __str__(self) -> str:
        return self.to_text()


class Game(abc.ABC):
    """A game with its options fixed. Subclasses set ``game_type`` and ``seat_roles``."""

    game_type: ClassVar[GameType]
    name: ClassVar[str]
    """``game_type.name`` (set for every subclass)."""
    seat_roles: tuple[str, ...]
    """The role of each seat, e.g. ('red', 'blue'); ``len`` is the number of seats. A class
    default; a game whose seats depend on its options sets its own in ``configure``."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "game_type" in cls.__dict__:
            cls.name = cls.game_type.name
        if "from_text" in cls.__dict__:
            cls.from_text = _text_only(cls.__dict__["from_text"])

    def __init__(self, **options: Any):
        self.settings = decode_options(self.name, self.game_type.options, options)
        """The options, typed."""
        self.options: dict[str, Any] = msgspec.structs.asdict(self.settings)
        """The same as a plain dict, every option present (what records and engines see)."""
        self.configure()

    def configure(self) -> None:
        """Derive what the (already valid) options imply: load a board, set seat roles. May raise
        ``OptionError`` for a value only loading can judge (a missing board file)."""

    def game_info(self) -> dict[str, Any]:
        """The game's fixed facts as configured that an engine cannot read from the name and the
        options alone (a board loaded from a file), as plain data. Sent in ``new_game`` to engines
        that ask for it, so that an engine in any language needs no Python to know the rules'
        data; documented per game in ``docs/games/<game>.md``. Most games have none."""
        return {}

    @property
    def num_seats(self) -> int:
        return len(self.seat_roles)

    @abc.abstractmethod
    def new_initial_state(self) -> State: ...

    def forfeit_returns(self, seat: int) -> list[float]:
        """Each seat's result when ``seat`` forfeits: by default it loses and the others win;
        cooperative games override this (the whole team loses)."""
        return [-1.0 if s == seat else 1.0 for s in range(self.num_seats)]

    def forfeits_returns(self, seats: Sequence[int]) -> list[float]:
        """Each seat's result when every seat in ``seats`` forfeits (engines that could not start
        the same game): each forfeit's loss holds, so a seat gets its worst result over them (two
        engines of a two-seat game that both failed both lose)."""
        return [min(results) for results in zip(*(self.forfeit_returns(seat) for seat in seats))]

    @abc.abstractmethod
    def from_text(self, text: str) -> State:
        """Parse a position written by ``State.to_text``; ``ValueError`` saying what is wrong.
        Every game's parser gets only strings: anything else is refused before it (``_text_only``)."""


def _text_only(from_text: Any) -> Any:
    """``from_text`` refusing anything but a string with a ``ValueError``, as for any bad
    position: a game's parser would trip over it with a TypeError or AttributeError of its own
    (or take bytes as JSON), which callers catching ``ValueError`` let through. Wrapped once
    here (``Game.__init_subclass__``) rather than checked in every game."""

    @functools.wraps(from_text)
    def checked(self: Game, text: str) -> State:
        if not isinstance(text, str):
            raise ValueError(f"{self.name} position text must be a string, not {type(text).__name__}")
        return from_text(self, text)

    return checked
