"""The cluster backend: a tournament's games played as tasks on a Dask cluster (``dask.distributed``).

The director stays one process and keeps all of the runner's rules (``tournaments.runner``): it
plans, hands ready games out, receives finished records, commits them to SQLite and only then
counts them. This module only replaces *where* the games are played: a Dask task
(``play_block``) plays a block of ready games of one pairing, one after another on the same
engines, instead of a local worker process (``tournaments.pool``) playing one game per message.
The block size adapts (``DaskBackend._adapt``): about ``TASK_SECONDS`` of play per task, so that
Dask's and the director's cost per task is shared by many quick games, while slow games go one
per task; the runner never gives a task more than a fair share of the ready games (the last ones
are spread over the workers) and gives one game at a time while an SPRT may stop the event.
Workers never see the database.

* ``--cluster tcp://scheduler:8786`` (or ``cluster = "..."`` in the tournament file) uses a running
  cluster; ``--cluster local:N`` starts a ``LocalCluster`` of N single-threaded worker processes
  on this machine (a quick try, and what the tests use).
* Engines run on the worker: its own Python stands for ``{python}``; before the first game every
  worker must run the director's code (``code_digest``), checks that it can find every engine's
  program and folder and starts each engine once, and the director stops naming the engine and
  the worker if one cannot (``TournamentError``), rather than forfeiting.
* A closed run (the director stopped, or died on this machine: ``close_run``) ends its blocks
  after their current game; each block closes its own engines (never another thread's).
* A worker keeps the engines of its last games running between tasks (one ``Series`` per run
  and worker thread), as local workers do; the director's stop closes them on every worker.
* A worker that dies mid-block: Dask gives the task to another worker, which plays its games
  again from the start with the same seats and dice streams; records come back only when the
  whole block is played, so each game is counted once. A task that keeps killing workers ends the run with a clear error (resume later).
* Every record names the machine that played it (``played_on``: host, CPU model, cores).
* The links are mutual TLS where it matters: ``local:N`` with certificates made for the run,
  ``tls://`` with the cluster's (``write_certificates``; Dask's configuration gives them to the
  director); a plain ``tcp://`` scheduler elsewhere is warned of (``plain_link_warning``).
"""
from __future__ import annotations

import functools
import logging
import os
import platform
import queue
import shutil
import socket
import sys
import threading
import time
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Any

import msgspec

from arbiter import say
from arbiter.clock import scale_time_control
from arbiter.hosting import kill_marked

from .jobs import FinishedGame, GameJob, GameLost, Slot, TournamentError, WorkerError, WorkerSetup
from .worker import DB_ENV, RUN_ENV, WORKER_ENV

MISSING = ("the cluster backend needs dask.distributed: .venv/bin/pip install -e '.[cluster]' "
           "(or pip install distributed)")


def _seconds(name: str, default: float) -> float:
    """A positive number of seconds from the environment variable ``name`` (else ``default``)."""
    text = os.environ.get(name)
    try:
        value = default if text is None else float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise SystemExit(f"error: {name}={text!r}: expected a positive number of seconds")
    return value


CONNECT_TIMEOUT = _seconds("ARBITER_CLUSTER_CONNECT_SECONDS", 30)
"""Seconds to reach the scheduler before giving up with a clear message (a scheduler that is
starting may take a while; a wrong address costs this long)."""
TASK_SECONDS = _seconds("ARBITER_CLUSTER_TASK_SECONDS", 4)
"""A task plays about this long (a block of quick games; a slow game goes alone)."""
MAX_BLOCK = 256
"""The most games one task plays."""
MAX_TASK_RATE = 100.0
"""Tasks per second the director aims to stay under (each costs it, and the scheduler, a few
milliseconds of CPU: bench/cluster.md): a big cluster makes its tasks longer than ``TASK_SECONDS``
(3,200 worker threads: 32 s)."""
RECONNECT_WAIT = float(os.environ.get("ARBITER_CLUSTER_WAIT", 60))
"""Seconds the director waits for a scheduler that went away to come back before it stops
(every committed game is kept: ``resume`` continues, on the same or another cluster)."""


def _distributed():
    try:
        import distributed
    except ImportError as exc:  # an optional extra
        raise TournamentError(MISSING) from exc
    return distributed


