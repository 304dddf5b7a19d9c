"""The game contract (arbiter/games/base.py), held against every registered game.

Modelled on OpenSpiel's games_sim_test: seeded random playouts to the end, checking at every step
what any game must do (text round trips, ``check_move`` against ``legal_moves``, chance misuse,
``clone`` independence on every step played, what ``observation`` hides) and that the declared ``GameType`` matches
behaviour. Parametrised from the registry, so a new game gets all of it by being registered; the
small tables below are the only per-game knowledge (short options, how to build a decision that
``legal_moves`` cannot list, how to vary a hidden part).
"""
from __future__ import annotations

import random
from typing import Any, Callable

import msgspec
import pytest

from arbiter.games import (CHANCE, SIMULTANEOUS, TERMINAL, ChanceError, Game, GameOptions, GameType, IllegalMove,
                           OptionError, State, Utility, game_class, game_names, load_game)
from arbiter.games.base import decode_options

GAMES = game_names()

VARIANTS: dict[str, list[dict[str, Any]]] = {
    "einstein": [{}, {"setup": "random", "seat0_colour": "blue"}],
    "smess": [{}, {"seat0_colour": "red", "no_capture_plies": 20}],
    "catalonia": [{"turns": 6}, {"turns": 5, "random": False, "max_pits": 3}],
    "stalingrad": [{"max_turns": 3}],
    "aachess": [{"max_rounds": 1}, {"seats": 5, "max_rounds": 1, "research": True}],
}
"""Options per game for the playouts: short games (the contract holds for any options). A game
not listed plays with its defaults."""

MAX_STEPS = 3000
"""A playout longer than this stops there (no game here needs it with the options above)."""


def _stalingrad_decision(state: Any, rng: random.Random) -> str:
    from arbiter.games.stalingrad.library import deployment_text, plan_text, random_deployment, random_moves

    if state.decision_kind() == "deploy":
        return deployment_text(state, random_deployment(state, rng))
    return plan_text(state, random_moves(state, rng))


def _aachess_decision(state: Any, rng: random.Random) -> str:
    from arbiter.games.aachess import library as lib

    kind = state.decision_kind()
    if kind == "purchase":
        return lib.random_purchase(state, rng)
    if kind in ("combat_move", "noncombat_move"):
        return lib.random_plan(state, rng, kind == "combat_move", tries=8)
    if kind == "casualties":
        return lib.random_casualties(state, rng)
    return lib.random_placement(state, rng)


UNLISTED: dict[str, Callable[[Any, random.Random], str]] = {
    "stalingrad": _stalingrad_decision,
    "aachess": _aachess_decision,
}
"""A legal decision where ``legal_moves`` returns None (games that cannot enumerate)."""


def _stalingrad_hidden_variant(state: Any, seat: int, rng: random.Random) -> Any:
    """The same position with the face-down Soviet counters (map and pool) dealt differently."""
    other = state.clone()
    slots = [a for a in range(len(other.s_type)) if other.s_type[a] >= 0 and not other.s_up[a]]
    codes = [other.s_type[a] for a in slots] + list(other.pool)
    rng.shuffle(codes)
    for a, t in zip(slots, codes):
        other.s_type[a] = t
    other.pool[:] = codes[len(slots):]
    return other


HIDDEN: dict[str, Callable[[Any, int, random.Random], Any]] = {
    "stalingrad": _stalingrad_hidden_variant,
}
"""For games with hidden information: a state that differs from the given one only in what
``seat`` may not see."""

JUNK = ["?", "zz99", "not a move at all", "\x00"]
"""Strings no game accepts as a decision. (Not "": free-text decisions may read it as "nothing".)"""


def variants(names: list[str] = GAMES) -> list[Any]:
    return [pytest.param(name, options, id=f"{name}-{i}")
            for name in names for i, options in enumerate(VARIANTS.get(name, [{}]))]


# --- one random step ---------------------------------------------------------------------------


