#!/usr/bin/env python
"""The live web view under load (issue 17): does watching slow the games, and how fast is a page told?

Run from the repository root::

    .venv/bin/python bench/bench_web.py [--games 20] [--viewers 100]

The same EinStein tournament (three random engines, or with ``--movetime S`` three expectimax
engines searching S seconds a move; round robin, ``--concurrency`` 2, one seed) is run with
``arbiter-tournament run`` without a viewer and with ``--web`` and ``--viewers`` event-stream
clients on loopback (one thread, raw sockets, at ``--viewer-nice``) reading every message (every
``--timing``-th one parsing it for latencies), alternately, ``--repeat`` times. Printed:

* referee overhead per decision, from the records: (game wall time - the engines' measured
  time) / decisions, median over games and total, for every run, and the ratio watched / alone
  over all runs;
* update latency: from the event a view shows (``event_at`` in each ``live`` message: the
  move or roll) to the moment a client has read it, over every (message, client) pair: median,
  p95, p99, max; and messages each client got compared with the ones published.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import selectors
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable

TOURNAMENT = """
name = "web-bench"
game = "einstein"
format = "round_robin"
match = "games={games}"
time_control = "60"
seed = "web-bench"
output = "{db}"
concurrency = {concurrency}
pin = {pin}
{engines}"""
RANDOM = """
[[engines]]
name = "r{i}"
command = "{{python}} -m sample_engines.random_engine --seed {i}"
"""
SEARCH = """
[[engines]]
name = "x{i}"
command = "{{python}} -m sample_engines.einstein_expectimax --movetime {movetime}"
"""

DRAIN = """
import signal, sys, zmq
sub = zmq.Context().socket(zmq.SUB)
sub.setsockopt(zmq.SUBSCRIBE, b"")
sub.bind(sys.argv[1])
n = 0
signal.signal(signal.SIGTERM, lambda *a: (print(n), sys.exit(0)))
while True:
    sub.recv()
    n += 1
