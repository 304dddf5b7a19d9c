"""Isolation of local engines: a bubblewrap sandbox, an unprivileged uid, and a control group.

Threat model (SECURITY.md): an engine may run any code an ordinary program can. So each engine
process tree runs

* in its own PID, mount, IPC, UTS, user (as root: none, see below) and (by default) network
  namespace, made by bubblewrap (``bwrap``, the tool behind Flatpak): it sees a read-only view
  of the system, a private ``/proc`` (only its own processes), fresh ``/tmp``, ``/dev``,
  ``/run``, its own writable work folder, and of the referee's sockets only its own. The
  referee's folders (results, logs, other engines' folders) are covered by empty file systems.
  When the namespace's first process dies the kernel kills everything in it, so no double fork,
  setsid or fork-hopping outlives the engine;
* as root, under its own unprivileged uid (``setpriv`` inside the sandbox), so it cannot signal or
  read anything of another engine or of the referee even outside the namespaces, and its per-user
  kernel budgets (epoll watches...) are its own;
* in its own control group (v1 or v2, where the machine lets the referee create one): a memory
  limit whose breach is detected (forfeit ``memory``), a process limit, CPU accounting; and the
  whole tree is stopped while it is not its turn (``ponder = false``).

The operator may name more writable folders in ``ARBITER_SANDBOX_WRITABLE`` (comma-separated; the
test suite's coverage run uses it for its data files) and more inherited environment variables in
``ARBITER_PASS_ENV``.

``SandboxMode``: ``auto`` sandboxes when the machine can and says loudly when it cannot;
``required`` refuses to start an engine without it; ``none`` is explicit trust.
"""
from __future__ import annotations

import enum
import errno
import functools
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from .. import say
from .guardian import guard_folder, release_folder, remove_folder

CGROUP_ROOT = Path("/sys/fs/cgroup")
FIRST_ENGINE_UID = 300_000
"""As root, engines run as uids from here up (one per engine the referee process starts)."""


class SandboxMode(enum.StrEnum):
    AUTO = "auto"
    REQUIRED = "required"
    NONE = "none"


class SandboxUnavailable(RuntimeError):
    """``required`` was asked for on a machine that cannot sandbox; the message says what to do."""


@dataclass(frozen=True)
class Support:
    """What this machine offers (probed once per referee process)."""

    bwrap: str | None
    namespaces: bool
    """bwrap could create user, PID, mount, IPC and network namespaces here."""
    root: bool
    setpriv: str | None
    cgroup: str | None
    """``v1`` or ``v2`` when the referee can create control groups, else None."""
    problem: str = ""
    """Why the sandbox is unavailable, and what to install or enable."""

    @property
    def sandbox(self) -> bool:
        return self.bwrap is not None and self.namespaces


@functools.cache
def support() -> Support:
    bwrap = shutil.which("bwrap")
    setpriv = shutil.which("setpriv")
    root = os.geteuid() == 0
    cgroup = _probe_cgroup()
    if bwrap is None:
        return Support(None, False, root, setpriv, cgroup,
                       "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)")
    try:
        probe = subprocess.run([bwrap, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--unshare-all",
                                "--die-with-parent", "true"], capture_output=True, timeout=10)
        ok, why = probe.returncode == 0, probe.stderr.decode(errors="replace").strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        if getattr(exc, "errno", None) in (errno.EMFILE, errno.ENFILE):
            raise  # the referee is short of files, not the machine of namespaces: not remembered
        ok, why = False, str(exc)
    if not ok:
        return Support(bwrap, False, root, setpriv, cgroup,
                       f"bubblewrap cannot create namespaces here ({why}); enable unprivileged user namespaces "
                       f"(sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0)")
    return Support(bwrap, True, root, setpriv, cgroup)


