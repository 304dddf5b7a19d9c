"""The same master seed gives the same games: a re-run of a seeded match reproduces every roll,
move and result (with engines whose moves depend only on the game)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from arbiter.records.store import load_records

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def _engine(seed: int) -> str:
    return f"{PY} -m sample_engines.random_engine --seed {seed}"


def _played(tmp_path: Path, name: str, seed_hex: str, *extra: str) -> list[tuple]:
    """Play a seeded ``arbiter match`` (the seed from a mode-600 file) into its own database; its
    games without what differs between runs anyway (ids, timings)."""
    seed_file = tmp_path / f"{name}.seed"
    seed_file.write_text(seed_hex)
    seed_file.chmod(0o600)
    db = tmp_path / f"{name}.sqlite"
    run = subprocess.run([PY, "-m", "arbiter.cli", "match", "--game", "einstein", "--engine", _engine(3),
                          "--engine", _engine(4), "--tc", "inf", "--format", "games=4", "--seed-file", str(seed_file),
                          "--db", str(db), "--quiet", *extra],
                         cwd=ROOT, env={**os.environ, "COLUMNS": "120"}, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    games = []
    for r in sorted(load_records(db), key=lambda r: r.game_number):
        moves = [(e.seat, e.kind, e.move) for e in r.events]
        games.append((r.game_number, r.players, r.dice_stream, r.dice_commitment, r.dice_seed,
                      [(x.index, x.outcomes, x.value) for x in r.rolls], moves, r.returns, str(r.reason)))
    assert len(games) == 4
    return games


def test_a_seeded_match_played_again_has_the_same_dice_and_games(tmp_path):
    """It did not: a game's dice stream was named from the match id, drawn afresh for each run,
    so the same ``--seed-file`` gave other dice (and other games) every time."""
    first = _played(tmp_path, "first", "00112233445566778899aabbccddeeff")
    again = _played(tmp_path, "again", "00112233445566778899aabbccddeeff")
    assert first == again
    other = _played(tmp_path, "other", "ffeeddccbbaa99887766554433221100")
    assert [g[5] for g in other] != [g[5] for g in first]  # another seed: other rolls


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