"""

EVENT = re.compile(rb"event: (\w+)")
SENT = re.compile(rb'"event_at":([0-9.e+]+)')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Viewers:
    """``n`` event-stream clients in one thread, every one reading its whole stream; every
    ``timing``-th one also parses it for the latency of each ``live`` message (1: all of them).
    Parsing in Python is the harness's CPU, not the server's (a browser parses in its own
    process, usually on another machine), so on a 2-core machine it is kept to a sample."""

    def __init__(self, port: int, n: int, nice: int = 0, timing: int = 1):
        self.nice = nice
        self.timing = max(1, timing)
        self.sel = selectors.DefaultSelector()
        self.latencies: list[float] = []
        self.counts = [0] * n
        self.received = 0
        """Bytes read by every viewer together."""
        self.by_event: dict[str, int] = {}
        """Bytes the timing viewers read, by event name."""
        self.stop = False
        for i in range(n):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"GET /events HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n")
            s.setblocking(False)
            self.sel.register(s, selectors.EVENT_READ, [i, b""])
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        if self.nice:  # spectators elsewhere: their reading does not compete with the event's CPU
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), self.nice)
        while not self.stop:
            for key, _ in self.sel.select(0.2):
                try:
                    data = key.fileobj.recv(1 << 20)
                except BlockingIOError:
                    continue
                now = time.time()
                if not data:
                    self.sel.unregister(key.fileobj)
                    continue
                self.received += len(data)
                i, buf = key.data
                if i % self.timing:  # a reader that does not time: count what it got, keep nothing
                    self.counts[i] += data.count(b"event: live")
                    continue
                buf += data
                *done, buf = buf.split(b"\n\n")
                key.data[1] = buf
                for msg in done:
                    kind = EVENT.search(msg)
                    name = kind.group(1).decode() if kind else "comment"
                    self.by_event[name] = self.by_event.get(name, 0) + len(msg) + 2
                    if b"event: live" in msg:
                        for sent in SENT.findall(msg):
                            self.latencies.append(now - float(sent))
                            self.counts[i] += 1

    def close(self) -> None:
        self.stop = True
        self.thread.join(5)
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()


class ViewersApart:
    """``Viewers`` in a child process leading a session of its own, whose autogroup (Linux shares
    the CPU between sessions first) is at niceness ``nice``: spectators whose reading weighs on the
    games' cores as little as the kernel allows, as if they watched from other machines. What is
    left of the watched run's extra is then the server's (and the kernel's loopback) share."""

    def __init__(self, port: int, n: int, nice: int = 19, timing: int = 1):
        import multiprocessing

        self.conn, child = multiprocessing.get_context("fork").Pipe()
        self.process = multiprocessing.get_context("fork").Process(target=self._child, args=(child, port, n, nice,
                                                                                              timing))
        self.process.start()
        if self.conn.recv() != "connected":
            raise RuntimeError("the viewers did not connect")

    @staticmethod
    def _child(conn, port: int, n: int, nice: int, timing: int) -> None:
        os.setsid()
        try:
            with open("/proc/self/autogroup", "w") as f:
                f.write(str(nice))
        except OSError as exc:
            print(f"viewers: the autogroup's niceness could not be set: {exc}", file=sys.stderr)
        os.setpriority(os.PRIO_PROCESS, 0, nice)
        viewers = Viewers(port, n, 0, timing)
        conn.send("connected")
        conn.recv()
        viewers.close()
        conn.send({"latencies": viewers.latencies, "counts": viewers.counts, "received": viewers.received,
                   "by_event": viewers.by_event})

    def close(self) -> None:
        self.conn.send("stop")
        self.__dict__.update(self.conn.recv())
        self.process.join(10)


def overheads(db: Path) -> tuple[list[float], float, int]:
    """Per game: (wall - engines' measured time) / decisions, in microseconds; and the total."""
    conn = sqlite3.connect(db)
    rows = [json.loads(r) for (r,) in conn.execute("SELECT record FROM games")]
    conn.close()
    per, wall_all, engine_all, n_all = [], 0.0, 0.0, 0
    for r in rows:
        decisions = [e for e in r["events"] if e["seat"] >= 0]
        measured = sum(e.get("measured_ms", 0) for e in decisions) / 1000
        wall = r["ended_at"] - r["started_at"]
        per.append((wall - measured) / len(decisions) * 1e6)
        wall_all, engine_all, n_all = wall_all + wall, engine_all + measured, n_all + len(decisions)
    return per, (wall_all - engine_all) / n_all * 1e6, n_all


def run(tmp: Path, tag: str, games: int, viewers: int, movetime: float, nice: int = 0, concurrency: int = 2,
        pin: bool = False, timing: int = 1, apart: bool = False) -> dict:
    db = tmp / f"{tag}.sqlite"
    toml = tmp / f"{tag}.toml"
    engines = "".join((SEARCH if movetime else RANDOM).format(i=i, movetime=movetime) for i in (1, 2, 3))
    toml.write_text(TOURNAMENT.format(games=games, db=db, engines=engines, concurrency=concurrency,
                                        pin=str(pin).lower()))
    args = [PY, "-m", "tournaments", "run", str(toml), "-q", "--no-report"]
    port = free_port()
    if viewers:
        args += ["--web", str(port)]
    t0 = time.monotonic()
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    clients = None
    if viewers:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.02)
        clients = ViewersApart(port, viewers, nice, timing) if apart else Viewers(port, viewers, nice, timing)
    out = proc.communicate()[0]
    elapsed = time.monotonic() - t0
    if proc.returncode:
        sys.exit(f"{tag}: arbiter-tournament exited {proc.returncode}: {out.decode()[-2000:]}")
    if clients:
        clients.close()
    per, total, n = overheads(db)
    return {"per": per, "total": total, "decisions": n, "elapsed": elapsed, "clients": clients}