def _probe(address: str, seconds: float) -> None:
    """Ask what listens at ``address`` before a ``Client`` goes there: the client waits for ever
    for an answer from a service that accepts the connection but does not speak Dask's protocol
    (a web server, say), whatever its timeout. First the TCP connection (tried again while
    refused, for a scheduler still starting, up to ``seconds``), then Dask's ``identity``."""
    import asyncio

    from distributed.comm import connect
    from distributed.comm.addressing import parse_address, parse_host_port

    scheme, location = parse_address(address)
    if scheme != "tcp":  # tls:// and others: their own handshakes; the client alone
        return
    host, port = parse_host_port(location, 8786)

    async def reach() -> None:
        deadline = time.monotonic() + seconds
        while True:
            try:
                left = max(0.1, deadline - time.monotonic())
                _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), left)
                writer.close()
                return
            except ConnectionRefusedError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.25)

    async def identity() -> Any:
        comm = await connect(address, timeout=seconds)
        try:
            await comm.write({"op": "identity"})
            return await comm.read()
        finally:
            comm.abort()

    try:
        asyncio.run(reach())
    except (OSError, TimeoutError, asyncio.TimeoutError) as exc:
        said = str(exc) or f"no connection within {seconds:.0f} s"
        raise TournamentError(f"cannot reach the Dask scheduler at {address}: {said}") from exc
    try:
        reply = asyncio.run(asyncio.wait_for(identity(), seconds))
    except (TimeoutError, asyncio.TimeoutError) as exc:
        raise TournamentError(f"no Dask scheduler answered at {address} within {seconds:.0f} s: something else "
                              f"listens there (a scheduler listens on port 8786 unless told otherwise; "
                              f"ARBITER_CLUSTER_CONNECT_SECONDS waits longer)") from exc
    except Exception as exc:  # noqa: BLE001 - whatever the other end sent, it is not a scheduler's answer
        raise TournamentError(f"what listens at {address} is not a Dask scheduler "
                              f"({type(exc).__name__}: {exc})") from exc
    kind = reply.get("type") if isinstance(reply, dict) else None
    if kind != "Scheduler":
        raise TournamentError(f"what listens at {address} is not a Dask scheduler (it says it is "
                              f"{kind or repr(reply)[:80]}): give --cluster the scheduler's address")


def _security(address: str) -> Any:
    """The client's side of a ``tls://`` scheduler's mutual TLS (``None`` for other schemes): the
    cluster's certificate authority and this director's certificate and key, from Dask's own
    configuration (``distributed.comm.tls``: a Dask config file, or the environment as below), as
    ``dask scheduler --tls-ca-file ...`` and ``dask worker --tls-...`` take them."""
    if not address.startswith("tls://"):
        return None
    security = _distributed().Security()
    settings = (("DASK_DISTRIBUTED__COMM__TLS__CA_FILE", security.tls_ca_file),
                ("DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT", security.tls_client_cert),
                ("DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY", security.tls_client_key))
    missing = [env for env, value in settings[:2] if not value]  # the key may be in the certificate's file
    if missing:
        raise TournamentError(f"--cluster {address}: TLS needs the cluster's certificate authority and this "
                              f"director's certificate and key (Dask's distributed.comm.tls settings); "
                              f"not set: {', '.join(missing)} (and DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY unless "
                              f"the certificate file holds the key)")
    for env, value in settings:
        if value and not str(value).lstrip().startswith("-----BEGIN"):  # a file's name (else its contents)
            try:
                Path(value).read_bytes()
            except OSError as exc:
                raise TournamentError(f"--cluster {address}: cannot read {env} ({value}): "
                                      f"{exc.strerror or exc}") from exc
    return security


CERTIFICATE, KEY = "cluster-ca.pem", "cluster-key.pem"


def write_certificates(folder: Path) -> tuple[Path, Path]:
    """A cluster's TLS credentials in ``folder``: ``cluster-ca.pem``, a self-signed certificate
    that is the cluster's authority and every member's certificate, and ``cluster-key.pem``, its
    private key (mode 600). Every machine of the cluster (scheduler, workers, the director) gets
    both; a connection without them is refused. Made by Dask's own ``Security.temporary`` (RSA
    2048, valid 365 days). Refuses to replace existing files."""
    if folder.exists() and not folder.is_dir():
        raise FileExistsError(f"{folder} is a file, not a folder for the certificate files")
    security = _distributed().Security.temporary()
    folder.mkdir(parents=True, exist_ok=True)
    certificate, key = folder / CERTIFICATE, folder / KEY
    for path in (certificate, key):
        if path.exists():
            raise FileExistsError(f"{path} exists: remove it first, or choose another folder")
    fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(security.tls_client_key)
    certificate.write_text(security.tls_ca_file)
    return certificate, key


