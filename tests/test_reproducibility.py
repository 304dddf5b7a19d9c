"""The master seed: drawn long enough that the game seeds revealed after each game cannot lead
back to it. (That a seed and a match id reproduce a game exactly: tests/test_integration.py.)"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def test_a_tournament_without_a_seed_draws_a_128_bit_one_and_stores_it(tmp_path):
    """The drawn seed had 64 bits: every game's revealed dice seed is a keyed hash of it, so a
    search of 2**64 could recover it and predict the rest of the tournament's dice."""
    import sqlite3

    db = tmp_path / "t.sqlite"
    engines = "".join(f'[[engines]]\nname = "r{i}"\ncommand = "{{python}} -m sample_engines.random_engine --seed {i}"\n'
                      for i in (1, 2))
    toml = tmp_path / "t.toml"
    toml.write_text(f'name = "noseed"\ngame = "einstein"\nformat = "round_robin"\nmatch = "games=2"\n'
                    f'time_control = "inf"\noutput = "{db}"\n{engines}')
    run = subprocess.run([PY, "-m", "tournaments", "run", str(toml), "-q", "--no-report"], cwd=ROOT,
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    with sqlite3.connect(db) as con:
        seed = dict(con.execute("SELECT key, value FROM tournament_meta"))["seed"]
    assert len(bytes.fromhex(seed)) >= 16
