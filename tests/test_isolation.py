"""The engine sandbox's own parts: uid separation, hidden folders, limits as configuration, info
caps, the sandbox modes. (Whole attacks by hostile engines: tests/test_hostile.py.)"""
from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

from arbiter.hosting import EngineConfig, EngineFault, EngineSession, Limits, SandboxMode
from arbiter.hosting import sandbox as sandbox_module
from arbiter.hosting.process import EngineProcess, engine_environment, parse_cpus
from arbiter.referee import cap_info
from conftest import left_after
from protocol.messages import EndReason, Info

SANDBOX = sandbox_module.support().sandbox
needs_sandbox = pytest.mark.skipif(not SANDBOX, reason=f"no sandbox here: {sandbox_module.support().problem}")


def run_shell(tmp_path: Path, script: str, cwd: str = "/", **config) -> str:
    """Run ``/bin/sh -c script`` as an engine process (it need not speak the protocol); its log."""
    return run_program(tmp_path, ["/bin/sh", "-c", script], cwd, **config)


def run_program(tmp_path: Path, argv: list[str], cwd: str, **config) -> str:
    """Run ``argv`` as an engine process (the sandbox shows its program's folder); its log."""
    work = Path(tempfile.mkdtemp(prefix="arb-test-"))  # as the referee makes them: reachable by any uid
    log = tmp_path / "logs" / "engine.log"
    cfg = EngineConfig(argv, name="sh", cwd=cwd, **config)
    env = engine_environment(cfg, {"HOME": str(work)})  # what EngineSession gives an engine
    proc = EngineProcess(cfg, cfg.argv(""), env=env, token="t" * 8, log_path=log, work_dir=work)
    try:
        assert proc.wait(10), "the shell did not finish"
    finally:
        proc.kill()
        shutil.rmtree(work, ignore_errors=True)
    return log.read_text()


@needs_sandbox
def test_a_sandboxed_engine_sees_only_its_own_processes_and_no_referee_folder(tmp_path):
    secret_dir = tmp_path / "results"
    secret_dir.mkdir()
    (secret_dir / "results.sqlite").write_text("the referee's")
    out = run_shell(tmp_path, f"ls /proc | grep -c '^[0-9]'; ls {secret_dir} | wc -l; echo $HOSTNAME; "
                              f"touch /etc/x 2>/dev/null && echo WROTE || echo read-only",
                    hide=(str(secret_dir),))
    processes, files, *rest = out.split()
    assert int(processes) <= 4, out  # bwrap's init, the shell, ls, grep: nothing of the machine
    assert files == "0", out  # the results folder is an empty tmpfs inside
    assert "read-only" in out and "WROTE" not in out


@needs_sandbox
@pytest.mark.skipif(not sandbox_module.support().cgroup, reason="no control group for engines here")
def test_an_engine_sees_its_own_control_group_and_no_other(tmp_path):
    """Before: the host's whole /sys/fs/cgroup was in view, every other engine's group included (its
    CPU use move by move, its processes), while its own limits were not where a program looks
    (a runtime sizing its heap saw the machine's memory). Now its group is /sys/fs/cgroup."""
    other = sandbox_module.ControlGroup(sandbox_module.support().cgroup, 64, 10)  # another engine's group
    try:
        out = run_shell(tmp_path, "ls -R /sys/fs/cgroup | grep -c arbiter-; "
                                  "cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/memory.max 2>/dev/null; "
                                  "(echo 0 > /sys/fs/cgroup/cgroup.procs) 2>/dev/null && echo MOVED || echo stayed",
                        limits=Limits(memory_mb=300))
    finally:
        other.remove()
    visible, limit, moved = out.split()
    assert visible == "0", out  # no group of the referee's, its own or the other's, by name
    assert int(limit) == 300 * 1024 * 1024, out
    assert moved == "stayed", out


@needs_sandbox
@pytest.mark.skipif(os.geteuid() != 0 or not sandbox_module.support().setpriv, reason="needs root and setpriv")
def test_as_root_an_engine_whose_program_is_reachable_runs_under_its_own_uid(tmp_path):
    out = run_shell(tmp_path, "id -u; cat /proc/self/status | grep CapEff")
    uid = int(out.split()[0])
    assert uid >= sandbox_module.FIRST_ENGINE_UID, out
    assert "0000000000000000" in out  # and with no capability