def _probe_cgroup() -> str | None:
    """``v1`` if the memory, pids and cpuacct hierarchies are writable, ``v2`` if a
    writable unified hierarchy has those controllers, else None."""
    v1 = [CGROUP_ROOT / c for c in ("memory", "pids", "cpuacct")]
    if all((p / "cgroup.procs").exists() for p in v1) and all(os.access(p, os.W_OK) for p in v1):
        return "v1"
    unified = CGROUP_ROOT if (CGROUP_ROOT / "cgroup.controllers").exists() else CGROUP_ROOT / "unified"
    try:
        controllers = (unified / "cgroup.controllers").read_text().split()
    except OSError:
        return None
    if {"memory", "pids", "cpu"} <= set(controllers) and os.access(unified, os.W_OK):
        return "v2"
    return None


_uids = iter(range(FIRST_ENGINE_UID + (os.getpid() % 1000) * 64, 2**31))


PROBE_UID = FIRST_ENGINE_UID - 1


@functools.cache
def reachable_in_sandbox(paths: tuple[str, ...], visible: tuple[Path, ...], hide: tuple[Path, ...]) -> bool:
    """Whether an unprivileged uid, in the sandbox an engine with these folders gets, can reach
    every path (programs executable, folders searchable): as root the referee runs an engine under
    its own uid when it can. The sandbox covers root's home and shows the engine's interpreter
    and folder again, so a Python in root's 0700 home is reachable there; an engine folder of
    mode 0700 is not. Asked once per engine configuration (a sandbox start, ~15 ms)."""
    s = support()
    if not (s.root and s.setpriv and s.sandbox):
        return False
    test = ["test"]
    for path in paths:
        test += ["-x", path, "-a"]
    work_dir = Path(tempfile.gettempdir()) / f"arb-probe-{uuid.uuid4().hex[:12]}"
    guard_folder(work_dir)  # before it is made: a referee killed with -9 meanwhile left it
    try:
        work_dir.mkdir(mode=0o700)
    except OSError:
        release_folder(work_dir)
        raise
    try:
        argv = bwrap_argv(test[:-1], work_dir=work_dir, endpoint_dir=None, cwd=None, hide=list(hide), network=False,
                          uid=PROBE_UID, visible=list(visible), disk_mb=1)
        return subprocess.run(argv, capture_output=True, timeout=10).returncode == 0
    except subprocess.TimeoutExpired:
        return False
    finally:
        remove_folder(work_dir)


def next_engine_uid() -> int:
    """A uid no other engine of this referee uses (ranges per referee process, so parallel
    referees rarely share one; sharing is harmless inside separate PID namespaces)."""
    return next(_uids)


