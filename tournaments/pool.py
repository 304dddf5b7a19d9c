"""The local backend: a pool of worker processes on this machine (``tournaments.worker``), one game
at a time each, talking to the runner through ``multiprocessing`` pipes in ``tournaments.jobs``
messages.

A worker that dies (killed, crashed) loses only its current game, which the runner plans again;
the pool starts a replacement, and gives up after too many deaths. Before it starts, the pool
kills engines that an earlier run of the same database left behind (a SIGKILLed worker cannot
take its engines with it).
"""
from __future__ import annotations

import hashlib
import multiprocessing
import multiprocessing.connection
import sys
import time
from pathlib import Path

import msgspec

from arbiter.hosting import kill_marked

from .jobs import FinishedGame, GameJob, GameLost, Slot, TournamentError, WorkerError, WorkerExit, WorkerSetup
from .worker import DB_ENV, RUN_ENV, worker_main


def start_method() -> str:
    """``fork`` on Linux (a worker is ready at once: nothing to import again; it closes the
    inherited lock and never touches the inherited database connection, and it leaves with
    ``os._exit``), ``spawn`` elsewhere."""
    return "fork" if sys.platform.startswith("linux") else "spawn"


def db_marker(path: Path) -> str:
    return hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:16]


class _Worker:
    def __init__(self, ctx, setup: WorkerSetup):
        self.index = setup.worker
        self.conn, child = ctx.Pipe(duplex=True)
        self.process = ctx.Process(target=worker_main, args=(child, setup),
                                   name=f"tournament-worker-{self.index}", daemon=False)
        self.process.start()
        child.close()
        self.lanes = setup.lanes
        self.jobs: dict[tuple[str, int], GameJob] = {}
        self.engines: frozenset[int] = frozenset()
        self.cpu = 0.0
        self.engines_cpu: float | None = None


class LocalPool:
    """``workers`` worker processes on this machine (a ``jobs.Backend``)."""

    def __init__(self, setup: WorkerSetup, workers: int):
        self.restarts = 0
        self.killed_leftovers = kill_marked(DB_ENV, setup.db_marker, unless=(RUN_ENV, setup.run_id))
        self._ctx = multiprocessing.get_context(start_method())
        self._setup = setup
        self._workers = [self._start(i) for i in range(workers)]

    def _start(self, index: int) -> _Worker:
        return _Worker(self._ctx, msgspec.structs.replace(self._setup, worker=index))

    @property
    def cpu_seconds(self) -> float:
        return sum(w.cpu for w in self._workers)

    @property
    def engines_cpu_seconds(self) -> float | None:
        """The workers' engines' CPU by their control groups (None: no worker had any)."""
        known = [w.engines_cpu for w in self._workers if w.engines_cpu is not None]
        return sum(known) if known else None

    def idle(self) -> list[Slot]:
        """One slot per free lane (a worker with lanes appears once per game it can still take)."""
        return [Slot(w.index, w.engines) for w in self._workers for _ in range(w.lanes - len(w.jobs))]

    def submit(self, worker: int, jobs: list[GameJob]) -> None:
        w = self._workers[worker]
        if len(jobs) != 1:
            raise TournamentError(f"worker {worker} takes one game at a time, not {len(jobs)}")
        job = jobs[0]
        if len(w.jobs) >= w.lanes:
            raise TournamentError(f"worker {worker} is busy with {', '.join(map(str, w.jobs))}; "
                                  f"cannot start {job.key}")
        w.jobs[job.key] = job
        w.conn.send(job)

    def wait(self, timeout: float) -> list[FinishedGame | WorkerError | GameLost]:
        busy = [w for w in self._workers if w.jobs]
        out: list[FinishedGame | WorkerError | GameLost] = []
        for conn in multiprocessing.connection.wait([w.conn for w in busy], timeout=timeout):
            worker = next(w for w in busy if w.conn is conn)
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                out.extend(self._replace(worker))
                continue
            if isinstance(msg, (FinishedGame, WorkerError)):
                if worker.jobs.get(msg.job.key) != msg.job:
                    raise TournamentError(f"worker {worker.index} answered for {msg.job.key} "
                                          f"while playing {', '.join(map(str, worker.jobs))}")
                if isinstance(msg, FinishedGame):
                    del worker.jobs[msg.job.key]
                    worker.engines = frozenset(msg.alive)
                out.append(msg)
        return out

    def _replace(self, dead: _Worker) -> list[GameLost]:
        """A worker died (killed, crashed): its games were not finished, so they will be played again."""
        dead.process.join(5)
        lost = [GameLost(dead.index, job, dead.process.exitcode) for job in dead.jobs.values()]
        self.restarts += 1
        if self.restarts > 3 + 2 * len(self._workers):
            raise TournamentError(f"workers keep dying (last exit code {dead.process.exitcode})")
        self._workers[self._workers.index(dead)] = self._start(dead.index)
        return lost

    def stop(self, graceful: bool) -> None:
        workers = self._workers
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
                    if isinstance(msg, WorkerExit):
                        w.cpu, w.engines_cpu = msg.cpu_seconds, msg.engines_cpu_seconds
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
        # What a worker stopped (or killed) in the middle of starting an engine could not reach: its
        # guardian kills that too, but only once the worker has gone, maybe after this command has
        # ended (CI saw a sandbox still running at the exit of a tournament stopped at 0.3 s).
        kill_marked(RUN_ENV, self._setup.run_id)
