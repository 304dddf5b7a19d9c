"""The suite's own rule: under pytest-xdist (``make test``), a ``serial`` test has nothing beside it."""
from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent

FILE = '''
import time
import pytest

def note(name, what):
    with open({log!r}, "a") as f:
        f.write(f"{{time.monotonic():.4f}} {{name}} {{what}}\\n")

@pytest.mark.parametrize("i", range({n}))
def test_ordinary(i):
    note("{tag}%d" % i, "start"); time.sleep(0.1); note("{tag}%d" % i, "end")

@pytest.mark.serial
def test_alone():
    note("S{tag}", "start"); time.sleep(0.4); note("S{tag}", "end")
'''


def test_a_serial_test_runs_while_no_other_test_does(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(HERE / "conftest.py", suite / "conftest.py")
    (suite / "pytest.ini").write_text("[pytest]\nmarkers =\n    serial: alone\n")
    log = tmp_path / "log.txt"
    for tag, n in (("a", 6), ("b", 10)):
        (suite / f"test_{tag}.py").write_text(textwrap.dedent(FILE.format(log=str(log), n=n, tag=tag)))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist",
                          "loadfile", "--basetemp", str(tmp_path / "base")], cwd=suite, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = log.read_text().splitlines()
    running: set[str] = set()
    overlaps = []
    for _, name, what in (line.split() for line in lines):
        if what == "start":
            if running and (name.startswith("S") or any(other.startswith("S") for other in running)):
                overlaps.append((name, sorted(running)))
            running.add(name)
        else:
            running.discard(name)
    assert sum(line.endswith("start") for line in lines) == 18 and not overlaps, overlaps
