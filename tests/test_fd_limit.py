"""A referee under a low open-file limit (``ulimit -n``): running out of file descriptors ends
the match with one clear line, or forfeits the engine that could not start, never a traceback,
and leaves no engine behind."""
from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
import pytest

from conftest import left_after

ROOT = Path(__file__).resolve().parent.parent
RANDOM = "{python} -m sample_engines.random_engine"


def limited(limit: int):
    def set_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
    return set_limit


def run_limited(argv: list[str], limit: int, cwd: Path, temp: Path) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120, preexec_fn=limited(limit),
                          env={**os.environ, "TMPDIR": str(temp)})


@pytest.fixture
def temp():
    """A temporary folder for the referee, short enough a name for its engines' sockets; at the
    end it must be empty. Before, the folders of the engines a referee short of descriptors could
    not start stayed (their session secrets included): it had no descriptor left to remove them."""
    folder = Path(tempfile.mkdtemp(prefix="fd-"))
    yield folder
    left = left_after(folder)
    shutil.rmtree(folder, ignore_errors=True)
    assert left == []


def engines_left(folder: Path) -> list[psutil.Process]:
    left = []
    for p in psutil.process_iter(["cmdline", "environ"]):
        try:
            if "sample_engines.random_engine" in " ".join(p.info["cmdline"] or []) and str(folder) in \
                    " ".join(p.info["cmdline"] or []) + str(p.cwd()):
                left.append(p)
        except (psutil.Error, OSError):
            continue
    return left


def test_a_match_that_cannot_start_an_engine_says_so_in_one_line(tmp_path, temp):
    argv = [sys.executable, "-m", "arbiter.cli", "match", "--game", "einstein", "--engine", RANDOM,
            "--engine", RANDOM, "--tc", "st=0.01", "--format", "games=2", "--db", str(tmp_path / "r.sqlite"),
            "--quiet"]
    seen = set()
    for limit in (16, 20, 24, 28):  # from "cannot even start" to "one engine could not"
        out = run_limited(argv, limit, tmp_path, temp)
        assert "Traceback" not in out.stdout + out.stderr, f"limit {limit}:\n{out.stdout}{out.stderr}"
        if out.returncode == 0:
            continue
        assert out.returncode == 3, f"limit {limit}: exit {out.returncode}\n{out.stderr}"
        text = out.stdout + out.stderr
        assert "ran out of file descriptors" in text and f"limit {limit} open files" in text, text
        # short of files is no reason to run engines unconfined
        assert not [line for line in text.splitlines() if "WITHOUT a sandbox" in line and "open files" in line], text
        seen.add(limit)
    assert seen, "no limit was low enough to run out: the test tests nothing"
    assert not engines_left(tmp_path)


def test_a_tournament_short_of_descriptors_forfeits_or_stops_cleanly(tmp_path, temp):
    toml = tmp_path / "t.toml"
    engines = "".join(f'[[engines]]\nname = "r{i}"\ncommand = "{RANDOM} --seed {i}"\n' for i in range(4))
    toml.write_text(f'game = "einstein"\nmatch = "games=2"\nseed = 3\ntime_control = "st=0.01"\n'
                    f'concurrency = 4\non_start_failure = "forfeit"\noutput = "t.sqlite"\n' + engines)
    out = run_limited([sys.executable, "-m", "tournaments", "run", str(toml), "--quiet"], 45, tmp_path, temp)
    assert "Traceback" not in out.stderr + out.stdout, out.stderr
    assert out.returncode in (0, 3), out.stderr
    text = out.stderr + out.stdout
    assert "file descriptors" in text or "not_start" in text, text
    assert not engines_left(tmp_path)
