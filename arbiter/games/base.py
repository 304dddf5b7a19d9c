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
"""
from __future__ import annotations

import abc
from typing import Any, ClassVar

CHANCE = -1
"""``current_player()`` when the next event is a roll of the referee's dice."""
SIMULTANEOUS = -2
"""``current_player()`` when several seats decide at once without seeing each other's choice."""
TERMINAL = -4
"""``current_player()`` when the game is over."""


class IllegalMove(ValueError):
    """A decision that the rules do not allow here; the message says why."""


class OptionError(ValueError):
    """A game option that is unknown or has a bad value; the message names it."""


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

    @abc.abstractmethod
    def legal_moves(self, seat: int | None = None) -> list[str]:
        """Every legal decision for ``seat`` (default: the current player), in notation."""

    def check_move(self, move: str, seat: int | None = None) -> None:
        """Raise ``IllegalMove`` with a reason unless ``move`` is legal for ``seat`` now.

        Games with huge decision spaces override this instead of enumerating ``legal_moves``."""
        if move not in self.legal_moves(seat):
            raise IllegalMove(f"{move!r} is not a legal {self.decision_kind(seat)} here")

    @abc.abstractmethod
    def apply(self, move: str) -> None:
        """Play the current player's decision (validated; raises ``IllegalMove``)."""

    def apply_joint(self, moves: dict[int, str]) -> None:
        """Play the decisions of every acting seat at a SIMULTANEOUS node."""
        raise NotImplementedError(f"{type(self).__name__} has no simultaneous decisions")

    def chance_outcomes(self) -> list[Any]:
        """The equally likely outcomes at a CHANCE node."""
        raise NotImplementedError(f"{type(self).__name__} has no chance events")

    def apply_chance(self, outcome: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} has no chance events")

    def is_terminal(self) -> bool:
        return self.current_player() == TERMINAL

    @abc.abstractmethod
    def returns(self) -> list[float]:
        """Each seat's result (meaningful once terminal)."""

    def event_note(self) -> str:
        """What the step just played did that its notation alone does not say (a chain scored, a
        pit dug), for the record; the referee calls it once after every step."""
        return ""

    def end_detail(self) -> str:
        """Why the game ended, in the game's words ('corner reached', 'five-turn rule');
        recorded as the record's ``detail`` when the game ends normally."""
        return ""

    def die(self) -> int | None:
        """The die showing for the current decision, if the game shows one."""
        return None

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

    @abc.abstractmethod
    def clone(self) -> "State": ...

    def __str__(self) -> str:
        return self.to_text()


class Game(abc.ABC):
    """A game with its options fixed. Subclasses set ``name``, ``seat_roles`` and options."""

    name: ClassVar[str]
    seat_roles: ClassVar[tuple[str, ...]]
    """The role of each seat, e.g. ('red', 'blue'); ``len`` is the number of seats."""
    default_options: ClassVar[dict[str, Any]] = {}
    cooperative: ClassVar[bool] = False

    def __init__(self, **options: Any):
        unknown = sorted(set(options) - set(self.default_options))
        if unknown:
            raise OptionError(f"{self.name}: unknown option(s) {', '.join(unknown)}; "
                              f"known: {', '.join(sorted(self.default_options)) or 'none'}")
        self.options = {**self.default_options, **options}
        self.validate_options()

    def validate_options(self) -> None:
        """Raise ``OptionError`` naming a bad option value."""

    @property
    def num_seats(self) -> int:
        return len(self.seat_roles)

    @abc.abstractmethod
    def new_initial_state(self) -> State: ...

    def forfeit_returns(self, seat: int) -> list[float]:
        """Each seat's result when ``seat`` forfeits: by default it loses and the others win;
        cooperative games override this (the whole team loses)."""
        return [-1.0 if s == seat else 1.0 for s in range(self.num_seats)]

    @abc.abstractmethod
    def from_text(self, text: str) -> State:
        """Parse a position written by ``State.to_text``."""
