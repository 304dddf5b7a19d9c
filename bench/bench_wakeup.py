#!/usr/bin/env python
"""Does a low-priority CPU hog delay a woken process? (the web server's priority, issue 17)

    python bench/bench_wakeup.py none nice10 idle nice10 idle none

For each named case, two CPU-bound processes run (one per core on a 2-core machine) at that
priority (``nice10``: niceness 10, as the web view's server; ``idle``: the SCHED_IDLE policy;
``none``: no hog) while a pipe ping-pong between two normal processes measures the round trip,
each side sleeping 1 ms between trips so that every trip wakes the partner. Prints the round
trip's median, p99 and max.
"""
from __future__ import annotations

import os
import signal
import sys
import time


def hog(policy: str) -> None:
    if policy == "idle":
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    elif policy == "nice10":
        os.setpriority(os.PRIO_PROCESS, 0, 10)
    while True:
        pass


def round_trips(n: int = 3000) -> list[float]:
    """Microseconds per round trip to a partner process that has slept in between."""
    to_partner, from_partner = os.pipe(), os.pipe()
    pid = os.fork()
    if pid == 0:
        while True:
            os.read(to_partner[0], 1)
            os.write(from_partner[1], b"x")
    out = []
    for _ in range(n):
        time.sleep(0.001)
        t = time.perf_counter()
        os.write(to_partner[1], b"x")
        os.read(from_partner[0], 1)
        out.append((time.perf_counter() - t) * 1e6)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return sorted(out)


def main() -> None:
    for policy in sys.argv[1:] or ["none", "nice10", "idle"]:
        hogs = []
        for _ in range(2 if policy != "none" else 0):
            pid = os.fork()
            if pid == 0:
                hog(policy)
            hogs.append(pid)
        time.sleep(0.3)
        rtts = round_trips()
        for pid in hogs:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        print(f"{policy:>7}: round trip median {rtts[len(rtts) // 2]:.0f} us, p99 {rtts[int(len(rtts) * .99)]:.0f} us, "
              f"max {rtts[-1]:.0f} us", flush=True)


if __name__ == "__main__":
    main()
