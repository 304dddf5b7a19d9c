#!/usr/bin/env python
"""Tournament benchmark: rating fit time, tournament throughput, the referee's CPU share.

Run from the repository root::

    .venv/bin/python bench/bench_tournaments.py            # full run (~1-2 minutes)
    .venv/bin/python bench/bench_tournaments.py --quick    # smoke (< 30 s)

1. Rating fit: Bradley–Terry with a first-move term, 100 players, 100,000 synthetic games
   (true ratings ~ N(0, 200) Elo, first-move advantage 30 Elo); the median of several fits,
   with model-based covariance and with the cluster-robust one (games in pairs). Also the
   95% interval coverage of the true ratings in that run.
2. Throughput: a round robin of four ``sample_engines.random_engine`` processes playing
   EinStein (tc 180, ``games=N`` matches), through the whole tournament machinery (director,
   worker processes, Series, SQLite commit per game), at concurrency 1 and 2. Reported: games
   per second over the whole run (start-up and shut-down included) and in the steady state
   (from the first to the last committed game).
3. CPU share: CPU time of the tournament process and its workers (the referee side) against
   all CPU time used, engines included (the workers report their own CPU; the rest of their
   children's time is the engines').
4. Scale (``--scale GAMES``, alone): ``arbiter-tournament run`` of a round robin of 10 random
   engines, end to end, as a subprocess. Every few seconds the coordinator's own CPU time
   (``/proc/PID/stat``: the tournament process, not its workers or engines) and the number of
   committed games (read-only from the database) are sampled; printed per window: games/s and
   the coordinator's CPU per committed game, which must not grow with the number of games
   already played (planning, commits and bookkeeping per game stay constant).

       .venv/bin/python bench/bench_tournaments.py --scale 100000 --concurrency 2 --out runs/scale
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from tournaments import api  # noqa: E402
from tournaments.config import parse_config  # noqa: E402
from tournaments.ratings import fit_bradley_terry  # noqa: E402


def machine() -> str:
    try:
        model = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        model = platform.processor()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{model}; {os.cpu_count()} cores; Python {platform.python_version()}; numpy {np.__version__}; "
            f"load average {load:.2f} at start")


def bench_fit(repeats: int) -> None:
    rng = np.random.default_rng(1)
    n, games = 100, 100_000
    true = rng.normal(0, 200, n)
    true -= true.mean()
    f = rng.integers(0, n, games)
    s = rng.integers(0, n - 1, games)
    s = np.where(s >= f, s + 1, s)
    p = 1 / (1 + 10 ** (-(true[f] - true[s] + 30) / 400))
    score = (rng.random(games) < p).astype(float)
    clusters = np.arange(games) // 2
    fit_bradley_terry(f[:500], s[:500], score[:500], n)  # warm-up (imports, caches)
    times, robust_times = [], []
    fit = robust = None
    for _ in range(repeats):
        t = time.perf_counter()
        fit = fit_bradley_terry(f, s, score, n)
        times.append(time.perf_counter() - t)
        t = time.perf_counter()
        robust = fit_bradley_terry(f, s, score, n, clusters=clusters)
        robust_times.append(time.perf_counter() - t)
    cover = float(np.mean((fit.lo <= true) & (true <= fit.hi)))
    print("1. Rating fit, 100 players / 100,000 games (target < 1 s)")
    print(f"   model covariance:          median {statistics.median(times) * 1000:7.1f} ms "
          f"(min {min(times) * 1000:.1f}, max {max(times) * 1000:.1f}; {fit.iterations} Newton steps)")
    print(f"   cluster-robust (pairs):    median {statistics.median(robust_times) * 1000:7.1f} ms")
    print(f"   first-move advantage: {fit.first_move_elo:.1f} ± {1.96 * fit.first_move_se:.1f} Elo (true 30); "
          f"95% intervals cover {cover * 100:.0f}% of the true ratings; mean ±{1.96 * fit.se.mean():.1f} Elo")


TOML = """
name = "bench-c{concurrency}"
game = "einstein"
format = "round_robin"
match = "games={games}"
time_control = "180"
seed = "bench"
concurrency = {concurrency}
output = "{db}"
""" + "".join(f"""
[[engines]]
name = "random{i}"
command = "{{{{python}}}} -m sample_engines.random_engine --seed {i}"
""" for i in range(4))


def bench_throughput(levels: list[int], games: int) -> None:
    print(f"2./3. Tournament throughput: random EinStein engines, round robin of 4, games={games} per pairing "
          f"({6 * games} games), tc 180")
    print("   concurrency  games  wall s  games/s  steady games/s  referee CPU share"
          "  (tournament / workers / engines CPU s)")
    for c in levels:
        with tempfile.TemporaryDirectory() as d:
            db = Path(d) / "bench.sqlite"
            cfg = parse_config(TOML.format(concurrency=c, games=games, db=db), "bench.toml")
            opened = api.start(cfg)
            stamps: list[float] = []
            t = time.perf_counter()
            _, summary = api.play(opened, on_game=lambda r, spec, rec: stamps.append(time.perf_counter()))
            wall = time.perf_counter() - t
            opened.db.close()
            steady = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else float("nan")
            print(f"   {c:11d}  {summary.committed:5d}  {wall:6.1f}  {summary.committed / wall:7.2f}  {steady:14.2f}"
                  f"  {100 * summary.referee_cpu_share:16.0f}%  ({summary.cpu_parent:.1f} / {summary.cpu_workers:.1f}"
                  f" / {summary.cpu_engines:.1f})")


SCALE_TOML = """
name = "scale"
game = "einstein"
format = "round_robin"
match = "games={games}"
time_control = "180"
seed = "scale"
concurrency = {concurrency}
output = "{db}"
""" + "".join(f"""
[[engines]]
name = "random{i}"
command = "{{{{python}}}} -m sample_engines.random_engine --seed {i}"
cwd = "{{root}}"
""" for i in range(10))


def _cpu_seconds(pid: int) -> float:
    """utime + stime of one process (all its threads, none of its children)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _committed(db: Path) -> int:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return con.execute("SELECT count(*) FROM games").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return -1


