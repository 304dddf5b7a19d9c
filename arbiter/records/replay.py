"""Replaying a record through the rules: the basis of ``arbiter verify`` and ``arbiter show``.

Verification re-derives every roll from the revealed seed (and checks it against the
commitment), replays every event through the rules (each chance outcome must be the one the
roll selects, each decision must be legal), and checks the recorded result.
"""
from __future__ import annotations

from typing import Iterator

from ..dice import verify_rolls
from ..games import SIMULTANEOUS, IllegalMove, load_game
from ..games.base import CHANCE, State
from ..adjudication import Judge
from .record import Event, GameRecord


def replay(record: GameRecord, state: State | None = None, start: int = 0) -> Iterator[tuple[list[Event], State]]:
    """Yield (events applied, state after them) step by step; raise ValueError on inconsistency.
    ``state``: the position after the record's first ``start`` events, replayed on from there (it
    is changed: a copy of one kept)."""
    state = start_state(record) if state is None else state
    rolls = {r.index: r for r in record.rolls}
    events = record.events
    i = start
    while i < len(events):
        event = events[i]
        p = state.current_player()
        if state.is_terminal():
            raise ValueError(f"event {i} ({event.kind} {event.move}) comes after the game ended")
        if p == CHANCE:
            if event.seat != -1 or event.roll is None:
                raise ValueError(f"event {i}: a roll was due, the record has {event.kind} by seat {event.seat}")
            roll = rolls.get(event.roll)
            outcomes = state.chance_outcomes()
            if roll is None or roll.outcomes != len(outcomes):
                raise ValueError(f"event {i}: roll {event.roll} is missing or has the wrong number of outcomes")
            if str(outcomes[roll.value]) != event.move:
                raise ValueError(f"event {i}: roll {event.roll} gives {outcomes[roll.value]}, "
                                 f"the record says {event.move}")
            state.apply_chance(outcomes[roll.value])
            step = [event]
        elif p == SIMULTANEOUS:
            seats = state.acting_seats()
            step = events[i:i + len(seats)]
            moves = {e.seat: e.move for e in step}
            if sorted(moves) != sorted(seats):
                raise ValueError(f"event {i}: seats {seats} decide together, the record has {sorted(moves)}")
            for e in step:
                _check(state, e, i)
            state.apply_joint(moves)
        else:
            if event.seat != p:
                raise ValueError(f"event {i}: seat {p} was to decide, the record has seat {event.seat}")
            _check(state, event, i)
            state.apply(event.move)
            step = [event]
        i += len(step)
        yield step, state


def start_state(record: GameRecord) -> State:
    """The position the game began in: its opening's, or the game's initial one."""
    game = load_game(record.game, **record.options)
    if record.opening:
        try:
            return game.from_text(record.opening.position)
        except Exception as exc:  # a tampered or foreign record: an inconsistency, not a crash
            raise ValueError(f"opening {record.opening.index}: not a position of {record.game}: {exc}") from None
    return game.new_initial_state()


def _check(state: State, event: Event, index: int) -> None:
    try:
        state.check_move(event.move, event.seat)
    except IllegalMove as exc:
        raise ValueError(f"event {index}: seat {event.seat} {event.kind} {event.move!r} is illegal: {exc}") from None


def verify(record: GameRecord) -> list[str]:
    """Every inconsistency found in a record (empty: the record is consistent)."""
    problems = verify_rolls(record.dice_seed, record.dice_commitment, record.dice_stream, record.rolls)
    state, verdict, applied = None, None, 0
    game = load_game(record.game, **record.options)
    judge = Judge(record.adjudication, game) if record.adjudication else None
    try:
        for step, state in replay(record):
            applied += len(step)
            if judge is not None and verdict is None and step[0].seat >= 0:  # judged as the referee does
                if (verdict := judge.see(record.events[:applied], state)) and applied < len(record.events):
                    problems.append(f"the adjudication rules ({record.adjudication.describe()}) end the game "
                                    f"after event {applied - 1}, but the record goes on")
                    return problems
    except (ValueError, IllegalMove) as exc:
        problems.append(str(exc))
        return problems
    if state is None:
        state = start_state(record)
    used = {e.roll for e in record.events if e.roll is not None}
    if used != set(range(len(record.rolls))):
        problems.append(f"{len(record.rolls)} rolls recorded but events use {len(used)}")
    if record.reason == "normal":
        if not state.is_terminal():
            problems.append("the record says the game ended normally but the replayed position is not terminal")
        elif list(state.returns()) != list(record.returns):
            problems.append(f"recorded returns {record.returns} differ from the rules' {state.returns()}")
    elif record.reason == "adjudicated":
        if verdict is None:
            problems.append("the record says the game was adjudicated but its rules do not end it there"
                            if record.adjudication else "the record says the game was adjudicated but holds no rules")
        elif [list(verdict[0]), verdict[1]] != [list(record.returns), record.detail]:
            problems.append(f"adjudicated with returns {record.returns} ({record.detail!r}); the rules give "
                            f"{verdict[0]} ({verdict[1]!r})")
        if record.forfeit_seat is not None:
            problems.append("an adjudicated game has no forfeiting seat")
    elif verdict is not None:
        problems.append(f"the adjudication rules ({record.adjudication.describe()}) end the game before the "
                        f"'{record.reason}' the record says")
    elif record.forfeit_seat is None:
        problems.append(f"reason '{record.reason}' without a forfeiting seat")
    elif not record.forfeit_seats and 0 <= record.forfeit_seat < len(record.players) \
            and list(record.returns) != game.forfeit_returns(record.forfeit_seat):
        problems.append(f"recorded returns {record.returns} differ from the "
                        f"{game.forfeit_returns(record.forfeit_seat)} of a forfeit by seat {record.forfeit_seat}")
    if record.forfeit_seats:
        seats = record.forfeit_seats
        if seats != sorted(set(seats)) or len(seats) < 2 or seats[0] != record.forfeit_seat \
                or not 0 <= seats[0] <= seats[-1] < len(record.players):
            problems.append(f"forfeit seats {seats} do not list two or more seats from the forfeiting seat "
                            f"{record.forfeit_seat} up")
        elif list(record.returns) != game.forfeits_returns(seats):
            problems.append(f"recorded returns {record.returns} differ from the {game.forfeits_returns(seats)} "
                            f"of a forfeit by seats {seats}")
    if state.to_text() != record.final_position and record.final_position:
        problems.append("the replayed final position differs from the recorded one")
    return problems
