"""A game-playing worker process of the local pool (``tournaments.pool``): receives ``GameJob``s
from the tournament process, plays each with ``arbiter.formats.match.Series`` and sends back a
``FinishedGame`` (messages: ``tournaments.jobs``). It never touches the database.

Dying with the parent. A worker must not outlive the tournament process, and it must take its
engines with it (engines run in their own sessions, so no signal reaches them by itself):

* ``prctl(PR_SET_PDEATHSIG, SIGTERM)`` (Linux, via ctypes): the kernel sends SIGTERM when the
  parent dies, even by ``kill -9``; a thread also polls ``getppid()`` (other systems, and the
  race where the parent died before the prctl);
* on SIGTERM or a dead parent, ``terminate_now`` SIGKILLs each engine's process group
  (``Series.kill_now``) and every process carrying this worker's marker in its environment
  (``arbiter.hosting.kill_marked``, which also catches an engine spawned in the very instant the
  signal arrived), then ``os._exit``s — no exception is relied on to unwind the main thread
  (see ``terminate_now``);
* a normal end (the parent sends ``None``) closes the series: ``Engine.stop`` sends ``quit``
  and kills each engine's process tree, group and token carriers;
* SIGINT is ignored: on Ctrl-C the tournament process stops the workers itself.

Every engine a run starts carries ``ARBITER_TOURNAMENT`` (the database),
``ARBITER_TOURNAMENT_RUN`` and ``ARBITER_TOURNAMENT_WORKER`` in its environment; a resumed run
kills leftovers of earlier runs of the same database (e.g. engines of a worker that was itself
SIGKILLed, the one case the above cannot cover) before it starts.
"""
from __future__ import annotations

import os
import signal
import threading
import time
import traceback
from typing import Any

from arbiter.hosting import kill_marked
from arbiter.hosting.process import stopped_engines_cpu
from protocol.transport import remove_ipc_dir

from .jobs import FinishedGame, GameJob, WorkerError, WorkerExit, WorkerSetup

DB_ENV = "ARBITER_TOURNAMENT"
RUN_ENV = "ARBITER_TOURNAMENT_RUN"
WORKER_ENV = "ARBITER_TOURNAMENT_WORKER"
IDLE_FLUSH = 0.1
"""Seconds a worker waits for its next game before it sends the live feed the ends of the games it
finished (``Feed.finished`` defers them to the next view drawn, which an idle worker never draws)."""

_terminating = False
_cleanup_hooks: list = []
"""What to do before leaving in a hurry: kill this worker's engines (by group and by marker)."""


def terminate_now(code: int = 128 + signal.SIGTERM) -> None:
    """Kill this worker's engines and end the process, from any thread.

    No exception is raised for the main thread to unwind: it spends its time in ZeroMQ polls,
    and pyzmq retries a poll interrupted by a signal, losing whatever exception the handler
    raised; and a signal may be delivered to another thread while the main thread blocks. So the
    cleanup is done right here and the process ends with ``os._exit``."""
    global _terminating
    if _terminating:
        return
    _terminating = True
    try:
        for hook in _cleanup_hooks:
            try:
                hook()
            except Exception:
                pass
    finally:
        os._exit(code)


def _on_term(signum, frame):
    terminate_now(128 + signum)