class ControlGroup:
    """One engine's control group: limits, accounting, freezing. Created empty; the engine's
    first process joins it before exec (``join`` in the child)."""

    def __init__(self, kind: str, memory_mb: int | None, processes: int | None):
        self.kind = kind
        name = f"arbiter-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        if kind == "v1":
            self.dirs = {c: CGROUP_ROOT / c / name for c in ("memory", "pids", "cpuacct")}
        else:
            unified = CGROUP_ROOT if (CGROUP_ROOT / "cgroup.controllers").exists() else CGROUP_ROOT / "unified"
            self.dirs = {c: unified / name for c in ("memory", "pids", "cpuacct")}
        for d in set(self.dirs.values()):
            d.mkdir()
        if memory_mb:
            limit = str(memory_mb * 1024 * 1024)
            self._write("memory", "memory.limit_in_bytes" if kind == "v1" else "memory.max", limit)
            if kind == "v2":
                self._write("memory", "memory.swap.max", "0", optional=True)
        if processes:
            self._write("pids", "pids.max", str(processes))
        self._stopped: list[int] = []
        """v1: the processes ``freeze`` stopped, in order; ``freeze(False)`` resumes exactly these."""
        self._procs_fd = os.open(self.dirs["pids"] / "cgroup.procs", os.O_RDONLY)
        self._cpu_fd = os.open(self.dirs["cpuacct"] / ("cpuacct.usage" if kind == "v1" else "cpu.stat"), os.O_RDONLY)
        """Kept open: freezing reads it twice per decision, and pread is ~15x cheaper than opening."""

    def _write(self, controller: str, name: str, value: str, optional: bool = False) -> None:
        try:
            (self.dirs[controller] / name).write_text(value)
        except OSError:
            if not optional:
                raise

    def join_fds(self) -> list[int]:
        """Open ``cgroup.procs`` of each hierarchy for writing: the engine's child process writes
        ``0`` (itself) to each before exec (no allocation there; the caller closes them after)."""
        return [os.open(d / "cgroup.procs", os.O_WRONLY) for d in set(self.dirs.values())]

    def freeze(self, frozen: bool) -> None:
        """Stop or resume every process in the group. v2: the freezer (a frozen task still dies
        of SIGKILL). v1's freezer would keep killed tasks frozen for ever if the referee died (and
        one write costs ~100 us), so there every process gets SIGSTOP, repeated until no new one
        appears; resuming sends SIGCONT to exactly those (a stopped process cannot fork, so no
        other can have appeared): one read and a few kill() calls, on the hot path of every move."""
        if self.kind == "v2":
            self._write("pids", "cgroup.freeze", "1" if frozen else "0")
            return
        if not frozen:
            stopped, self._stopped = self._stopped, []
            for pid in stopped:
                try:
                    os.kill(pid, signal.SIGCONT)
                except OSError:
                    pass
            return
        done: set[int] = set(self._stopped)
        for _ in range(100):
            todo = [p for p in self.pids() if p not in done]
            if not todo:
                break
            for pid in todo:
                try:
                    os.kill(pid, signal.SIGSTOP)
                except OSError:
                    pass
                done.add(pid)
                self._stopped.append(pid)

    def cpu_seconds(self) -> float:
        """CPU time used by everything the engine ever ran in this group (read twice per move:
        through a kept descriptor)."""
        try:
            data = os.pread(self._cpu_fd, 4096, 0)
            if self.kind == "v1":
                return int(data) / 1e9
            for line in data.decode().splitlines():
                if line.startswith("usage_usec"):
                    return int(line.split()[1]) / 1e6
        except (OSError, ValueError):
            pass
        return 0.0

    def memory_exceeded(self) -> bool:
        """The engine hit its memory limit (the kernel refused it memory or killed it)."""
        try:
            if self.kind == "v1":
                return int((self.dirs["memory"] / "memory.failcnt").read_text()) > 0
            events = (self.dirs["memory"] / "memory.events").read_text().split()
            counts = dict(zip(events[::2], map(int, events[1::2])))
            return counts.get("oom_kill", 0) > 0 or counts.get("max", 0) > 0
        except (OSError, ValueError):
            return False

    def pids(self) -> list[int]:
        try:
            data = os.pread(self._procs_fd, 4096, 0)  # a small buffer: this runs twice per move
            if len(data) == 4096:
                data = os.pread(self._procs_fd, 1 << 22, 0)
            return [int(p) for p in data.split()]
        except (OSError, ValueError):
            return []

    removed = False
    """``remove`` has run: its descriptors are closed (closing them again would close whatever
    another thread has opened since under the same numbers)."""

    def remove(self) -> None:
        """Kill whatever is left in the group and delete it, once. Never raises."""
        if self.removed:
            return
        self.removed = True
        try:
            self.freeze(False)
        except OSError:
            pass
        deadline, signalled = time.monotonic() + 0.5, set()
        while time.monotonic() < deadline:
            left = self.pids()
            if not left:
                break
            for pid in left:
                if pid not in signalled:  # once is enough; dying takes the kernel a moment
                    signalled.add(pid)
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
            time.sleep(0.001)
        for fd in (self._procs_fd, self._cpu_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self._procs_fd = self._cpu_fd = -1  # a read now fails (EBADF), as for a group that is gone
        for d in set(self.dirs.values()):
            try:
                d.rmdir()
            except OSError:
                pass


FRESH = ("/tmp", "/var/tmp", "/run", "/dev/shm")
"""Folders the sandbox replaces with empty ones."""
PRIVATE = ("/root", "/home", "/etc/ssh")
"""People's homes and the host's keys: replaced with empty folders too (an engine's own program
and folder inside them are shown again, read-only)."""
SECRET_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-")


def referee_temp_folder() -> Path | None:
    """The referee's own temporary folder (``TMPDIR``) where it is not a fresh folder itself:
    every engine's session secret and socket are made there, so an engine that could look into
    it would find its opponent's and take its seat before it says hello. Hidden like the
    referee's results (after the folders shown again: it may lie inside an engine's checkout)."""
    temp = os.path.realpath(tempfile.gettempdir())
    return None if temp == "/" or temp in FRESH else Path(temp)


SYSTEM_FOLDERS = ("/etc", "/var", "/opt", "/srv", "/usr/local", "/mnt", "/media", "/lost+found")
"""Where a machine keeps what only root may read (keys, database files, private logs): searched
for such files when an engine must run as root of its own namespace (see ``owner_only_paths``)."""


OWNER_ONLY_REFRESH = 300.0
"""Seconds a scan of SYSTEM_FOLDERS is used for before the next engine start scans again (a
root-only file made meanwhile is masked from then on)."""


def owner_only_paths() -> tuple[tuple[str, bool], ...]:
    """(path, is_folder) of every file in SYSTEM_FOLDERS that other users may not read and every
    folder they may not enter, as they are now. An engine that runs as "root without capabilities"
    (no own uid) would still pass root's file-permission checks on the host's files, so these are
    masked in its view: it sees what an ordinary user sees there. The scan (one ``find``, ~0.1 s;
    a Python walk takes three times as long) is reused for ``OWNER_ONLY_REFRESH`` seconds; what
    has gone since is left out, since the sandbox cannot mask a path that no longer exists and
    would refuse to start (a rotated root-only log stopped every engine start of a long event)."""
    scanned = _owner_only_scan()
    if time.monotonic() - scanned[0] > OWNER_ONLY_REFRESH:
        rescan_owner_only_paths()
        scanned = _owner_only_scan()
    return tuple(entry for entry in scanned[1] if os.path.lexists(entry[0]))


def rescan_owner_only_paths() -> None:
    """Scan SYSTEM_FOLDERS again at the next engine start."""
    _owner_only_scan.cache_clear()


@functools.cache
def _owner_only_scan() -> tuple[float, tuple[tuple[str, bool], ...]]:
    """(when, what): the scan behind ``owner_only_paths``."""
    when = time.monotonic()
    tops = [t for t in SYSTEM_FOLDERS if os.path.isdir(t) and not os.path.islink(t)]
    if not tops:
        return when, ()
    fresh = [x for f in FRESH for x in ("-path", f, "-o")][:-1]
    out = subprocess.run(["find", *tops, "-xdev", "(", *fresh, ")", "-prune", "-o",
                          "(", "-type", "d", "!", "-perm", "-o=x", "-prune", "-printf", r"%y %p\0", ")", "-o",
                          "(", "-type", "f", "!", "-perm", "-o=r", "-printf", r"%y %p\0", ")"],
                         capture_output=True).stdout.decode(errors="surrogateescape")
    return when, tuple((line[2:], line[0] == "d") for line in out.split("\0") if line[:2] in ("d ", "f "))


def bwrap_argv(argv: list[str], *, work_dir: Path, endpoint_dir: Path | None, cwd: str | None, hide: list[Path],
               network: bool, uid: int | None, visible: list[Path] = (), disk_mb: int = 1024,
               cgroup: "ControlGroup | None" = None, seccomp_fd: int | None = None) -> list[str]:
    """The command line that runs ``argv`` inside a fresh sandbox (see the module docstring).
    ``visible``: folders the engine needs (its folder, its interpreter's) shown read-only even
    where they lie under one of the fresh folders (a checkout in /tmp). ``cgroup``: the engine's
    control group, shown as the whole of ``/sys/fs/cgroup`` (as a container sees its own): the
    engine reads its own limits there (runtimes size their heaps by them) and nothing of the
    other engines' groups (their CPU use, their processes). ``seccomp_fd``: ``keyring_filter_fd``'s,
    inherited by bubblewrap (the engine may not use the kernel's keyrings)."""
    s = support()
    own_uid = uid is not None and s.root and s.setpriv is not None
    """As root: bubblewrap builds the sandbox as root (no user namespace: the engine's uid is then a
    real one, with its own per-user kernel budgets, SECURITY.md), and ``setpriv`` inside it drops
    to ``uid`` with no capability before the engine starts. Built so, the view is root's (an
    interpreter in root's 0700 home is shown), and the engine reaches what its uid may."""
    size = ["--size", str(disk_mb * 1024 * 1024)]  # every writable place is a tmpfs this big at most
    if own_uid:
        size = ["--perms", "1777", *size]  # made by root: writable by the engine's uid too
    cmd: list[str] = [s.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                      *size, "--tmpfs", "/tmp", *size, "--tmpfs", "/var/tmp", *size, "--tmpfs", "/run", *size,
                      "--tmpfs", "/dev/shm", *([] if own_uid else ["--unshare-user"]), "--unshare-pid",
                      "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent", "--new-session",
                      "--hostname", "engine"]
    if uid is None and s.root:
        cmd += ["--cap-drop", "ALL"]  # root in its own user namespace, with no capability at all
    if not network:
        cmd.append("--unshare-net")
    mounts: list[str] = []
    """Where each folder mount below goes, in order: a remount must find its folder still on top."""

    def mount(*args: str) -> None:
        if own_uid:  # a mount point's missing folders, made by root, would be 0700: the engine's uid passes
            for parent in reversed(Path(args[-1]).parents[:-1]):
                cmd.extend(("--perms", "0755", "--dir", str(parent)))
        cmd.extend(args)
        mounts.append(args[-1])

    for private in PRIVATE:
        if Path(private).is_dir():
            mount("--tmpfs", private)
    cgroup_view = CGROUP_ROOT if cgroup is not None and CGROUP_ROOT.is_dir() else None
    if cgroup_view is not None:
        if cgroup.kind == "v1":  # a folder per controller, each showing the engine's own group
            mount("--tmpfs", str(cgroup_view))
            for controller, folder in sorted(cgroup.dirs.items()):
                mount("--ro-bind", str(folder), str(cgroup_view / controller))
        else:
            mount("--ro-bind", str(cgroup.dirs["memory"]), str(cgroup_view))
    for secret in SECRET_FILES:
        if Path(secret).exists():
            cmd += ["--ro-bind", "/dev/null", secret]
    masked = owner_only_paths() if uid is None and s.root else ()
    if masked:  # root of its namespace passes the host's owner checks: show only what others see
        for path, folder in masked:
            if folder:
                mount("--tmpfs", path)
            else:
                cmd += ["--ro-bind", "/dev/null", path]
    temp = referee_temp_folder()
    covered = (*FRESH, *PRIVATE, *((str(temp),) if temp else ()))
    shown = [p for p in dict.fromkeys(visible) if p.is_dir() and any(p.is_relative_to(f) and p != Path(f) for f in covered)]
    # The referee's temporary folder and the engine's own folders shown again, outer ones first: a
    # checkout in /tmp holding TMPDIR (CI's clone) stays covered there, an engine inside TMPDIR shown.
    for path in sorted([*shown, *([temp] if temp else [])], key=lambda p: len(p.parts)):
        if path == temp:
            mount("--tmpfs", str(path))
        else:
            mount("--ro-bind", str(path), str(path))
    hide = [p for p in hide if str(p) not in FRESH and p != temp]  # (results right in /tmp: fresh already)
    for path in hide:  # the referee's own folders and files: results, logs, keys, seeds
        if path.is_dir():
            mount("--tmpfs", str(path))
        elif path.exists():
            cmd += ["--ro-bind", "/dev/null", str(path)]
    mount(*size, "--tmpfs", str(work_dir))  # its own folder: in memory (charged to it), never the referee's disk
    for keep in sorted(work_dir.iterdir()):  # what the referee put there (the session secret), read-only
        cmd += ["--ro-bind", str(keep), str(keep)]
    for extra in os.environ.get("ARBITER_SANDBOX_WRITABLE", "").split(","):  # the operator's own choice
        if extra.strip() and Path(extra.strip()).is_dir():
            mount("--bind", extra.strip(), extra.strip())
    if endpoint_dir is not None:  # read-only: connecting needs no write access, and it lies on the referee's disk
        mount("--ro-bind", str(endpoint_dir), str(endpoint_dir))
    # The in-memory folders made above without a size (/dev, the covered homes and referee's folders)
    # take no writes: last, once every mount point inside them exists (not recursive: /dev/shm,
    # /dev/null... and what is shown inside keep their own flags; a child namespace cannot undo it).
    # A folder that a later mount above it covers (a hidden folder inside a hidden one given
    # after it) is out of sight already, and no longer there to remount.
    covers = [str(cgroup_view)] if cgroup_view is not None and cgroup.kind == "v1" else []
    covers += [p for p in PRIVATE if Path(p).is_dir()] + [str(p) for p in [*([temp] if temp else []), *hide] if p.is_dir()]
    covers += [path for path, folder in masked if folder]
    for cover in ["/dev", *dict.fromkeys(covers)]:
        last = len(mounts) - 1 - mounts[::-1].index(cover) if cover in mounts else -1
        if not any(Path(cover).is_relative_to(later) and cover != later for later in mounts[last + 1:]):
            cmd += ["--remount-ro", cover]
    if seccomp_fd is not None:
        cmd += ["--seccomp", str(seccomp_fd)]
    cmd += ["--chdir", cwd or str(work_dir), "--"]
    if own_uid:
        cmd += [s.setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
                "--bounding-set=-all", "--no-new-privs"]
    return cmd + argv


# --- the kernel keyring, closed by a seccomp filter ----------------------------------------------

_KEYRING_CALLS = {  # audit arch -> syscall numbers of add_key, request_key, keyctl
    0xC000003E: (248, 249, 250, 0x40000000 | 248, 0x40000000 | 249, 0x40000000 | 250),  # x86_64 (and its x32 ABI)
    0x40000003: (286, 287, 288),  # i386 (a 32-bit engine on an x86_64 kernel)
    0xC00000B7: (217, 218, 219),  # aarch64
    0x40000028: (309, 310, 311),  # arm (a 32-bit engine on an arm64 kernel)
}


@functools.cache
def keyring_filter() -> bytes:
    """A seccomp program (classic BPF) that fails ``add_key``, ``request_key`` and ``keyctl`` with
    EPERM and allows everything else. The kernel's keyrings are not namespaced: a key outlives its
    engine and, with its permissions opened, any later engine of any uid reads it (a red-team
    engine passed notes so between matches). Docker's default profile blocks the same calls."""
    load, jeq, ret = 0x20, 0x15, 0x06  # BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_RET|BPF_K
    allow, deny = 0x7FFF0000, 0x00050000 | errno.EPERM  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM
    prog: list[tuple[int, int, int, int]] = [(load, 0, 0, 4)]  # seccomp_data.arch
    denials: list[int] = []  # indices of the jumps to the final deny
    for arch, calls in _KEYRING_CALLS.items():
        prog.append((jeq, 0, len(calls) + 2, arch))  # not this arch: past its block
        prog.append((load, 0, 0, 0))  # seccomp_data.nr
        for nr in calls:
            denials.append(len(prog))
            prog.append((jeq, 0, 0, nr))
        prog.append((ret, 0, 0, allow))
    prog.append((ret, 0, 0, allow))  # another architecture: none of these calls exist there
    prog.append((ret, 0, 0, deny))
    for i in denials:
        code, _, jf, k = prog[i]
        prog[i] = (code, len(prog) - 1 - (i + 1), jf, k)
    return b"".join(struct.pack("=HBBI", *insn) for insn in prog)


def keyring_filter_fd() -> int:
    """A file descriptor holding ``keyring_filter`` from its start, for bubblewrap's ``--seccomp``
    (the caller passes it to the sandbox and closes it)."""
    fd = os.memfd_create("arbiter-seccomp", 0)
    os.write(fd, keyring_filter())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def warn_once(message: str) -> None:
    """Say loudly, once per referee process, that engines run without a sandbox."""
    if message not in _warned:
        _warned.add(message)
        say(f"WARNING: {message}")


_warned: set[str] = set()
