"""An engine's process tree: spawn it, confine it, watch it, kill all of it.

One implementation for every place that starts engines (matches, tournament workers). An engine
runs in its own process group and session with a private token in its environment, and gets
SIGKILL from the kernel if the referee dies (``PR_SET_PDEATHSIG``). By default it also runs in a
sandbox (``sandbox.py``: namespaces, its own uid, a control group with limits) with a clean
environment. ``kill`` kills the sandbox, the tree, the group, and every process still carrying the
token, so even an engine that double-forks and calls setsid leaves nothing behind (without a sandbox
or a control group, a child that also execs with an empty environment escapes: SECURITY.md). Its
stdout/stderr go through a pipe the referee drains into a log capped at ``Limits.log_mb``.
"""
from __future__ import annotations

import errno
import functools
import itertools
import math
import os
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import time
import threading
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from .guardian import ensure_guardian, guard_marker, release_marker
from .sandbox import (ControlGroup, SandboxMode, SandboxUnavailable, bwrap_argv, keyring_filter_fd,
                      next_engine_uid, reachable_in_sandbox, support, warn_once)

TOKEN_ENV = "ARBITER_ENGINE_TOKEN"
"""Environment variable carrying a per-engine token, so stray descendants can be found."""
PASS_ENV = ("PATH", "LANG", "LC_ALL", "TZ")
"""The only variables of the referee's environment an engine inherits, unless the operator
names more in ``ARBITER_PASS_ENV`` (comma-separated) or in the engine's ``env``."""


@dataclass(frozen=True)
class Limits:
    """What one engine may use; each breach has its own forfeit reason or documented effect."""

    memory_mb: int = 4096
    """Memory of the whole tree (control group; address space per process where there is none).
    Exceeding it forfeits with reason ``memory``."""
    processes: int = 256
    """Processes and threads of the whole tree (control group ``pids``); fork fails beyond it."""
    open_files: int = 1024
    """Open files per process (RLIMIT_NOFILE)."""
    log_mb: float = 10.0
    """The engine's stdout/stderr log is cut here, with a marker; the rest is read and dropped."""
    log_total_mb: float = 100.0
    """All of an engine's logs in one log folder (a match's, a tournament's) together: an engine
    restarted every game (``restart``, or after each crash) starts a new log each time; past this
    the later ones keep only a marker."""
    info_chars: int = 2000
    """Longer ``info.pv``/``info.comment`` texts are truncated in records (marked as truncated)."""
    disk_mb: int = 1024
    """In the sandbox every writable folder (its work folder, ``/tmp``...) is a file system in
    memory of at most this size, charged to the engine's memory: it cannot fill the referee's disk."""

    def check(self) -> None:
        """Raise ``ValueError`` naming an impossible value."""
        if self.memory_mb < 64:
            raise ValueError(f"memory_mb = {self.memory_mb}: an engine needs at least 64 MB")
        for name in ("processes", "open_files", "info_chars", "disk_mb"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} = {getattr(self, name)}: must be at least 1")
        if self.open_files < 16:
            raise ValueError(f"open_files = {self.open_files}: an engine needs at least 16")
        for name in ("log_mb", "log_total_mb"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} = {getattr(self, name)}: must not be negative")

    @classmethod
    def from_mapping(cls, values: dict[str, object], base: "Limits | None" = None) -> "Limits":
        """Limits from ``{key: value}`` (a TOML table, ``--limit KEY=VALUE``); ``ValueError``
        naming the key for an unknown key, a wrong type or an impossible value."""
        import dataclasses

        fields = {f.name: f for f in dataclasses.fields(cls)}
        changes = {}
        for key, value in values.items():
            if key not in fields:
                raise ValueError(f"unknown limit {key!r}; known: {', '.join(fields)}")
            kind = float if key in ("log_mb", "log_total_mb") else int
            if isinstance(value, str):
                try:
                    value = kind(value)
                except ValueError:
                    raise ValueError(f"limit {key} = {value!r}: expected a number") from None
            if isinstance(value, float) and not math.isfinite(value):  # TOML's inf and nan, --limit log_mb=nan
                raise ValueError(f"limit {key} = {values[key]!r}: expected a finite number")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and value != int(value)):
                raise ValueError(f"limit {key} = {value!r}: expected {'a number' if kind is float else 'a whole number'}")
            changes[key] = kind(value)
        limits = dataclasses.replace(base or cls(), **changes)
        limits.check()
        return limits