def die_with_parent(parent_pid: int) -> None:
    """End this process (engines first) when ``parent_pid`` goes away."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass

    def watch() -> None:
        while not _terminating:
            if os.getppid() != parent_pid:
                terminate_now()
                return
            time.sleep(0.25)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _open_hub(remote: dict):
    """The listening side for the tournament's remote participants (this worker plays them all).
    The port may still be held for a moment by the worker of a director just killed (it dies with
    it, but not at once on a busy machine): a port in use is tried again for a while."""
    import errno
    import time

    import zmq

    from arbiter.hosting.remote import LagPolicy, RemoteHub, Roster

    give_up = time.monotonic() + 20
    while True:
        try:
            return RemoteHub(remote["listen"], Roster.load(remote["roster"]), remote["server_key"],
                             insecure=remote["insecure"], deadline=max(0.0, remote["deadline"] - time.time()),
                             grace=remote["grace"], lag=LagPolicy(move_ms=remote["lag_move_ms"],
                                                                  quota_ms=remote["lag_quota_ms"]))
        except zmq.ZMQError as exc:
            if exc.errno != errno.EADDRINUSE or time.monotonic() > give_up:
                raise
            time.sleep(0.25)


def worker_main(conn: Any, setup: WorkerSetup) -> None:
    """Entry point of a worker process (``multiprocessing``, fork or spawn): ``GameJob``s in,
    ``FinishedGame`` / ``WorkerError`` out, ``WorkerExit`` after ``None`` (stop)."""
    marker = f"{setup.run_id}.{setup.worker}"
    state: dict[str, Any] = {"series": None, "lanes": []}

    def emergency_cleanup() -> None:
        for series in [state["series"], *state["lanes"]]:
            if series is not None:
                series.kill_now()
        kill_marked(WORKER_ENV, marker)  # and whatever carries this worker's marker
        remove_ipc_dir()  # os._exit runs no atexit: the sockets' folder would be left behind

    _cleanup_hooks[:] = [emergency_cleanup]
    try:
        # A session of its own: Linux shares CPU between sessions first (autogroup), and every
        # engine has its own, so workers left in the tournament's one session would together get
        # one share against their engines' many, and lose games on time (bench/isolation.md).
        os.setsid()
    except OSError:
        pass
    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for fd in setup.lock_fds:  # forked (none when spawned): the database lock must go with the parent alone
        try:
            os.close(fd)
        except OSError:
            pass
    die_with_parent(setup.parent_pid)
    if os.getppid() != setup.parent_pid:
        terminate_now()
    if setup.pin:  # its engines inherit the core (docs/tournaments.md, "pin")
        from arbiter.hosting import pin_process

        cores = sorted(os.sched_getaffinity(0))
        pin_process((cores[setup.worker % len(cores)],))

    from dataclasses import replace

    from arbiter import games as arbiter_games
    from arbiter.formats.match import Series
    from arbiter.records.store import pack

    if setup.game_class is not None:
        arbiter_games.register_game(setup.game, setup.game_class)
    game = arbiter_games.load_game(setup.game, **setup.game_options)
    extra_env = {DB_ENV: setup.db_marker, RUN_ENV: setup.run_id, WORKER_ENV: marker}
    hub = _open_hub(setup.remote) if setup.remote else None
    configs = [replace(c, env={**c.env, **extra_env}, endpoint=hub.endpoint if c.participant else c.endpoint)
               for c in setup.engines]
    configs += [replace(c, env={**c.env, **extra_env}) for c in setup.engines]  # copies for self-pairs
    keep = max(game.num_seats, setup.keep_engines)
    from arbiter.feed import Feed

    feed = Feed(setup.feed) if setup.feed else None  # the web view's live feed (never waits)

    def new_series() -> Series:
        return Series(arbiter_games.load_game(setup.game, **setup.game_options), configs, setup.time_control,
                      store=None, run_dir=setup.run_dir, margin=setup.margin, seed=setup.master_seed,
                      match_id=setup.tid, adjudication=setup.adjudication, on_event=feed.hook if feed else None)

    if setup.lanes > 1:
        lanes = [new_series() for _ in range(setup.lanes)]
        state["lanes"] = lanes
        try:
            _play_lanes(conn, setup, hub, lanes, keep, [c.participant for c in configs], feed)
        finally:
            _leave(conn, setup, lanes, feed, hub, marker)
        return
    series = Series(game, configs, setup.time_control, store=None, run_dir=setup.run_dir,
                    margin=setup.margin, seed=setup.master_seed, match_id=setup.tid, adjudication=setup.adjudication,
                    on_event=feed.hook if feed else None)
    state["series"] = series
    try:
        while True:
            try:
                if feed is not None and not conn.poll(IDLE_FLUSH):
                    feed.flush()  # no next game at once (a round's end, a director waiting): its end goes now
                while not conn.poll(0.5):  # wake up now and then: signal handlers run in between
                    pass
                job: GameJob | None = conn.recv()
            except (EOFError, OSError):
                break
            if job is None:
                break
            seating = list(job.seating)
            series.retire_idle(keep, seating)  # keep the engines of recent games, up to ``keep``
            try:
                opening = setup.openings[job.opening] if job.opening is not None else None
                record = series.play_game(job.number, seating, job.stream, match_id=job.match_id, opening=opening)
            except Exception:
                conn.send(WorkerError(setup.worker, job, traceback.format_exc()))
                continue
            if feed is not None:
                feed.finished(record)
            conn.send(FinishedGame(setup.worker, job, pack(record), tuple(series.running())))
    finally:
        _leave(conn, setup, [series], feed, hub, marker)


def _leave(conn: Any, setup: WorkerSetup, serieses: list, feed, hub, marker: str) -> None:
    """A worker's normal end: its CPU time measured first (its own, not its engines'), then its
    engines, feed and port closed, whatever carries its marker killed, and ``WorkerExit`` sent."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    for series in serieses:
        series.close()
    if feed is not None:
        feed.close()
    if hub is not None:
        hub.close()
    kill_marked(WORKER_ENV, marker)
    remove_ipc_dir()  # a forked process ends with os._exit after its target, running no atexit: else left in $TMPDIR
    try:
        conn.send(WorkerExit(setup.worker, usage.ru_utime + usage.ru_stime, stopped_engines_cpu()))
    except (OSError, ValueError):
        pass


