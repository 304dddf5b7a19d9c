"""Running a tournament: the parent process directs, workers play, the parent commits.

The tournament process owns the database and the director; it never plays a game itself.
``concurrency`` worker processes (``worker.py``) each play one game at a time through
``arbiter.formats.match.Series`` and send the record back; the parent commits it (one SQLite
transaction) and only then counts it, re-plans, and hands out the next ready games. A game
whose worker or parent dies before the commit is simply not in the database, so it is played
again on resume with the same seats and dice stream.

Workers keep the engines of their last game running (unless an engine is configured to restart
every game) and the parent prefers to give a worker the next game of the engines it already
has, so a match's games usually run on one pair of engine processes.
"""
from __future__ import annotations

import hashlib
import multiprocessing
import os
import multiprocessing.connection
import resource
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from arbiter import games as arbiter_games
from arbiter.records import GameRecord, from_json

from .config import TournamentConfig
from .db import TournamentDB
from .director import Director, GameResult, GameSpec, Plan, ScheduleSpec
from .worker import DB_ENV, kill_marked, worker_main


class TournamentError(RuntimeError):
    pass


def master_seed(seed: str) -> bytes:
    """The dice master seed of a tournament: every game's dice derive from it and its stream."""
    return hashlib.sha256(f"arbiter-tournament|{seed}".encode()).digest()


def start_method() -> str:
    """``fork`` on Linux (a worker is ready at once: nothing to import again; it closes the
    inherited lock and never touches the inherited database connection, and it leaves with
    ``os._exit``), ``spawn`` elsewhere."""
    return "fork" if sys.platform.startswith("linux") else "spawn"


def db_marker(path: Path) -> str:
    return hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:16]


@dataclass
class RunSummary:
    finished: bool = False
    interrupted: bool = False
    committed: int = 0
    """Games committed by this run."""
    played_total: int = 0
    elapsed: float = 0.0
    cpu_parent: float = 0.0
    cpu_workers: float = 0.0
    cpu_children: float = 0.0
    """Workers and everything they started (engines)."""
    worker_restarts: int = 0
    killed_leftovers: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def cpu_engines(self) -> float:
        return max(0.0, self.cpu_children - self.cpu_workers)

    @property
    def referee_cpu_share(self) -> float:
        total = self.cpu_parent + self.cpu_children
        return (self.cpu_parent + self.cpu_workers) / total if total > 0 else 0.0


class _Worker:
    def __init__(self, ctx, index: int, setup: dict):
        self.index = index
        self.conn, child = ctx.Pipe(duplex=True)
        self.process = ctx.Process(target=worker_main, args=(child, {**setup, "worker": index}),
                                   name=f"tournament-worker-{index}", daemon=False)
        self.process.start()
        child.close()
        self.spec: GameSpec | None = None
        self.engines: set[int] = set()
        self.cpu = 0.0
        self.started = time.monotonic()

    def send(self, spec: GameSpec) -> None:
        self.spec = spec
        self.conn.send({"match_id": spec.match_id, "number": spec.number, "seating": list(spec.seating),
                        "stream": spec.stream})


