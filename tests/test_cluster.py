"""Tournaments on a Dask cluster (``tournaments.cluster``), end to end with ``--cluster local:2``:
real Dask worker processes, real engine subprocesses, the director's real SQLite file.

* the same seed and deterministic engines give exactly the games of a run on local workers
  (seats, dice, moves, results), each record naming the machine that played it;
* a Dask worker SIGKILLed mid-event and then the director SIGKILLed: ``resume`` on a new local
  cluster ends with exactly those games, each committed once, and no engine is left behind;
* the director SIGKILLed between the SQLite commit of a batch of several games and its export
  lines (then half-way through writing them): ``resume`` ends with the same games, each
  committed and exported once;
* an engine a worker cannot start stops the event before any game, naming engine and worker,
  also one whose program is there but whose script is not (a worker in another folder);
* the director SIGKILLed while running workers play its blocks: no engine stays, no worker dies;
* a web server at the --cluster address, and a worker running other code: a clear error, fast.
* the code digest a worker must match covers the games' data files too, not bytecode caches.
"""
from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import psutil
import pytest

from tests.test_tournament_run import (DETERMINISTIC_ENGINE, KILL_IN_EXPORT, ROOT, cli, games_of, killed_in_export,
                                       marked_processes)


TOML = """\
name = "cluster-test"
game = "einstein"
format = "swiss"
rounds = 3
match = "bo3"
time_control = "60"
seed = "on-the-cluster"
duplicate_dice = true
concurrency = 2
output = "{db}"

[game_options]
setup = "random"
""" + "".join(f"""
[[engines]]
name = "d{i}"
command = "{{{{python}}}} {{engine}} {i}"
cwd = "{{engine_dir}}"
""" for i in range(5))


def _event(tmp_path: Path, name: str) -> tuple[Path, Path]:
    engine_dir = tmp_path / "engine"
    engine_dir.mkdir(exist_ok=True)
    engine = engine_dir / "det_engine.py"
    engine.write_text(DETERMINISTIC_ENGINE)
    db = tmp_path / "results" / f"{name}.sqlite"
    toml = tmp_path / f"{name}.toml"
    toml.write_text(TOML.format(db=db, engine=engine, engine_dir=engine_dir))
    return toml, db


