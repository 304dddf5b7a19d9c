"""One tournament process per database, whatever name reaches it: real tournament processes,
workers and engines on a real SQLite file.

* a hard link to a running tournament's database (another name for the same file) finds it
  locked, as a symbolic link does; a forked worker keeps no part of the lock once its tournament
  process is dead;
* a second ``run``/``resume`` of a running tournament is refused before any engine starts;
* a tournament process stopped (SIGTERM) or killed (``kill -9``) leaves nothing in the
  temporary directory.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from arbiter.hosting import sandbox
from conftest import left_after
from tournaments.db import lock_file

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable

SLOW_ENGINE = """
import sys, time
from protocol.kit import run_engine

def decide(request, game):
    time.sleep(0.05)  # slow enough that the tournament is still running while the test looks at it
    return request.legal_moves[0]

run_engine(decide, name="slow", wants_legal_moves=True)
"""

MARKING_ENGINE = """
import os, sys
open(os.path.join(sys.argv[1], f"started-{os.getpid()}"), "w").close()
sys.argv[1:] = []
exec(open(sys.argv[0].replace("marking.py", "slow.py")).read())
"""
"""Leaves a file in the folder it is given, then plays as the slow engine beside it: proof that it started."""

TOML = """\
name = "lock-test"
game = "einstein"
match = "games=400"
time_control = "600"
seed = 11
concurrency = 1
sandbox = "none"
output = "{db}"

[[engines]]
name = "a"
command = {command}

[[engines]]
name = "b"
command = {command}
"""


def event(tmp_path: Path) -> tuple[Path, Path]:
    """The tournament file (slow engines, hundreds of games) and its database's path."""
    engine = tmp_path / "engine" / "slow.py"
    engine.parent.mkdir()
    engine.write_text(SLOW_ENGINE)
    db = tmp_path / "results" / "t.sqlite"
    toml = tmp_path / "t.toml"
    toml.write_text(TOML.format(db=db, command=f'["{{python}}", "{engine}"]'))
    return toml, db


def marking_file(tmp_path: Path, toml: Path) -> tuple[Path, Path]:
    """A second file for the same tournament whose engines leave a file in a folder when they
    start (engine commands are not part of a tournament's fingerprint): (the file, the folder)."""
    slow = tmp_path / "engine" / "slow.py"
    marking = slow.with_name("marking.py")
    marking.write_text(MARKING_ENGINE)
    marks = tmp_path / "marks"
    marks.mkdir()
    text = toml.read_text().replace(f'"{slow}"]', f'"{marking}", "{marks}"]')
    assert text != toml.read_text()
    second = tmp_path / "second.toml"
    second.write_text(text)
    return second, marks


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "tournaments", *args, "--quiet", "--no-report"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def forked_children(pid: int) -> list[psutil.Process]:
    """``pid``'s children that run its command line: forked, not started (not its engines)."""
    me = psutil.Process(pid)
    found = []
    for child in me.children():
        try:
            if child.cmdline() == me.cmdline():
                found.append(child)
        except psutil.Error:  # gone (an engine of the pre-flight)
            pass
    return found