def bench_scale(games: int, concurrency: int, out: Path, every: float) -> None:
    """One ``arbiter-tournament run`` of a 10-engine round robin with about ``games`` games."""
    per_pairing = math.ceil(games / 45)
    out.mkdir(parents=True, exist_ok=True)
    db = (out / f"scale-{games}.sqlite").resolve()
    toml = out / f"scale-{games}.toml"
    toml.write_text(SCALE_TOML.format(games=per_pairing, concurrency=concurrency, db=db, root=ROOT))
    log = open(out / f"scale-{games}.log", "w")
    cmd = [sys.executable, "-m", "tournaments", "run", str(toml), "--overwrite", "--quiet", "--no-report"]
    print(f"4. Scale: {' '.join(cmd)}\n   10 random engines, round robin, games={per_pairing} per pairing "
          f"({45 * per_pairing} games), tc 180, concurrency {concurrency}; load average {os.getloadavg()[0]:.2f}")
    print("   committed  wall s  games/s (window)  coordinator CPU ms/game (window)  cumulative ms/game  load")
    t0 = time.monotonic()
    kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    last = (t0, 0, 0.0)
    windows: list[tuple[int, float]] = []
    try:
        while proc.poll() is None:
            time.sleep(every)
            try:
                cpu = _cpu_seconds(proc.pid)
            except OSError:
                break
            n, now = _committed(db), time.monotonic()
            if n <= last[1]:
                continue
            rate = (n - last[1]) / (now - last[0])
            per = (cpu - last[2]) / (n - last[1]) * 1000
            windows.append((n, per))
            print(f"   {n:9d}  {now - t0:6.0f}  {rate:16.1f}  {per:32.2f}  {cpu / n * 1000:18.2f}  "
                  f"{os.getloadavg()[0]:.2f}", flush=True)
            last = (now, n, cpu)
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait()
        log.close()
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = (kids.ru_utime + kids.ru_stime) - (kids0.ru_utime + kids0.ru_stime)  # the whole tree, reaped
    wall = time.monotonic() - t0
    print(f"   {last[1]} games in {wall:.0f} s: {last[1] / wall:.1f} games/s; coordinator CPU {last[2]:.1f} s of "
          f"{total:.1f} s used by the whole run (workers, engines): coordinator share {100 * last[2] / total:.1f} %")
    tail = (out / f"scale-{games}.log").read_text().strip().splitlines()[-3:]
    print("   arbiter-tournament run said: " + " | ".join(tail))
    early = [p for n, p in windows[1:] if n <= max(1000, windows[1][0])]  # the first window holds start-up
    late = [p for n, p in windows if n >= windows[-1][0] - max(1000, windows[-1][0] // 20)]
    if early and late:
        a, b = statistics.median(early), statistics.median(late)
        print(f"   coordinator CPU per game: first ~1k games {a:.2f} ms, last windows (at {windows[-1][0]} games) "
              f"{b:.2f} ms: ratio {b / a:.2f} (target <= 1.5)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats and games")
    parser.add_argument("--scale", type=int, metavar="GAMES", help="only the end-to-end scale run of about GAMES games")
    parser.add_argument("--concurrency", type=int, default=2, help="for --scale")
    parser.add_argument("--every", type=float, default=5.0, help="for --scale: seconds between samples")
    parser.add_argument("--out", default="runs/scale", help="for --scale: folder for the database and log")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    if args.scale:
        bench_scale(args.scale, args.concurrency, Path(args.out), args.every)
        return 0
    bench_fit(3 if args.quick else 7)
    bench_throughput([1, 2], 10 if args.quick else 40)
    return 0


if __name__ == "__main__":
    sys.exit(main())