def plain_link_warning(address: str) -> str | None:
    """The warning for a scheduler reached in plain TCP on another machine: Dask runs whatever a
    connected client submits and unpickles what it is sent, so anyone on the network who can
    reach that port can run code on every worker and on this director, and hand it made-up
    records to sign. ``None`` for TLS, ``local:N`` (TLS too) and a scheduler on this machine."""
    import ipaddress

    from distributed.comm.addressing import parse_address, parse_host_port

    scheme, location = parse_address(address)
    if scheme != "tcp":
        return None
    host = parse_host_port(location, 8786)[0]
    try:
        if ipaddress.ip_address(socket.gethostbyname(host)).is_loopback:
            return None
    except (OSError, ValueError):
        pass  # not resolvable here: _probe says so
    return (f"the cluster at {address} is reached in plain TCP, without encryption or authentication: "
            f"anyone who can connect to it can run code on its workers and on this director and hand it "
            f"made-up records; use tls:// with certificates (docs/tournaments.md, \"A cluster over TLS\")")


def parse_cluster(text: str) -> str:
    """Check a ``--cluster`` / ``cluster =`` value: ``local:N`` or a scheduler address."""
    text = text.strip()
    if text.startswith("local:"):
        n = text.removeprefix("local:")
        if not n.isdigit() or int(n) < 1:
            raise ValueError(f"local:N needs a number of workers of at least 1, got {text!r}")
        return text
    if "://" not in text and ":" not in text:
        raise ValueError(f"expected local:N or a scheduler address such as tcp://host:8786, got {text!r}")
    return text


# --- what runs on a worker -------------------------------------------------------------------------

_series: dict[tuple[str, int], Any] = {}
"""This worker's open series, by (run id, thread): the engines of its last games."""
_series_lock = threading.Lock()
_busy: set[tuple[str, int]] = set()
"""Series a block is playing with now: only its own thread may close them (ZeroMQ sockets are not
thread-safe: closing them under a game aborts the whole worker process)."""
_closed: set[str] = set()
"""Runs closed on this worker (``close_run``): a block of one still playing stops after its game and
closes its engines, rather than starting them again for games nobody will collect."""


@functools.cache
def machine() -> str:
    """Where a game was played: host, CPU model and cores (recorded in ``played_on``)."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{socket.gethostname()} ({model}, {os.cpu_count()} cores)"


def _local_configs(setup: WorkerSetup, parent_python: str, marker: str) -> list:
    """The engines as this worker runs them: its own Python for the director's, the run's markers."""
    extra_env = {DB_ENV: setup.db_marker, RUN_ENV: setup.run_id, WORKER_ENV: marker}
    configs = []
    for c in setup.engines:
        command = c.command
        if command and command[0] == parent_python:
            command = [sys.executable, *command[1:]]
        configs.append(replace(c, command=command, env={**c.env, **extra_env}))
    return configs + list(configs)  # copies for self-pairs, as the local pool does


def speed_probe(setup: WorkerSetup, seconds: float = 0.3) -> float:
    """This machine's speed as moves per second of random playouts through the event's own rules
    (best of three slices): a proxy for how fast engines run here, as fishtest and OpenBench scale
    time controls by a measured factor. 0.0 when the game cannot say its moves."""
    import random

    from arbiter import games as arbiter_games
    from arbiter.games.base import CHANCE, SIMULTANEOUS

    if setup.game_class is not None:
        arbiter_games.register_game(setup.game, setup.game_class)
    game = arbiter_games.load_game(setup.game, **setup.game_options)
    rng = random.Random(0)
    best = 0.0
    for _ in range(3):
        moves, started, state = 0, time.perf_counter(), game.new_initial_state()
        while (elapsed := time.perf_counter() - started) < seconds / 3:
            for _ in range(50):
                if state.is_terminal():
                    state = game.new_initial_state()
                player = state.current_player()
                if player == CHANCE:
                    state.apply_chance(rng.choice(state.chance_outcomes()))
                elif player == SIMULTANEOUS:
                    choices = {seat: state.legal_moves(seat) for seat in state.acting_seats()}
                    if any(not c for c in choices.values()):
                        return 0.0
                    state.apply_joint({seat: rng.choice(c) for seat, c in choices.items()})
                else:
                    legal = state.legal_moves()
                    if not legal:
                        return 0.0
                    state.apply(rng.choice(legal))
                moves += 1
        best = max(best, moves / elapsed)
    return best


_speed: dict[str, float] = {}
"""This worker's probe result per game (measured once)."""
_speed_lock = threading.Lock()
"""One probe at a time: the threads of a worker start their first blocks at once, and probes run
together shared the interpreter, each measuring a fraction of the speed (up to four times the
time control for the worker's games)."""


