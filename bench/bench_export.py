"""Export, import and verify times (and peak memory) for a results database, and the cost of the
report's ratings over time.

    .venv/bin/python bench/bench_export.py DB.sqlite [--synthetic-games 100000]

Runs the real commands (``arbiter export``/``import``/``verify``) in subprocesses on a copy of
the games in DB (a tournament database), then times ``rating_timeline`` on DB's games and on a
synthetic event of N games drawn from them.
"""
from __future__ import annotations

import argparse
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def timed(*args: str) -> tuple[float, float]:
    """(seconds, peak RSS of the child in MB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({done.returncode}): {done.stdout}{done.stderr}")
    return elapsed, max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--synthetic-games", type=int, default=100_000)
    args = ap.parse_args()
    from arbiter.records.store import load_records
    from tournaments.report import _load, rating_timeline

    n = len(load_records(args.db))
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in ("text", "csv"):
            out = Path(tmp) / f"games.{fmt}"
            t_exp, m_exp = timed("arbiter.cli", "export", args.db, "--format", fmt, "-o", str(out))
            new = Path(tmp) / f"new-{fmt}.sqlite"
            t_imp, m_imp = timed("arbiter.cli", "import", str(out), "--db", str(new))
            t_ver, _ = timed("arbiter.cli", "verify", str(new))
            print(f"{fmt:4s}: {n} games, {out.stat().st_size / n:.0f} bytes/game; export {t_exp:.2f} s; "
                  f"import {t_imp:.2f} s ({n / t_imp:.0f} games/s); verify {t_ver:.2f} s; "
                  f"peak RSS so far {max(m_exp, m_imp):.0f} MB")
    cfg, _, games = _load(args.db)
    names = [e.name for e in cfg.engines]
    start = time.perf_counter()
    tl = rating_timeline(cfg, names, games)
    print(f"ratings over time: {len(games)} games, {len(tl['games'])} points: {time.perf_counter() - start:.3f} s")
    rnd = random.Random(1)
    big = [dict(rnd.choice(games), seq=i + 1) for i in range(args.synthetic_games)]
    start = time.perf_counter()
    tl = rating_timeline(cfg, names, big)
    print(f"ratings over time: {len(big)} synthetic games, {len(tl['games'])} points: "
          f"{time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
