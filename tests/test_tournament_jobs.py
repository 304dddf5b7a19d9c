"""The seams between the tournament runner and the places that play its games: typed messages
(``tournaments.jobs``), the local pool backend with real worker processes, a second backend that
plays in-process and must give the same records, the ``Series`` API workers use, the game
registry's ``register_game``, and ``kill_marked``."""
from __future__ import annotations

import json
import os
import pickle
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import msgspec
import psutil
import pytest

from arbiter import games as arbiter_games
from arbiter.clock import parse_time_control
from arbiter.hosting import EngineConfig, kill_marked
from arbiter.formats.match import Series
from arbiter.records import GameRecord
from arbiter.records.store import pack
from tournaments.jobs import FinishedGame, GameJob, GameLost, Slot, WorkerError, WorkerExit, WorkerSetup
from tournaments.pool import LocalPool

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
RANDOM = f"{PY} -m sample_engines.random_engine"


def setup_for(tmp_path: Path, engines: int = 2, **kw) -> WorkerSetup:
    return WorkerSetup(run_id=uuid.uuid4().hex[:8], game="einstein", game_options={},
                       game_class=arbiter_games.game_class("einstein"),
                       engines=[EngineConfig(f"{RANDOM} --seed {i}", name=f"r{i}", cwd=str(ROOT))
                                for i in range(engines)],
                       time_control=parse_time_control("60"), margin=0.05, master_seed=b"\x01" * 32, tid="t",
                       run_dir=tmp_path / "logs", db_marker=uuid.uuid4().hex[:16], parent_pid=os.getpid(), **kw)


def test_messages_are_typed_and_survive_a_pipe(tmp_path):
    setup = setup_for(tmp_path)
    job = GameJob("t:m1", 3, (1, 0), "t:m1|3")
    played = pack(GameRecord(game_id="g", match_id="t:m1", game_number=3, game="einstein", options={},
                             players=["r1", "r0"], seat_roles=["x", "y"], time_control="60", margin_ms=50,
                             started_at=0.0, returns=[1.0, -1.0], dice_stream="t:m1|3"))
    messages = [msgspec.structs.replace(setup, worker=2), job, FinishedGame(2, job, played, (0, 1)),
                WorkerError(2, job, "Traceback ..."), WorkerExit(2, 0.25), GameLost(2, job, -9),
                Slot(1, frozenset({0}))]
    for msg in messages:
        assert pickle.loads(pickle.dumps(msg)) == msg
    assert job.key == ("t:m1", 3) and messages[0].worker == 2 and setup.worker == 0
    with pytest.raises(AttributeError):
        job.number = 4  # frozen: a job is a value


def test_register_game():
    cls = arbiter_games.game_class("einstein")
    arbiter_games.register_game("einstein", cls)  # the same game again: harmless
    arbiter_games.register_game("einstein", "arbiter.games.einstein:EinsteinGame")
    stalingrad = arbiter_games.game_class("stalingrad")  # defined in a submodule, registered by package path
    arbiter_games.register_game("stalingrad", stalingrad)
    with pytest.raises(ValueError, match="taken"):
        arbiter_games.register_game("einstein", arbiter_games.game_class("smess"))
    name = f"einstein_{uuid.uuid4().hex[:6]}"
    try:
        arbiter_games.register_game(name, cls)
        assert name in arbiter_games.game_names() and arbiter_games.load_game(name).num_seats == 2
    finally:
        arbiter_games.GAME_CLASSES.pop(name, None)


