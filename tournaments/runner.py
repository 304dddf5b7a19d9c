"""Running a tournament: the parent process directs, a backend plays, the parent commits.

The tournament process owns the database and the director; it never plays a game itself. It
hands ready games (``jobs.GameJob``) to a backend (``jobs.Backend``; today the local pool of
``concurrency`` worker processes, ``pool.py``/``worker.py``, each playing one game at a time
through ``arbiter.formats.match.Series``; with remote participants, one worker holding their
port plays up to ``concurrency`` games at once in threads; or a Dask cluster, ``cluster.py``,
where a task plays a block of games) and gets the records back; it commits the games that arrived
together (one SQLite transaction, one fsync of the export) and only then counts them, re-plans,
and hands out the next ready games. A game
whose worker or parent dies before the commit is simply not in the database, so it is played
again (on resume: with the same seats and dice stream).

Workers keep the engines of their last games running (unless an engine is configured to restart
every game) and the parent prefers to give a worker the next game of the engines it already
has, so a match's games usually run on one pair of engine processes.
"""
from __future__ import annotations

import collections
import hashlib
import os
import resource
import time
import uuid
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Callable

from arbiter import games as arbiter_games
from arbiter import raise_a_lost_stop
from arbiter.feed import feed_endpoint
from arbiter.records.store import STORAGE_ERRORS, PackedGame
from arbiter.sprt import concluded, test_points
from arbiter.stats import contested

from .config import TournamentConfig
from .db import TournamentDB
from .director import Director, GameResult, GameSpec, Plan, ScheduleSpec, stored_rules
from .jobs import Backend, FinishedGame, GameJob, GameLost, TournamentError, WorkerError, WorkerSetup
from .pool import LocalPool, db_marker, start_method

__all__ = ["Runner", "RunSummary", "TournamentError", "db_marker", "master_seed"]


def hidden_paths(cfg: TournamentConfig, db_path: str | Path) -> tuple[str, ...]:
    """What engines must not see: the results folder, the tournament file (its seed), the seed
    and key files, the referee's CURVE key."""
    paths = [Path(db_path).resolve().parent]
    server_key = cfg.remote.server_key if cfg.remote else None  # the referee's CURVE secret
    for path in (cfg.source_path, cfg.seed_file, cfg.key_file, server_key):
        if path and not str(path).startswith("<"):
            paths.append(Path(path).resolve())
    return tuple(str(p) for p in paths)


def logs_dir(db_path: str | Path) -> Path:
    """Engine logs go beside the database: ``<stem>-logs/``."""
    return Path(db_path).with_name(Path(db_path).stem + "-logs")