def choose(state: State, seat: int, rng: random.Random, name: str) -> str:
    legal = state.legal_moves(seat)
    if legal is None:
        assert name in UNLISTED, f"{name}: legal_moves is None here; add a decision builder to UNLISTED"
        return UNLISTED[name](state, rng)
    assert legal, f"{name}: seat {seat} must decide but has no legal {state.decision_kind(seat)}"
    return rng.choice(legal)


def pick(state: State, rng: random.Random, name: str) -> tuple[str, Any]:
    """A random next step: ("chance", outcome), ("joint", {seat: move}) or ("move", move)."""
    p = state.current_player()
    if p == CHANCE:
        return "chance", rng.choice(state.chance_outcomes())
    if p == SIMULTANEOUS:
        return "joint", {seat: choose(state, seat, rng, name) for seat in state.acting_seats()}
    return "move", choose(state, p, rng, name)


def play(state: State, action: tuple[str, Any]) -> None:
    kind, what = action
    if kind == "chance":
        state.apply_chance(what)
    elif kind == "joint":
        state.apply_joint(what)
    else:
        state.apply(what)


def _mutable_parts(root: Any, skip: dict[int, Any] | None = None) -> dict[int, Any]:
    """Every mutable object reachable from ``root`` (lists, dicts, sets, the games' own objects),
    by id, not entering those in ``skip``."""
    skip = skip or {}
    found: dict[int, Any] = {}
    stack = [root]
    while stack:
        o = stack.pop()
        if id(o) in found or id(o) in skip:
            continue
        if isinstance(o, (tuple, frozenset)):
            stack.extend(o)
            continue
        if isinstance(o, dict):
            stack.extend(o.values())
        elif isinstance(o, (list, set, bytearray)):
            stack.extend(o)
        elif type(o).__module__.startswith("arbiter.games"):
            stack.extend(getattr(o, "__dict__", {}).values())
            stack.extend(getattr(o, slot) for cls in type(o).__mro__ for slot in getattr(cls, "__slots__", ())
                         if hasattr(o, slot))
        else:
            continue
        found[id(o)] = o
    return found


def check_clone_shares_nothing(state: State, copy: State) -> None:
    """A clone shares no mutable part with its original (what both reach through the game, its
    board or map, is fixed by the options and may be shared)."""
    game = state.game
    if game not in _FIXED:
        _FIXED[game] = _mutable_parts(game)
    mine = _mutable_parts(state, _FIXED[game])
    shared = mine.keys() & _mutable_parts(copy, _FIXED[game]).keys()
    assert not shared, f"the clone shares {[mine[i] for i in shared][:3]!r:.300} with its original"


_FIXED: dict[Game, dict[int, Any]] = {}


def step(state: State, rng: random.Random, name: str) -> str:
    """Play one random step on ``state`` and, first, on a clone: playing on either never changes
    the other, and both end in the same position. Return what was played (for traces)."""
    action = pick(state, rng, name)
    text = state.to_text()
    copy = state.clone()
    check_clone_shares_nothing(state, copy)
    play(copy, action)
    assert state.to_text() == text, f"playing {action} on a clone changed the original"
    keep = state.clone()
    play(state, action)
    assert keep.to_text() == text, f"playing {action} on a state changed its clone"
    assert copy.to_text() == state.to_text(), f"{action} played on a clone and on the original differ"
    return f"{action}"


def playout(game: Game, seed: int, name: str, on_step: Callable[[State, int], None] | None = None,
            max_steps: int = MAX_STEPS) -> tuple[State, list[str]]:
    rng = random.Random(seed)
    state = game.new_initial_state()
    trace = [state.to_text()]
    for i in range(max_steps):
        if on_step:
            on_step(state, i)
        if state.is_terminal():
            break
        trace.append(step(state, rng, name))
        trace.append(state.to_text())
    return state, trace


# --- the per-step checks -------------------------------------------------------------------------


