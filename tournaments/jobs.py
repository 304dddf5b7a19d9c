"""What the tournament runner and the places that play its games say to each other, and the
interface such a place (a *backend*) offers the runner.

The runner plans and commits; a backend plays. The runner hands a backend ``GameJob``s and gets
back ``FinishedGame``s (or ``WorkerError``s, or ``GameLost`` when the game's player vanished
before finishing it: it is simply planned again). A backend's players are set up once with a
``WorkerSetup`` and report ``WorkerExit`` when told to stop (``None`` instead of a job).

Messages are msgspec Structs: typed, checked by name rather than by tuple index, and cheap to
pickle (the local pool sends them through ``multiprocessing`` pipes) or to encode as msgpack
(what a cluster backend would send over the network).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import msgspec

from arbiter.adjudication import Adjudication
from arbiter.hosting import EngineConfig
from arbiter.records import GameRecord, Opening
from arbiter.records.store import PackedGame
from protocol.messages import TimeControl


class TournamentError(RuntimeError):
    """The tournament cannot go on (the runner or a backend found something wrong)."""


class WorkerSetup(msgspec.Struct, frozen=True, kw_only=True):
    """Everything a worker needs to play any game of one tournament run."""

    run_id: str
    game: str
    game_options: dict[str, Any]
    game_class: type | None
    """The game's class, registered in the worker (a game not in the built-in registry, e.g. a test's)."""
    engines: list[EngineConfig]
    time_control: TimeControl
    margin: float
    """Seconds an engine may overrun its allowance (``margin_ms`` / 1000)."""
    master_seed: bytes
    tid: str
    run_dir: Path
    """Where engine logs go."""
    db_marker: str
    """Marks every engine of this database in its environment (to find leftovers of a dead run)."""
    keep_engines: int = 4
    """Engines a worker keeps running between games (at least a game's seats), per lane."""
    lanes: int = 1
    """Games a worker plays at once, each in a thread of its own (the one worker of an event with
    remote participants: they all connect to its port)."""
    worker: int = 0
    parent_pid: int = 0
    """Local workers: the tournament process, which the worker must not outlive."""
    lock_fds: list[int] = []
    """Local forked workers: the database lock's inherited descriptors, which they close (a lock
    still open in a worker would outlive a killed tournament process)."""
    adjudication: Adjudication | None = None
    """The event's rules for ending games early (``[adjudication]``)."""
    speed_reference: float = 0.0
    """Cluster backend with ``scale_time_control``: the director's own ``speed_probe`` (moves of the
    game's rules per second); a worker scales the time control by this over its own. 0: off;
    negative: asked for, not measured yet (the backend measures it)."""
    remote: dict[str, Any] | None = None
    """Remote participants: the ``RemoteHub`` the worker opens (roster, server_key, listen,
    deadline as Unix time, grace, insecure, lag_move_ms, lag_quota_ms)."""
    openings: list[Opening] = []
    """The openings file's positions in file order (``GameJob.opening`` indexes it)."""
    pin: bool = False
    """Run the worker and its engines on one core: the ``worker``-th of the usable cores, round robin."""
    feed: str | None = None
    """Where the games' live spectator view is published (``arbiter.feed``; docs/web.md)."""


class GameJob(msgspec.Struct, frozen=True):
    """Play game ``number`` of match ``match_id`` with ``seating[seat]`` = engine index, on dice ``stream``."""

    match_id: str
    number: int
    seating: tuple[int, ...]
    stream: str
    opening: int | None = None
    """Index into ``WorkerSetup.openings`` of the start position (None: the game's initial one)."""

    @property
    def key(self) -> tuple[str, int]:
        return self.match_id, self.number


class FinishedGame(msgspec.Struct, frozen=True):
    """A played game: its record packed by the worker (``arbiter.records.store.pack``: the JSON,
    the export form, plus the columns the store indexes, so the runner commits it without
    decoding it) and the engines the worker still runs afterwards (it prefers their next games)."""

    worker: int
    job: GameJob
    game: PackedGame
    alive: tuple[int, ...]

    def game_record(self) -> GameRecord:
        return self.game.record()


class WorkerError(msgspec.Struct, frozen=True):
    """Playing ``job`` raised in the worker (a bug, not an engine fault: those are forfeits)."""

    worker: int
    job: GameJob
    traceback: str


class WorkerExit(msgspec.Struct, frozen=True):
    """A worker's last word after a stop: the CPU seconds it used itself (engines not included),
    and its engines' by their control groups (None without control groups)."""

    worker: int
    cpu_seconds: float
    engines_cpu_seconds: float | None = None


class GameLost(msgspec.Struct, frozen=True):
    """Made by a backend, not a worker: the player of ``job`` died before finishing it."""

    worker: int
    job: GameJob
    exitcode: int | None = None


class Slot(msgspec.Struct, frozen=True):
    """An idle place to play games, and the engines it already runs (games of those start faster)."""

    worker: int
    engines: frozenset[int] = frozenset()
    games: int = 1
    """How many games it takes in one go (a cluster task plays a block of games, so that the
    per-task cost is shared by several; a local worker takes one)."""


class Backend(Protocol):
    """Where a tournament's games are played: the local process pool (``tournaments.pool``) or,
    a Dask cluster (``tournaments.cluster``). The runner's planning and commit logic uses only this."""

    restarts: int
    """Workers replaced after dying."""
    cpu_seconds: float
    """CPU seconds of the workers themselves, as reported when they stopped."""
    killed_leftovers: list[int]
    """Processes of an earlier run of the same database the backend killed before starting."""

    def idle(self) -> list[Slot]:
        """Places ready for a game now, in a stable order."""

    def submit(self, worker: int, jobs: list[GameJob]) -> None:
        """Start ``jobs`` (at most the slot's ``games``, played in this order) on the idle slot ``worker``."""

    def wait(self, timeout: float) -> list[FinishedGame | WorkerError | GameLost]:
        """What happened to submitted jobs (one outcome per game, whatever the block), waiting up
        to ``timeout`` seconds for something."""

    def stop(self, graceful: bool) -> None:
        """Stop every worker: graceful lets them finish and report; otherwise at once. May be
        called again (e.g. a second Ctrl-C) to stop harder."""
