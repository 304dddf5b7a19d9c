"""An engine's process tree: spawn it, watch it, kill all of it.

One implementation for every place that starts engines (matches, tournament workers). An engine
runs in its own process group and session with a private token in its environment, and gets
SIGKILL from the kernel if the referee dies (``PR_SET_PDEATHSIG``). ``kill`` kills the tree, the
group, and every process still carrying the token, so even an engine that double-forks and
calls setsid leaves nothing behind. The sandbox and resource limits of local engines belong here.
"""
from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import psutil

TOKEN_ENV = "ARBITER_ENGINE_TOKEN"
"""Environment variable carrying a per-engine token, so stray descendants can be found."""


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

    @property
    def remote(self) -> bool:
        """No command: the referee binds ``endpoint`` and waits for the engine to connect."""
        return not self.command

    def argv(self, endpoint: str) -> list[str]:
        parts = shlex.split(self.command) if isinstance(self.command, str) else list(self.command)
        return [p.replace("{endpoint}", endpoint) for p in parts]


class EngineProcess:
    """One spawned engine and everything it starts."""

    def __init__(self, argv: list[str], *, env: dict[str, str], token: str, log_path: Path,
                 cwd: str | None = None):
        """Start the process now; ``OSError`` if it cannot be started."""
        self.token = token
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as log:
            self.popen = subprocess.Popen(argv, cwd=cwd, env={**env, TOKEN_ENV: token}, stdin=subprocess.DEVNULL,
                                          stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                          preexec_fn=_die_with_parent)

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def exit_code(self) -> int | None:
        """None while the engine's main process runs."""
        return self.popen.poll()

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the main process to exit; True if it did."""
        try:
            self.popen.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False

    def kill_group_now(self) -> None:
        """SIGKILL the engine's process group without waiting (emergency exits, signal handlers)."""
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except OSError:
            pass

    def kill(self) -> None:
        """Kill the whole tree and reap the main process. Never raises."""
        kill_engine_processes(self.popen.pid, self.token)
        self.wait(2)


def _die_with_parent() -> None:
    """In the child before exec: on Linux, get SIGKILL when the referee dies (even by kill -9),
    so an engine never outlives a crashed referee."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except OSError:
            pass


def kill_engine_processes(pid: int, token: str) -> list[int]:
    """SIGKILL a process, its descendants, its process group and anything carrying ``token``."""
    victims: dict[int, psutil.Process] = {}
    try:
        root = psutil.Process(pid)
        victims[pid] = root
        for child in root.children(recursive=True):
            victims[child.pid] = child
    except psutil.NoSuchProcess:
        pass
    try:
        os.killpg(pid, signal.SIGKILL)  # the engine leads its own group (start_new_session)
    except (ProcessLookupError, PermissionError):
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
    for proc in psutil.process_iter():
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
        except psutil.Error:
            pass
    psutil.wait_procs(victims, timeout=2)
    return killed
