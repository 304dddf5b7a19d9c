#!/usr/bin/env python
"""CPU per game of every process of one match (issue 13): where the arbiter's CPU goes, next to
the raw-pyzmq anchor of ``bench_anchors.py`` playing the same games.

    .venv/bin/python bench/bench_cpu_per_game.py                 # 600 games each
    .venv/bin/python bench/bench_cpu_per_game.py --games 300 --pin

At two or more matches in parallel the machine's cores are the limit, so games/s follows the CPU
all processes of a match spend per game: the referee, its engines (inside their sandboxes) and
helpers. ``getrusage`` cannot see sandboxed engines (their CPU is not reaped by the referee's
parent), so each process is sampled with psutil until it ends; the last sample counts (a
process's last ~50 ms may be missed: noise at these sizes). Start-up is included (interpreter,
imports, sandbox): it weighs less the more games are played.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
import subprocess

import psutil

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def role(cmdline: list[str], top: bool) -> str:
    text = " ".join(cmdline)
    if top:
        return "referee"
    if not cmdline or Path(cmdline[0]).name == "bwrap":
        return "sandbox"
    if "arbiter.hosting.guardian" in text:
        return "guardian"
    if "sample_engines" in text or ("bench_anchors.py" in text and "--engine" in cmdline):
        return "engine"
    return "other"


def thread_name(pid: int, tid: int) -> str:
    if tid == pid:
        return "main"
    try:
        name = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
    except OSError:
        return "other"
    return name if name.startswith("ZMQbg") else "other"


def measure(cmd: list[str], games: int) -> tuple[dict[str, list[float]], dict[str, float]]:
    """CPU ms per game, by role, one entry per process; and the referee's by thread (main, ZeroMQ's
    I/O thread, other: committer, monitors, log pumps)."""
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    top = psutil.Process(proc.pid)
    last: dict[int, tuple[str, float]] = {}
    threads: dict[int, tuple[str, float, float]] = {}
    while proc.poll() is None:
        try:
            for t in top.threads():
                threads[t.id] = (threads[t.id][0] if t.id in threads else thread_name(proc.pid, t.id),
                                 t.user_time, t.system_time)
        except psutil.Error:
            pass
        try:
            family = [top, *top.children(recursive=True)]
        except psutil.Error:
            break
        for p in family:
            try:
                t = p.cpu_times()
                last[p.pid] = (role(p.cmdline(), p.pid == proc.pid), t.user + t.system)
            except psutil.Error:
                pass
        time.sleep(0.05)
    by_role: dict[str, list[float]] = {}
    for name, seconds in last.values():
        if seconds > 0:
            by_role.setdefault(name, []).append(1000 * seconds / games)
    by_thread: dict[str, float] = {}
    for name, user, system in threads.values():
        for part, seconds in (("user", user), ("sys", system)):
            key = f"{name} {part}"
            by_thread[key] = by_thread.get(key, 0.0) + 1000 * seconds / games
    return by_role, by_thread


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, default=600)
    ap.add_argument("--pin", action="store_true", help="arbiter match --pin 0 (the anchor pinned to core 0 too)")
    ap.add_argument("--arbiter-args", default="", help="more arguments for arbiter match, e.g. '--sandbox none'")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-cpu-") as d:
        engine = f"{PY} -m sample_engines.random_engine"
        contestants = {
            "arbiter match": [PY, "-m", "arbiter.cli", "match", *(["--pin", "0"] if args.pin else []),
                              *args.arbiter_args.split(), "--game",
                              "einstein", "--quiet", "--tc", "180", "--format", f"games={args.games}", "--db",
                              f"{d}/m.sqlite", "--seed", "05", "--engine", engine + " --seed 5",
                              "--engine", engine + " --seed 6"],
            "raw pyzmq anchor": [PY, str(ROOT / "bench" / "bench_anchors.py"), "--serve", "zmq", "--games",
                                 str(args.games), "--seed", "5", *(["--core", "0"] if args.pin else [])],
        }
        print(f"bench_cpu_per_game {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; {args.games} games; "
              f"load average {' '.join(f'{x:.2f}' for x in psutil.getloadavg())}"
              + ("; pinned to core 0" if args.pin else ""))
        for name, cmd in contestants.items():
            by_role, by_thread = measure(cmd, args.games)
            total = sum(sum(v) for v in by_role.values())
            parts = ", ".join(f"{r} {' + '.join(f'{x:.2f}' for x in sorted(v, reverse=True))}"
                              for r, v in sorted(by_role.items()))
            print(f"{name}: {total:.2f} ms of CPU per game ({parts})", flush=True)
            print("    referee by thread: " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(by_thread.items())
                                                          if v >= 0.005), flush=True)


if __name__ == "__main__":
    main()