def sprt_decision(cfg: TournamentConfig, results: dict[tuple[str, int], GameResult]) -> dict:
    """The GSPRT of the first engine against the second on the committed games (duplicate dice:
    pentanomial on the pairs, games 2k-1 and 2k of a match; else trinomial on games)."""
    points = []
    for (match_id, number), res in sorted(results.items()):
        if sorted(e % len(cfg.engines) for e in res.seating) != [0, 1]:
            continue
        if not contested(res.returns):
            continue  # a double forfeit says nothing about which is stronger
        a, b = res.returns[res.seating.index(0)], res.returns[res.seating.index(1)]
        points.append(((match_id, (number + 1) // 2), 1.0 if a > b else 0.5 if a == b else 0.0))
    s = cfg.sprt
    return test_points(points, s.elo0, s.elo1, s.alpha, s.beta, paired=cfg.duplicate_dice)


def master_seed(seed: str) -> bytes:
    """The dice master seed of a tournament: every game's dice derive from it and its stream."""
    return hashlib.sha256(f"arbiter-tournament|{seed}".encode()).digest()


@dataclass
class RunSummary:
    finished: bool = False
    interrupted: bool = False
    committed: int = 0
    """Games committed by this run."""
    commits: int = 0
    """Transactions they took (the games that arrived together are committed together)."""
    played_total: int = 0
    elapsed: float = 0.0
    cpu_parent: float = 0.0
    cpu_workers: float = 0.0
    cpu_children: float = 0.0
    """Workers and everything they started (engines) that they reaped."""
    cpu_engines_by_groups: float | None = None
    """The engines' CPU by their control groups, as the workers reported it (None without): the
    accounting of children misses a sandboxed engine killed at its end."""
    worker_restarts: int = 0
    killed_leftovers: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    sprt: dict | None = None
    """With ``[sprt] stop = true``: the head-to-head GSPRT when the run ended (``arbiter.sprt``)."""
    storage_error: str = ""
    """Set when a game could not be committed: the run stopped (the database's store keeps the
    game and writes it to a fallback file on close)."""

    @property
    def cpu_engines(self) -> float:
        if self.cpu_engines_by_groups is not None:
            return self.cpu_engines_by_groups
        return max(0.0, self.cpu_children - self.cpu_workers)

    @property
    def referee_cpu_share(self) -> float:
        total = self.cpu_parent + self.cpu_workers + self.cpu_engines
        return (self.cpu_parent + self.cpu_workers) / total if total > 0 else 0.0


class _StorageFailed(Exception):
    pass


class Runner:
    """Plays the games of one tournament that the database does not hold yet."""

    def __init__(self, cfg: TournamentConfig, db: TournamentDB, seed: str, *, concurrency: int | None = None,
                 on_progress: Callable[["Runner"], None] | None = None,
                 on_game: Callable[["Runner", GameSpec, PackedGame], None] | None = None,
                 backend: Callable[[WorkerSetup, int], Backend] = LocalPool):
        """``backend(setup, workers)`` makes where the games are played (default: local processes).
        ``on_game(runner, spec, game)``: after each committed game, in commit order (``runner.played``
        and ``runner.results`` include it and the games before it; ``game.record()`` decodes it)."""
        self.cfg, self.db, self.seed = cfg, db, seed
        self.backend = backend
        self.concurrency = concurrency or cfg.concurrency
        self.names = [e.name for e in cfg.engines]
        self.director = Director(ScheduleSpec.from_config(cfg, seed, stored_rules(db.meta())))
        self.results: dict[tuple[str, int], GameResult] = {}
        self.plan: Plan | None = None
        self.played = 0
        """Games of the event committed and counted so far (``plan.played`` once re-planned: a
        batch is re-planned after its last game is counted)."""
        self.on_progress, self.on_game = on_progress, on_game
        self.run_id = uuid.uuid4().hex[:12]
        self.in_flight: dict[tuple[str, int], GameSpec] = {}
        self.active_backend: Backend | None = None
        self.summary = RunSummary()
        self._slot_of: dict[tuple[str, int], int] = {}
        """The slot playing each game in flight (blocks share the ready games among the slots)."""
        self._held: dict[tuple[str, int], tuple[GameSpec, PackedGame]] = {}
        """With ``[sprt] stop = true``: games finished before an earlier game (in schedule order)
        that is still to be played; they are committed once every earlier game is (``_in_order``)."""
        self.started = time.monotonic()
        self._known = db.pairings()
        self._ended = db.ended_matches()

    # --- planning -----------------------------------------------------------------------------

    def load(self) -> Plan:
        self.results = self.db.results(self.cfg.tid, self.names)
        plan = self.replan()
        self.played = plan.played
        return plan

    def replan(self, changed: list[tuple[str, int]] | None = None) -> Plan:
        """Plan again; ``changed``: the games committed since the last plan (linear planning)."""
        plan = self.director.plan(self.results, changed)
        fmt_text = self.cfg.match_text if self.cfg.kind == "match" else f"games={self.cfg.games}"
        mismatched = self.db.sync_pairings(plan.pairings, self._known, self._ended, self.cfg.game, self.names,
                                           self.cfg.time_control.text, fmt_text)
        if mismatched:
            raise TournamentError(f"the schedule differs from the one stored in {self.db.path} "
                                  f"(pairings {', '.join(mismatched[:5])}): the results or the tournament "
                                  f"file changed in a way that changes the pairings")
        self.plan = plan
        if self.cfg.sprt.stop:
            self.summary.sprt = sprt_decision(self.cfg, self.results)
        return plan

    @property
    def sprt_stopped(self) -> bool:
        """The SPRT has decided: no game is started any more, and games still in play are not
        counted (the event is the first games, in schedule order, on which the test decides)."""
        return self.summary.sprt is not None and concluded(self.summary.sprt) is not None

    def _in_order(self, done: list[tuple[GameSpec, PackedGame]]) -> list[tuple[GameSpec, PackedGame]]:
        """With ``[sprt] stop = true``: of the finished games and those held back, the ones to commit
        now: those before every game still to be played, in schedule order, up to the first game
        after which the test decides (the games after it are dropped: never committed, never counted).
        So the committed games are always the first ones of the schedule and the event ends with
        the same games whatever finished first, in one run or in several (kill -9 and resume)."""
        if self.sprt_stopped:
            return []  # decided: games that were in play do not count
        for spec, game in done:
            self._held[spec.key] = (spec, game)
        place = {state.pairing.match_id: i for i, state in enumerate(self.plan.pairings)}

        def order(key: tuple[str, int]) -> tuple[int, int]:  # schedule order ("r10" comes after "r2")
            return place.get(key[0], len(place)), key[1]

        waiting = [key for key in self.in_flight]
        waiting.extend(g.key for g in self.plan.iter_ready() if g.key not in self._held)
        first_waiting = min(waiting, key=order, default=None)
        ready = sorted((key for key in self._held if first_waiting is None or order(key) < order(first_waiting)),
                       key=order)
        trial = dict(self.results)
        out: list[tuple[GameSpec, PackedGame]] = []
        for key in ready:
            spec, game = self._held.pop(key)
            out.append((spec, game))
            trial[key] = GameResult(spec.seating, tuple(game.returns), game.reason, game.forfeit_seat)
            if concluded(sprt_decision(self.cfg, trial)) is not None:
                self._held.clear()
                break
        return out

    # --- running ------------------------------------------------------------------------------

    def _setup(self, lanes: int = 1) -> WorkerSetup:
        cfg = self.cfg
        lock = self.db._lock_file
        # a forked worker closes its copies of the lock; a spawned one has other files under those numbers
        forked_lock_fds = list(lock.fds) if lock and start_method() == "fork" else []
        return WorkerSetup(parent_pid=os.getpid(), run_id=self.run_id, lock_fds=forked_lock_fds,
                           db_marker=db_marker(self.db.path), game=cfg.game, game_options=cfg.game_options,
                           game_class=arbiter_games.game_class(cfg.game),
                           engines=[e.engine_config(hide=self._hidden()) for e in cfg.engines],
                           time_control=cfg.time_control,
                           margin=cfg.margin_ms / 1000, master_seed=master_seed(self.seed), tid=cfg.tid,
                           run_dir=logs_dir(self.db.path), remote=self._remote(), adjudication=cfg.adjudication,
                           lanes=lanes, openings=list(cfg.openings),
                           speed_reference=-1.0 if cfg.scale_time_control else 0.0, feed=feed_endpoint(self.db.path),
                           pin=cfg.pin)

    def _remote(self) -> dict | None:
        r = self.cfg.remote
        if r is None:
            return None
        return dict(roster=str(r.roster), server_key=str(r.server_key) if r.server_key else None, listen=r.listen,
                    deadline=time.time() + r.wait, grace=r.grace, insecure=r.insecure, lag_move_ms=r.lag_move_ms,
                    lag_quota_ms=r.lag_quota_ms)

    def _hidden(self) -> tuple[str, ...]:
        return hidden_paths(self.cfg, self.db.path)

    def run(self) -> RunSummary:
        me0 = resource.getrusage(resource.RUSAGE_SELF)
        kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        s = self.summary
        try:
            plan = self.load()
        except STORAGE_ERRORS as exc:
            s.storage_error = f"{self.db.path}: {exc}"
            return s
        if plan.finished or self.sprt_stopped:
            s.finished = True
            s.played_total = plan.played
            return s
        games = max(1, min(self.concurrency, plan.max_remaining))
        if self.cfg.remote is not None:  # one worker holds the participants' port and plays every game
            pool = self.backend(self._setup(lanes=games), 1)
        else:
            pool = self.backend(self._setup(), games)
        self.active_backend = pool
        s.killed_leftovers = pool.killed_leftovers
        try:
            self._loop(pool)
            s.finished = True
        except KeyboardInterrupt:
            s.interrupted = True
        except _StorageFailed as exc:  # stop rather than play games nobody can record
            s.storage_error = str(exc)
        except STORAGE_ERRORS as exc:  # the pairings could not be written
            s.storage_error = f"{self.db.path}: {exc}"
        finally:
            try:
                pool.stop(graceful=s.finished)
            except KeyboardInterrupt:  # a second Ctrl-C (or SIGTERM) while stopping: stop hard
                s.interrupted = True
                pool.stop(graceful=False)
            s.elapsed = time.monotonic() - self.started
            me = resource.getrusage(resource.RUSAGE_SELF)
            kids = resource.getrusage(resource.RUSAGE_CHILDREN)
            s.cpu_parent = (me.ru_utime + me.ru_stime) - (me0.ru_utime + me0.ru_stime)
            s.cpu_children = (kids.ru_utime + kids.ru_stime) - (kids0.ru_utime + kids0.ru_stime)
            s.cpu_workers = pool.cpu_seconds
            s.cpu_engines_by_groups = getattr(pool, "engines_cpu_seconds", None)
            s.worker_restarts = pool.restarts
            s.played_total = self.plan.played if self.plan else 0
            if s.interrupted:  # stopped between a commit and its counting: the database says how many
                try:
                    s.played_total = max(s.played_total, len(self.db.results(self.cfg.tid, self.names)))
                except STORAGE_ERRORS:
                    pass
            s.notes = list(self.plan.notes) if self.plan else []
        return s

    def _loop(self, backend: Backend) -> None:
        last_progress = 0.0
        while True:
            raise_a_lost_stop()
            plan = self.plan
            if (plan.finished or self.sprt_stopped) and not self.in_flight:
                return
            if not self.sprt_stopped:
                self._dispatch(backend)
            if not self.in_flight:
                raise TournamentError("no game is ready but the tournament is not finished (a scheduling bug)")
            finished: list[FinishedGame] = []
            failed: WorkerError | None = None
            for outcome in backend.wait(0.25):
                if isinstance(outcome, GameLost):  # not committed: it goes back to ready
                    self.in_flight.pop(outcome.job.key, None)
                    self._slot_of.pop(outcome.job.key, None)
                    self.summary.worker_restarts = backend.restarts
                elif isinstance(outcome, WorkerError):
                    failed = failed or outcome
                else:
                    finished.append(outcome)
            if finished:  # what arrived together is committed together (group commit)
                self._commit(finished)
            if failed is not None:
                raise TournamentError(f"worker {failed.worker} failed playing {failed.job.match_id} "
                                      f"game {failed.job.number}:\n{failed.traceback}")
            now = time.monotonic()
            if self.on_progress and now - last_progress >= 0.25:
                last_progress = now
                self.on_progress(self)

    def _dispatch(self, backend: Backend) -> None:
        """Give idle workers ready games: first a game whose engines the worker already runs,
        then a game of a pairing nobody is playing (spreading pairings over workers rather than
        one pairing's games, which would start the same engines twice), then the earliest.

        A slot that takes several games (a cluster task) gets the chosen game and the next ready
        games of its pairing, up to its ``games`` and to a fair share of what is ready (so the
        last games are spread over the slots rather than queued behind one); one game at a time
        while an SPRT may stop the event (a game handed out after it decides is not counted)."""
        idle = backend.idle()
        if not idle:
            return
        wanted = sum(slot.games for slot in idle)
        candidates = list(islice((g for g in self.plan.iter_ready()
                                  if g.key not in self.in_flight and g.key not in self._held),
                                 max(256, wanted)))
        share = 1
        if wanted > len(idle) and not self.cfg.sprt.stop:  # blocks: a fair share of every ready game
            ready = sum(len(state.ready) for state in self.plan.pairings) - len(self.in_flight)
            share = -(-ready // (len(idle) + len(set(self._slot_of.values()))))
        busy_pairings = {spec.pairing for spec in self.in_flight.values()}
        remote = {i for i, e in enumerate(self.cfg.engines) if e.remote}
        playing = collections.Counter(i for spec in self.in_flight.values() for i in set(spec.seating) & remote)
        for slot in sorted(idle, key=lambda w: -len(w.engines)):
            if not candidates:
                return
            if slot.engines or remote:
                best = min(range(len(candidates)), key=lambda k: (
                    sum(playing[i] for i in set(candidates[k].seating) & remote),  # remote participants' games
                    -len(slot.engines & set(candidates[k].seating)),               # wait for their max_games
                    candidates[k].pairing in busy_pairings, k))
            else:  # the same order, quicker: the first game of a pairing nobody plays, else the first
                best = next((k for k, g in enumerate(candidates) if g.pairing not in busy_pairings), 0)
            block = [candidates.pop(best)]
            while (len(block) < min(slot.games, share) and best < len(candidates)
                   and candidates[best].pairing == block[0].pairing):
                block.append(candidates.pop(best))
            backend.submit(slot.worker, [GameJob(spec.match_id, spec.number, tuple(spec.seating), spec.stream,
                                                 spec.opening) for spec in block])
            for spec in block:
                busy_pairings.add(spec.pairing)
                playing.update(set(spec.seating) & remote)
                self.in_flight[spec.key] = spec
                self._slot_of[spec.key] = slot.worker

    def _commit(self, batch: list[FinishedGame]) -> None:
        """Commit finished games in one transaction, then count them all and plan again once.
        The records stay packed (``arbiter.records.store.PackedGame``): nothing here decodes them."""
        done: list[tuple[GameSpec, PackedGame]] = []
        for finished in batch:
            game = finished.game
            key = (game.match_id, game.game_number)
            spec = self.in_flight.get(finished.job.key)
            if spec is None or key != spec.key or game.dice_stream != spec.stream:
                raise TournamentError(f"worker {finished.worker} returned {key} for {spec and spec.key}")
            del self.in_flight[key]
            self._slot_of.pop(key, None)
            if key in self.results:  # cannot happen: a key is handed out once per run
                raise TournamentError(f"game {key} was played twice")
            done.append((spec, game))
        if self.cfg.sprt.stop:
            done = self._in_order(done)
            if not done:
                return
        if not self.db.commit([game for _, game in done]):
            raise _StorageFailed(self.db.store.error or "cannot save")
        self.summary.commits += 1
        for spec, game in done:  # counted one by one, in commit order: on_game sees the event as of its game
            self.results[spec.key] = GameResult(spec.seating, tuple(game.returns), game.reason, game.forfeit_seat)
            self.summary.committed += 1
            self.played += 1
            if self.on_game:
                self.on_game(self, spec, game)
        self.replan([spec.key for spec, _ in done])