def _wait_none_left(db: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while (left := marked_processes(db)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, f"engine processes left behind: {[p.cmdline() for p in left]}"


def _wait_games(db: Path, at_least: int, proc: subprocess.Popen, timeout: float = 120) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[0]
        if db.exists():
            try:
                n = len(games_of(db))
            except Exception:  # the schema is being created
                n = 0
            if n >= at_least:
                return n
        time.sleep(0.1)
    raise AssertionError(f"fewer than {at_least} games after {timeout} s\n{_state_of(proc, db)}")


def _state_of(director: subprocess.Popen, db: Path) -> str:
    """What a stalled event was doing: the director's process tree (Dask's nannies, workers,
    their engines, with their states) and, once it is killed, everything the director printed."""
    lines = []
    try:
        for p in [psutil.Process(director.pid), *psutil.Process(director.pid).children(recursive=True)]:
            try:
                lines.append(f"  {p.pid} ppid {p.ppid()} {p.status()} cpu {sum(p.cpu_times()[:2]):.1f} s: "
                             f"{' '.join(p.cmdline())[:160]}")
            except psutil.Error:
                pass
    except psutil.Error:
        lines.append("  (the director is gone)")
    lines.append(f"  engines marked for the event: {len(marked_processes(db))}")
    director.kill()
    out = director.communicate(timeout=30)[0]
    return "processes:\n" + "\n".join(lines) + "\nthe director printed:\n" + (out or "")[-4000:]


@pytest.fixture(scope="module")
def expected(tmp_path_factory) -> dict:
    """The event's games on local worker processes: what every cluster run must reproduce."""
    toml, straight = _event(tmp_path_factory.mktemp("local"), "local")
    run = cli("run", str(toml), "--quiet", "--no-report")
    assert run.returncode == 0, run.stdout + run.stderr
    games = games_of(straight)
    assert len(games) >= 12 and all(g["moves"] for g in games.values())
    return games


def test_a_local_cluster_plays_exactly_the_games_of_local_workers(tmp_path, expected):
    toml, clustered = _event(tmp_path, "cluster")
    run = cli("run", str(toml), "--quiet", "--no-report", "--cluster", "local:2", timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    said = " ".join(run.stdout.split())
    assert "cluster local:2: 2 worker(s)" in said and "dashboard http://" in said
    assert games_of(clustered) == expected
    conn = sqlite3.connect(clustered)
    try:
        hosts = {row[0] for row in conn.execute("SELECT json_extract(record, '$.played_on') FROM games")}
    finally:
        conn.close()
    assert len(hosts) == 1 and os.uname().nodename in next(iter(hosts)) and "cores)" in next(iter(hosts))
    _wait_none_left(clustered)


def _dask_worker_of(db: Path) -> psutil.Process | None:
    """The Dask worker process running this event's engines (an engine's parent)."""
    for engine in marked_processes(db):
        try:
            parent = engine.parent()
            while parent is not None and "python" not in parent.name():
                parent = parent.parent()
            if parent is not None and "tournaments" not in " ".join(parent.cmdline()):
                return parent
        except psutil.Error:
            continue
    return None


def test_a_killed_worker_and_a_killed_director_resume_to_the_same_games(tmp_path, expected):
    toml, db = _event(tmp_path, "cluster")
    director = subprocess.Popen([sys.executable, "-m", "tournaments", "run", str(toml), "--quiet", "--no-report",
                                 "--cluster", "local:3"], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
    try:
        before = _wait_games(db, 2, director)
        worker = None
        deadline = time.monotonic() + 30
        while worker is None and time.monotonic() < deadline:
            worker = _dask_worker_of(db)
        assert worker is not None, "no Dask worker found running engines"
        worker.kill()  # one of three, mid-game: Dask hands the task to another worker, which replays it
        _wait_games(db, before + 3, director)
        director.kill()  # kill -9 of the director: its local cluster goes with it
        director.communicate(timeout=30)
    finally:
        if director.poll() is None:
            director.kill()
    _wait_none_left(db)
    resumed = cli("resume", str(db), "--quiet", "--no-report", "--cluster", "local:2", timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert games_of(db) == expected  # games_of also asserts that no game was committed twice
    _wait_none_left(db)


def test_a_director_killed_between_a_batchs_commit_and_its_export_resumes_to_the_same_games(tmp_path):
    """The batched path: a task plays several games, the director commits what arrives together
    in one transaction. Killed with -9 right after such a batch's SQLite commit, before its export
    lines (then, resumed, half-way through writing them): ``resume`` ends with exactly the games
    of a local run, each committed once and exported once."""
    toml, db = _event(tmp_path, "batched")  # a round robin: enough ready games of a pairing for blocks
    toml.write_text(toml.read_text().replace('format = "swiss"\nrounds = 3\nmatch = "bo3"', 'format = "round_robin"\n'
                                             'match = "games=4"').replace("duplicate_dice = true\n", ""))
    straight = tmp_path / "straight.toml"
    straight.write_text(toml.read_text().replace(str(db), str(db.with_name("straight.sqlite"))))
    run = cli("run", str(straight), "--quiet", "--no-report")
    assert run.returncode == 0, run.stdout + run.stderr
    expected = games_of(db.with_name("straight.sqlite"))
    assert len(expected) == 40
    hook = tmp_path / "kill_in_export.py"
    hook.write_text(KILL_IN_EXPORT)
    report = tmp_path / "kill-report"
    for mode in ("commit", "torn"):
        before = len(games_of(db)) if db.exists() else 0
        args = ["run", str(toml)] if mode == "commit" else ["resume", str(db)]
        proc = subprocess.Popen([sys.executable, str(hook), mode, "0", *args, "--quiet", "--no-report",
                                 "--cluster", "local:2"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env={**os.environ, "KILL_REPORT": str(report),
                                                "ARBITER_CLUSTER_TASK_SECONDS": "60"})  # blocks however slow
        out, _ = proc.communicate(timeout=300)
        killed_in_export(proc, out, db, before + 2, mode, report, several=True)
        _wait_none_left(db)
    resumed = cli("resume", str(db), "--quiet", "--no-report", "--cluster", "local:2", timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "game(s) in" in resumed.stdout and "task(s), up to" in resumed.stdout
    assert games_of(db) == expected
    exported = [msgspec.json.decode(line)["game_id"] for line in db.with_suffix(".jsonl").read_bytes().splitlines()]
    conn = sqlite3.connect(db)
    try:
        stored = [row[0] for row in conn.execute("SELECT game_id FROM games ORDER BY rowid")]
    finally:
        conn.close()
    assert sorted(exported) == sorted(stored) and len(set(exported)) == len(expected)
    _wait_none_left(db)


def test_an_engine_a_worker_cannot_start_stops_the_event_naming_it(tmp_path):
    toml, db = _event(tmp_path, "missing")
    text = toml.read_text().replace('command = "{python} ', 'command = "/nonexistent/python ', 1)
    toml.write_text(text.replace('output =', 'on_start_failure = "forfeit"\noutput =', 1))
    run = cli("run", str(toml), "--quiet", "--no-report", "--cluster", "local:2", timeout=300)
    assert run.returncode != 0
    out = " ".join((run.stdout + run.stderr).split())
    assert "an engine cannot start on the cluster" in out and "engine d0: program /nonexistent/python not found" in out
    assert "worker tls://127.0.0.1:" in out  # a local cluster speaks TLS with certificates of its own
    assert not games_of(db)


def test_a_bad_cluster_value_names_the_flag_and_the_key(tmp_path):
    toml, _ = _event(tmp_path, "bad")
    run = cli("run", str(toml), "--cluster", "local:0")
    assert run.returncode == 2 and "--cluster" in run.stderr and "at least 1" in run.stderr
    toml.write_text(toml.read_text().replace("concurrency = 2", 'concurrency = 2\ncluster = "nowhere"'))
    run = cli("run", str(toml))
    assert run.returncode == 2 and "cluster" in run.stderr and "scheduler address" in run.stderr
    toml.write_text(toml.read_text().replace('cluster = "nowhere"', 'cluster = "tcp://127.0.0.1:9"'))
    bad = cli("run", str(toml), "--quiet", "--no-report", env={**os.environ, "ARBITER_CLUSTER_CONNECT_SECONDS": "soon"})
    assert bad.returncode != 0 and "ARBITER_CLUSTER_CONNECT_SECONDS='soon': expected a positive number of seconds" \
        in bad.stdout + bad.stderr and "Traceback" not in bad.stderr
    env = {**os.environ, "ARBITER_CLUSTER_CONNECT_SECONDS": "2"}  # the default 30 s is for a starting scheduler
    started = time.monotonic()
    run = cli("run", str(toml), "--quiet", "--no-report", timeout=120, env=env)
    assert time.monotonic() - started < 25  # the setting is obeyed
    assert run.returncode != 0 and "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in " ".join((run.stdout + run.stderr).split())


def test_time_controls_scale_by_each_workers_measured_speed(tmp_path):
    from arbiter.clock import parse_time_control
    from tournaments import cluster
    from tournaments.jobs import WorkerSetup

    setup = WorkerSetup(run_id="r", game="einstein", game_options={}, game_class=None, engines=[],
                        time_control=parse_time_control("60+1"), margin=0.05, master_seed=b"x", tid="t",
                        run_dir=tmp_path, db_marker="m")
    speed = cluster.speed_probe(setup, seconds=0.15)
    assert speed > 1000  # moves per second of EinStein's rules on any machine this runs on
    cluster._speed["einstein"] = speed
    tc, factor = cluster.scaled_time_control(msgspec.structs.replace(setup, speed_reference=2 * speed))
    assert factor == 2.0 and (tc.base_ms, tc.increment_ms) == (120_000, 2_000)
    assert cluster.scaled_time_control(setup) == (setup.time_control, 1.0)  # off by default
    cluster._speed.clear()

    toml, db = _event(tmp_path, "scaled")
    toml.write_text(toml.read_text().replace("concurrency = 2", "concurrency = 2\nscale_time_control = true"))
    run = cli("run", str(toml), "--quiet", "--no-report", "--cluster", "local:2", timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "time controls scaled by speed" in " ".join(run.stdout.split())
    conn = sqlite3.connect(db)
    try:
        scales = [row[0] for row in conn.execute("SELECT json_extract(record, '$.tc_scale') FROM games")]
    finally:
        conn.close()
    assert scales and all(0.25 <= s <= 4 for s in scales), scales  # one machine: near 1, noise aside


def test_the_threads_of_a_worker_starting_their_first_blocks_at_once_measure_its_speed_once(tmp_path, monkeypatch):
    """A Dask worker with several threads starts a block in each at once, and each thread's first
    block measured the machine's speed (``scaled_time_control``): the probes ran together and
    shared the interpreter, so each saw a fraction of the speed, and the worker's games got up to
    four times the time control (recorded as ``tc_scale``). One probe at a time now, alone, and its
    result shared: the probe runs once, never beside another, and every thread gets its factor.
    (Asserted on the probes themselves: a bound on the factor also failed on a correct worker whose
    machine was busy, 2.06 beside two busy loops and a test worker.)"""
    import threading

    from arbiter.clock import parse_time_control
    from tournaments import cluster
    from tournaments.jobs import WorkerSetup

    setup = WorkerSetup(run_id="r", game="einstein", game_options={}, game_class=None, engines=[],
                        time_control=parse_time_control("60+1"), margin=0.05, master_seed=b"x", tid="t",
                        run_dir=tmp_path, db_marker="m")
    setup = msgspec.structs.replace(setup, speed_reference=cluster.speed_probe(setup))  # this machine, alone
    threads, at_once = 4, threading.Barrier(4)
    factors: list[float] = []
    probing, most, probes, counting = 0, 0, [], threading.Lock()
    real_probe = cluster.speed_probe

    def watched_probe(s):
        nonlocal probing, most
        with counting:
            probing += 1
            most = max(most, probing)
        try:
            speed = real_probe(s)
            probes.append(speed)
            return speed
        finally:
            with counting:
                probing -= 1

    def first_block() -> None:
        at_once.wait(10)
        factors.append(cluster.scaled_time_control(setup)[1])

    cluster._speed.clear()
    monkeypatch.setattr(cluster, "speed_probe", watched_probe)
    try:
        started = [threading.Thread(target=first_block) for _ in range(threads)]
        for t in started:
            t.start()
        for t in started:
            t.join(60)
        factor = cluster.scaled_time_control(setup)[1]  # the worker's own probe, kept: no new one
    finally:
        cluster._speed.clear()
    assert len(probes) == 1 and most == 1, (probes, most)
    assert factors == [factor] * threads, (factors, factor)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_cluster(port: int, workers: int, cwd: Path = ROOT, extra: tuple[str, ...] = ()) -> list[subprocess.Popen]:
    """A real scheduler and workers, as an operator starts them (``dask scheduler``, ``dask worker``
    in ``cwd``, with ``extra`` options)."""
    dask = str(Path(sys.executable).with_name("dask"))
    logs = subprocess.DEVNULL
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--dashboard-address", ":0"], stdout=logs, stderr=logs, start_new_session=True)]
    procs.append(subprocess.Popen([dask, "worker", f"tcp://127.0.0.1:{port}", "--nworkers", str(workers),
                                   "--nthreads", "1", *extra], cwd=cwd, stdout=logs, stderr=logs,
                                  start_new_session=True))
    return procs


def _workers_of(cluster: list[subprocess.Popen]) -> list[psutil.Process]:
    """The worker processes (and their nannies' helpers) under ``dask worker``: no engine."""
    return [p for p in psutil.Process(cluster[1].pid).children(recursive=True)
            if "python" in os.path.basename(p.cmdline()[0]) and "det_engine" not in " ".join(p.cmdline())]


def test_a_director_killed_mid_block_leaves_no_engine_on_workers_that_go_on(tmp_path):
    """The director SIGKILLed while workers of a running cluster play blocks of its games: the
    blocks stop, every engine they started goes (none restarted for games nobody collects, none
    closed from another thread under a game, which aborted the worker), the workers live on."""
    toml, db = _event(tmp_path, "blocks")
    toml.write_text(toml.read_text().replace('format = "swiss"\nrounds = 3\nmatch = "bo3"',
                                             'format = "round_robin"\nmatch = "games=40"'))
    address = f"tcp://127.0.0.1:{_free_port()}"
    cluster = _start_cluster(int(address.rsplit(":", 1)[1]), 2)
    try:
        director = subprocess.Popen([sys.executable, "-m", "tournaments", "run", str(toml), "--quiet", "--no-report",
                                     "--cluster", address], cwd=ROOT, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True)
        _wait_games(db, 30, director, timeout=180)  # blocks of several games are being played
        time.sleep(1.0)
        workers = _workers_of(cluster)
        assert len(workers) >= 2, [w.cmdline() for w in workers]
        director.kill()
        director.communicate(timeout=30)
        _wait_none_left(db)
        time.sleep(4)  # long enough for a block that went on to start engines again
        assert not marked_processes(db), [p.cmdline() for p in marked_processes(db)]
        gone = [w.pid for w in workers if not w.is_running() or w.status() == psutil.STATUS_ZOMBIE]
        assert not gone, f"worker processes died: {gone}"
        resumed = cli("resume", str(db), "--quiet", "--no-report", "--cluster", address, timeout=300)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    finally:
        _stop(cluster)
    _wait_none_left(db)


def test_a_cluster_address_where_another_service_listens_fails_fast_naming_it(tmp_path):
    """A web server at the --cluster address accepts the connection and never answers as Dask
    does: the director says so within the connect time instead of waiting for ever."""
    toml, db = _event(tmp_path, "http")
    port = _free_port()
    web = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        started = time.monotonic()
        run = cli("run", str(toml), "--quiet", "--no-report", "--cluster", f"tcp://127.0.0.1:{port}", timeout=120,
                  env={**os.environ, "ARBITER_CLUSTER_CONNECT_SECONDS": "2"})
    finally:
        web.kill()
        web.wait(10)
    said = " ".join((run.stdout + run.stderr).split())
    assert time.monotonic() - started < 40, said
    assert run.returncode == 1 and f"no Dask scheduler answered at tcp://127.0.0.1:{port} within 2 s" in said, said
    assert "Traceback" not in said and not games_of(db)


def test_a_cluster_over_tls_plays_and_refuses_whoever_lacks_its_certificate(tmp_path, expected):
    """``arbiter-tournament cluster-certs`` makes the cluster's TLS credentials; a scheduler and a
    worker started with them (as its output says) play the event for a director given them
    through Dask's configuration, exactly the games of local workers. A director without them is
    told what to set; a plain client and one with other certificates are refused (before, any
    client that could reach the scheduler could run code on its workers). A plain TCP scheduler
    on another machine is warned of."""
    import distributed

    from tournaments.cluster import plain_link_warning

    certs = tmp_path / "certs"
    made = cli("cluster-certs", str(certs))
    assert made.returncode == 0, made.stdout + made.stderr
    certificate, key = certs / "cluster-ca.pem", certs / "cluster-key.pem"
    assert key.stat().st_mode & 0o777 == 0o600 and "dask worker tls://" in made.stdout
    again = cli("cluster-certs", str(certs))  # nothing replaced; a file is not a folder
    assert again.returncode == 2 and f"{certificate} exists" in again.stderr and key.stat().st_size > 0
    (tmp_path / "file").write_text("")
    on_a_file = cli("cluster-certs", str(tmp_path / "file"))
    assert on_a_file.returncode == 2 and "is a file, not a folder" in on_a_file.stderr, on_a_file.stderr
    port = _free_port()
    address = f"tls://127.0.0.1:{port}"
    tls = ("--tls-ca-file", str(certificate), "--tls-cert", str(certificate), "--tls-key", str(key))
    dask = str(Path(sys.executable).with_name("dask"))
    procs = [subprocess.Popen([dask, "scheduler", "--protocol", "tls", "--host", "127.0.0.1", "--port", str(port),
                               "--dashboard-address", ":0", *tls], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)]
    procs.append(subprocess.Popen([dask, "worker", address, "--nworkers", "2", "--nthreads", "1", *tls], cwd=ROOT,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
    try:
        toml, db = _event(tmp_path, "tls")
        bare = cli("run", str(toml), "--quiet", "--no-report", "--cluster", address)
        said = " ".join((bare.stdout + bare.stderr).split())
        assert bare.returncode == 1 and "not set: DASK_DISTRIBUTED__COMM__TLS__CA_FILE" in said, said
        assert "Traceback" not in said and not games_of(db)
        unreadable = cli("resume", str(toml), "--quiet", "--no-report", "--cluster", address,
                         env={**os.environ, "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": str(certs / "nothing.pem"),
                              "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT": str(certificate)})
        said = " ".join((unreadable.stdout + unreadable.stderr).split())
        assert unreadable.returncode == 1 and f"cannot read DASK_DISTRIBUTED__COMM__TLS__CA_FILE ({certs / 'nothing.pem'})" \
            in said, said
        env = {**os.environ, "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": str(certificate),
               "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT": str(certificate),
               "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY": str(key)}
        run = cli("resume", str(toml), "--quiet", "--no-report", "--cluster", address, env=env, timeout=300)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "plain TCP" not in run.stderr, run.stderr
        assert games_of(db) == expected
        for stranger, security in ((f"tcp://127.0.0.1:{port}", None), (address, distributed.Security.temporary())):
            with pytest.raises((OSError, TimeoutError)):
                distributed.Client(stranger, timeout=3, security=security).close()
    finally:
        _stop(procs)
    assert plain_link_warning("tcp://192.0.2.7:8786") and "plain TCP" in plain_link_warning("tcp://192.0.2.7:8786")
    assert plain_link_warning(f"tcp://127.0.0.1:{port}") is None and plain_link_warning(address) is None


def test_a_worker_in_another_folder_that_cannot_start_an_engine_stops_the_event(tmp_path):
    """An engine given as a script path relative to the director's folder: its program (the
    Python) is on the worker, but the worker runs elsewhere and the engine cannot start there.
    The event stops before any game naming engine and worker (it used to be played to the end,
    every game lost by both engines as not_started)."""
    toml, db = _event(tmp_path, "relative")
    engine = tmp_path / "engine" / "det_engine.py"
    text = toml.read_text().replace(f"{{python}} {engine}", "{python} engine/det_engine.py")
    toml.write_text("\n".join(line for line in text.splitlines() if not line.startswith("cwd =")) + "\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    address = f"tcp://127.0.0.1:{_free_port()}"
    cluster = _start_cluster(int(address.rsplit(":", 1)[1]), 1, cwd=elsewhere)
    try:
        run = subprocess.run([sys.executable, "-m", "tournaments", "run", str(toml), "--quiet", "--no-report",
                              "--cluster", address], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        _stop(cluster)
    said = " ".join((run.stdout + run.stderr).split())
    assert run.returncode == 1, said
    assert "an engine cannot start on the cluster (no game was played)" in said and "worker tcp://" in said
    assert "engine d0 cannot start there (it starts here)" in said and "det_engine.py" in said
    assert "Traceback" not in said and not games_of(db)
    _wait_none_left(db)


PRELOAD_OTHER_CODE = """
import tournaments.cluster as cluster
cluster.code_digest = lambda: "0123456789abcdef"  # a worker with another version of the project
"""


def test_a_worker_running_other_code_is_refused_before_any_game(tmp_path):
    toml, db = _event(tmp_path, "version")
    preload = tmp_path / "other_version.py"
    preload.write_text(PRELOAD_OTHER_CODE)
    address = f"tcp://127.0.0.1:{_free_port()}"
    cluster = _start_cluster(int(address.rsplit(":", 1)[1]), 1, extra=("--preload", str(preload)))
    try:
        run = cli("run", str(toml), "--quiet", "--no-report", "--cluster", address, timeout=300)
    finally:
        _stop(cluster)
    said = " ".join((run.stdout + run.stderr).split())
    assert run.returncode == 1, said
    assert "run other code than this director" in said and ": 0123456789abcdef;" in said, said
    assert "Traceback" not in said and not games_of(db)


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait(10)


def test_a_scheduler_that_goes_away_stops_the_director_cleanly_and_resume_finishes(tmp_path, expected):
    toml, db = _event(tmp_path, "cluster")
    address = f"tcp://127.0.0.1:{_free_port()}"
    cluster = _start_cluster(int(address.rsplit(":", 1)[1]), 2)
    try:
        director = subprocess.Popen([sys.executable, "-m", "tournaments", "run", str(toml), "--quiet", "--no-report",
                                     "--cluster", address], cwd=ROOT, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True, env={**os.environ, "ARBITER_CLUSTER_WAIT": "3"})
        _wait_games(db, 2, director)
        os.killpg(cluster[0].pid, signal.SIGKILL)  # the scheduler goes away mid-event
        out, _ = director.communicate(timeout=120)
    finally:
        _stop(cluster)
    said = " ".join(out.split())
    assert director.returncode == 1, said
    assert "lost the Dask scheduler" in said and "did not come back within 3 s" in said and "Traceback" not in said
    _wait_none_left(db)
    saved = games_of(db)
    assert 2 <= len(saved) < len(expected) and all(saved[k] == expected[k] for k in saved)

    cluster = _start_cluster(int(address.rsplit(":", 1)[1]), 2)  # the operator starts it again
    try:
        resumed = cli("resume", str(db), "--quiet", "--no-report", "--cluster", address, timeout=300)
    finally:
        _stop(cluster)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert games_of(db) == expected
    _wait_none_left(db)


def test_a_task_plays_about_four_seconds_of_games_and_longer_on_a_big_cluster():
    """Block sizes (``DaskBackend._adapt``): from how long the last task's games took, about
    ``TASK_SECONDS`` of play, at most ``MAX_BLOCK`` games; a cluster of 3,200 worker threads gets
    tasks long enough to finish at most ``MAX_TASK_RATE`` a second."""
    from tournaments import cluster

    def block(threads: int, seconds_per_game: float, games: int = 1) -> int:
        backend = object.__new__(cluster.DaskBackend)  # no cluster needed to size blocks
        backend._per_game, backend._cap, backend._thread_count = None, 1 << 20, threads
        backend._started = {0: time.monotonic() - seconds_per_game * games}
        backend._adapt(0, games)
        return backend._block

    assert cluster.TASK_SECONDS == 4 and cluster.MAX_TASK_RATE == 100
    assert block(2, 1.0) == 3            # 4 s of 1 s games (a hair over 1 s each: 3, not 4)
    assert block(2, 0.001, 200) == cluster.MAX_BLOCK
    assert block(2, 10.0) == 1           # a slow game goes alone
    assert block(3200, 1.0) == 31        # 3,200 threads at 100 tasks/s: tasks of 32 s
    assert block(3200, 10.0) == 3


def test_the_code_digest_covers_the_packages_data_files_but_not_their_bytecode(tmp_path):
    """A worker whose game data differ (an edition's numbers, a board, a map) plays other games as
    surely as one with other rules, so the digest must see them; bytecode caches differ by Python
    version and whether any were written, and must not count. A copy of the three packages, run
    as a worker would run it."""
    for package in ("protocol", "arbiter", "tournaments"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))

    def digest(bytecode: bool = False) -> str:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(PYTHONPATH=str(tmp_path), **({} if bytecode else {"PYTHONDONTWRITEBYTECODE": "1"}))
        proc = subprocess.run([sys.executable, "-c", "from tournaments.cluster import code_digest; print(code_digest())"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    before = digest()
    assert not list(tmp_path.rglob("__pycache__"))
    assert digest(bytecode=True) == before and list(tmp_path.rglob("*.pyc"))  # now beside the caches it wrote
    edition = tmp_path / "arbiter" / "games" / "stalingrad" / "edition.toml"
    edition.write_text(edition.read_text() + "\n")
    assert digest() != before


def test_a_blocks_last_end_reaches_the_live_feed_before_the_next_block(tmp_path, feed_viewer):
    """A game's end goes to the feed with the next view drawn (``Feed.finished``); whether the
    worker gets another block is Dask's choice, so a block sends its last end as it returns."""
    from tournaments import cluster
    from tournaments.jobs import GameJob

    setup = msgspec.structs.replace(_setup(tmp_path), feed=feed_viewer.endpoint)
    try:
        played = cluster.play_block(setup, sys.executable, [GameJob("t:m1", 1, (0, 1), "t:m1|1")])
        game_id = msgspec.msgpack.decode(played, type=cluster.Block).finished[0].game_record().game_id
        assert feed_viewer.wait_for("live", game_id, 1), "the viewer missed the game's views"
        assert feed_viewer.wait_for("end", game_id, 5), "the block's last end waits for the next block"
    finally:
        cluster.close_run(setup.run_id)


def test_the_run_s_setup_lost_with_the_only_worker_holding_it_is_put_on_the_cluster_again(tmp_path):
    """The run's ``WorkerSetup`` is scattered once; a worker that joins later fetches it from one
    that holds it. When every worker that held it dies, each block after that lacked it and came
    back "cancelled", to be handed out again against the same lost setup (CI, under coverage:
    the broadcast had reached one worker). The backend puts the setup on the cluster again."""
    from tournaments import cluster
    from tournaments.jobs import FinishedGame, GameJob

    backend = cluster.DaskBackend(_setup(tmp_path), 1, "local:2", log=lambda *_: None)
    try:
        backend.client.wait_for_workers(2, timeout=60)
        only, other = sorted(backend.client.nthreads())
        backend.client.cancel(backend._setup_future)  # as CI had it: the setup on one worker
        backend._setup_future = backend.client.scatter(backend._setup, workers=[only], hash=False)
        assert backend.client.who_has(backend._setup_future)[backend._setup_future.key] == (only,)
        os.kill(backend.client.run(os.getpid, workers=[only])[only], signal.SIGKILL)
        deadline = time.monotonic() + 60
        while backend._setup_future.status == "finished" and time.monotonic() < deadline:
            time.sleep(0.01)
        lost = backend._setup_future.status
        job = GameJob("t:m1", 1, (0, 1), "t:m1|1")
        backend.submit(0, [job])
        out = []
        while not out and time.monotonic() < deadline:
            out = backend.wait(1)
        assert len(out) == 1 and isinstance(out[0], FinishedGame), (lost, out)
        assert out[0].job == job
    finally:
        backend.stop(graceful=False)
        backend.close_client()


def _setup(tmp_path):
    """A two-engine EinStein run's ``WorkerSetup`` for the backend's own tests."""
    import uuid

    from arbiter.clock import parse_time_control
    from arbiter.hosting import EngineConfig
    from tournaments.jobs import WorkerSetup

    engines = [EngineConfig([sys.executable, "-m", "sample_engines.random_engine", "--seed", str(i)], name=f"r{i}",
                            cwd=str(ROOT)) for i in (0, 1)]
    return WorkerSetup(run_id=uuid.uuid4().hex[:8], game="einstein", game_options={}, game_class=None,
                       engines=engines, time_control=parse_time_control("60"), margin=0.05, master_seed=b"x",
                       tid="t", run_dir=tmp_path / "logs", db_marker=uuid.uuid4().hex[:16])


def test_a_block_whose_result_died_with_its_worker_is_played_again_not_failed(tmp_path):
    """A worker can die after its block finished and before the director reads the result: the
    future is then "lost" or "pending" again (Dask computes it anew). It was taken for a failed
    block, whose error was read from a future that had none: the run stopped with "worker 0 failed
    playing ... NoneType: None" (CI). Its games are handed out again, as a cancelled block's."""
    from tournaments import cluster
    from tournaments.jobs import GameJob, GameLost

    backend = cluster.DaskBackend(_setup(tmp_path), 1, "local:2", log=lambda *_: None)
    try:
        # the setup on both workers: the one killed must not take its only copy, or the block is
        # "cancelled" for want of it, not lost (the test above)
        backend.client.wait_for_workers(2, timeout=60)
        backend._setup_future = backend.client.scatter(backend._setup, broadcast=True)
        assert len(backend.client.who_has(backend._setup_future)[backend._setup_future.key]) == 2
        job = GameJob("t:m1", 1, (0, 1), "t:m1|1")
        backend.submit(0, [job])
        future = backend._running[0]
        deadline = time.monotonic() + 60
        while future.status != "finished" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert future.status == "finished"
        (holder,) = backend.client.who_has(future)[future.key]
        os.kill(backend.client.run(os.getpid, workers=[holder])[holder], signal.SIGKILL)  # the result with it
        while future.status == "finished" and time.monotonic() < deadline:
            time.sleep(0.002)
        # read before Dask has it again; "cancelled" when the setup went with the worker after all
        # (CI, once: the scheduler counted the broadcast copy on the worker killed as the only one)
        assert future.status in ("lost", "pending", "cancelled"), future.status
        out = backend.wait(10)  # at once: playing it again takes the other worker its engines' start
        assert out == [GameLost(0, job)], out
    finally:
        backend.stop(graceful=False)
        backend.close_client()
