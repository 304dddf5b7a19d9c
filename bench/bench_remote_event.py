#!/usr/bin/env python
"""An olympiad over loopback tcp with CURVE (issue 12, "Numbers to reach"): N remote participants
(sample engines started as their own programs with ``--connect``) in a Swiss event of EinStein
olympiad matches, one participant killed with -9 and restarted mid-event, the director killed
with -9 mid-event and resumed.

Run from the repository root::

    .venv/bin/python bench/bench_remote_event.py                       # 40 participants, 7 rounds
    .venv/bin/python bench/bench_remote_event.py --participants 8 --rounds 3

Every participant plays ``bench/position_engine.py`` (random, but a function of the position), so
a second, uninterrupted run of the same event (``--compare``) must give exactly the same games.
Prints the games played, the end reasons (spurious forfeits: anything but ``normal``), what
happened to the restarted participant's games, the comparison, and the wall time.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from protocol import curve  # noqa: E402

PY = sys.executable


def games(db: Path) -> list[dict]:
    if not db.exists():
        return []
    try:
        with sqlite3.connect(db, timeout=5) as con:
            return [json.loads(r[0]) for r in con.execute("SELECT record FROM games")]
    except sqlite3.Error:
        return []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--participants", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--tc", default="10+0.1")
    parser.add_argument("--compare", action="store_true", help="also run the event uninterrupted and compare")
    parser.add_argument("--concurrency", type=int, default=1, help="games at once (the event's concurrency)")
    parser.add_argument("--max-games", type=int, default=1, help="games each participant accepts at once")
    args = parser.parse_args()
    interrupted = olympiad(args, interrupt=True)
    if interrupted is None:
        return 1
    if args.compare:
        plain = olympiad(args, interrupt=False)
        if plain is None:
            return 1
        same = interrupted == plain
        print(f"uninterrupted run: {len(plain)} games; identical to the interrupted run (pairings, seats, dice, "
              f"moves, results): {same}")
        if not same:
            return 1
    return 0


def summary(played: list[dict]) -> dict:
    """What must not depend on interruptions: per game, its players, rolls, moves and result."""
    return {(g["match_id"], g["game_number"]):
            (tuple(g["players"]), tuple(tuple(r) for r in g["rolls"]),
             tuple(e["move"] for e in g["events"]), tuple(g["returns"]), g["reason"]) for g in played}


def olympiad(args, interrupt: bool) -> dict | None:
    """One run of the event; the ``summary`` of its games, or None if the tournament failed."""
    work = Path(tempfile.mkdtemp(prefix="bench-olympiad-"))
    names = [f"p{i:02d}" for i in range(1, args.participants + 1)]
    for name in ["referee", *names]:
        curve.keygen(name, work)
    (work / "roster.toml").write_text("".join(
        f'[[participant]]\nname = "{n}"\npublic = "{curve.load_public(work / f"{n}.pub").decode()}"\n\n' for n in names))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    endpoint = f"tcp://127.0.0.1:{port}"
    event = work / "event.toml"
    event.write_text(f'''name = "remote-olympiad"
game = "einstein"
format = "swiss"
rounds = {args.rounds}
match = "olympiad"
time_control = "{args.tc}"
seed = "bench-remote"
concurrency = {args.concurrency}
output = "{work / 'event.sqlite'}"

[remote]
roster = "{work / 'roster.toml'}"
server_key = "{work / 'referee.key'}"
listen = "{endpoint}"
wait = 120
grace = 15

''' + "".join(f'[[engines]]\nname = "{n}"\nremote = "{n}"\n\n' for n in names))

    def engine(i: int, name: str) -> subprocess.Popen:
        return subprocess.Popen([PY, str(ROOT / "bench" / "position_engine.py"), "--connect", endpoint,
                                 "--server-key", str(work / "referee.pub"), "--key", str(work / f"{name}.key"),
                                 "--name", name, "--seed", str(i), "--max-games", str(args.max_games)],
                                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    started = time.monotonic()
    engines: dict[str, subprocess.Popen] = {}
    victim = names[min(6, len(names) - 1)]
    db = work / "event.sqlite"
    log = []
    try:
        for i, name in enumerate(names):
            engines[name] = engine(i, name)
        director = subprocess.Popen([PY, "-m", "tournaments", "run", str(event), "--quiet", "--no-report"],
                                    cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        expected = args.rounds * (args.participants // 2) * 5  # about five games an olympiad match
        if not interrupt:
            director.wait()
        while interrupt and len(games(db)) < expected // 4 and director.poll() is None:
            time.sleep(0.5)
        if interrupt:
            engines[victim].kill()
            engines[victim].wait()
            log.append(f"{victim} killed -9 after {len(games(db))} games, restarted 1 s later")
            time.sleep(1.0)
            engines[victim] = engine(names.index(victim), victim)
            while len(games(db)) < expected // 2 and director.poll() is None:
                time.sleep(0.5)
            os.kill(director.pid, signal.SIGKILL)
            director.wait()
            log.append(f"director killed -9 after {len(games(db))} games; resumed")
            resumed = subprocess.run([PY, "-m", "tournaments", "resume", str(event), "--quiet", "--no-report"],
                                     cwd=ROOT, capture_output=True, text=True)
            if resumed.returncode != 0:
                print(resumed.stdout, resumed.stderr)
                return None
        elif director.returncode != 0:
            print(director.stdout.read())
            return None
    finally:
        for p in engines.values():
            if p.poll() is None:
                p.kill()
    elapsed = time.monotonic() - started
    played = games(db)
    reasons = Counter(g["reason"] for g in played)
    victim_games = [g for g in played if victim in g["players"]]
    print(f"{args.participants} remote participants (CURVE, loopback), concurrency {args.concurrency}, max_games "
          f"{args.max_games}, swiss {args.rounds} rounds, olympiad "
          f"matches, tc {args.tc}, 2 cores, {'interrupted' if interrupt else 'uninterrupted'}")
    for line in log:
        print("  " + line)
    print(f"  games: {len(played)}; end reasons: {dict(reasons)}; spurious forfeits: "
          f"{sum(n for r, n in reasons.items() if r != 'normal')}")
    print(f"  {victim}: {len(victim_games)} games, reasons {dict(Counter(g['reason'] for g in victim_games))}")
    print(f"  wall time {elapsed:.0f} s (incl. start-up of {args.participants} engines)")
    print(f"  files in {work}")
    return summary(played)


if __name__ == "__main__":
    raise SystemExit(main())