@functools.cache
def own_python_paths() -> list[Path]:
    """What an engine run by the referee's own Python (``{python}``) imports from: this Python's
    path and this project's folder (sample engines live there; an editable install points at
    it). Shown again in the sandbox when they lie in a folder it replaces (a checkout in /tmp)."""
    here = Path(__file__).resolve().parents[2]  # the folder holding arbiter/, protocol/, sample_engines/
    return [here, *(Path(p).resolve() for p in sys.path if p and os.path.isdir(p))]


def parse_cpus(value: object) -> tuple[int, ...] | None:
    """CPU cores to pin an engine to, from ``"1"``, ``"0,2-3"`` or ``[0, 2, 3]`` (None: no
    pinning); ``ValueError`` naming the value when it is malformed or names a core this
    process may not use. Pinning keeps engines apart (fastchess's ``-use-affinity``); it is
    not a limit an engine cannot lift (freezing is what stops off-turn use)."""
    if value is None or value == "" or value == []:
        return None
    ranges: list[tuple[int, int]] = []  # (first, last) core: "0-99999999999" is not made a list of cores
    try:
        if isinstance(value, str):
            for part in value.split(","):
                lo, dash, hi = part.strip().partition("-")
                ranges.append((int(lo), int(hi) if dash else int(lo)))
        elif isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            ranges = [(v, v) for v in value]
        else:
            raise ValueError
    except ValueError:
        raise ValueError(f"cpus = {value!r}: expected core numbers like \"1\", \"0,2-3\" or [0, 2]") from None
    if backwards := next(((lo, hi) for lo, hi in ranges if hi < lo), None):
        lo, hi = backwards
        raise ValueError(f"cpus = {value!r}: range {lo}-{hi} runs backwards (write {hi}-{lo})")
    usable = _unpinned or os.sched_getaffinity(0)
    cores = {c for c in usable for lo, hi in ranges if lo <= c <= hi}
    bad: set[int] = set()
    for lo, hi in ranges:  # at most len(usable) of a range are usable: the first few that are not
        bad.update(c for c in itertools.islice(range(lo, hi + 1), len(usable) + 3) if c not in usable)
    if bad:
        shown = sorted(bad)[:3]
        more = ", ..." if len(bad) > 3 or any(hi - lo + 1 > len(usable) + 3 for lo, hi in ranges) else ""
        raise ValueError(f"cpus = {value!r}: core(s) {', '.join(map(str, shown))}{more} not available here "
                         f"(usable: {', '.join(map(str, sorted(usable)))})")
    return tuple(sorted(cores))


_unpinned: set[int] | None = None
"""The cores this process could use before ``pin_process``: an engine may still be given any of them."""


def pin_process(cores: tuple[int, ...]) -> None:
    """Run this whole process on ``cores``: every thread it has now (the referee, ZeroMQ's I/O
    threads) and, as they inherit it, every thread and engine it starts later (an engine's own
    ``cpus`` still win). Why: a match whose engines take turns needs one core, and keeping the
    referee, its I/O thread and the engine it wakes on one core spares every message a wake-up of
    another CPU, which on a virtual machine costs more than the message (bench/anchors.md).
    ``OSError`` where the system cannot pin."""
    global _unpinned
    if not hasattr(os, "sched_setaffinity"):
        raise OSError("pinning to cores needs Linux")
    _unpinned = _unpinned or os.sched_getaffinity(0)
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cores)
        except ProcessLookupError:
            pass  # a thread that has just ended