def running(toml: Path, db: Path, env: dict | None = None) -> tuple[subprocess.Popen, list[psutil.Process]]:
    """``run`` started, its database locked and its workers forked: (the process, its workers)."""
    with open(toml.with_suffix(".out"), "w") as out:  # a file, not a pipe its workers would hold open
        proc = subprocess.Popen([PY, "-m", "tournaments", "run", str(toml), "--quiet", "--no-report"], cwd=ROOT,
                                stdout=out, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and proc.poll() is None:
        workers = forked_children(proc.pid)
        lock = Path(f"{db}.lock")
        if workers and lock.exists() and lock.read_text() == f"pid {proc.pid}\n":
            return proc, workers
        time.sleep(0.1)
    proc.kill()
    proc.wait()
    raise AssertionError(f"the tournament did not get going: {toml.with_suffix('.out').read_text()}")


def stop(proc: subprocess.Popen) -> None:
    """End the tournament process (SIGTERM: it stops like Ctrl-C; its workers and engines go with it)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_a_hard_link_to_a_running_tournament_finds_it_locked(tmp_path):
    """Before: the lock was ``<resolved path>.lock``; a hard link resolves to itself, so
    ``resume LINK.sqlite`` took LINK.sqlite.lock and played the running tournament's games again
    (with a -wal of its own: blind to the running process's latest commits)."""
    toml, db = event(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    link = tmp_path / "elsewhere" / "link.sqlite"
    proc, workers = running(toml, db)
    try:
        os.link(db, link)
        refused = cli("resume", str(link))
        assert refused.returncode == 2, refused.stdout + refused.stderr  # as for a symbolic link (EXIT_USAGE)
        assert "link.sqlite is in use by another tournament process" in " ".join(refused.stderr.split())
        assert refused.stdout == ""
        symlink = tmp_path / "elsewhere" / "symlink.sqlite"
        symlink.symlink_to(db)
        refused = cli("resume", str(symlink))
        assert refused.returncode == 2 and f"pid {proc.pid}" in refused.stderr, refused.stderr
        # Refused before SQLite opened the link: no -wal or -shm of its own beside it.
        assert sorted(p.name for p in link.parent.iterdir()) == ["link.sqlite", "symlink.sqlite"]
        # A worker stopped (it cannot act on its parent's death) outlives its tournament process,
        # killed with -9: the database must be free all the same.
        workers[0].suspend()
        proc.kill()
        proc.wait()
        assert workers[0].is_running()
        lock_file(link).close()
        lock_file(db).close()
        # Free now, but a second name never sees the -wal of the name that wrote the last commits.
        refused = cli("resume", str(link))
        assert refused.returncode == 2 and "has 2 names (hard links)" in " ".join(refused.stderr.split()), \
            refused.stdout + refused.stderr
    finally:
        for w in workers:
            try:
                w.kill()
            except psutil.NoSuchProcess:
                pass
        stop(proc)


def test_a_second_run_of_a_running_tournament_is_refused_before_any_engine_starts(tmp_path):
    """Before: ``run`` started and greeted every engine (its pre-flight) and only then found the
    database locked by the running tournament."""
    toml, db = event(tmp_path)
    second, marks = marking_file(tmp_path, toml)
    checked = subprocess.run([PY, "-m", "tournaments", "check", str(second)], cwd=ROOT, capture_output=True,
                             text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert len(list(marks.iterdir())) == 2  # the marking engines mark (check starts each once)
    for mark in marks.iterdir():
        mark.unlink()
    proc, _ = running(toml, db)
    try:
        for args in (["run", str(second)], ["run", str(second), "--overwrite"], ["resume", str(second)]):
            began = time.monotonic()
            refused = cli(*args)
            took = time.monotonic() - began
            assert refused.returncode == 2, (args, refused.stdout + refused.stderr)
            assert f"is in use by another tournament process (pid {proc.pid})" in " ".join(refused.stderr.split())
            assert not list(marks.iterdir()), f"{args}: engines started before the refusal"
            assert took < 30, f"{args}: refused after {took:.1f}s"
        assert proc.poll() is None  # still playing, its database untouched by the refusals
    finally:
        stop(proc)


def test_a_tournament_stopped_by_sigterm_leaves_no_temporary_folder(tmp_path):
    """Before: the workers' engines were killed, but a worker ends with ``os._exit`` and left each
    running engine's folder (its session secret) and its socket's folder in the temporary
    directory: thousands of them on a machine that runs events all day."""
    toml, db = event(tmp_path)
    temp = tmp_path / "temp"
    temp.mkdir()
    proc, workers = running(toml, db, env={**os.environ, "TMPDIR": str(temp)})
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not list(temp.glob("arb-engine-*")):
            time.sleep(0.05)
        assert list(temp.glob("arb-engine-*")), "no engine started"
        time.sleep(0.5)
    finally:
        stop(proc)
    assert psutil.wait_procs(workers, timeout=10)[1] == []
    assert sorted(p.name for p in temp.iterdir()) == []


SLEEPY_ENGINE = """
import sys, time
time.sleep(2)  # a pre-flight that lasts: the test kills the director in it
exec(open(sys.argv[0].replace("sleepy.py", "slow.py")).read())
"""


GUARDED = pytest.mark.skipif(not sandbox.support().cgroup, reason="no control groups for engines here: no guardian")


@pytest.mark.parametrize("when, guarded", [pytest.param("preflight", True, marks=GUARDED),
                                           pytest.param("play", True, marks=GUARDED), ("play", False)])
def test_a_tournament_killed_with_9_leaves_no_temporary_folder(tmp_path, when, guarded):
    """Before: the forked workers bound their engines' sockets in the director's folder, which
    stayed (empty) after a ``kill -9`` of the director once its pre-flight was over: its guardian
    was told of that folder only with the pre-flight's engines, and forgot it when they stopped.
    Now the director removes it after its pre-flight, and each worker's folder is its own, removed
    by its hurried exit: without a guardian too. (A kill in the start of an engine, which only
    a guardian can clean up after: tests/test_isolation.py.)"""
    toml, db = event(tmp_path)
    text = toml.read_text()
    if guarded:
        text = text.replace('sandbox = "none"\n', "")  # sandboxed, in control groups: guarded
        text = text.replace("command = ", f'cwd = "{tmp_path / "engine"}"  # shown in the sandbox\ncommand = ')
    if when == "preflight":
        (tmp_path / "engine" / "sleepy.py").write_text(SLEEPY_ENGINE)
        text = text.replace("slow.py", "sleepy.py")
    toml.write_text(text)
    temp = tmp_path / "temp"
    temp.mkdir()
    with open(toml.with_suffix(".out"), "w") as out:
        proc = subprocess.Popen([PY, "-m", "tournaments", "run", str(toml), "--quiet", "--no-report"], cwd=ROOT,
                                stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "TMPDIR": str(temp)})
    workers: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            workers = forked_children(proc.pid)
            if len(list(temp.glob("arb-engine-*"))) == 2 and (when == "play") == bool(workers):
                break
            time.sleep(0.02)
        else:
            raise AssertionError(f"no engines in {when}: {toml.with_suffix('.out').read_text()}")
        time.sleep(0.5)
        assert when == "play" or not forked_children(proc.pid), "the pre-flight was over"
        proc.kill()
        proc.wait()
        assert psutil.wait_procs(workers, timeout=10)[1] == []
        assert left_after(temp) == []  # once the guardians are done
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for w in workers:
            try:
                w.kill()
            except psutil.NoSuchProcess:
                pass


def test_a_director_starting_on_an_output_another_is_starting_on_is_refused_and_touches_nothing(tmp_path):
    """Two ``run``s of one new event at once. Before: the lock was taken only once the new
    database was in place, so the second director, finding no database yet, deleted the first's
    new database and export and put its own in their place; both then stopped (seen 2 times in 9).
    The test holds the lock a director holds while it makes the database (``lock_file(new=True)``)."""
    toml, db = event(tmp_path)
    toml.write_text(toml.read_text().replace('match = "games=400"', 'match = "games=2"'))
    db.parent.mkdir()
    held = lock_file(db, new=True)
    try:
        refused = cli("run", str(toml))
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert f"is in use by another tournament process (pid {os.getpid()})" in " ".join(refused.stderr.split())
        assert sorted(p.name for p in db.parent.iterdir()) == ["t.sqlite.lock"]  # no database made, no engine started
        db.write_text("the first director's new database")  # in place now: the second still keeps off it
        assert cli("run", str(toml), "--overwrite").returncode == 2
        assert db.read_text() == "the first director's new database"
    finally:
        held.close()
    db.unlink()
    played = cli("run", str(toml))  # the first director gone: the output is free
    assert played.returncode == 0, played.stdout + played.stderr
