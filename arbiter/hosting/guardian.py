"""The guardian: a small process that outlives a referee killed with ``kill -9`` just long enough
to kill the engines it left behind and remove their folders.

Engines die with their referee by ``PR_SET_PDEATHSIG`` and bubblewrap's ``--die-with-parent``,
but both arm a signal only once the child runs, and bubblewrap re-arms it after changing the
credentials of its inner process: a referee killed in that instant leaves the sandbox's inner
process and the engine running for ever (seen in the kill-at-random-moments test, a few times in
a hundred). Every engine's processes are in its control group, named after the referee's process
id (``arbiter-PID-...``), and membership is inherited by every fork however the engine re-parents.

So the first engine a process starts also starts one guardian: a fresh
Python (``-m arbiter.hosting.guardian PID FD``) that blocks reading a pipe whose only write end
is the referee's (close-on-exec: engines do not get it). The read returns when the referee has
gone, however it went; the guardian then kills every process in the control groups of that
referee, removes the groups, and exits. It also removes the groups of referees that died before
(left by an older version, or a guardian itself killed). A referee that ends normally has
already stopped its engines: its guardian finds empty groups, or none.

The same pipe tells the guardian which temporary folders to remove if the referee dies (an
engine's folder with its session secret, its socket's folder): a line ``+PATH`` before one is
made (``*PATH``: and its parent, if that is left empty: the folder of this process's sockets),
``-PATH`` when the referee has removed it itself. The parent stays noted after that: it outlives
its engines (a tournament director's pre-flight engines are stopped before the event plays), and
nothing but the referee's exit removes it.

An engine without a control group (``--sandbox none``, or a machine that gives the referee none)
is known by the marker in its environment (``!NAME=VALUE``, its ``ARBITER_ENGINE_TOKEN``), which
no fork, ``setsid`` or re-parenting sheds: the guardian kills every process carrying a marker of
its referee's. Without it, a referee killed with ``kill -9`` left its engines' own children
running, and every folder above (a pytest worker ending with ``os._exit`` left two engines'
folders and their sockets' in /tmp after each run of the suite).
"""
from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

_started_for: int | None = None
"""The process id whose guardian runs (a forked worker starts its own)."""
_lifeline: int | None = None
_lock = threading.Lock()
"""A forked worker's lanes start their first engines at once: unguarded, each closed the inherited
lifeline (the second close hit whatever had taken its number meanwhile: another engine's control
group, a ZeroMQ socket's signal) and started a guardian of its own."""
os.register_at_fork(after_in_child=lambda: globals().update(_lock=threading.Lock()))  # never inherited held


def ensure_guardian() -> None:
    """Start this process's guardian unless it runs already. Never raises: without a guardian
    the engines still die with the referee in all but the rare race above."""
    with _lock:
        _ensure_guardian()