def _play_lanes(conn: Any, setup: WorkerSetup, hub, lanes: list, keep: int, participants: list, feed=None) -> None:
    """Play up to ``len(lanes)`` games at once, each in a thread with a series of its own: the
    worker of an event with remote participants, who connect once to its one port and may play
    several games over that connection. A game waits (other games go first) until each remote
    participant in it plays fewer games than its hello's ``max_games`` (``RemoteHub.claim``)."""
    import queue

    from arbiter.formats.match import Series
    from arbiter.records.store import pack

    jobs: list[GameJob] = []
    free = list(range(len(lanes)))
    done: "queue.Queue[tuple[int, Any]]" = queue.Queue()  # (lane, FinishedGame or WorkerError)
    running = 0
    stopping = False

    def remote_of(job: GameJob) -> list[str]:
        return [participants[i] for i in dict.fromkeys(job.seating) if participants[i]]

    def play(lane: int, job: GameJob, claimed: list[str]) -> None:
        series: Series = lanes[lane]
        seating = list(job.seating)
        try:
            series.retire_idle(keep, seating)
            opening = setup.openings[job.opening] if job.opening is not None else None
            record = series.play_game(job.number, seating, job.stream, match_id=job.match_id, opening=opening)
            if feed is not None:
                feed.finished(record)
            outcome: Any = FinishedGame(setup.worker, job, pack(record), tuple(series.running()))
        except Exception:
            outcome = WorkerError(setup.worker, job, traceback.format_exc())
        finally:
            if hub is not None:
                hub.release(claimed)
        done.put((lane, outcome))

    while not stopping or running:
        if stopping:
            time.sleep(0.02)  # the games in play finish (a graceful stop comes between games)
        try:
            if not stopping:
                if conn.poll(0.02 if running or jobs else IDLE_FLUSH):
                    job = conn.recv()
                    if job is None:
                        stopping = True
                        jobs.clear()  # told to stop: what has not started is not played
                    else:
                        jobs.append(job)
                elif feed is not None and not running:
                    feed.flush()  # every lane idle: nobody draws the next view that would carry the ends
        except (EOFError, OSError):
            stopping = True
            jobs.clear()
        while True:
            try:
                lane, outcome = done.get_nowait()
            except queue.Empty:
                break
            free.append(lane)
            running -= 1
            conn.send(outcome)
        for job in list(jobs):
            if not free:
                break
            claimed = remote_of(job)
            if hub is not None and not hub.claim(claimed, 0):
                continue  # a participant already plays as many games as it accepts
            jobs.remove(job)
            running += 1
            threading.Thread(target=play, args=(free.pop(0), job, claimed), name="lane", daemon=True).start()
