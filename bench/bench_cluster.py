#!/usr/bin/env python
"""Cluster benchmark (issue 16): the same tournament on local worker processes and on a Dask cluster
of 1, 2 and 4 workers, side by side in one run; and the director's own cost per game.

Run from the repository root::

    .venv/bin/python bench/bench_cluster.py              # ~4 minutes on 2 cores
    .venv/bin/python bench/bench_cluster.py --games 100  # per pairing (default 400)

The event: a round robin of four ``sample_engines.random_engine`` processes playing EinStein
(``games=N`` per pairing, tc 180). The cluster is a real ``dask scheduler`` and ``dask worker
--nworkers W --nthreads 1`` started by this script (as an operator would), so the scheduler's CPU
is its own process's and the director's is this process's. Reported per backend: games/s over the
whole run and in the steady state (first to last commit), games per Dask task and per
commit (transaction), the director's CPU per committed game in the steady state (this process, all
its threads: planning, commits, the Dask client; start-up such as importing Dask excluded; and
apart, its main thread's: planning and commits, without the Dask client's thread), the
scheduler's CPU per game (in brackets: less its background CPU per second, measured idle before
the run, times the run's duration), and the games/s the director alone could sustain (1 / its CPU
per game) — the figure that says when it would become the bottleneck.
"""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402

from tournaments import api  # noqa: E402
from tournaments.config import parse_config  # noqa: E402

TOML = """\
name = "bench-cluster-{label}"
game = "einstein"
format = "round_robin"
match = "games={games}"
time_control = "180"
seed = "bench"
output = "{db}"
on_start_failure = "forfeit"
""" + "".join(f"""
[[engines]]
name = "r{i}"
command = "{{{{python}}}} -m sample_engines.random_engine --seed {i}"
""" for i in range(4))


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(label: str, games: int, folder: Path, concurrency: int, cluster: str | None) -> dict:
    db = folder / f"{label}.sqlite"
    cfg = parse_config(TOML.format(label=label, games=games, db=db), source=f"<{label}>")
    opened = api.start(cfg, overwrite=True)
    marks: list[tuple[float, float, int]] = []  # (cpu, wall, games committed) after the first and the last commit
    threads: list[dict[int, float]] = []  # CPU of each thread of this process at the same two moments
    seen: dict = {}
    total = 6 * games

    def on_game(runner, spec, record) -> None:
        committed = runner.summary.committed
        if not marks or (committed == total and marks[-1][2] != total):  # once each
            marks.append((time.process_time(), time.monotonic(), committed))
            threads.append({t.id: t.user_time + t.system_time for t in psutil.Process().threads()})
        seen["runner"] = runner

    t0 = time.monotonic()
    _, summary = api.play(opened, concurrency=concurrency, cluster=cluster, log=lambda text: None, on_game=on_game)
    wall = time.monotonic() - t0
    opened.db.close()
    n = summary.committed
    (cpu_a, wall_a, n_a), (cpu_b, wall_b, n_b) = marks[0], marks[-1]
    main_thread = threading.get_native_id()
    main_cpu = threads[-1][main_thread] - threads[0].get(main_thread, 0.0)
    backend = seen["runner"].active_backend
    return dict(label=label, games=n, rate=n / wall, steady=(n_b - n_a) / (wall_b - wall_a),
                director_ms=1000 * (cpu_b - cpu_a) / (n_b - n_a), main_ms=1000 * main_cpu / (n_b - n_a), wall=wall,
                per_commit=n / max(1, summary.commits),
                per_task=getattr(backend, "games", n) / max(1, getattr(backend, "tasks", n)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, default=400, help="games per pairing (6 pairings)")
    ap.add_argument("--workers", default="1,2,4")
    args = ap.parse_args()
    dask = str(Path(sys.executable).with_name("dask"))
    print(f"load average at start {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores")
    print(f"{'backend':<18} {'games':>6} {'games/s':>8} {'steady':>7} {'games/task':>10} {'games/commit':>12} "
          f"{'director ms/game':>17} {'(main thread)':>13} {'scheduler ms/game':>18} {'director-bound games/s':>23}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for workers in [int(w) for w in args.workers.split(",")]:
            local = run(f"local-{workers}", args.games, folder, workers, None)
            print(f"{'local pool ' + str(workers):<18} {local['games']:>6} {local['rate']:>8.1f} {local['steady']:>7.1f} "
                  f"{local['per_task']:>10.1f} {local['per_commit']:>12.1f} {local['director_ms']:>17.3f} {local['main_ms']:>13.3f} {'-':>18} {1000 / local['director_ms']:>23.0f}")
            port = _port()
            procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                       "--dashboard-address", ":0"], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, start_new_session=True)]
            procs.append(subprocess.Popen([dask, "worker", f"tcp://127.0.0.1:{port}", "--nworkers", str(workers),
                                           "--nthreads", "1"], cwd=ROOT, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL, start_new_session=True))
            try:
                scheduler = psutil.Process(procs[0].pid)
                time.sleep(2.0)
                idle0, t0 = sum(scheduler.cpu_times()[:2]), time.monotonic()
                time.sleep(3.0)  # its background work (heartbeats, dashboard), which goes on per second
                s0 = sum(scheduler.cpu_times()[:2])
                idle = (s0 - idle0) / (time.monotonic() - t0)
                dk = run(f"dask-{workers}", args.games, folder, workers, f"tcp://127.0.0.1:{port}")
                sched_ms = 1000 * (sum(scheduler.cpu_times()[:2]) - s0) / dk["games"]
                sched_net = 1000 * (sum(scheduler.cpu_times()[:2]) - s0 - idle * dk["wall"]) / dk["games"]
            finally:
                for p in procs:
                    try:
                        os.killpg(p.pid, 9)
                    except ProcessLookupError:
                        pass
                    p.wait(10)
            print(f"{'dask ' + str(workers) + ' worker(s)':<18} {dk['games']:>6} {dk['rate']:>8.1f} {dk['steady']:>7.1f} "
                  f"{dk['per_task']:>10.1f} {dk['per_commit']:>12.1f} {dk['director_ms']:>17.3f} {dk['main_ms']:>13.3f} "
                  f"{f'{sched_ms:.2f} ({sched_net:.2f})':>18} {1000 / dk['director_ms']:>23.0f}")
            print(f"{'':<18} scheduler idle: {100 * idle:.1f}% of a core")
    print(f"load average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