def _ensure_guardian() -> None:
    global _started_for, _lifeline
    me = os.getpid()
    if _started_for == me:
        return
    if _lifeline is not None:  # inherited from the process we were forked from: theirs, not ours
        try:
            os.close(_lifeline)
        except OSError:
            pass
    _started_for, _lifeline = me, None
    try:
        read_end, write_end = os.pipe2(os.O_CLOEXEC)
    except OSError:
        return
    try:
        subprocess.Popen([sys.executable, "-m", "arbiter.hosting.guardian", str(me), str(read_end)],
                         pass_fds=[read_end], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        os.close(write_end)
        return
    finally:
        os.close(read_end)
    os.set_blocking(write_end, False)
    _lifeline = write_end


def guard_folder(path: Path, parent_too: bool = False) -> None:
    """Have the guardian remove ``path`` if this process dies before ``release_folder(path)``
    (``parent_too``: and its parent then, released or not, if that is empty). Told before the
    folder is made, so that no moment leaves it unknown. Best effort, never blocks: should the
    guardian not start, the folder stays."""
    _tell(f"{'*' if parent_too else '+'}{path}\n")


def release_folder(path: Path) -> None:
    _tell(f"-{path}\n")


def remove_folder(path: Path) -> None:
    """Remove a folder made under ``guard_folder`` and release it. One that cannot be removed now
    (a referee short of file descriptors cannot walk it: the folders of the engines it could not
    start stayed, session secrets included) stays noted: removed at this process's exit, or by
    its guardian."""
    shutil.rmtree(path, ignore_errors=True)
    if os.path.lexists(path):
        _left.add(str(path))
        return
    _left.discard(str(path))
    release_folder(path)


_left: set[str] = set()
"""Folders ``remove_folder`` could not remove: tried again at exit (a forked child's are its parent's)."""
os.register_at_fork(after_in_child=_left.clear)


@atexit.register
def _remove_left() -> None:
    for path in list(_left):
        shutil.rmtree(path, ignore_errors=True)


def guard_marker(marker: str) -> None:
    """Have the guardian kill every process whose environment holds ``marker`` (``NAME=VALUE``)
    if this process dies before ``release_marker(marker)``: an engine with no control group."""
    _tell(f"!{marker}\n")


def release_marker(marker: str) -> None:
    _tell(f"~{marker}\n")


def _tell(line: str) -> None:
    if _started_for != os.getpid() or _lifeline is None or line.count("\n") != 1:
        return  # no guardian of ours (a forked worker's first engine starts one), or a path with a newline
    try:
        os.write(_lifeline, os.fsencode(line))  # non-blocking: a stuck guardian never holds up a game
    except OSError:
        pass


def _group_dirs(referee: int | None) -> list[Path]:
    """Control group folders of engines started by ``referee`` (every referee's when None)."""
    from .sandbox import CGROUP_ROOT

    prefix = "arbiter-" if referee is None else f"arbiter-{referee}-"
    found = []
    for hierarchy in [CGROUP_ROOT, *(p for p in CGROUP_ROOT.iterdir() if p.is_dir())] if CGROUP_ROOT.is_dir() else []:
        try:
            found += [d for d in hierarchy.iterdir() if d.name.startswith(prefix) and d.is_dir()]
        except OSError:
            continue
    return found


def _referee_of(group: Path) -> int | None:
    try:
        return int(group.name.split("-")[1])
    except (IndexError, ValueError):
        return None


def sweep(groups: list[Path], patience: float = 2.0) -> int:
    """SIGKILL every process in ``groups`` until they stay empty, then remove them; the number of
    processes killed. A process forked meanwhile is in the group too, so it is found next round."""
    killed: set[int] = set()
    deadline = time.monotonic() + patience
    while True:
        left = []
        for group in groups:
            try:
                left += [int(p) for p in (group / "cgroup.procs").read_text().split()]
            except (OSError, ValueError):
                pass
        if not left or time.monotonic() > deadline:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except OSError:
                pass
        time.sleep(0.01)
    for group in groups:
        try:
            group.rmdir()
        except OSError:
            pass
    return len(killed)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def main(argv: list[str]) -> int:
    referee, lifeline = int(argv[0]), int(argv[1])
    os.setpriority(os.PRIO_PROCESS, 0, 10)
    stale = [g for g in _group_dirs(None) if (pid := _referee_of(g)) is not None and not _alive(pid)]
    sweep(stale, patience=0.5)
    folders: set[str] = set()
    parents: set[str] = set()  # removed if empty once the folders are
    markers: set[bytes] = set()
    pending = b""
    while True:
        try:
            data = os.read(lifeline, 4096)
        except InterruptedError:
            continue
        except OSError:
            break
        if not data:
            break
        *lines, pending = (pending + data).split(b"\n")
        for line in lines:
            if line[:1] in (b"!", b"~"):
                (markers.add if line[:1] == b"!" else markers.discard)(line[1:])
                continue
            path = os.fsdecode(line[1:])
            if line[:1] in (b"+", b"*"):
                folders.add(path)
                if line[:1] == b"*":
                    parents.add(os.path.dirname(path))
            else:
                folders.discard(path)
    sweep(_group_dirs(referee))  # first: nothing of the engines writes in the folders any more
    if markers:  # engines without a control group: whatever carries their tokens (a few rounds: forks)
        from .process import kill_marked

        pairs = [os.fsdecode(m).partition("=")[::2] for m in markers]
        for _ in range(5):
            if not sum(len(kill_marked(name, value)) for name, value in pairs):
                break
    for path in folders:
        shutil.rmtree(path, ignore_errors=True)
    for path in parents:
        try:
            os.rmdir(path)  # only if empty: what else is there is not known to be the referee's
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