@needs_sandbox
@pytest.mark.skipif(os.geteuid() != 0 or not sandbox_module.support().setpriv, reason="needs root and setpriv")
def test_as_root_a_program_in_roots_home_runs_under_a_uid_of_its_own(tmp_path):
    """/root is 0700: on the host no other uid can reach a program there (pyenv's Python, CI's).
    Such an engine ran as root without capabilities, sharing root's per-user kernel budgets: an
    engine that used up the epoll watches made the referee abort (SECURITY.md). The sandbox is now
    built as root and shows the program's folder in a fresh /root, where the engine's own uid
    reaches it."""
    folder = Path(tempfile.mkdtemp(prefix="arbiter-test-", dir="/root"))
    try:
        folder.chmod(0o755)
        program = folder / "engine.sh"
        program.write_text("#!/bin/sh\nid -u\ngrep CapEff /proc/self/status\n")
        program.chmod(0o755)
        out = run_program(tmp_path, [str(program)], str(folder))
    finally:
        shutil.rmtree(folder)
    assert int(out.split()[0]) >= sandbox_module.FIRST_ENGINE_UID, out
    assert "0000000000000000" in out, out  # and no capability


@needs_sandbox
def test_a_sandboxed_engine_cannot_use_the_kernels_keyrings(tmp_path):
    """Keys are not namespaced: a red-team engine stored one in its user keyring, opened its
    permissions, and an engine of another uid read it in the next match (a channel across
    matches and restarts, e.g. for duplicate dice). add_key, request_key and keyctl now fail."""
    code = ("import ctypes, os\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "for name, args in (('add_key', (248, b'user', b'note', b'data', 4, -4)), ('keyctl', (250, 0, -4, 0)),\n"
            "                   ('request_key', (249, b'user', b'note', None, 0))):\n"
            "    r = libc.syscall(*args)\n"
            "    print(name, r, os.strerror(ctypes.get_errno()) if r < 0 else 'allowed')\n")
    out = run_program(tmp_path, [sys.executable, "-c", code], str(Path(__file__).resolve().parent))
    assert out.count("-1 Operation not permitted") == 3 and "allowed" not in out, out


def test_no_sandbox_means_none(tmp_path):
    out = run_shell(tmp_path, "ls /proc | grep -c '^[0-9]'", sandbox=SandboxMode.NONE)
    assert int(out.split()[0]) > 4  # it sees the machine's processes: explicit trust


def test_required_sandbox_on_a_machine_without_one_is_not_started(tmp_path, monkeypatch):
    missing = sandbox_module.Support(None, False, os.geteuid() == 0, None, None,
                                     "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)")
    monkeypatch.setattr(sandbox_module, "support", lambda: missing)
    import arbiter.hosting.process as process_module

    monkeypatch.setattr(process_module, "support", lambda: missing)
    session = EngineSession(EngineConfig(f"{sys.executable} -c pass", name="x", sandbox=SandboxMode.REQUIRED), tmp_path)
    with pytest.raises(EngineFault) as fault:
        session.launch()
    session.stop()
    assert fault.value.reason == EndReason.NOT_STARTED and "apt-get install bubblewrap" in fault.value.detail


@pytest.mark.parametrize("values, message", [
    ({"memory_mb": 10}, "at least 64 MB"),
    ({"memry_mb": 100}, "unknown limit 'memry_mb'"),
    ({"processes": "many"}, "expected a number"),
    ({"open_files": 2.5}, "expected a whole number"),
    ({"log_mb": -1}, "must not be negative"),
    # not finite: a traceback while checking (inf, from TOML's 1e400) or when the first engine started
    ({"memory_mb": float("inf")}, "memory_mb = inf: expected a finite number"),
    ({"log_mb": "nan"}, "log_mb = 'nan': expected a finite number"),
    ({"log_total_mb": float("inf")}, "log_total_mb = inf: expected a finite number"),
])
def test_impossible_limits_are_refused_naming_the_key(values, message):
    with pytest.raises(ValueError, match=message):
        Limits.from_mapping(values)


def test_cpu_lists_are_parsed_and_impossible_cores_refused():
    usable = sorted(os.sched_getaffinity(0))
    assert parse_cpus(None) is None and parse_cpus("") is None
    assert parse_cpus(str(usable[-1])) == (usable[-1],)
    assert parse_cpus(f"{usable[0]}-{usable[-1]}") == tuple(usable)
    assert parse_cpus([usable[-1], usable[0]]) == tuple(sorted({usable[0], usable[-1]}))
    for bad, words in (("a", "expected core numbers"), ([True], "expected core numbers"),
                       ("4096", "core(s) 4096 not available"), ("3-1", "range 3-1 runs backwards (write 1-3)")):
        with pytest.raises(ValueError, match=re.escape(words)):
            parse_cpus(bad)
    # a range of every core there could be: a MemoryError (a list of them all) before it was checked
    top = usable[-1]
    with pytest.raises(ValueError, match=re.escape(f"core(s) {top + 1}, {top + 2}, {top + 3}, ... not available")):
        parse_cpus(f"{usable[0]}-99999999999")


def test_a_pinned_engine_runs_on_its_cores_only(tmp_path):
    core = sorted(os.sched_getaffinity(0))[-1]
    out = run_shell(tmp_path, "grep Cpus_allowed_list /proc/self/status", cpus=(core,))
    assert out.split()[-1] == str(core), out


def test_limits_from_text_and_over_a_base():
    base = Limits.from_mapping({"memory_mb": 2048})
    limits = Limits.from_mapping({"processes": "32", "log_mb": "0.5"}, base)
    assert (limits.memory_mb, limits.processes, limits.log_mb) == (2048, 32, 0.5)


def test_long_info_is_cut_and_marked():
    info, cut = cap_info(Info(pv=["a1b2"] * 1000, comment="x" * 5000, nodes=7), 100)
    assert cut and len(info.comment) == 100 and sum(len(m) + 1 for m in info.pv) <= 100 and info.nodes == 7
    assert cap_info(Info(pv=["a1b2"], comment="ok"), 100) == (Info(pv=["a1b2"], comment="ok"), False)
    assert cap_info(None, 100) == (None, False)


def test_an_engine_log_is_capped(tmp_path):
    out = run_shell(tmp_path, "head -c 3000000 /dev/zero | tr '\\0' x", limits=Limits(log_mb=0.1))
    assert len(out) < 110_000 and "log cut at" in out


def test_the_engine_environment_is_clean(tmp_path, monkeypatch):
    monkeypatch.setenv("ARBITER_CANARY", "operator-secret")
    monkeypatch.setenv("ARBITER_PASS_ENV", "ARBITER_NAMED")
    monkeypatch.setenv("ARBITER_NAMED", "passed-on")
    out = run_shell(tmp_path, "env")
    assert "operator-secret" not in out and "PATH=" in out
    assert "ARBITER_NAMED=passed-on" in out  # what the operator names does reach it


@needs_sandbox
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
@pytest.mark.serial  # its root-only files in /var/lib are machine-wide: other tests' sandboxes would see them come and go
def test_an_engine_that_must_run_as_root_of_its_namespace_still_cannot_read_what_only_root_may(tmp_path):
    # The engine's folder is in a 0700 folder, so no unprivileged uid can reach it and it runs as
    # root without capabilities: root-only files in the system folders must be masked for it.
    place = Path("/var/lib") / f"arbiter-test-{os.getpid()}"
    place.mkdir()
    try:
        (place / "public").write_text("PUBLIC")
        (place / "secret").write_text("ROOT-ONLY")
        (place / "secret").chmod(0o600)
        (place / "vault").mkdir(mode=0o700)
        (place / "vault" / "key").write_text("VAULT")
        tmp_path.chmod(0o700)
        sandbox_module.rescan_owner_only_paths()
        out = run_shell(tmp_path, f"id -u; cat {place}/public {place}/secret {place}/vault/key; echo END",
                        cwd=str(tmp_path))
    finally:
        shutil.rmtree(place)
        sandbox_module.rescan_owner_only_paths()
    assert out.split()[0] == "0", out  # the fallback this test is about
    assert "PUBLIC" in out and "END" in out
    assert "ROOT-ONLY" not in out and "VAULT" not in out


@needs_sandbox
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
@pytest.mark.serial
def test_a_root_only_file_that_goes_away_does_not_stop_later_engines_from_starting(tmp_path, monkeypatch):
    """The masked root-only files come from a scan kept for minutes; one deleted since (a rotated
    log) must not make the sandbox refuse every later engine start, as it did (bwrap cannot mount
    over a path that is gone: "Can't mkdir parents ... Read-only file system"); one made since is
    masked once the scan is renewed."""
    place = Path("/var/lib") / f"arbiter-test-gone-{os.getpid()}"
    place.mkdir()
    try:
        (place / "rotated.log").write_text("ROOT-ONLY")
        (place / "rotated.log").chmod(0o600)
        tmp_path.chmod(0o700)
        sandbox_module.rescan_owner_only_paths()
        assert (str(place / "rotated.log"), False) in sandbox_module.owner_only_paths()  # in the scan
        (place / "rotated.log").unlink()
        out = run_shell(tmp_path, "id -u; echo STARTED", cwd=str(tmp_path))
        assert out.split()[:2] == ["0", "STARTED"], out
        (place / "new.key").write_text("NEW-ROOT-ONLY")  # made after the scan
        (place / "new.key").chmod(0o600)
        monkeypatch.setattr(sandbox_module, "OWNER_ONLY_REFRESH", 0.0)  # the scan's time is up
        out = run_shell(tmp_path, f"cat {place}/new.key; echo END", cwd=str(tmp_path))
        assert "NEW-ROOT-ONLY" not in out and "END" in out, out
    finally:
        shutil.rmtree(place)
        sandbox_module.rescan_owner_only_paths()


@needs_sandbox
def test_a_program_in_a_folder_right_under_tmp_runs_in_the_sandbox(tmp_path):
    folder = Path(tempfile.mkdtemp(prefix="arb-prog-"))  # /tmp/arb-prog-X/prog: its grandparent is /tmp
    try:
        prog = folder / "prog"
        prog.write_text("#!/bin/sh\necho RAN-INSIDE\n")
        prog.chmod(0o755)
        folder.chmod(0o755)
        work = Path(tempfile.mkdtemp(prefix="arb-test-"))
        cfg = EngineConfig([str(prog)], name="prog", cwd="/")
        proc = EngineProcess(cfg, cfg.argv(""), env=engine_environment(cfg, {"HOME": str(work)}), token="t" * 8,
                             log_path=tmp_path / "prog.log", work_dir=work)
        try:
            assert proc.wait(10)
        finally:
            proc.kill()
            shutil.rmtree(work, ignore_errors=True)
        assert "RAN-INSIDE" in (tmp_path / "prog.log").read_text()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_an_engine_run_by_the_referees_own_python_sees_the_project_wherever_it_lies():
    # A checkout under /tmp (CI clones there) lies in a folder the sandbox replaces: the project's
    # folder and this Python's path are shown again for {python} engines (the sample engines).
    from arbiter.hosting.process import own_python_paths

    root = own_python_paths()[0]
    assert (root / "arbiter").is_dir() and (root / "sample_engines").is_dir()
    assert all(p.is_absolute() for p in own_python_paths())


@needs_sandbox
def test_a_hidden_file_reads_as_empty(tmp_path):
    key = tmp_path / "referee.key"
    key.write_text("SECRET-KEY")
    key.chmod(0o600)
    out = run_shell(tmp_path, f"cat {key}; echo END", hide=(str(key),))
    assert "SECRET-KEY" not in out and "END" in out


def test_the_cli_hides_the_key_and_the_seed_file_from_engines(tmp_path):
    from arbiter.cli import _hosting, build_parser

    args = build_parser().parse_args(["match", "--game", "einstein", "--engine", "a", "--engine", "b",
                                      "--key", str(tmp_path / "k.key"), "--seed-file", str(tmp_path / "seed")])
    assert set(_hosting(args)["hide"]) == {str((tmp_path / "k.key").resolve()), str((tmp_path / "seed").resolve())}


def test_the_cli_pins_each_engine_to_its_cores_and_names_a_bad_list(tmp_path):
    import subprocess

    from arbiter.cli import _engine_config, build_parser

    args = build_parser().parse_args(["match", "--game", "einstein", "--engine", "a", "--engine", "b",
                                      "--cpus", "0", "--cpus", "0-1"])
    assert _engine_config("a", "A", args, index=0).cpus == (0,)
    assert _engine_config("b", "B", args, index=1).cpus == tuple(sorted({0, 1} & os.sched_getaffinity(0)))
    run = subprocess.run([sys.executable, "-m", "arbiter.cli", "match", "--game", "einstein", "--engine", "a",
                          "--engine", "b", "--cpus", "0", "--cpus", "4096", "--db", str(tmp_path / "r.sqlite")],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "--cpus 4096 (engine 2)" in run.stdout + run.stderr, run
    assert not (tmp_path / "r.sqlite").exists()


def _threads_cores(pid: int) -> dict[str, str]:
    """Each thread of ``pid`` (name and id) and the cores it may use."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            status = Path(f"/proc/{pid}/task/{tid}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        out[f"{fields['Name'].strip()}/{tid}"] = fields["Cpus_allowed_list"].strip()
    return out


def test_a_pinned_match_runs_the_referee_and_its_engines_on_that_core(tmp_path):
    import json
    import sqlite3
    import subprocess

    usable = sorted(os.sched_getaffinity(0))
    core, other = usable[-1], usable[0]
    engine = f"{{python}} {Path(__file__).parent / 'engines' / 'where.py'} --think 10"
    cmd = [sys.executable, "-m", "arbiter.cli", "match", "--game", "einstein", "--quiet", "--tc", "60",
           "--format", "games=2", "--db", str(tmp_path / "r.sqlite"), "--pin", str(core),
           "--engine", engine, "--engine", engine, "--cpus", "", "--cpus", str(other)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen: dict[str, str] = {}
    deadline = time.monotonic() + 30
    while proc.poll() is None and time.monotonic() < deadline:  # the referee's threads, while it plays
        threads = _threads_cores(proc.pid)
        if any(name.startswith("ZMQbg/IO") for name in threads):
            seen = threads
            break
        time.sleep(0.02)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert seen and set(seen.values()) == {str(core)}, seen  # every thread, ZeroMQ's I/O threads too
    rows = sqlite3.connect(tmp_path / "r.sqlite").execute("SELECT record FROM games").fetchall()
    cores = {}
    for (text,) in rows:
        record = json.loads(text)
        for event in record["events"]:
            if event["seat"] >= 0:
                cores.setdefault(record["players"][event["seat"]], set()).add(event["info"]["comment"])
    assert len(rows) == 2 and len(cores) == 2, cores
    first, second = (cores[name] for name in sorted(cores))  # A: inherits the pin; B: its own --cpus
    assert first == {str(core)} and second == {str(other)}, cores


@pytest.mark.parametrize("argv, words", [
    (["--pin", "4096"], "--pin 4096: cpus = '4096': core(s) 4096 not available"),
    (["--pin", "x"], "--pin x: cpus = 'x': expected core numbers"),
    (["--pin", "0", "--ponder"], "--pin 0: pondering engines think at the same time"),
])
def test_a_bad_pin_is_refused_before_anything_starts(tmp_path, argv, words):
    import subprocess

    run = subprocess.run([sys.executable, "-m", "arbiter.cli", "match", "--game", "einstein", "--engine", "a",
                          "--engine", "b", "--db", str(tmp_path / "r.sqlite"), *argv], capture_output=True, text=True)
    assert run.returncode == 2 and words in " ".join((run.stdout + run.stderr).split()), run
    assert not (tmp_path / "r.sqlite").exists()


@needs_sandbox
def test_an_engine_cannot_fill_the_disk(tmp_path):
    out = run_shell(tmp_path, "dd if=/dev/zero of=$HOME/big bs=1M count=8 2>&1; dd if=/dev/zero of=/tmp/big bs=1M "
                              "count=8 2>&1; ls $HOME", limits=Limits(disk_mb=2))
    assert out.count("No space left on device") == 2, out


@needs_sandbox
def test_the_sandboxs_other_folders_take_no_writes(tmp_path):
    """Besides its size-limited folders (work folder, /tmp, /var/tmp, /run, /dev/shm) the sandbox
    makes in-memory folders of its own: /dev, the covered homes and the referee's hidden folders.
    Unbounded and writable, they were room past ``disk_mb`` (without a control group, past any
    memory limit: tmpfs is not in a process's address space). Now read-only."""
    hidden = tmp_path / "results"
    hidden.mkdir()
    script = "; ".join(f"dd if=/dev/zero of={folder}/big bs=1M count=8 2>&1 | grep -o 'Read-only file system' | head -1"
                       for folder in ("/dev", "/home", "/root", "/etc/ssh", hidden))
    out = run_shell(tmp_path, script + "; echo x > /dev/null && echo devnull-ok; ls /dev/shm >/dev/null && echo shm-ok",
                    limits=Limits(disk_mb=2), hide=(str(hidden),))
    assert out.count("Read-only file system") == 5, out
    assert "devnull-ok" in out and "shm-ok" in out, out


@needs_sandbox
@pytest.mark.parametrize("child_first", [True, False])
def test_hidden_folders_inside_each_other_in_any_order_start_and_take_no_writes(tmp_path, child_first):
    """A hidden folder inside another (the logs inside the results folder) given first is covered
    by the second: it is out of sight, and remounting it read-only found no such folder, so the
    engine could not start at all."""
    outer = tmp_path / "outer"
    (outer / "inner").mkdir(parents=True)
    hide = (str(outer / "inner"), str(outer)) if child_first else (str(outer), str(outer / "inner"))
    out = run_shell(tmp_path, f"echo started; touch {outer}/x {outer}/inner/y 2>&1 | grep -c 'cannot touch'",
                    hide=hide)
    assert out.split() == ["started", "2"], out


@needs_sandbox
def test_results_right_in_tmp_leave_the_engine_a_writable_tmp(tmp_path):
    """``--db /tmp/results.sqlite`` hides /tmp, the results' folder: the engine's /tmp is fresh
    and empty already, and must stay writable (its TMPDIR) and size-limited."""
    out = run_shell(tmp_path, "dd if=/dev/zero of=/tmp/big bs=1M count=8 2>&1 | grep -o 'No space left on device'",
                    limits=Limits(disk_mb=2), hide=("/tmp",))
    assert out.strip() == "No space left on device", out


REFEREE_THEN_WAIT = """
import sys, time
from arbiter.hosting import EngineConfig, EngineSession
session = EngineSession(EngineConfig([sys.executable, "-m", "sample_engines.random_engine"], name="e",
                                     cwd=sys.argv[1]), sys.argv[2])
session.launch()
session.handshake()
print(*sorted(str(d) for d in set(session.process.cgroup.dirs.values())), flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not sandbox_module.support().cgroup, reason="no control groups for engines here")
def test_a_referee_killed_with_9_leaves_nothing_in_its_engines_control_groups(tmp_path):
    """The guardian (arbiter.hosting.guardian): whatever is in a killed referee's engine control
    groups dies, even a process the death signals could not reach (here: one the test puts there,
    as bubblewrap's inner process is when the referee dies in the instant it re-arms its signal)."""
    import signal
    import subprocess

    import psutil

    root = Path(__file__).resolve().parent.parent
    referee = subprocess.Popen([sys.executable, "-c", REFEREE_THEN_WAIT, str(root), str(tmp_path)], cwd=root,
                               stdout=subprocess.PIPE, text=True)
    stray = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        groups = [Path(d) for d in referee.stdout.readline().split()]
        assert groups and all(g.name.startswith(f"arbiter-{referee.pid}-") for g in groups)
        (groups[0] / "cgroup.procs").write_text(str(stray.pid))  # in the group, out of every death signal's way
        engine_pids = [int(p) for g in groups for p in (g / "cgroup.procs").read_text().split()]
        assert stray.pid in engine_pids and len(engine_pids) >= 2
        engines = []
        for pid in set(engine_pids) - {stray.pid}:
            try:
                engines.append(psutil.Process(pid))
            except psutil.NoSuchProcess:  # a passing process of the sandbox's start
                pass
        referee.send_signal(signal.SIGKILL)
        referee.wait(10)
        gone, alive = psutil.wait_procs(engines, timeout=10)
        assert stray.wait(10) == -signal.SIGKILL  # the guardian's doing: nothing else knew of it
        assert not alive
        deadline = time.monotonic() + 10
        while any(g.exists() for g in groups) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(g.exists() for g in groups), "the control groups were not removed"
    finally:
        for p in (referee, stray):
            if p.poll() is None:
                p.kill()
                p.wait()


@pytest.mark.skipif(not sandbox_module.support().cgroup, reason="no control groups for engines here")
def test_a_referee_killed_with_9_leaves_no_temporary_folder(tmp_path):
    """Before: each engine's folder (its session secret, what it wrote in its HOME) and its
    socket's folder stayed in the temporary directory for ever after a ``kill -9`` of the referee
    (nothing of the referee runs then); its guardian removes them."""
    import signal
    import subprocess

    root = Path(__file__).resolve().parent.parent
    temp = tmp_path / "temp"
    temp.mkdir()
    referee = subprocess.Popen([sys.executable, "-c", REFEREE_THEN_WAIT, str(root), str(tmp_path / "logs")], cwd=root,
                               stdout=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(temp)})
    try:
        assert referee.stdout.readline().split(), "no engine started"
        assert list(temp.glob("arb-engine-*")) and [p for p in temp.glob("arb-*/*") if p.is_dir()]
        referee.send_signal(signal.SIGKILL)
        referee.wait(10)
        assert left_after(temp) == []
    finally:
        if referee.poll() is None:
            referee.kill()


UNSANDBOXED_REFEREE_THEN_WAIT = """
import sys, time
from arbiter.hosting import EngineConfig, EngineSession, SandboxMode
# The engine leaves a child in a session of its own: no death signal reaches it, nor the engine's group.
engine = ("import subprocess, sys, runpy; child = subprocess.Popen(['sleep', '600'], start_new_session=True); "
          "open(sys.argv[1], 'w').write(str(child.pid)); sys.argv = sys.argv[:1]; "
          "runpy.run_module('sample_engines.random_engine', run_name='__main__')")
session = EngineSession(EngineConfig([sys.executable, "-c", engine, sys.argv[3]], name="e", cwd=sys.argv[1],
                                     sandbox=SandboxMode.NONE), sys.argv[2])
session.launch()
session.handshake()
print("ready", flush=True)
time.sleep(600)
"""


def test_an_unsandboxed_referee_killed_with_9_leaves_no_engine_child_and_no_temporary_folder(tmp_path):
    """Before: only a referee whose engines had control groups had a guardian. With
    ``--sandbox none`` (or a machine that gives the referee no control group) a ``kill -9`` left
    the engines' folders, session secrets included, and whatever the engines had started in
    sessions of their own; the suite's pytest workers, ending with ``os._exit``, left two
    engines' folders in /tmp each run. The guardian now kills what carries the engines' tokens."""
    import signal
    import subprocess

    import psutil

    root = Path(__file__).resolve().parent.parent
    temp = tmp_path / "temp"
    temp.mkdir()
    pid_file = tmp_path / "child.pid"
    referee = subprocess.Popen([sys.executable, "-c", UNSANDBOXED_REFEREE_THEN_WAIT, str(root), str(tmp_path / "logs"),
                                str(pid_file)], cwd=root, stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "TMPDIR": str(temp)})
    child = None
    try:
        assert referee.stdout.readline().strip() == "ready"
        child = psutil.Process(int(pid_file.read_text()))
        assert child.is_running() and os.getsid(child.pid) != os.getsid(referee.pid)
        assert list(temp.glob("arb-engine-*")) and [p for p in temp.glob("arb-*/*") if p.is_dir()]
        referee.send_signal(signal.SIGKILL)
        referee.wait(10)
        gone, alive = psutil.wait_procs([child], timeout=10)
        assert not alive, "the engine's child outlived its referee"
        assert left_after(temp) == []
    finally:
        if referee.poll() is None:
            referee.kill()
        if child is not None and child.is_running():
            child.kill()


REFEREE_PAUSED_IN_A_START = """
import sys, time
from arbiter.hosting import EngineConfig, EngineSession, process, sandbox

def paused(real, probe_only=False):
    def wrapper(*args, **kwargs):
        if not probe_only or kwargs.get("uid") == sandbox.PROBE_UID:
            print("paused", flush=True)
            time.sleep(600)
        return real(*args, **kwargs)
    return wrapper

if sys.argv[3] == "probe":  # its folder made, whether the engine's uid can reach its program being asked
    sandbox.bwrap_argv = paused(sandbox.bwrap_argv, probe_only=True)
else:  # its folders made and given to its uid, its process about to start
    process.keyring_filter_fd = paused(process.keyring_filter_fd)
EngineSession(EngineConfig([sys.executable, "-m", "sample_engines.random_engine"], name="e", cwd=sys.argv[1]),
              sys.argv[2]).launch()
"""


@pytest.mark.skipif(not sandbox_module.support().cgroup, reason="no control groups for engines here")
@pytest.mark.parametrize("moment", ["probe", "spawn"])
def test_a_referee_killed_with_9_while_it_starts_an_engine_leaves_no_temporary_folder(tmp_path, moment):
    """Before: the guardian was told of an engine's folders only once its process had started,
    and of none of the sandbox probe's: a referee killed in the tenths of a second before (a
    tournament director in its pre-flight) left its session secret and socket folder for ever."""
    import signal
    import subprocess

    s = sandbox_module.support()
    if moment == "probe" and not (s.root and s.setpriv and s.sandbox):
        pytest.skip("no probe here: engines get no uid of their own")
    root = Path(__file__).resolve().parent.parent
    temp = tmp_path / "temp"
    temp.mkdir()
    referee = subprocess.Popen([sys.executable, "-c", REFEREE_PAUSED_IN_A_START, str(root), str(tmp_path / "logs"),
                                moment], cwd=root, stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "TMPDIR": str(temp)})
    try:
        assert referee.stdout.readline().strip() == "paused"
        made = {next((k for k in ("engine", "probe") if p.name.startswith(f"arb-{k}-")), "sockets")
                for p in temp.iterdir()}
        assert made == ({"engine", "sockets", "probe"} if moment == "probe" else {"engine", "sockets"}), made
        referee.send_signal(signal.SIGKILL)
        referee.wait(10)
        assert left_after(temp) == []
    finally:
        if referee.poll() is None:
            referee.kill()


def test_the_process_tree_read_from_proc_is_the_tree_psutil_finds(tmp_path):
    """``freeze`` without a control group signals the tree ``process_tree`` reads from /proc's
    children lists (psutil's walk scans every process: ~2 ms a move); both must agree, grandchildren
    and children of other threads included, and a process that has gone is just itself."""
    import subprocess

    import psutil

    from arbiter.hosting.process import process_tree

    script = ("import subprocess, threading, time\n"
              "subprocess.Popen(['sh', '-c', 'sleep 30 & sleep 30; true'])\n"
              "threading.Thread(target=lambda: subprocess.Popen(['sleep', '30'])).start()\n"
              "time.sleep(30)\n")
    root = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 10
        while len(psutil.Process(root.pid).children(recursive=True)) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        expected = sorted([root.pid, *(p.pid for p in psutil.Process(root.pid).children(recursive=True))])
        assert len(expected) == 5, expected
        assert sorted(process_tree(root.pid)) == expected
    finally:
        for pid in process_tree(root.pid):
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        root.wait()
    assert process_tree(root.pid) == [root.pid]


@needs_sandbox
def test_an_engine_kept_in_the_results_folder_is_refused_with_what_to_move(tmp_path):
    """A tournament whose database sits in the folder holding its engine: the sandbox hides that
    folder from engines (the database, the seed), so the engine could only fail inside with
    Python's "can't open file" (or bubblewrap's "execvp: No such file or directory" for a program
    there). Now the pre-flight names the file, the hidden folder and what to do; exit 3."""
    import subprocess

    event = tmp_path / "event"
    event.mkdir()
    (event / "engine.py").write_text("from sample_engines.random_engine import main\nraise SystemExit(main())\n")
    toml = event / "event.toml"
    toml.write_text(f'name = "e"\ngame = "einstein"\nformat = "round_robin"\nmatch = "games=2"\n'
                    f'time_control = "10"\nseed = "s"\noutput = "{event / "results.sqlite"}"\n'
                    + "".join(f'[[engines]]\nname = "e{i}"\ncommand = "{{python}} engine.py"\ncwd = "{event}"\n'
                              for i in range(2)))
    root = Path(__file__).resolve().parent.parent
    check = subprocess.run([sys.executable, "-m", "tournaments", "check", str(toml)], cwd=root, capture_output=True,
                           text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(root)})
    said = " ".join(check.stderr.split())
    assert check.returncode == 3, check.stdout + check.stderr
    assert f"its file {event / 'engine.py'} is inside {event}, which the sandbox hides from engines" in said
    assert 'keep the results in a folder of their own' in said


