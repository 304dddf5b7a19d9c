"""What the live match display costs (issue 13): `arbiter match` with its display on a real
terminal (a pseudo-terminal, so rich really redraws) against `--quiet`, same games.

    .venv/bin/python bench/bench_display.py [--games 300] [--rounds 3]

Rounds alternate quiet / live. games/s counts from the match's first game start to its last game
end (as bench_anchors.py), read from the results database.
"""
from __future__ import annotations

import argparse
import os
import pty
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
RANDOM = "{python} -m sample_engines.random_engine"


def games_per_second(db: Path) -> float:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT json_extract(record, '$.started_at'), ended_at FROM games").fetchall()
    finally:
        conn.close()
    return len(rows) / (max(e for _, e in rows) - min(s for s, _ in rows))


def run(games: int, live: bool, folder: Path, k: int) -> tuple[float, int]:
    """One match; (games/s, bytes the display wrote)."""
    db = folder / f"{'live' if live else 'quiet'}-{k}.sqlite"
    argv = [PY, "-m", "arbiter.cli", "match", "--game", "einstein", "--engine", RANDOM, "--engine", RANDOM,
            "--format", f"games={games}", "--tc", "10", "--db", str(db)] + ([] if live else ["--quiet"])
    master, slave = pty.openpty()
    env = {**os.environ, "ARBITER_SEED": "0123abcd", "COLUMNS": "120", "LINES": "40", "TERM": "xterm-256color"}
    proc = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    written = [0]

    def drain():
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            written[0] += len(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    code = proc.wait()
    reader.join(timeout=5)
    os.close(master)
    assert code == 0, f"exit {code}"
    return games_per_second(db), written[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    quiet, live = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.rounds):
            for is_live, out in ((False, quiet), (True, live)):
                rate, written = run(args.games, is_live, Path(tmp), k)
                out.append(rate)
                print(f"round {k + 1} {'live ' if is_live else 'quiet'}: {rate:6.1f} games/s, "
                      f"{written / 1024:7.1f} KiB to the terminal", flush=True)
    q, lv = statistics.median(quiet), statistics.median(live)
    print(f"median: quiet {q:.1f} games/s, live {lv:.1f} games/s: the display costs {100 * (1 - lv / q):+.1f} %"
          f" (load average {os.getloadavg()[0]:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