@dataclass
class EngineConfig:
    """How to start (or reach) one engine."""

    command: str | list[str] | None
    name: str | None = None
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    endpoint: str | None = None
    """Where to bind for this engine; default: a fresh ipc:// path. ``tcp://*:PORT`` for remote."""
    handshake_timeout: float = 10.0
    ready_timeout: float = 10.0
    restart_each_game: bool = False
    sandbox: SandboxMode = SandboxMode.AUTO
    network: bool = False
    """Inside the sandbox: keep the machine's network (default: none at all)."""
    limits: Limits = field(default_factory=Limits)
    ponder: bool = False
    """False: the engine's whole tree is frozen while it is not asked to decide."""
    cpus: tuple[int, ...] | None = None
    """Pin the engine to these CPU cores (disjoint sets per engine keep engines apart)."""
    hide: tuple[str, ...] = ()
    """Folders the engine must not see (the referee adds its results and logs folders)."""
    options: dict = field(default_factory=dict)
    """Values for options the engine declares in its hello (``EngineOption``), checked at the
    handshake and sent in every ``new_game``."""
    participant: str | None = None
    """A remote participant of the roster (``arbiter.hosting.remote``): reached through the hub
    listening on ``endpoint``, authenticated by its CURVE key."""

    @property
    def remote(self) -> bool:
        """No command: the referee binds ``endpoint`` and waits for the engine to connect."""
        return not self.command

    def argv(self, endpoint: str) -> list[str]:
        parts = shlex.split(self.command) if isinstance(self.command, str) else list(self.command)
        return [p.replace("{endpoint}", endpoint) for p in parts]