FORKED_WORKER_STARTS_ENGINES = """
import os, sys, threading, time, psutil
sys.path.insert(0, sys.argv[1])
from arbiter.hosting import guardian
inherited_read, inherited_write = os.pipe()
guardian._started_for, guardian._lifeline = -1, inherited_write  # as a forked worker inherits them
start = threading.Barrier(8)
def lane():
    start.wait()
    guardian.ensure_guardian()
lanes = [threading.Thread(target=lane) for _ in range(8)]
[t.start() for t in lanes]
[t.join() for t in lanes]
me = str(os.getpid())
for _ in range(500):  # a child's command line reads empty until its exec has finished setting it up
    if all(child.cmdline() for child in psutil.Process().children()):
        break
    time.sleep(0.01)
mine = [p for p in psutil.process_iter(["cmdline"]) if (p.info["cmdline"] or [])[1:4] == ["-m", "arbiter.hosting.guardian", me]]
print(len(mine))
"""


def test_lanes_starting_engines_at_once_start_one_guardian_and_close_the_inherited_lifeline_once():
    """A forked tournament worker's lanes spawn their first engines at the same moment: each used to
    see no guardian yet, close the lifeline inherited from the director (the second close hit
    whatever had taken that number meanwhile: an engine's control group, later a ZeroMQ socket's
    signal, 'Address already in use' and once a libzmq abort) and start a guardian of its own."""
    import subprocess

    root = Path(__file__).resolve().parent.parent
    for _ in range(5):  # the race needs the lanes to interleave; five tries made it certain before the fix
        done = subprocess.run([sys.executable, "-c", FORKED_WORKER_STARTS_ENGINES, str(root)], cwd=root,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["1"], done.stdout + done.stderr


def test_coop_with_one_engine_places_each_copy_by_its_own_cpus(tmp_path):
    """One --engine plays both seats of a cooperative game as two processes; before, a second
    --cpus was refused ("given 2 times for 1 --engine(s)"), so the copies could not be placed apart."""
    import json
    import sqlite3
    import subprocess

    usable = sorted(os.sched_getaffinity(0))
    first, second = usable[0], usable[-1]
    engine = f"{{python}} {Path(__file__).parent / 'engines' / 'where.py'}"
    base = [sys.executable, "-m", "arbiter.cli", "coop", "--game", "catalonia", "--quiet", "--tc", "60", "--games", "1",
            "--engine", engine]
    proc = subprocess.run([*base, "--db", str(tmp_path / "r.sqlite"), "--cpus", str(first), "--cpus", str(second)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (text,), = sqlite3.connect(tmp_path / "r.sqlite").execute("SELECT record FROM games").fetchall()
    record = json.loads(text)
    cores = {seat: {e["info"]["comment"] for e in record["events"] if e["seat"] == seat} for seat in (0, 1)}
    assert cores == {0: {str(first)}, 1: {str(second)}}, cores
    refused = subprocess.run([*base, "--db", str(tmp_path / "x.sqlite"), *["--cpus", "0"] * 3],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "--cpus given 3 times for 2 engine processes" in refused.stderr, refused.stderr