def hook_cost(games: int) -> dict:
    """In this process: EinStein games between two random engine subprocesses with a feed to a
    SUB socket bound by another process (which counts what it gets); the time spent in
    ``Feed.hook`` per event, beside the referee's whole overhead per decision in the same games."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-web-"))
    endpoint = f"ipc://{tmp}/feed"
    drain = subprocess.Popen([PY, "-c", DRAIN, endpoint], stdout=subprocess.PIPE, text=True)  # the viewer's socket
    while not (tmp / "feed").exists():
        time.sleep(0.01)
    try:
        return _hook_cost(games, tmp, endpoint, drain)
    finally:
        if drain.poll() is None:  # the bench failed: no process left behind
            drain.kill()
            drain.wait()


def _hook_cost(games: int, tmp: Path, endpoint: str, drain: subprocess.Popen) -> dict:
    from arbiter.clock import parse_time_control
    from arbiter.feed import Feed
    from arbiter.formats.match import Series
    from arbiter.games import load_game
    from arbiter.hosting import EngineConfig

    feed = Feed(endpoint)
    spent: list[float] = []

    drawn: list[float] = []

    def draw():
        t = time.perf_counter()
        done = feed.draw()
        drawn.append(time.perf_counter() - t)
        return done

    def timed(*args):
        t = time.perf_counter()
        work = feed.hook(*args)
        spent.append(time.perf_counter() - t)
        return draw if work else None
    configs = [EngineConfig([PY, "-m", "sample_engines.random_engine", "--seed", str(i)], name=f"r{i}", cwd=str(ROOT))
               for i in (1, 2)]
    out = {}
    for tag, hook in (("no feed", None), ("feed", timed)):
        series = Series(load_game("einstein"), configs, parse_time_control("60"), run_dir=tmp / "logs",
                        seed=b"bench-web", on_event=hook)
        per, n_dec, over = [], 0, 0.0
        try:
            for g in range(games):
                r = series.play_game(g + 1, [g % 2, 1 - g % 2])
                decisions = [e for e in r.events if e.seat >= 0]
                wall = r.ended_at - r.started_at
                over += wall - sum(e.measured_ms for e in decisions) / 1000
                n_dec += len(decisions)
        finally:
            series.close()
        if not n_dec:
            raise SystemExit(f"bench_web: the {tag!r} games had no decisions (do the engines start? logs in {tmp})")
        out[tag] = over / n_dec * 1e6
    feed.close()
    time.sleep(0.3)
    drain.terminate()
    out["hook_us"] = sorted(spent)
    out["draw_us"] = sorted(drawn)
    out["published"] = int(drain.communicate()[0] or 0)
    out["events"] = len(spent)
    return out


def ratio_interval(runs: list[tuple[dict, dict]], resamples: int = 4000) -> tuple[float, float]:
    """A 95 % bootstrap interval of the overall ratio watched / alone, the pairs resampled (a
    pair's two runs share the machine's state of the moment, so they are drawn together)."""
    rng = random.Random(1)

    def ratio(pairs: list[tuple[dict, dict]]) -> float:
        alone = sum(b["total"] * b["decisions"] for b, _ in pairs) / sum(b["decisions"] for b, _ in pairs)
        return sum(w["total"] * w["decisions"] for _, w in pairs) / sum(w["decisions"] for _, w in pairs) / alone

    draws = sorted(ratio([rng.choice(runs) for _ in runs]) for _ in range(resamples))
    return draws[int(0.025 * resamples)], draws[int(0.975 * resamples) - 1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=20, help="games per pairing (3 pairings)")
    ap.add_argument("--viewers", type=int, default=100)
    ap.add_argument("--hook-games", type=int, default=40, help="games of the in-process hook measurement")
    ap.add_argument("--movetime", type=float, default=0.0,
                    help="0: random engines (instant); else expectimax engines searching this many seconds a move")
    ap.add_argument("--repeat", type=int, default=1, help="pairs of runs (alone, watched), alternating")
    ap.add_argument("--concurrency", type=int, default=2,
                    help="games at once (1 on 2 cores: a core left for the web server and the viewers)")
    ap.add_argument("--timing", type=int, default=1, metavar="K",
                    help="every K-th viewer parses its stream for latencies (default 1: all); the others read "
                         "and count only")
    ap.add_argument("--pin", action="store_true",
                    help="pin = true: each worker and its engines on a core of their own (docs/tournaments.md)")
    ap.add_argument("--viewer-nice", type=int, default=0,
                    help="niceness of the viewers' thread (e.g. 19: spectators on other machines)")
    ap.add_argument("--viewers-apart", action="store_true",
                    help="the viewers in a process of their own session, its autogroup at --viewer-nice (19 "
                         "for spectators on other machines: what is left is the server's share)")
    a = ap.parse_args()
    print(f"load average before: {os.getloadavg()}; {os.cpu_count()} cores")
    print("tournament engines: " + (f"3 expectimax, --movetime {a.movetime}" if a.movetime else "3 random (instant)"))
    h = hook_cost(a.hook_games)
    us = h["hook_us"]
    print(f"in-process, {a.hook_games} EinStein games per mode between two random engine subprocesses:")
    print(f"  Feed.hook per event: median {us[len(us) // 2] * 1e6:.1f} us, p99 {us[int(len(us) * 0.99)] * 1e6:.1f} us, "
          f"mean {sum(us) / len(us) * 1e6:.1f} us ({h['events']} events, {h['published']} views published)")
    print(f"  referee overhead per decision: {h['no feed']:.0f} us without the feed, {h['feed']:.0f} us with it")
    dr = h["draw_us"]
    if dr:
        print(f"  Feed.draw (deferred: while the engines think) per call: median {dr[len(dr) // 2] * 1e6:.1f} us, "
              f"p99 {dr[int(len(dr) * 0.99)] * 1e6:.1f} us ({len(dr)} calls)")
    print(f"tournament (concurrency {a.concurrency}{', pinned' if a.pin else ''}), the same seed, alone and watched alternately (ABBA), {a.repeat} time(s); "
          f"viewers at nice {a.viewer_nice}{' (a session and autogroup of their own)' if a.viewers_apart else ''}, "
          f"{'each' if a.timing == 1 else f'one in {a.timing}'} timing its messages:")
    runs: list[tuple[dict, dict]] = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for i in range(a.repeat):  # ABBA: a drift of the machine, or an order effect, weighs on both alike
            def alone():
                return run(tmp, f"alone{i}", a.games, 0, a.movetime, concurrency=a.concurrency, pin=a.pin)

            def watched():
                return run(tmp, f"watched{i}", a.games, a.viewers, a.movetime, a.viewer_nice, a.concurrency,
                           a.pin, a.timing, a.viewers_apart)
            if i % 2:
                web, base = watched(), alone()
            else:
                base, web = alone(), watched()
            runs.append((base, web))
            for tag, r in (("no viewer", base), (f"--web + {a.viewers} viewers", web)):
                print(f"{tag:>22}: {r['decisions']} decisions in {r['elapsed']:.1f} s; referee overhead per decision: "
                      f"median over games {statistics.median(r['per']):.0f} us, all games {r['total']:.0f} us")
    ratios = [w["total"] / b["total"] for b, w in runs]
    alone = sum(b["total"] * b["decisions"] for b, _ in runs) / sum(b["decisions"] for b, _ in runs)
    watched = sum(w["total"] * w["decisions"] for _, w in runs) / sum(w["decisions"] for _, w in runs)
    print(f"overhead ratio (all games of all runs, watched / alone): {watched / alone:.3f} "
          f"({alone:.0f} -> {watched:.0f} us); per pair: {', '.join(f'{r:.2f}' for r in ratios)}")
    low, high = ratio_interval(runs)
    medians = [statistics.median(w["per"]) / statistics.median(b["per"]) for b, w in runs]
    print(f"  95 % interval of that ratio (bootstrap over the pairs): {low:.3f}-{high:.3f}; the median game's, "
          f"per pair: {', '.join(f'{r:.2f}' for r in medians)} (median {statistics.median(medians):.3f})")
    lat = sorted(x for _, w in runs if w["clients"] is not None for x in w["clients"].latencies)
    if lat:
        q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000  # noqa: E731
        counts = [c for _, w in runs for c in w["clients"].counts]
        print(f"update latency (event -> client read), {len(lat)} samples: median {q(0.5):.1f} ms, "
              f"p95 {q(0.95):.1f} ms, p99 {q(0.99):.1f} ms, max {lat[-1] * 1000:.1f} ms")
        print(f"live messages per client and run: min {min(counts)}, max {max(counts)} "
              f"(decisions+rolls per run: about {runs[0][1]['decisions'] * 2})")
        rate = [w["clients"].received / a.viewers / w["elapsed"] / 1000 for _, w in runs]
        print(f"read per viewer: {statistics.mean(rate):.1f} KB/s (runs: {', '.join(f'{r:.0f}' for r in rate)})")
        kinds: dict[str, int] = {}
        for _, w in runs:
            for name, n in w["clients"].by_event.items():
                kinds[name] = kinds.get(name, 0) + n
        total = sum(kinds.values()) or 1
        shares = sorted(kinds.items(), key=lambda x: -x[1])
        print("  of which: " + ", ".join(f"{k} {100 * n / total:.0f} %" for k, n in shares))
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