def check_type(game: Game, state: State) -> None:
    gt = game.game_type
    p = state.current_player()
    assert p >= 0 or p in (CHANCE, SIMULTANEOUS, TERMINAL), p
    assert p < game.num_seats
    assert state.is_terminal() == (p == TERMINAL)
    if p == CHANCE:
        assert gt.chance, f"{game.name} declares no chance but reached a CHANCE node"
    if p == SIMULTANEOUS:
        assert gt.simultaneous, f"{game.name} declares no simultaneous moves but reached one"
        assert len(state.acting_seats()) >= 2
    elif p >= 0:
        assert state.acting_seats() == [p]
    else:
        assert state.acting_seats() == []


def check_round_trip(game: Game, state: State) -> None:
    text = state.to_text()
    back = game.from_text(text)
    assert back.to_text() == text
    assert back.current_player() == state.current_player()
    assert back.acting_seats() == state.acting_seats()
    for seat in state.acting_seats():
        assert back.decision_kind(seat) == state.decision_kind(seat)
        assert back.legal_moves(seat) == state.legal_moves(seat)
    if state.is_terminal():
        assert back.returns() == state.returns()


def check_moves(game: Game, state: State) -> None:
    """``check_move`` agrees with ``legal_moves``; neither changes the state."""
    text = state.to_text()
    acting = state.acting_seats()
    for seat in acting:
        legal = state.legal_moves(seat)
        if legal is None:
            assert not game.game_type.enumerates_moves, (
                f"{game.name}: legal_moves is None but GameType says it can enumerate")
            legal = []
        else:
            assert legal, f"{game.name}: seat {seat} acts with no legal decision"
            assert len(set(legal)) == len(legal), "legal_moves lists a decision twice"
        for move in legal:
            state.check_move(move, seat)
        for junk in JUNK + [m + " x" for m in legal[:1]]:
            if junk not in legal:
                with pytest.raises(IllegalMove):
                    state.check_move(junk, seat)
        for other in range(game.num_seats):  # seats that do not act: nothing listed, nothing accepted
            if other not in acting:
                assert state.legal_moves(other) == []
                for move in legal[:3]:
                    with pytest.raises(IllegalMove):
                        state.check_move(move, other)
    if not acting:
        for seat in range(game.num_seats):
            assert state.legal_moves(seat) == []
            with pytest.raises(IllegalMove):
                state.check_move("zz99", seat)
    assert state.to_text() == text, "check_move or legal_moves changed the state"


def check_chance(state: State) -> None:
    text = state.to_text()
    if state.current_player() == CHANCE:
        outcomes = state.chance_outcomes()
        assert outcomes  # repeats allowed: equally likely outcomes model a weighted draw
        with pytest.raises(ChanceError):
            state.apply_chance(object())
    else:
        with pytest.raises(ChanceError):
            state.chance_outcomes()
        with pytest.raises(ChanceError):
            state.apply_chance(1)
    assert state.to_text() == text, "a refused chance call changed the state"


def check_observation(game: Game, state: State, name: str, rng: random.Random) -> None:
    for seat in range(game.num_seats):
        if not game.game_type.hidden_information:
            assert state.observation(seat) == state.to_text(), (
                f"{game.name} declares no hidden information but hides something from seat {seat}")
            continue
        assert name in HIDDEN, f"{name} has hidden information: add a variant builder to HIDDEN"
        other = HIDDEN[name](state, seat, rng)
        assert other.observation(seat) == state.observation(seat), "the observation shows a hidden part"
        assert other.observation_data(seat) == state.observation_data(seat), "the state data shows a hidden part"


def check_truncated(game: Game, state: State) -> None:
    """What a ply limit would score here (``arbiter.adjudication``) fits the game's kind."""
    if state.is_terminal():
        return
    returns = state.truncated_returns()
    assert len(returns) == game.num_seats and all(isinstance(r, float) for r in returns)
    if game.game_type.utility is Utility.IDENTICAL:
        assert len(set(returns)) == 1, f"a cooperative game's truncated returns differ: {returns}"
    if game.game_type.utility is Utility.ZERO_SUM:
        assert sum(returns) == pytest.approx(0.0)