def test_kill_marked_finds_marked_processes_however_they_hide():
    value = uuid.uuid4().hex
    sleeper = [PY, "-c", "import time; time.sleep(60)"]
    # A double fork into a new session: the grandchild is nobody's child here, only its environment tells.
    hider = [PY, "-c", "import os, time\nif os.fork(): os._exit(0)\nos.setsid()\ntime.sleep(60)"]
    env = {**os.environ, "KILL_TEST": value}
    marked = subprocess.Popen(sleeper, env=env)
    spared = subprocess.Popen(sleeper, env={**env, "KILL_TEST_RUN": "current"})
    other = subprocess.Popen(sleeper, env={**os.environ, "KILL_TEST": "another"})
    subprocess.run(hider, env=env, check=True)
    deadline = time.monotonic() + 5
    while len(_with_env("KILL_TEST", value)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    hidden = [p for p in _with_env("KILL_TEST", value) if p.pid not in (marked.pid, spared.pid)]
    assert len(hidden) == 1
    try:
        killed = kill_marked("KILL_TEST", value, unless=("KILL_TEST_RUN", "current"))
        assert sorted(killed) == sorted([marked.pid, hidden[0].pid])
        marked.wait(5)  # (already reaped by kill_marked's wait, so its status is lost to Popen)
        assert not psutil.pid_exists(marked.pid)
        assert spared.poll() is None and other.poll() is None
        assert not hidden[0].is_running() or hidden[0].status() == psutil.STATUS_ZOMBIE
    finally:
        for p in (marked, spared, other):
            p.kill()
            p.wait()


def _with_env(var: str, value: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter():
        try:
            if p.environ().get(var) == value and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
        except (psutil.Error, OSError):
            pass
    return found


def test_series_retires_least_recently_used_engines_and_kills_at_once(tmp_path):
    game = arbiter_games.load_game("einstein")
    configs = [EngineConfig(f"{RANDOM} --seed {i}", name=f"r{i}", cwd=str(ROOT)) for i in range(4)]
    series = Series(game, configs, parse_time_control("60"), run_dir=tmp_path, seed=b"s" * 32)
    try:
        for number, seating in enumerate(([0, 1], [1, 2], [2, 3]), 1):
            assert series.retire_idle(4, seating) == []
            series.play_game(number, seating)
        assert series.running() == [0, 1, 2, 3]
        # Next game [3, 0]: of the idle 1 (last seated in game 2) and 2 (game 3), 1 goes first.
        assert series.retire_idle(3, [3, 0]) == [1]
        assert series.running() == [0, 2, 3] and series.engines[1] is None
        assert series.retire_idle(1, [3, 0]) == [2]  # never fewer than the seated engines
        assert series.running() == [0, 3]
        procs = [series.engines[i].process.popen for i in (0, 3)]
        series.kill_now()
        for proc in procs:
            assert proc.wait(5) == -signal.SIGKILL
        assert series.running() == []
    finally:
        series.close()


def test_local_pool_plays_a_job_replaces_a_killed_worker_and_stops(tmp_path):
    setup = setup_for(tmp_path)
    pool = LocalPool(setup, 2)
    try:
        assert [s.worker for s in pool.idle()] == [0, 1] and pool.killed_leftovers == []
        job = GameJob("t:m1", 1, (0, 1), "t:m1|1")
        pool.submit(0, [job])
        assert [s.worker for s in pool.idle()] == [1]
        done = _wait_for(pool)
        assert isinstance(done, FinishedGame) and done.job == job and done.worker == 0
        record = done.game_record()
        assert (record.match_id, record.game_number, record.dice_stream) == ("t:m1", 1, "t:m1|1")
        assert record.players == ["r0", "r1"] and set(done.alive) == {0, 1}
        assert pool.idle()[0] == Slot(0, frozenset({0, 1}))  # it keeps the engines it ran

        lost_job = GameJob("t:m1", 2, (1, 0), "t:m1|2")
        pool.submit(1, [lost_job])
        os.kill(pool._workers[1].process.pid, signal.SIGKILL)
        lost = _wait_for(pool)
        assert lost == GameLost(1, lost_job, -signal.SIGKILL) and pool.restarts == 1
        assert sorted(s.worker for s in pool.idle()) == [0, 1]  # a fresh worker 1
        pool.submit(1, [lost_job])  # the game is played again, by the new worker
        again = _wait_for(pool)
        assert isinstance(again, FinishedGame) and again.game_record().players == ["r1", "r0"]
    finally:
        pool.stop(graceful=True)
    assert pool.cpu_seconds > 0  # both workers said goodbye with their CPU time
    assert _with_env("ARBITER_TOURNAMENT_RUN", setup.run_id) == []  # the killed worker's engines too
    assert all(not w.process.is_alive() for w in pool._workers)


def test_a_stopped_pool_leaves_no_process_of_its_run_behind(tmp_path):
    """An engine a worker was still starting when it was stopped is in no list the worker keeps
    (its sandbox's inner process can even outlive the worker, bubblewrap's death signal not yet
    armed); its guardian kills it, but after the worker has gone, which may be after the command
    has exited. ``stop`` kills whatever carries the run's marker before it returns. Here such a
    process is a double-forked sleeper with the run's marker, started by no worker."""
    setup = setup_for(tmp_path)
    pool = LocalPool(setup, 1)
    env = {**os.environ, "ARBITER_TOURNAMENT_RUN": setup.run_id}
    hider = [PY, "-c", "import os, time\nif os.fork(): os._exit(0)\nos.setsid()\ntime.sleep(60)"]
    subprocess.run(hider, env=env, check=True)
    deadline = time.monotonic() + 5
    while not _with_env("ARBITER_TOURNAMENT_RUN", setup.run_id) and time.monotonic() < deadline:
        time.sleep(0.05)
    [left] = _with_env("ARBITER_TOURNAMENT_RUN", setup.run_id)
    try:
        pool.stop(graceful=False)
        assert not left.is_running() or left.status() == psutil.STATUS_ZOMBIE
    finally:
        if left.is_running():
            left.kill()


def _wait_for(pool, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = pool.wait(0.25)
        if out:
            assert len(out) == 1
            return out[0]
    raise AssertionError("no outcome from the pool")


class InProcessBackend:
    """A second ``Backend``: plays each job right here, in ``wait``, with one ``Series`` (as a
    cluster backend would elsewhere). The runner cannot tell it from the local pool."""

    def __init__(self, setup: WorkerSetup, workers: int):
        from dataclasses import replace

        game = arbiter_games.load_game(setup.game, **setup.game_options)
        configs = [replace(c) for c in setup.engines] * 2  # copies for self-pairs
        self.series = Series(game, configs, setup.time_control, run_dir=setup.run_dir, margin=setup.margin,
                             seed=setup.master_seed, match_id=setup.tid)
        self.restarts, self.cpu_seconds, self.killed_leftovers = 0, 0.0, []
        self.job: GameJob | None = None
        self.jobs = 0

    def idle(self) -> list[Slot]:
        return [] if self.job else [Slot(0, frozenset(self.series.running()))]

    def submit(self, worker: int, jobs: list[GameJob]) -> None:
        self.job, = jobs

    def wait(self, timeout: float) -> list:
        job, self.job = self.job, None
        if job is None:
            return []
        self.jobs += 1
        self.series.retire_idle(2, list(job.seating))
        record = self.series.play_game(job.number, list(job.seating), job.stream, match_id=job.match_id)
        return [FinishedGame(0, job, pack(record), tuple(self.series.running()))]

    def stop(self, graceful: bool) -> None:
        self.series.close()


DETERMINISTIC = """
import random, sys
from protocol.kit import run_engine

def decide(request, game):
    # A pure function of the game and the position: the same moves on any backend.
    rng = random.Random(f"{sys.argv[1]}|{game.match_id}|{game.game_number}|{request.ply}|{request.position}")
    return rng.choice(request.legal_moves)

run_engine(decide, name="det-" + sys.argv[1], wants_legal_moves=True)
"""


def test_a_second_backend_gives_the_same_records_as_the_local_pool(tmp_path):
    from tournaments import api
    from tournaments.config import parse_config
    from tournaments.runner import Runner

    engine = tmp_path / "det.py"
    engine.write_text(DETERMINISTIC)
    results, backends = {}, {}
    for label in ("pool", "inprocess"):
        db = tmp_path / f"{label}.sqlite"
        text = (f'name = "same"\ngame = "einstein"\nformat = "round_robin"\nmatch = "games=2"\nseed = 3\n'
                f'concurrency = 2\noutput = "{db}"\n[game_options]\nsetup = "random"\n')
        text += "".join(f'[[engines]]\nname = "d{i}"\ncommand = "{PY} {engine} {i}"\ncwd = "{ROOT}"\n'
                        for i in range(3))
        opened = api.start(parse_config(text, str(tmp_path / f"{label}.toml")))

        def make(setup, workers, label=label):
            backends[label] = (InProcessBackend if label == "inprocess" else LocalPool)(setup, workers)
            return backends[label]

        summary = Runner(opened.cfg, opened.db, opened.seed, backend=make).run()
        assert summary.finished and summary.committed == 6
        opened.db.close()
        results[label] = _games(db)
    assert backends["inprocess"].jobs == 6
    assert results["pool"] == results["inprocess"] and len(results["pool"]) == 6


def _games(db: Path) -> dict:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT match_id, game_number, record FROM games").fetchall()
    finally:
        conn.close()
    out = {}
    for mid, num, rec in rows:
        r = json.loads(rec)
        out[(mid, num)] = (r["players"], r["returns"], r["reason"], r["rolls"], [e["move"] for e in r["events"]])
    return out


@pytest.mark.parametrize("lanes", [1, 2])
def test_an_idle_worker_sends_its_finished_games_end_to_the_live_feed(tmp_path, feed_viewer, lanes):
    """The feed sends a game's end with the next view drawn (``Feed.finished``); a worker left
    without a next game (a Swiss round's end, a director waiting) sends it after ``IDLE_FLUSH``,
    or the web page would show the finished game as running until the event's end."""
    pool = LocalPool(setup_for(tmp_path, feed=feed_viewer.endpoint, lanes=lanes), 1)
    try:
        pool.submit(0, [GameJob("t:m1", 1, (0, 1), "t:m1|1")])
        done = _wait_for(pool)
        assert isinstance(done, FinishedGame)
        game_id = done.game_record().game_id
        assert feed_viewer.wait_for("live", game_id, 1), "the viewer missed the game's views"
        assert feed_viewer.wait_for("end", game_id, 10), "no end while the worker waits for a game"
        assert pool._workers[0].process.is_alive()  # sent by the waiting worker, not at its close
    finally:
        pool.stop(graceful=True)