class Runner:
    """Plays the games of one tournament that the database does not hold yet."""

    def __init__(self, cfg: TournamentConfig, db: TournamentDB, seed: str, *, concurrency: int | None = None,
                 on_progress: Callable[["Runner"], None] | None = None,
                 on_game: Callable[["Runner", GameSpec, GameRecord], None] | None = None):
        self.cfg, self.db, self.seed = cfg, db, seed
        self.concurrency = concurrency or cfg.concurrency
        self.names = [e.name for e in cfg.engines]
        self.director = Director(ScheduleSpec.from_config(cfg, seed))
        self.results: dict[tuple[str, int], GameResult] = {}
        self.plan: Plan | None = None
        self.on_progress, self.on_game = on_progress, on_game
        self.run_id = uuid.uuid4().hex[:12]
        self.in_flight: dict[tuple[str, int], _Worker] = {}
        self.summary = RunSummary()
        self.started = time.monotonic()
        self._known = db.pairings()
        self._ended = db.ended_matches()

    # --- planning -----------------------------------------------------------------------------

    def load(self) -> Plan:
        self.results = self.db.results(self.cfg.tid, self.names)
        return self.replan()

    def replan(self) -> Plan:
        plan = self.director.plan(self.results)
        fmt_text = self.cfg.match_text if self.cfg.kind == "match" else f"games={self.cfg.games}"
        mismatched = self.db.sync_pairings(plan.pairings, self._known, self._ended, self.cfg.game, self.names,
                                           self.cfg.time_control.text, fmt_text)
        if mismatched:
            raise TournamentError(f"the schedule differs from the one stored in {self.db.path} "
                                  f"(pairings {', '.join(mismatched[:5])}): the results or the tournament "
                                  f"file changed in a way that changes the pairings")
        self.plan = plan
        return plan

    # --- running ------------------------------------------------------------------------------

    def _setup(self) -> dict:
        cfg = self.cfg
        marker = db_marker(self.db.path)
        lock = self.db._lock_file
        return dict(parent_pid=os.getpid(), run_id=self.run_id, lock_fd=lock.fileno() if lock else None,
                    db_marker=marker, game=cfg.game, game_options=cfg.game_options,
                    game_class=arbiter_games.GAME_CLASSES.get(cfg.game),
                    engines=[e.engine_config() for e in cfg.engines], time_control=cfg.time_control,
                    margin=cfg.margin_ms / 1000, master_seed=master_seed(self.seed), tid=cfg.tid,
                    run_dir=Path(self.db.path).with_name(Path(self.db.path).stem + "-logs"))

    def run(self) -> RunSummary:
        me0 = resource.getrusage(resource.RUSAGE_SELF)
        kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        plan = self.load()
        s = self.summary
        if plan.finished:
            s.finished = True
            s.played_total = plan.played
            return s
        # Engines left behind by an earlier run of this database (a worker that was SIGKILLed).
        s.killed_leftovers = kill_marked(DB_ENV, db_marker(self.db.path), exclude_run=self.run_id)
        ctx = multiprocessing.get_context(start_method())
        setup = self._setup()
        n_workers = max(1, min(self.concurrency, plan.max_remaining))
        workers = [_Worker(ctx, i, setup) for i in range(n_workers)]
        try:
            self._loop(ctx, setup, workers)
            s.finished = True
        except KeyboardInterrupt:
            s.interrupted = True
        finally:
            try:
                self._stop(workers, graceful=s.finished)
            except KeyboardInterrupt:  # a second Ctrl-C (or SIGTERM) while stopping: stop hard
                s.interrupted = True
                self._stop(workers, graceful=False)
            s.elapsed = time.monotonic() - self.started
            me = resource.getrusage(resource.RUSAGE_SELF)
            kids = resource.getrusage(resource.RUSAGE_CHILDREN)
            s.cpu_parent = (me.ru_utime + me.ru_stime) - (me0.ru_utime + me0.ru_stime)
            s.cpu_children = (kids.ru_utime + kids.ru_stime) - (kids0.ru_utime + kids0.ru_stime)
            s.cpu_workers = sum(w.cpu for w in workers)
            s.played_total = self.plan.played if self.plan else 0
            s.notes = list(self.plan.notes) if self.plan else []
        return s

    def _loop(self, ctx, setup: dict, workers: list[_Worker]) -> None:
        last_progress = 0.0
        while True:
            plan = self.plan
            if plan.finished and not self.in_flight:
                return
            self._dispatch(workers)
            if not self.in_flight:
                raise TournamentError("no game is ready but the tournament is not finished (a scheduling bug)")
            busy = [w for w in workers if w.spec is not None]
            for conn in multiprocessing.connection.wait([w.conn for w in busy], timeout=0.25):
                worker = next(w for w in busy if w.conn is conn)
                try:
                    msg = conn.recv()
                except (EOFError, OSError):
                    self._replace(ctx, setup, workers, worker)
                    continue
                self._handle(worker, msg)
            now = time.monotonic()
            if self.on_progress and now - last_progress >= 0.25:
                last_progress = now
                self.on_progress(self)

    def _dispatch(self, workers: list[_Worker]) -> None:
        """Give idle workers ready games: first a game whose engines the worker already runs,
        then a game of a pairing nobody is playing (spreading pairings over workers rather than
        one pairing's games, which would start the same engines twice), then the earliest."""
        idle = [w for w in workers if w.spec is None]
        if not idle:
            return
        candidates = [g for g in self.plan.ready if g.key not in self.in_flight][:256]
        busy_pairings = {w.spec.pairing for w in workers if w.spec is not None}
        for worker in sorted(idle, key=lambda w: -len(w.engines)):
            if not candidates:
                return
            best = min(range(len(candidates)), key=lambda k: (
                -len(worker.engines & set(candidates[k].seating)),
                candidates[k].pairing in busy_pairings, k))
            spec = candidates.pop(best)
            worker.send(spec)
            busy_pairings.add(spec.pairing)
            self.in_flight[spec.key] = worker

    def _handle(self, worker: _Worker, msg: tuple) -> None:
        kind = msg[0]
        spec = worker.spec
        if kind == "error":
            raise TournamentError(f"worker {worker.index} failed playing {msg[1]} game {msg[2]}:\n{msg[3]}")
        if kind != "done":
            return
        record = from_json(msg[3])
        key = (record.match_id, record.game_number)
        if spec is None or key != spec.key or record.dice_stream != spec.stream:
            raise TournamentError(f"worker {worker.index} returned {key} for {spec and spec.key}")
        worker.spec = None
        worker.engines = set(msg[4]) if len(msg) > 4 else set(spec.seating)
        del self.in_flight[key]
        if key in self.results:  # cannot happen: a key is handed out once per run
            raise TournamentError(f"game {key} was played twice")
        self.db.commit(record)
        self.results[key] = GameResult(spec.seating, tuple(record.returns), record.reason, record.forfeit_seat)
        self.summary.committed += 1
        self.replan()
        if self.on_game:
            self.on_game(self, spec, record)

    def _replace(self, ctx, setup: dict, workers: list[_Worker], dead: _Worker) -> None:
        """A worker died (killed, crashed): its game is not committed, so it goes back to ready."""
        if dead.spec is not None:
            self.in_flight.pop(dead.spec.key, None)
        dead.process.join(5)
        self.summary.worker_restarts += 1
        if self.summary.worker_restarts > 3 + 2 * len(workers):
            raise TournamentError(f"workers keep dying (last exit code {dead.process.exitcode})")
        workers[workers.index(dead)] = _Worker(ctx, dead.index, setup)

    def _stop(self, workers: list[_Worker], graceful: bool) -> None:
        if graceful:
            for w in workers:
                try:
                    w.conn.send(None)
                except (OSError, ValueError):
                    pass
            deadline = time.monotonic() + 15
            for w in workers:
                while time.monotonic() < deadline:
                    try:
                        if not w.conn.poll(max(0.0, deadline - time.monotonic())):
                            break
                        msg = w.conn.recv()
                    except (EOFError, OSError):
                        break
                    if msg[0] == "exit":
                        w.cpu = msg[1]
                        break
        for w in workers:
            if w.process.is_alive() and not graceful:
                w.process.terminate()  # SIGTERM: the worker stops its engines, then exits
        for w in workers:
            w.process.join(10)
            if w.process.is_alive():
                w.process.kill()
                w.process.join(5)
            w.conn.close()