def check_terminal(game: Game, state: State) -> None:
    returns = state.returns()
    assert len(returns) == game.num_seats
    utility = game.game_type.utility
    if utility is Utility.SOLO:
        assert game.num_seats == 1
    if utility is Utility.IDENTICAL:
        assert len(set(returns)) == 1, f"a cooperative game gave different returns {returns}"
    if utility is Utility.ZERO_SUM:
        assert sum(returns) == pytest.approx(0.0), f"a zero-sum game's returns {returns} do not sum to 0"
    for seat in range(game.num_seats):
        forfeit = game.forfeit_returns(seat)
        assert len(forfeit) == game.num_seats
        if utility is Utility.IDENTICAL:
            assert len(set(forfeit)) == 1


# --- the tests ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", GAMES)
def test_game_type_is_declared(name: str) -> None:
    cls = game_class(name)
    gt = cls.game_type
    assert isinstance(gt, GameType) and gt.name == name == cls.name
    assert 1 <= gt.min_seats <= gt.max_seats
    assert isinstance(gt.utility, Utility)
    assert (gt.utility is Utility.SOLO) == (gt.max_seats == 1)
    assert issubclass(gt.options, GameOptions)
    game = cls()
    assert gt.min_seats <= game.num_seats == len(game.seat_roles) <= gt.max_seats


@pytest.mark.parametrize("name,options", variants())
def test_random_playouts_keep_the_contract(name: str, options: dict[str, Any]) -> None:
    game = load_game(name, **options)
    assert game.game_type.min_seats <= game.num_seats == len(game.seat_roles) <= game.game_type.max_seats
    rng = random.Random(99)
    terminal = 0
    for seed in (1, 2):
        def on_step(state: State, i: int) -> None:
            check_type(game, state)
            check_round_trip(game, state)
            check_moves(game, state)
            check_chance(state)
            check_observation(game, state, name, rng)
            check_truncated(game, state)

        state, _ = playout(game, seed, name, on_step)
        if state.is_terminal():
            terminal += 1
            check_terminal(game, state)
    assert terminal, f"no playout of {name} {options} ended within {MAX_STEPS} steps"


@pytest.mark.parametrize("name,options", variants())
def test_same_seed_same_playout(name: str, options: dict[str, Any]) -> None:
    first = playout(load_game(name, **options), 5, name, max_steps=150)[1]
    again = playout(load_game(name, **options), 5, name, max_steps=150)[1]
    assert first == again


@pytest.mark.parametrize("name,options", variants())
def test_options_round_trip(name: str, options: dict[str, Any]) -> None:
    game = load_game(name, **options)
    fields = [f.name for f in msgspec.structs.fields(game.game_type.options)]
    assert list(game.options) == fields  # every option present, in declaration order
    assert {k: game.options[k] for k in options} == options
    decoded = decode_options(name, game.game_type.options, game.options)
    assert msgspec.structs.asdict(decoded) == game.options
    assert load_game(name, **game.options).options == game.options
    assert game.settings == decoded


@pytest.mark.parametrize("name", GAMES)
def test_unknown_and_bad_options_are_named(name: str) -> None:
    with pytest.raises(OptionError, match="unknown option.*no_such_option"):
        load_game(name, no_such_option=1)
    bad = [["not", "a", "value"]]
    for f in msgspec.structs.fields(game_class(name).game_type.options):
        if f.type is Any:
            continue
        with pytest.raises(OptionError) as caught:
            load_game(name, **{f.name: bad})
        assert f"option {f.name}" in str(caught.value) and repr(bad) in str(caught.value)


@pytest.mark.parametrize("name", GAMES)
def test_from_text_refuses_what_is_not_a_string_with_a_value_error(name: str) -> None:
    """Callers catch ``ValueError`` for a bad position (an opening file, a record's opening), so a
    number or bytes where the text should be must be one too, not a TypeError from deep inside."""
    game = load_game(name, **VARIANTS.get(name, [{}])[0])
    text = game.new_initial_state().to_text()
    for bad in (12345, None, ["a"], text.encode()):
        with pytest.raises(ValueError, match=f"{name} position text must be a string, not {type(bad).__name__}"):
            game.from_text(bad)
    assert game.from_text(text).to_text() == text