def engine_environment(config: EngineConfig, protocol_env: dict[str, str]) -> dict[str, str]:
    """A clean environment: a few harmless variables, what the operator names, the protocol's own."""
    names = list(PASS_ENV) + [n.strip() for n in os.environ.get("ARBITER_PASS_ENV", "").split(",") if n.strip()]
    env = {n: os.environ[n] for n in names if n in os.environ}
    return {**env, **config.env, **protocol_env}


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PROC_CHILDREN = os.path.exists(f"/proc/self/task/{threading.get_native_id()}/children")


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants, read from /proc's per-thread lists of children (Linux); psutil's
    recursive children where those lists are missing."""
    if not _PROC_CHILDREN:
        return _psutil_tree(pid)
    found: dict[int, None] = {}  # ordered, and a pid seen twice (reused while the tree was read) is walked once
    todo = [pid]
    while todo:
        parent = todo.pop()
        if parent in found:
            continue
        found[parent] = None
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children", "rb") as f:
                    todo.extend(map(int, f.read().split()))
            except (OSError, ValueError):
                pass
    return list(found)


def _psutil_tree(pid: int) -> list[int]:
    try:
        root = psutil.Process(pid)
        return [pid, *(p.pid for p in root.children(recursive=True))]
    except (psutil.Error, OSError):
        return [pid]


def _refuse_hidden_program(config: EngineConfig, argv: list[str], program: str) -> None:
    """An engine whose program, or a file its command names (a script, a weights file), lies in a
    folder the sandbox hides (the results database's folder, say, when the database sits in the
    folder holding the engines or their Python) could only fail inside, with bubblewrap's
    "execvp: No such file or directory" or the script's own "cannot open file": say what to move
    instead. ``FileNotFoundError``."""
    hidden = [Path(h).resolve() for h in config.hide]
    if not hidden:
        return
    cwd = Path(config.cwd or os.getcwd())
    named = [("program", Path(os.path.abspath(program))), ("program", Path(os.path.realpath(program)))]
    named += [("file", (cwd / arg).resolve()) for arg in argv[1:] if arg and not arg.startswith("-")
              and os.path.exists(cwd / arg)]
    for what, path in named:
        for folder in hidden:
            if path == folder or path.is_relative_to(folder):
                raise FileNotFoundError(
                    f"its {what} {path} is inside {folder}, which the sandbox hides from engines (the results "
                    f"database's folder, the engines' logs, seed and key files): keep the results in a folder of "
                    f"their own, away from the engines (a tournament's output = \"results/event.sqlite\")")


class EngineProcess:
    """One spawned engine and everything it starts."""

    def __init__(self, config: EngineConfig, argv: list[str], *, env: dict[str, str], token: str, log_path: Path,
                 work_dir: Path, endpoint_dir: Path | None = None):
        """Start the process now (sandboxed as ``config.sandbox`` says); ``OSError`` if it cannot
        be started, ``SandboxUnavailable`` if the sandbox is required and missing."""
        self.token = token
        self.limits = config.limits
        self.cgroup: ControlGroup | None = None
        self.sandboxed = False
        self.uid: int | None = None
        self._frozen = False
        self._stopped: list[int] = []
        """Without a control group: the processes ``freeze`` stopped (the ones to continue)."""
        if not argv or (shutil.which(argv[0], path=env.get("PATH")) is None and not os.access(
                os.path.join(config.cwd or "", argv[0]), os.X_OK)):
            raise FileNotFoundError(f"no such program: {argv[0] if argv else '(empty command)'!r}")
        mode = SandboxMode(config.sandbox)
        s = support()
        log_path.parent.mkdir(parents=True, exist_ok=True)
        if mode != SandboxMode.NONE and not s.sandbox:
            if mode == SandboxMode.REQUIRED:
                raise SandboxUnavailable(f"engine {config.name or argv[0]!r} requires a sandbox: {s.problem}")
            warn_once(f"engines run WITHOUT a sandbox: {s.problem}")
        ensure_guardian()  # kills the engine's processes should the referee be killed mid-start
        if s.cgroup and mode != SandboxMode.NONE:
            try:
                self.cgroup = ControlGroup(s.cgroup, config.limits.memory_mb, config.limits.processes)
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE):
                    raise  # short of files now: the engine is not started rather than started unconfined
                warn_once(f"no control group for engines ({exc}): memory falls back to an address-space limit")
        seccomp_fd: int | None = None
        try:  # from here on, a failure must not leave the control group behind
            if mode != SandboxMode.NONE and s.sandbox:
                self.sandboxed = True
                program = shutil.which(argv[0], path=env.get("PATH")) or argv[0]
                _refuse_hidden_program(config, argv, program)
                real = os.path.realpath(program)
                needed = (program, real, str(work_dir.parent),  # where its socket and home are
                          *((config.cwd,) if config.cwd else ()))
                visible = [Path(config.cwd or os.getcwd()).resolve(), Path(program).parent, Path(program).parent.parent,
                           Path(real).parent, Path(real).parent.parent]
                if real == os.path.realpath(sys.executable):
                    visible += own_python_paths()
                hidden = [Path(h).resolve() for h in config.hide]
                if s.root and reachable_in_sandbox(needed, tuple(visible), tuple(hidden)):
                    self.uid = next_engine_uid()
                    for path in filter(None, (work_dir, endpoint_dir)):
                        os.chown(path, self.uid, self.uid)
                        for child in path.iterdir():
                            os.chown(child, self.uid, self.uid)
                elif s.root:
                    warn_once(f"engines run as root without capabilities in their namespaces, not under a uid of "
                              f"their own: {' or '.join(needed[:2])} or its folder is not reachable by other users "
                              f"(a folder of mode 0700 on the way); the referee's folders are hidden from them")
                seccomp_fd = keyring_filter_fd()
                argv = bwrap_argv(argv, work_dir=work_dir, endpoint_dir=endpoint_dir, cwd=config.cwd, hide=hidden,
                                  network=config.network, uid=self.uid, visible=visible,
                                  disk_mb=config.limits.disk_mb, cgroup=self.cgroup, seccomp_fd=seccomp_fd)
            self.log = LogPump(log_path, int(config.limits.log_mb * 1024 * 1024),
                               int(config.limits.log_total_mb * 1024 * 1024))
            cwd = None if self.sandboxed else config.cwd
            join_fds = self.cgroup.join_fds() if self.cgroup is not None else []
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            nofile = config.limits.open_files if hard == resource.RLIM_INFINITY else min(config.limits.open_files, hard)
            # (an unprivileged child cannot raise its hard limit: a referee run under a lower one gives what it has)
            address_space = None if self.cgroup is not None else config.limits.memory_mb * 1024 * 1024
            cpus = config.cpus
            referee = os.getpid()
            if self.cgroup is None:  # known by its marker, which its forks and sessions carry too
                guard_marker(f"{TOKEN_ENV}={token}")

            def in_child() -> None:
                """Before exec (async-signal-safe steps only): die with the referee, join the control
                group, set the rlimits (address space only where no control group bounds memory)."""
                if _prctl is not None:
                    _prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: even a kill -9'd referee takes us along
                    if os.getppid() != referee:  # ... unless it died before that line: then go now
                        os._exit(1)
                for fd in join_fds:
                    os.write(fd, b"0")
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
                if address_space is not None:
                    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
                if cpus:
                    os.sched_setaffinity(0, cpus)

            try:
                self.popen = subprocess.Popen(argv, cwd=cwd, env={**env, TOKEN_ENV: token}, stdin=subprocess.DEVNULL,
                                              stdout=self.log.write_end, stderr=subprocess.STDOUT, start_new_session=True,
                                              preexec_fn=in_child, close_fds=True,
                                              pass_fds=() if seccomp_fd is None else (seccomp_fd,))
            except BaseException:
                self.log.close_write_end()
                self.log.stop()
                raise
            finally:
                for fd in join_fds:
                    os.close(fd)
                if seccomp_fd is not None:
                    os.close(seccomp_fd)
                    seccomp_fd = None
            self.log.close_write_end()
            self.log.start()
        except BaseException:
            if seccomp_fd is not None:  # made, but the start failed before it was handed over
                os.close(seccomp_fd)
            if self.cgroup is not None:
                self.cgroup.remove()
            raise

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def exit_code(self) -> int | None:
        """None while the engine's main process runs."""
        return self.popen.poll()

    def memory_exceeded(self) -> bool:
        return self.cgroup is not None and self.cgroup.memory_exceeded()

    def cpu_seconds(self) -> float | None:
        """CPU time the whole tree used so far (None where it cannot be measured)."""
        if self.cgroup is not None:
            return self.cgroup.cpu_seconds()
        total = None
        for pid in process_tree(self.popen.pid):
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    stat = f.read()
                fields = stat[stat.rindex(b")") + 2:].split()  # from the 3rd field on: utime, stime are 14, 15
                total = (total or 0) + int(fields[11]) + int(fields[12])
            except (OSError, ValueError, IndexError):
                continue
        return None if total is None else total / _CLOCK_TICKS

    def freeze(self, frozen: bool) -> None:
        """Stop (or resume) every process of the engine: through its control group, else SIGSTOP/SIGCONT
        to the whole tree (found from /proc: a few reads, where psutil's tree scans every process
        on the machine, ~2 ms a move). Never raises."""
        if frozen == self._frozen:
            return
        self._frozen = frozen
        try:
            if self.cgroup is not None:
                self.cgroup.freeze(frozen)
                return
        except OSError:
            return
        if frozen:
            self._stopped = process_tree(self.popen.pid)
        for pid in self._stopped:  # thawed: exactly those stopped (a stopped process cannot exit or fork)
            try:
                os.kill(pid, signal.SIGSTOP if frozen else signal.SIGCONT)
            except OSError:
                pass
        if not frozen:
            self._stopped = []

    @property
    def frozen(self) -> bool:
        """Stopped by ``freeze`` (and not resumed since)."""
        return self._frozen

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the main process to exit; True if it did."""
        try:
            self.popen.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False

    def kill_group_now(self) -> None:
        """SIGKILL the engine's process group without waiting (emergency exits, signal handlers).
        In a sandbox the group's leader is the namespace's first process: its death ends them all."""
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except OSError:
            pass

    def kill(self) -> None:
        """Kill the whole tree and reap the main process. Never raises."""
        self.freeze(False)
        kill_engine_processes(self.popen.pid, self.token)
        self.wait(2)
        if self.cgroup is None:
            release_marker(f"{TOKEN_ENV}={self.token}")
        if self.cgroup is not None and not self.cgroup.removed:  # a second kill (stop twice) counts nothing twice
            global _stopped_engines_cpu
            used = self.cgroup.cpu_seconds()  # read first: the read lets other lanes run, and add theirs
            with _stopped_engines_lock:
                _stopped_engines_cpu = (_stopped_engines_cpu or 0.0) + used
            self.cgroup.remove()
        self.log.stop()


_stopped_engines_cpu: float | None = None
"""CPU seconds of every engine this process started with a control group and has stopped (the
groups count everything an engine ran, however it ended); None while there was none."""
_stopped_engines_lock = threading.Lock()


def stopped_engines_cpu() -> float | None:
    """CPU seconds the engines this process stopped used, by their control groups: what the
    operating system's accounting of children misses for a sandboxed engine killed at its end
    (its processes are reaped in their namespace, not by the referee)."""
    return _stopped_engines_cpu


def _closed(file) -> None:
    """Close ``file`` (if any), ignoring the error a full disk may raise once more."""
    try:
        if file is not None:
            file.close()
    except OSError:
        pass


_log_totals: dict[tuple[str, str], int] = {}
"""(log folder, ``engine-NAME-``) -> bytes this process knows that engine's logs there hold."""
_log_totals_lock = threading.Lock()