def scaled_time_control(setup: WorkerSetup) -> tuple[Any, float]:
    """The time control this worker plays with, and the factor (1.0 when scaling is off): a worker
    half as fast as the director's machine gives twice the time (bounded to 0.25-4)."""
    if setup.speed_reference <= 0:
        return setup.time_control, 1.0
    with _speed_lock:
        if setup.game not in _speed:
            _speed[setup.game] = speed_probe(setup)
        mine = _speed[setup.game]
    if not mine:
        return setup.time_control, 1.0
    factor = round(min(4.0, max(0.25, setup.speed_reference / mine)), 3)
    return scale_time_control(setup.time_control, factor), factor


def check_engines(setup: WorkerSetup, parent_python: str) -> list[str]:
    """Run on every worker before the first game: what stops an engine from starting here."""
    problems = []
    for c in _local_configs(setup, parent_python, "check")[:len(setup.engines)]:
        if not c.command:
            continue
        program = c.command[0]
        if c.cwd and not Path(c.cwd).is_dir():
            problems.append(f"engine {c.name}: folder {c.cwd} does not exist")
            continue
        found = (shutil.which(program, path=os.environ.get("PATH")) if os.sep not in program
                 else program if os.access(Path(c.cwd or ".") / program, os.X_OK) else None)
        if found is None:
            problems.append(f"engine {c.name}: program {program} not found or not executable")
    return problems


def start_engines(setup: WorkerSetup, parent_python: str) -> list[tuple[str, str]]:
    """Run on every worker whose programs and folders are there: start every engine once and shake
    hands with it, as its games will, then stop it (a script or library missing on this machine,
    a relative path from another working directory...). (engine name, fault) for each that cannot."""
    from arbiter import games as arbiter_games
    from arbiter.formats.match import Series

    if setup.game_class is not None:
        arbiter_games.register_game(setup.game, setup.game_class)
    configs = _local_configs(setup, parent_python, "check")[:len(setup.engines)]
    series = Series(arbiter_games.load_game(setup.game, **setup.game_options), configs, setup.time_control,
                    run_dir=setup.run_dir, match_id="worker-check")
    try:
        failures = series.start_all()
    finally:
        series.close()
    return [(configs[i].name, str(fault)) for i, fault in failures]


