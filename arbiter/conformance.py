"""``arbiter check-engine``: a conformance run for engine authors (as fastchess's ``--compliance``).

It starts the engine as a match would (sandbox, clean environment, session secret) and checks,
one by one: the handshake; ``ping``; that an ``error`` from the referee does not upset it; games
against copies of itself at a short clock, one copy per seat (two games, seats swapped; a game of
n > 2 seats: n games, seats rotated; a solo game: two games alone) (``new_game``/``ready``,
``request``/``reply``, ``game_over``; every seat; no time forfeit, no illegal move, no protocol error); a clean
``quit``; a restart. Each check passes or fails with the reason; later checks still run where
they can, so an author sees everything at once.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from protocol.messages import EndReason, Error, ErrorCode, TimeControl, declaration_problems

from .formats.match import Series, rotation
from .games.base import Game
from .hosting import EngineConfig, EngineFault, open_session

QUIT_GRACE = 2.0
"""Seconds an engine may take to exit after ``quit``."""


@dataclass
class Check:
    name: str
    passed: bool
    detail: str


def check_engine(config: EngineConfig, game: Game, tc: TimeControl, log_dir: Path,
                 on_check: Callable[[Check], None] = lambda c: None) -> list[Check]:
    """Run every check against ``config`` (a local engine); ``on_check`` hears each as it ends."""
    checks: list[Check] = []

    def note(name: str, passed: bool, detail: str) -> bool:
        checks.append(Check(name, passed, detail))
        on_check(checks[-1])
        return passed

    session = open_session(config, log_dir)
    try:
        session.launch()
        session.handshake(game.name)
        hello = session.hello
        note("handshake", True, f"hello from {hello.name!r} version {hello.version!r} by {hello.author!r}, "
                                f"protocol {hello.protocol_version}, games {hello.games or 'any'}")
    except EngineFault as fault:
        note("handshake", False, str(fault))
        session.stop()
        return checks
    if problems := declaration_problems(hello.options):
        note("options", False, "; ".join(problems))
    else:
        note("options", True, f"declares {', '.join(o.name for o in hello.options)}" if hello.options
             else "declares none")
    try:
        session.ping()
        note("ping", True, "answered pong")
    except EngineFault as fault:
        note("ping", False, str(fault))
    try:
        session.tell(Error(code=ErrorCode.UNEXPECTED, message="check-engine: an error the engine should log and ignore"))
        session.ping()
        note("error message", True, "an error from the referee did not upset it (pong after it)")
    except EngineFault as fault:
        note("error message", False, f"after an error from the referee: {fault}")
    _quit(session, note, "quit")

    n = game.num_seats  # copies of the engine in every seat: two games, or one per seat rotation
    copies = [config] + [dataclasses.replace(config, name=f"{config.name}#{i + 1}") for i in range(1, n)]
    try:
        series = Series(game, copies, tc, run_dir=log_dir, match_id="check-engine")
        records = []
        try:
            for number in range(1, max(2, n) + 1):
                records.append(series.play_game(number, list(rotation(tuple(range(n)), number - 1))))
        finally:
            series.close()
        bad = [r for r in records if r.reason != EndReason.NORMAL]
        note(f"games at {tc.text}", not bad,
             f"{len(records)} games{' against itself' if n > 1 else ''}, every one to its normal end "
             f"({sum(len(r.events) for r in records)} events)" if not bad else
             "; ".join(f"game {r.game_number}: {r.reason} by {r.players[r.forfeit_seat]}: {r.detail}"
                       if r.forfeit_seat is not None else f"game {r.game_number}: {r.reason}: {r.detail}"
                       for r in bad))
        illegal = [r for r in records if r.reason == EndReason.ILLEGAL_MOVE]
        note("no illegal move", not illegal, "the referee refused no decision" if not illegal else
             "; ".join(f"game {r.game_number}: {r.detail}" for r in illegal))
    except Exception as exc:  # a broken game must be reported, not crash the check
        note(f"games at {tc.text}", False, f"{type(exc).__name__}: {exc}")

    again = open_session(config, log_dir)
    try:
        again.launch()
        again.handshake(game.name)
        note("restart", True, "a fresh process shook hands again")
        _quit(again, note, "quit after restart")
    except EngineFault as fault:
        note("restart", False, str(fault))
        again.stop()
    return checks


def _quit(session, note, name: str) -> None:
    """Send ``quit`` and wait for the engine to leave by itself, exit code 0."""
    process = getattr(session, "process", None)
    session.request_quit()
    if process is None:  # a remote engine: its process is not ours to watch
        session.stop()
        note(name, True, "quit sent (remote engine)")
        return
    started = time.monotonic()
    left = process.wait(QUIT_GRACE)
    code = process.exit_code
    session.stop()
    if not left:
        note(name, False, f"still running {QUIT_GRACE:g} s after quit (killed)")
    else:
        note(name, code == 0, f"exited with code {code} {time.monotonic() - started:.2f} s after quit")
