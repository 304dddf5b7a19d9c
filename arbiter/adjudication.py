"""Adjudication: the referee ends a game early by an event's rules (as cutechess's ``-draw``/``-resign``).

* **Ply limit** (``max_plies``): after that many decisions (rolls not counted) a game that has not
  ended is stopped and scored by ``State.truncated_returns`` (a draw in a zero-sum game unless the
  game says otherwise).
* **Resign rule** (``resign_moves``, ``resign_score``): two-seat zero-sum games only. When for
  ``resign_moves`` consecutive decisions *each* one engine has reported ``info.score <=
  -resign_score`` and the other ``>= resign_score`` (scores are from the decider's point of view,
  so the engines agree on who is winning), the side ahead wins: the returns a forfeit by the other
  side would give, without its being a forfeit.

Both end the game with reason ``adjudicated`` and a ``detail`` naming the rule; the rules are kept
in the record, so ``arbiter verify`` re-judges the recorded events and scores.
"""
from __future__ import annotations

import math

import msgspec

from .games.base import Game, State, Utility


class Adjudication(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """An event's adjudication rules (0: the rule is off)."""

    max_plies: int = 0
    """Stop a game after this many decisions (rolls not counted)."""
    resign_moves: int = 0
    """Consecutive decisions per engine the scores must agree for."""
    resign_score: float = 0.0
    """The score (the engines' own scale) the winner must report at least and the loser at most minus."""

    def __bool__(self) -> bool:
        return bool(self.max_plies or self.resign_moves)

    def problem(self, game: Game | None = None) -> tuple[str, str] | None:
        """(the setting, why) when these rules cannot be used (for ``game``); None if they can."""
        if self.max_plies < 0:
            return "max_plies", f"must be at least 1 (0: no limit), not {self.max_plies}"
        if self.resign_moves < 0:
            return "resign_moves", f"must be at least 1 (0: no resign rule), not {self.resign_moves}"
        if not math.isfinite(self.resign_score):  # nan never compares; both are stored as null (unverifiable)
            return "resign_score", f"must be a finite number, not {self.resign_score}"
        if self.resign_score < 0 or bool(self.resign_moves) != bool(self.resign_score):
            key = "resign_score" if self.resign_moves else "resign_moves"
            return key, "the resign rule needs both resign_moves (at least 1) and resign_score (above 0)"
        if self.resign_moves and game is not None and (
                game.game_type.utility is not Utility.ZERO_SUM or game.num_seats != 2):
            return "resign_moves", (f"the resign rule is for two-seat zero-sum games; {game.name} is "
                                    f"{game.num_seats}-seat {game.game_type.utility.value.replace('_', '-')}")
        return None

    def describe(self) -> str:
        parts = [f"ply limit {self.max_plies}"] if self.max_plies else []
        if self.resign_moves:
            parts.append(f"resign at score {self.resign_score:g} for {self.resign_moves} moves")
        return ", ".join(parts) or "none"


class Judge:
    """Applies ``Adjudication`` to one game: ``see`` each new event, get a verdict when a rule ends it."""

    def __init__(self, rules: Adjudication, game: Game):
        self.rules, self.game = rules, game
        self.seen = 0
        self.decisions = 0
        self.streaks = [[0, 0] for _ in range(game.num_seats)]
        """Per seat: consecutive decisions with score <= -S (losing), >= S (winning)."""

    def see(self, events: list, state: State) -> tuple[list[float], str] | None:
        """Take in ``events[self.seen:]``; (returns, detail) when the game must end now, before
        ``state`` (the position after them) is played on. A finished game is never adjudicated."""
        rules = self.rules
        for event in events[self.seen:]:
            if event.seat < 0:
                continue
            self.decisions += 1
            if rules.resign_moves:
                score = event.info.score if event.info is not None else None
                streak = self.streaks[event.seat]
                streak[0] = streak[0] + 1 if score is not None and score <= -rules.resign_score else 0
                streak[1] = streak[1] + 1 if score is not None and score >= rules.resign_score else 0
        self.seen = len(events)
        if state.is_terminal():
            return None
        if rules.resign_moves:
            n = rules.resign_moves
            for loser, winner in ((0, 1), (1, 0)):
                if self.streaks[loser][0] >= n and self.streaks[winner][1] >= n:
                    return (self.game.forfeit_returns(loser),
                            f"resign rule: seat {loser} reported a score of -{rules.resign_score:g} or less and "
                            f"seat {winner} {rules.resign_score:g} or more for {n} consecutive moves each")
        if rules.max_plies and self.decisions >= rules.max_plies:
            return list(state.truncated_returns()), f"ply limit: {self.decisions} decisions played"
        return None