def _log_room(path: Path, total: int) -> int:
    """Bytes the logs of ``path``'s engine (``engine-NAME-XXXXXX.log``) may still take in its
    folder, out of ``total``: the folder is read once per process, then its pumps keep count."""
    prefix = path.name[:-len("-000000.log")] + "-"
    key = (str(path.parent), prefix)
    with _log_totals_lock:
        if key not in _log_totals:
            used = 0
            try:
                with os.scandir(path.parent) as entries:
                    for entry in entries:
                        if entry.name.startswith(prefix) and len(entry.name) == len(path.name) \
                                and entry.name.endswith(".log"):
                            used += entry.stat().st_size
            except OSError:
                pass
            _log_totals[key] = used
        return max(0, total - _log_totals[key])


def _log_written(path: Path, size: int) -> None:
    key = (str(path.parent), path.name[:-len("-000000.log")] + "-")
    with _log_totals_lock:
        _log_totals[key] = _log_totals.get(key, 0) + size


class LogPump:
    """Drains an engine's stdout/stderr into its log file, keeping at most ``cap`` bytes (and, with
    ``total``, at most that much for all of the engine's logs in the folder, an engine restarted
    every game starting a new one each time): an engine that writes without end fills neither the
    disk nor its pipe (it never blocks). When the log cannot be written (a full disk, a file-size
    limit) the pump goes on draining and drops the rest: the referee's disk is never the engine's loss."""

    def __init__(self, path: Path, cap: int, total: int | None = None):
        self.path, self.cap, self.total = path, cap, total
        read_fd, self.write_end = os.pipe()
        self._read = os.fdopen(read_fd, "rb", buffering=0)
        self.dropped = 0
        """Bytes read and not written (past the cap, or the log unwritable)."""
        self._thread = threading.Thread(target=self._run, name=f"log-{path.name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close_write_end(self) -> None:
        if self.write_end >= 0:
            os.close(self.write_end)
            self.write_end = -1

    def _run(self) -> None:
        try:
            log = open(self.path, "ab", buffering=0)
        except OSError:
            log = None
        room = self.cap
        if self.total is not None:
            room = min(room, _log_room(self.path, self.total))
        cut = f"\n[arbiter: log cut at {self.cap} bytes; the rest is dropped]\n" if room == self.cap else \
            f"\n[arbiter: this engine's logs here reached log_total_mb ({self.total} bytes); the rest is dropped]\n"
        try:
            while True:
                try:
                    chunk = self._read.read(65536)
                except (OSError, ValueError):
                    break
                if not chunk:
                    break
                if log is not None and cut:
                    try:
                        written = log.write(chunk[:room]) if room > 0 else 0
                        room -= written
                        chunk = chunk[written:]
                        if self.total is not None:
                            _log_written(self.path, written)
                        if room <= 0:
                            log.write(cut.encode())
                            cut = ""
                    except OSError:  # nowhere to write: drain on, dropping
                        log = _closed(log)
                self.dropped += len(chunk)
        finally:
            _closed(log)
            _closed(self._read)

    def stop(self) -> None:
        """Wait briefly for the engine's last words. The reading thread closes the pipe itself when
        it ends: closed from here while it still reads, the descriptor's number would be free for
        another thread's next file (ZeroMQ's signal of a new socket, in a worker playing games in
        threads) and the pending read would take from that."""
        if self._thread.is_alive():
            self._thread.join(1.0)
        elif self._thread.ident is None:  # never started (the engine could not be spawned)
            self._read.close()


def _load_prctl():
    """libc's prctl, resolved once here: the child must not load libraries between fork and exec."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        return ctypes.CDLL("libc.so.6", use_errno=True).prctl
    except OSError:
        return None


_prctl = _load_prctl()


def kill_engine_processes(pid: int, token: str) -> list[int]:
    """SIGKILL a process, its descendants, its process group and anything carrying ``token``."""
    victims: dict[int, psutil.Process] = {}
    try:
        root = psutil.Process(pid)
        victims[pid] = root
        for child in root.children(recursive=True):
            victims[child.pid] = child
    except (psutil.Error, OSError):  # gone, or no descriptor left to read /proc with (EMFILE)
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.killpg(pid, signal.SIGKILL)  # the engine leads its own group (start_new_session)
    except OSError:
        pass
    for proc in _processes_whose_environment(lambda env: env.get(TOKEN_ENV) == token, skip=victims):
        victims[proc.pid] = proc
    _kill_and_reap(victims.values())
    return sorted(victims)


def kill_marked(var: str, value: str, *, unless: tuple[str, str] | None = None) -> list[int]:
    """SIGKILL every process (but this one) whose environment has ``var=value``, except those
    that also have ``unless = (var2, value2)``. Tournaments mark every engine of a run this way,
    so a worker (or a later run) can find engines whatever they did to their process tree."""
    def marked(env: dict[str, str]) -> bool:
        return env.get(var) == value and not (unless is not None and env.get(unless[0]) == unless[1])

    return [p.pid for p in _kill_and_reap(_processes_whose_environment(marked))]


def _processes_whose_environment(matches, skip=()) -> list[psutil.Process]:
    """Every process but this one (and those in ``skip``) whose environment ``matches``; the
    environment is what an engine cannot shed by forking, setsid or re-parenting."""
    found = []
    try:
        processes = list(psutil.process_iter())
    except OSError:  # no descriptor left to list /proc with: the process group and tree were killed
        return found
    for proc in processes:
        if proc.pid in skip or proc.pid == os.getpid():
            continue
        try:
            if matches(proc.environ()):
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found


def _kill_and_reap(victims) -> list[psutil.Process]:
    """SIGKILL each process and wait (2 s at most) for them to go; returns those the signal reached."""
    victims = list(victims)
    killed = []
    for proc in victims:
        try:
            proc.kill()
            killed.append(proc)
        except psutil.NoSuchProcess:
            pass
        except (psutil.Error, OSError):  # e.g. no descriptor left to check its identity with: kill by pid
            try:
                os.kill(proc.pid, signal.SIGKILL)
                killed.append(proc)
            except OSError:
                pass
    _wait_dead(killed, timeout=2)
    return killed


def _wait_dead(procs: list[psutil.Process], timeout: float) -> None:
    """Wait until each process has died: gone, or a zombie. A killed sandbox's inner processes are
    orphans that only the machine's init can reap (psutil's ``wait_procs`` waits for that): under
    an init that reaps lazily (a container's or a VM's agent) every kill of an engine took 1-2 s,
    which a forfeit, a restart or Ctrl-C spent waiting. A zombie runs nothing and holds nothing
    but its pid; our own child among them is reaped by ``EngineProcess.wait``."""
    deadline = time.monotonic() + timeout
    while procs:
        still = []
        for proc in procs:
            try:
                if proc.status() != psutil.STATUS_ZOMBIE:
                    still.append(proc)
            except (psutil.Error, OSError):  # gone (or unreadable: nothing left to wait for)
                pass
        procs = still
        if not procs or time.monotonic() >= deadline:
            return
        time.sleep(0.002)
