#!/usr/bin/env python
"""Throughput anchors (issue 13): how close one ``arbiter match`` comes to the smallest honest
referees one could write, measured side by side in one run.

    .venv/bin/python bench/bench_anchors.py                  # 1, 2, 4, 8 parallel matches
    .venv/bin/python bench/bench_anchors.py --quick          # smoke run (~1 min)
    .venv/bin/python bench/bench_anchors.py --parallel 1,4 --games 400 --rounds 3

Contestants (EinStein würfelt nicht!, random engines, tc 180 s per side):
* ``arbiter``: ``arbiter match --quiet --format games=N`` with records on (SQLite + JSON Lines),
  the sample ``random_engine`` processes, default sandbox and freezing;
* ``zmq``: the anchor referee below over raw pyzmq ROUTER/DEALER with msgpack frames;
* ``pipes``: the anchor referee below over text pipes (one line per request and reply).
Both anchors use the same rules module (``arbiter.games``), roll random dice, keep clocks on the
referee side (monotonic), and forfeit an engine that overruns (deadline = clock + 50 ms margin,
by poll/select timeout) or answers an illegal move. They keep no records.

games/s counts from the start of a match's first game to the end of its last (engine and
interpreter start-up excluded; the whole wall time is printed too). Parallel: k matches run at
once, k x N games over the longest span. Contestants take turns within each round.

``--pin``: every contestant placed the same way, match i of k with its engines on core i mod the
cores (``arbiter match --pin``; an anchor referee pins itself before starting its engines, which
inherit it). Free placement (the default) leaves it to the kernel.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import select
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PY = sys.executable
SELF = str(Path(__file__).resolve())
MARGIN = 0.05
TC = 180.0


# --- the anchor referee and its engines ------------------------------------------------------


def anchor_referee(mode: str, games: int, seed: int) -> dict:
    """Play ``games`` games between two anchor engines over ``mode``; returns timing and results."""
    import msgspec

    from arbiter.games import CHANCE, load_game

    game = load_game("einstein")
    rng = random.Random(seed)
    enc, dec = msgspec.msgpack.Encoder(), msgspec.msgpack.Decoder()
    if mode == "zmq":
        import zmq

        ctx = zmq.Context()
        router = ctx.socket(zmq.ROUTER)
        folder = tempfile.mkdtemp(prefix="anchor-")
        endpoint = f"ipc://{folder}/s"
        router.bind(endpoint)
        procs = [subprocess.Popen([PY, SELF, "--engine", "zmq", endpoint, str(seed + i)]) for i in range(2)]
        ids = []
        while len(ids) < 2:  # each engine says hello (its identity frame tells them apart)
            ident, _ = router.recv_multipart()
            ids.append(ident)
        poller = zmq.Poller()
        poller.register(router, zmq.POLLIN)

        def ask(seat: int, msg: dict, timeout: float) -> str | None:
            router.send_multipart([ids[seat], enc.encode(msg)])
            if not poller.poll(max(0, int(timeout * 1000))):
                return None
            ident, frame = router.recv_multipart()
            return dec.decode(frame)["move"] if ident == ids[seat] else None
    else:
        procs = [subprocess.Popen([PY, SELF, "--engine", "pipes", "-", str(seed + i)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, bufsize=0) for i in range(2)]
        readers = [p.stdout for p in procs]

        def ask(seat: int, msg: dict, timeout: float) -> str | None:
            line = f"{msg['position']}\t{msg['time']:.3f}\t{' '.join(msg['legal'])}\n".encode()
            procs[seat].stdin.write(line)
            ready, _, _ = select.select([readers[seat]], [], [], max(0.0, timeout))
            if not ready:
                return None
            return readers[seat].readline().decode().strip()

    results: dict[str, int] = {}
    start = time.monotonic()
    for _ in range(games):
        state = game.new_initial_state()
        clocks = [TC, TC]
        outcome = None
        while outcome is None and not state.is_terminal():
            if state.current_player() == CHANCE:
                outcomes = state.chance_outcomes()
                state.apply_chance(outcomes[rng.randrange(len(outcomes))])
                continue
            moves = {}
            for seat in state.acting_seats():
                legal = state.legal_moves(seat)
                t0 = time.monotonic()
                move = ask(seat, {"position": state.observation(seat), "legal": legal, "time": clocks[seat]},
                           clocks[seat] + MARGIN)
                clocks[seat] -= time.monotonic() - t0
                if move is None or clocks[seat] < -MARGIN:
                    outcome = f"time {seat}"
                    break
                if move not in legal:
                    outcome = f"illegal {seat}"
                    break
                moves[seat] = move
            if outcome is None:
                state.apply(moves.popitem()[1]) if len(moves) == 1 else state.apply_joint(moves)
        outcome = outcome or f"normal {state.returns()}"
        results[outcome.split()[0]] = results.get(outcome.split()[0], 0) + 1
    span = time.monotonic() - start
    for p in procs:
        p.kill()
        p.wait()
    if mode == "zmq":
        ctx.destroy(linger=0)
        shutil.rmtree(folder, ignore_errors=True)  # the socket's folder: a bench leaves nothing behind
    return {"games": games, "span": span, "results": results}


def anchor_engine(mode: str, endpoint: str, seed: int) -> None:
    """A random engine: picks one of the legal moves it is given."""
    rng = random.Random(seed)
    if mode == "pipes":
        for line in sys.stdin:
            legal = line.rstrip("\n").split("\t")[2].split()
            sys.stdout.write(rng.choice(legal) + "\n")
            sys.stdout.flush()
        return
    import msgspec
    import zmq

    enc, dec = msgspec.msgpack.Encoder(), msgspec.msgpack.Decoder()
    sock = zmq.Context().socket(zmq.DEALER)
    sock.connect(endpoint)
    sock.send(enc.encode({"hello": 1}))
    while True:
        msg = dec.decode(sock.recv())
        sock.send(enc.encode({"move": rng.choice(msg["legal"])}))


# --- the contestants, run as processes ---------------------------------------------------------


def run_arbiter(folder: Path, games: int, seed: int, core: int | None = None) -> dict:
    db = folder / f"m{seed}.sqlite"
    cmd = [PY, "-m", "arbiter.cli", "match", *(["--pin", str(core)] if core is not None else []), "--game", "einstein", "--quiet", "--tc", str(int(TC)),
           "--format", f"games={games}", "--db", str(db), "--seed", f"{seed:064x}",
           "--engine", f"{PY} -m sample_engines.random_engine --seed {seed}",
           "--engine", f"{PY} -m sample_engines.random_engine --seed {seed + 1}"]
    return {"cmd": cmd, "db": db}


def spawn(kind: str, folder: Path, games: int, seed: int, core: int | None = None) -> tuple[subprocess.Popen, dict]:
    if kind == "arbiter":
        spec = run_arbiter(folder, games, seed, core)
        proc = subprocess.Popen(spec["cmd"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return proc, spec
    pin = ["--core", str(core)] if core is not None else []
    proc = subprocess.Popen([PY, SELF, "--serve", kind, "--games", str(games), "--seed", str(seed), *pin], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return proc, {}


def collect(kind: str, proc: subprocess.Popen, spec: dict) -> dict:
    out, err = proc.communicate()
    if kind != "arbiter":
        if proc.returncode != 0:
            raise SystemExit(f"{kind} anchor failed: {err.decode()[-500:]}")
        return json.loads(out)
    if proc.returncode != 0:
        raise SystemExit(f"arbiter match failed ({proc.returncode}): {err.decode()[-800:]}")
    db = sqlite3.connect(spec["db"])
    rows = db.execute("SELECT reason, record FROM games").fetchall()
    starts = [json.loads(r)["started_at"] for _, r in rows]
    ends = [json.loads(r)["ended_at"] for _, r in rows]
    results: dict[str, int] = {}
    for reason, _ in rows:
        results[reason] = results.get(reason, 0) + 1
    return {"games": len(rows), "span": max(ends) - min(starts), "results": results}


def measure(kind: str, parallel: int, games: int, seed: int, pin: bool = False) -> dict:
    cores = sorted(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory(prefix="bench-anchors-") as d:
        t0 = time.monotonic()
        running = [spawn(kind, Path(d), games, seed + 10 * i, cores[i % len(cores)] if pin else None)
                   for i in range(parallel)]
        outs = [collect(kind, p, s) for p, s in running]
        wall = time.monotonic() - t0
    total = sum(o["games"] for o in outs)
    abnormal = sum(v for o in outs for k, v in o["results"].items() if k != "normal")
    return {"games_per_s": total / max(o["span"] for o in outs), "wall_games_per_s": total / wall,
            "abnormal": abnormal}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes: 1 round, 100 games, parallel 1,2")
    ap.add_argument("--parallel", default="1,2,4,8", help="how many matches at once, e.g. 1,4")
    ap.add_argument("--games", type=int, default=600, help="games per match")
    ap.add_argument("--rounds", type=int, default=3, help="rounds (each contestant once per round)")
    ap.add_argument("--json", metavar="FILE", help="also write the numbers as JSON")
    ap.add_argument("--pin", action="store_true", help="place every contestant's match i on core i mod the cores")
    ap.add_argument("--core", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--serve", choices=["pipes", "zmq"], help=argparse.SUPPRESS)
    ap.add_argument("--engine", nargs=3, metavar=("MODE", "ENDPOINT", "SEED"), help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.engine:
        return anchor_engine(args.engine[0], args.engine[1], int(args.engine[2]))
    if args.serve:
        if args.core is not None:
            os.sched_setaffinity(0, {args.core})  # before the engines start: they inherit it
        print(json.dumps(anchor_referee(args.serve, args.games, args.seed)))
        return
    if args.quick:
        args.parallel, args.games, args.rounds = "1,2", 100, 1
    levels = [int(x) for x in args.parallel.split(",")]
    kinds = ["arbiter", "zmq", "pipes"]
    print(f"bench_anchors {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; {os.cpu_count()} cores; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {args.games} games per match, "
          f"{args.rounds} rounds; placement {'pinned (--pin)' if args.pin else 'free'}")
    out: dict = {}
    for k in levels:
        per: dict[str, list[dict]] = {kind: [] for kind in kinds}
        for r in range(args.rounds):
            for kind in (kinds if r % 2 == 0 else kinds[::-1]):
                per[kind].append(measure(kind, k, args.games, 1000 * r + 1, args.pin))
        row = {kind: {"games_per_s": median(m["games_per_s"] for m in ms),
                      "wall_games_per_s": median(m["wall_games_per_s"] for m in ms),
                      "abnormal": sum(m["abnormal"] for m in ms)} for kind, ms in per.items()}
        a = row["arbiter"]["games_per_s"]
        row["vs_zmq"], row["vs_pipes"] = a / row["zmq"]["games_per_s"], a / row["pipes"]["games_per_s"]
        out[k] = row
        print(f"{k} parallel: " + "; ".join(f"{kind} {row[kind]['games_per_s']:.0f} games/s "
                                            f"(wall {row[kind]['wall_games_per_s']:.0f}, abnormal "
                                            f"{row[kind]['abnormal']})" for kind in kinds)
              + f"; arbiter/zmq {row['vs_zmq']:.2f}x (goal >= 0.8), arbiter/pipes {row['vs_pipes']:.2f}x "
                f"(goal >= 0.5)", flush=True)
    print(f"load average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