@functools.cache
def code_digest() -> str:
    """What code this machine plays with: SHA-256 over every file of the packages a game runs
    through (protocol, arbiter, tournaments), their data too: an edition's numbers, a board or a
    map change games as surely as the rules' code. Bytecode caches are left out (they depend on
    the Python and on whether any were written). The director refuses workers whose code differs:
    other rules or another referee would record other games, or fail on the director's tasks."""
    import hashlib

    import arbiter
    import protocol

    from . import __file__ as here

    digest = hashlib.sha256()
    for root in (Path(protocol.__file__).parent, Path(arbiter.__file__).parent, Path(here).parent):
        for path in sorted(root.rglob("*")):
            if not path.is_file() or path.suffix == ".pyc" or "__pycache__" in path.relative_to(root).parts:
                continue
            digest.update(f"{root.name}/{path.relative_to(root).as_posix()}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


_watched: set[str] = set()
"""Runs whose director this worker process watches (``_watch_director``)."""


def _watch_director(setup: WorkerSetup, director: tuple[str, int, float]) -> None:
    """On the director's own machine (``--cluster local:N``, or workers started beside it), end this
    run's engines here as soon as the director is gone (killed with -9 included): its workers
    outlive it for a while, and their engines must not. Elsewhere the director's stop does it."""
    host, pid, started = director
    if host != socket.gethostname() or setup.run_id in _watched:
        return
    _watched.add(setup.run_id)

    def watch() -> None:
        import psutil

        while True:
            try:
                alive = psutil.Process(pid).create_time() == started
            except psutil.Error:
                alive = False
            if not alive:
                close_run(setup.run_id)
                return
            time.sleep(0.25)

    threading.Thread(target=watch, name="director-watch", daemon=True).start()


class Block(msgspec.Struct, frozen=True):
    """What a task sends back (msgpack): its games in the order played, the machine once, and the
    error that ended the block early if one did (the games after it were not played)."""

    host: str
    finished: list[FinishedGame]
    error: WorkerError | None = None


def play_block(setup: WorkerSetup, parent_python: str, jobs: list[GameJob],
               director: tuple[str, int, float] | None = None, code: str | None = None) -> bytes:
    """One task: play ``jobs`` one after another with this worker's engines; the ``Block`` comes
    back as msgpack once all are played (a worker dying mid-block loses the whole task, which
    Dask hands to another worker: every game of it is played again, with the same seats and
    dice, and none was counted). ``director``: (host, pid, start time) of the director, whose
    death ends the run's engines here."""
    if code is not None and code != code_digest():  # a worker that joined during the event
        raise TournamentError(f"worker {socket.gethostname()} (pid {os.getpid()}) runs other code than the director "
                              f"({code_digest()}, the director {code}): install the same version of the project "
                              f"on every machine, then resume")
    if director is not None:
        _watch_director(setup, director)
    from arbiter import games as arbiter_games
    from arbiter.formats.match import Series
    from arbiter.records.store import pack

    key = (setup.run_id, threading.get_ident())
    with _series_lock:
        if setup.run_id in _closed:
            return msgspec.msgpack.encode(Block(machine(), []))
        series = _series.get(key)
    if series is None:
        try:  # a session of its own, as local workers (tournaments.worker): a fair CPU share beside engines
            os.setsid()
        except OSError:
            pass
        if setup.game_class is not None:
            arbiter_games.register_game(setup.game, setup.game_class)
        game = arbiter_games.load_game(setup.game, **setup.game_options)
        marker = f"{setup.run_id}.{socket.gethostname()}.{os.getpid()}.{threading.get_ident()}"
        time_control, factor = scaled_time_control(setup)
        from arbiter.feed import Feed

        feed = Feed(setup.feed) if setup.feed else None  # the web view's feed: only where its socket is (this host)
        series = Series(game, _local_configs(setup, parent_python, marker), time_control, store=None,
                        run_dir=setup.run_dir, margin=setup.margin, seed=setup.master_seed, match_id=setup.tid,
                        adjudication=setup.adjudication, on_event=feed.hook if feed else None)
        series.tc_scale, series.feed = factor, feed
        with _series_lock:
            _series[key] = series
    with _series_lock:
        _busy.add(key)
    host = machine()
    finished: list[FinishedGame] = []
    try:
        for job in jobs:
            if setup.run_id in _closed:  # the director stopped or died: nobody will collect the rest
                break
            seating = list(job.seating)
            try:
                series.retire_idle(max(series.game.num_seats, setup.keep_engines), seating)
                opening = setup.openings[job.opening] if job.opening is not None else None
                record = series.play_game(job.number, seating, job.stream, match_id=job.match_id, opening=opening)
            except Exception:
                return msgspec.msgpack.encode(Block(host, finished, WorkerError(0, job, traceback.format_exc())))
            if series.feed is not None:
                series.feed.finished(record)
            record.played_on = host
            if setup.speed_reference > 0:
                record.tc_scale = series.tc_scale
            finished.append(FinishedGame(0, job, pack(record), tuple(series.running())))
        if series.feed is not None:
            series.feed.flush()  # the block's last end: whether another block comes here is Dask's choice
        return msgspec.msgpack.encode(Block(host, finished))
    finally:
        with _series_lock:
            _busy.discard(key)
            closed = setup.run_id in _closed
            if closed and _series.get(key) is series:
                del _series[key]
        if closed:  # closed while this block played: close_run left this series to it (and its
            try:    # engines started since would outlive the run)
                series.close()
                if series.feed is not None:
                    series.feed.close()
            finally:
                kill_marked(RUN_ENV, setup.run_id)


def close_run(run_id: str) -> int:
    """Run on every worker when the director stops: close this run's engines, then kill whatever
    of the run is left on the machine (engines of a worker that was killed). Returns how many series."""
    with _series_lock:
        _closed.add(run_id)
        mine = [k for k in _series if k[0] == run_id]
        closing = [_series.pop(k) for k in mine if k not in _busy]  # a busy one: its block closes it
        for k in mine:
            _series.pop(k, None)
    try:
        for series in closing:
            series.close()
            if series.feed is not None:
                series.feed.close()
    finally:
        kill_marked(RUN_ENV, run_id)
    return len(closing)


def kill_leftovers(db_marker: str, run_id: str) -> list[int]:
    """Run on every worker at the start: engines an earlier run of the same database left behind."""
    return kill_marked(DB_ENV, db_marker, unless=(RUN_ENV, run_id))


# --- the director's side ---------------------------------------------------------------------------


class DaskBackend:
    """Games as Dask tasks (a ``jobs.Backend``): ``slots`` tasks at a time, at most one per worker
    thread, each a block of games (``play_block``)."""

    def __init__(self, setup: WorkerSetup, slots: int, address: str, *, log=None):
        distributed = _distributed()
        self.log = log or say
        self.restarts = 0
        self.cpu_seconds = 0.0
        self._cluster = None
        # the director says itself what went wrong with the scheduler (one line, what to do next);
        # the client's own reconnect tracebacks (and its batched sender's "comm closed" one, logged
        # at info) would only bury it
        for name in ("distributed.client", "distributed.batched"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
        if setup.remote is not None:
            raise TournamentError("remote participants connect to one listening port: play them without --cluster")
        try:
            if address.startswith("local:"):
                self._cluster = distributed.LocalCluster(  # security: mutual TLS with certificates made for this
                    n_workers=int(address.removeprefix("local:")), threads_per_worker=1, processes=True,  # run
                    dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR, security=True)  # alone
                self.client = distributed.Client(self._cluster, timeout=CONNECT_TIMEOUT)
            else:
                if warning := plain_link_warning(address):
                    say(f"warning: {warning}")  # on stderr, as every warning
                security = _security(address)
                _probe(address, CONNECT_TIMEOUT)
                self.client = distributed.Client(address, timeout=CONNECT_TIMEOUT, security=security)
        except (OSError, TimeoutError) as exc:
            self._close_cluster()
            raise TournamentError(f"cannot reach the Dask scheduler at {address}: {exc}") from exc
        self.address = address
        self.dashboard = self.client.dashboard_link
        self._python = sys.executable
        import psutil

        self._director = (socket.gethostname(), os.getpid(), psutil.Process().create_time())
        try:
            try:
                self.client.wait_for_workers(1, timeout=CONNECT_TIMEOUT)
            except TimeoutError:
                raise TournamentError(f"no worker joined the Dask cluster at {address} within "
                                      f"{CONNECT_TIMEOUT:.0f} s (start some: dask worker {address})") from None
            self._code = code_digest()
            self._check_code(address)
            if setup.speed_reference < 0:  # asked for: the director measures its own machine as the reference
                setup = msgspec.structs.replace(setup, speed_reference=speed_probe(setup) or 0.0)
                speeds = self.client.run(speed_probe, setup)
                self.log("cluster: time controls scaled by speed (moves/s of the rules): here "
                         f"{setup.speed_reference:,.0f}; " + ", ".join(f"{w} {v:,.0f}" for w, v in sorted(speeds.items())))
            self._setup = setup
            self._check(setup)
            self.killed_leftovers = kill_marked(DB_ENV, setup.db_marker, unless=(RUN_ENV, setup.run_id))
            for pids in self.client.run(kill_leftovers, setup.db_marker, setup.run_id).values():
                self.killed_leftovers += [p for p in pids if p not in self.killed_leftovers]
            self._cap = slots
            threads = self._threads()
            self._setup_future = self.client.scatter(setup, broadcast=True)
        except BaseException:
            self.close_client()
            raise
        self._running: dict[int, Any] = {}  # slot -> future
        self._done: queue.Queue = queue.Queue()
        """(slot, future) of every task that ended, put there by the future's done-callback."""
        self._jobs: dict[int, list[GameJob]] = {}
        self._started: dict[int, float] = {}
        self._per_game: float | None = None
        """Seconds per game of the last tasks (an average), which sizes the next blocks."""
        self._block = 1
        self.tasks = self.games = self.largest = 0
        """Tasks that came back, their games, the most games one of them played."""
        """Games per task now (``_adapt``): one until a task has said how long games take."""
        self.per_worker: dict[str, int] = {}
        """Games finished per worker host (the console shows them)."""
        self.log(f"cluster {address}: {len(self.client.nthreads())} worker(s), {threads} thread(s), "
                 f"{min(slots, threads)} game(s) at a time; dashboard {self.dashboard}")

    def _threads(self) -> int:
        """Worker threads of the cluster now (workers may join or leave during the event)."""
        self._counted = time.monotonic()
        workers = self.client.scheduler_info().get("workers")  # none while the scheduler is away
        if workers is not None or not hasattr(self, "_thread_count"):  # away: the last count stands
            self._thread_count = sum(w.get("nthreads", 1) for w in (workers or {}).values())
        return self._thread_count

    def _check_code(self, address: str) -> None:
        """Every worker must run the director's code (``code_digest``); one whose code lacks the
        function is another version too."""
        found = self.client.run(code_digest, on_error="return")
        other = {w: d for w, d in sorted(found.items()) if d != self._code}
        if other:
            said = "; ".join(f"worker {w}: " + (d if isinstance(d, str) else f"cannot tell ({type(d).__name__}: {d})")
                             for w, d in other.items())
            raise TournamentError(f"workers of the Dask cluster at {address} run other code than this director "
                                  f"(source digest {self._code}): {said}; install the same version of the project "
                                  f"on every machine (no game was played)")

    def _check(self, setup: WorkerSetup) -> None:
        found = self.client.run(check_engines, setup, self._python)
        if not found:
            raise TournamentError(f"the Dask cluster at {self.address} has no workers")
        bad = [f"worker {worker}: {problem}" for worker, problems in sorted(found.items()) for problem in problems]
        if not bad:  # every program is there: start each engine once on every worker
            started = self.client.run(start_engines, setup, self._python)
            failing = {name for faults in started.values() for name, _ in faults}
            if failing:  # one that cannot start here either is the runner's pre-flight's business
                here = {name for name, _ in start_engines(setup, self._python)}  # (on_start_failure)
                bad = [f"worker {worker}: engine {name} cannot start there (it starts here): {fault}"
                       for worker, faults in sorted(started.items()) for name, fault in faults if name not in here]
        if bad:
            raise TournamentError("an engine cannot start on the cluster (no game was played):\n  "
                                  + "\n  ".join(bad))

    # --- jobs.Backend ----------------------------------------------------------------------------

    def idle(self) -> list[Slot]:
        if time.monotonic() - self._counted > 2.0:
            self._threads()
        slots = max(1, min(self._cap, self._thread_count))
        return [Slot(i, games=self._block) for i in range(slots) if i not in self._running]

    def submit(self, worker: int, jobs: list[GameJob]) -> None:
        if worker in self._running:
            raise TournamentError(f"slot {worker} is busy with {self._jobs[worker][0].key}; "
                                  f"cannot start {jobs[0].key}")
        if self._setup_future.status != "finished" and self.client.status == "running":
            # every worker that held the setup died (a worker fetches it from another when it first
            # needs it, so it may have been on one): each block would come back cancelled for want
            # of it, to be handed out again against the same lost setup, for ever
            self._setup_future = self.client.scatter(self._setup, broadcast=True, hash=False)
        self._jobs[worker] = jobs
        self._started[worker] = time.monotonic()
        first = jobs[0]
        future = self.client.submit(play_block, self._setup_future, self._python, jobs, self._director, self._code,
                                    pure=False,
                                    key=f"games-{self._setup.run_id}-{first.match_id}-{first.number}-{len(jobs)}-"
                                        f"{time.monotonic_ns()}")
        self._running[worker] = future
        future.add_done_callback(lambda f, slot=worker: self._done.put((slot, f)))

    def _adapt(self, slot: int, games: int) -> None:
        """Size the next blocks from how long this one took: tasks of about ``TASK_SECONDS``, or
        longer on a cluster whose threads would otherwise finish more than ``MAX_TASK_RATE``
        tasks a second (so the per-task cost of Dask and of the director is shared by many quick
        games, while a slow game still goes alone), at most ``MAX_BLOCK`` games."""
        per_game = (time.monotonic() - self._started.pop(slot)) / max(1, games)
        if self._per_game is None or per_game < self._per_game:  # quicker: at once (the first games
            self._per_game = per_game                            # of a worker start its engines)
        else:
            self._per_game = 0.7 * self._per_game + 0.3 * per_game
        target = max(TASK_SECONDS, min(self._cap, self._thread_count) / MAX_TASK_RATE)
        self._block = max(1, min(MAX_BLOCK, int(target / max(self._per_game, 1e-4))))

    def wait(self, timeout: float) -> list[FinishedGame | WorkerError | GameLost]:
        """Finished tasks arrive through their done-callbacks (the client's thread) in a queue: no
        polling, and nothing done per running game while waiting. A block's games come out one
        by one, as from any backend."""
        distributed = _distributed()
        try:
            arrived = [self._done.get(timeout=timeout)]
        except queue.Empty:
            return []
        while True:
            try:
                arrived.append(self._done.get_nowait())
            except queue.Empty:
                break
        out: list[FinishedGame | WorkerError | GameLost] = []
        for slot, future in arrived:
            if self._running.get(slot) is not future:  # cancelled by stop()
                continue
            jobs = self._jobs.pop(slot)
            del self._running[slot]
            if future.status in ("cancelled", "lost", "pending"):  # not finished, or its result gone with a
                # worker that died after it finished (Dask would compute it again): handed out again
                self._started.pop(slot, None)
                out.extend(GameLost(slot, job) for job in jobs)
                continue
            if future.status == "finished":
                try:
                    data = future.result(timeout=CONNECT_TIMEOUT)
                except Exception:  # noqa: BLE001 - the scheduler went away before the records were fetched:
                    self._started.pop(slot, None)
                    out.extend(GameLost(slot, job) for job in jobs)  # played again (never counted)
                    continue
                block = msgspec.msgpack.decode(data, type=Block)
                self._adapt(slot, len(jobs))
                self.tasks += 1
                self.games += len(block.finished)
                self.largest = max(self.largest, len(block.finished))
                self.per_worker[block.host] = self.per_worker.get(block.host, 0) + len(block.finished)
                out.extend(msgspec.structs.replace(f, worker=slot) for f in block.finished)
                if block.error is not None:
                    out.append(msgspec.structs.replace(block.error, worker=slot))
                out.extend(GameLost(slot, job) for job in jobs[len(block.finished) + (block.error is not None):])
                continue
            self._started.pop(slot, None)
            exc = future.exception()
            if isinstance(exc, TournamentError):  # said by play_block itself (a worker of other code)
                raise TournamentError(str(exc))
            if isinstance(exc, distributed.KilledWorker):
                raise TournamentError(f"{jobs[0].match_id} game {jobs[0].number} (a task of {len(jobs)} game(s)) "
                                      f"killed every worker that tried it ({exc}); fix the cause, then resume")
            text = "".join(traceback.format_exception(type(exc), exc, future.traceback()))
            out.append(WorkerError(slot, jobs[0], text))
            out.extend(GameLost(slot, job) for job in jobs[1:])
        if any(isinstance(o, GameLost) for o in out):
            self._await_scheduler()
        return out

    def _await_scheduler(self) -> None:
        """Games were cancelled: if the scheduler went away, wait a while for it to come back."""
        if self.client.status == "running":
            return
        self.log(f"cluster: lost the Dask scheduler at {self.address}; waiting up to {RECONNECT_WAIT:.0f} s for it "
                 f"(the games it had are played again)")
        deadline = time.monotonic() + RECONNECT_WAIT
        while time.monotonic() < deadline:
            time.sleep(0.5)
            if self.client.status == "running" and self.client.nthreads():
                self.log("cluster: the scheduler is back")
                self._setup_future = self.client.scatter(self._setup, broadcast=True)
                return
        if self.client.status == "running":  # workers lose their scheduler and stop: they must be started again
            raise TournamentError(f"the Dask scheduler at {self.address} went away and came back, but no worker "
                                  f"joined it within {RECONNECT_WAIT:.0f} s; every finished game is saved: start "
                                  f"the workers again, then resume")
        raise TournamentError(f"the Dask scheduler at {self.address} went away and did not come back within "
                              f"{RECONNECT_WAIT:.0f} s; every finished game is saved: start the cluster again, "
                              f"then resume")

    def stop(self, graceful: bool) -> None:
        if self.tasks:
            self.log(f"cluster: {self.games} game(s) in {self.tasks} task(s), up to {self.largest} per task")
        for future in self._running.values():
            future.cancel()
        self._running.clear()
        self._jobs.clear()
        try:
            if self.client.status != "running":
                raise ConnectionError("the scheduler is gone")
            self.client.run(close_run, self._setup.run_id)
        except Exception as exc:  # a worker gone or a scheduler away: the engines die with the worker
            self.log(f"cluster: could not close every worker's engines ({exc})")
        self.close_client()

    def close_client(self) -> None:
        try:
            self.client.close()
        finally:
            self._close_cluster()

    def _close_cluster(self) -> None:
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None


def backend_for(address: str, log=None):
    """The runner's ``backend`` argument for a cluster address."""
    _distributed()  # fail early, before the tournament starts, when it is not installed
    return lambda setup, slots: DaskBackend(setup, slots, address, log=log)
