"""Records tools at scale (issue 13): time and peak memory of show, verify, report and resume on
a 100,000-game database.

The databases are made honestly but cheaply: a few thousand real games are played (an `arbiter
match` of the sample random engines, and a round-robin tournament of five of them), then the
played records are replicated with fresh game ids and numbers up to the wanted count, each
written through the results store (so each copy is chained and exported like a played game;
every copy of a record replays and verifies as that game did). The match is left one game short,
so `--resume` counts the 99,999 games and plays the last one.

    .venv/bin/python bench/bench_records.py [--games 100000] [--played 2000] [--dir DIR] [--skip-verify]

Each tool runs in a subprocess of its own; its wall time and peak RSS (wait4's ru_maxrss) are
printed. The databases are kept in DIR (default: the temporary folder) and reused when present.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arbiter.records import from_json  # noqa: E402
from arbiter.records.store import ResultsStore  # noqa: E402

PY = sys.executable
RANDOM = "{python} -m sample_engines.random_engine"
ENV = {**os.environ, "ARBITER_SEED": "0123456789abcdef", "COLUMNS": "160"}

TOURNAMENT = """\
name = "records-bench"
game = "einstein"
format = "round_robin"
match = "games={per}"
time_control = "10"
seed = "records-bench"
concurrency = 2
output = "{db}"
""" + "".join(f"""
[[engines]]
name = "r{i}"
command = "{{{{python}}}} -m sample_engines.random_engine --seed {i}"
""" for i in range(5))
PAIRINGS = 10  # a round robin of five engines


def count(db: Path) -> int:
    try:
        conn = sqlite3.connect(db, timeout=30)
        try:
            return conn.execute("SELECT count(*) FROM games").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def play_until(argv: list[str], db: Path, played: int) -> None:
    """Run ``argv`` until ``db`` holds ``played`` games, then stop it as Ctrl-C would."""
    proc = subprocess.Popen(argv, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        while proc.poll() is None and count(db) < played:
            time.sleep(0.5)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=120)


def replicate(db: Path, slots, event_id: str = "") -> None:
    """Fill ``db`` with copies of its played games, through the store. ``slots``: (match id, game
    number, players by seat or None) to fill, each with a played record of the same number parity
    (the same seating: games=N alternates who moves first), renamed to the slot's players."""
    conn = sqlite3.connect(db)
    real = [from_json(r) for (r,) in conn.execute("SELECT record FROM games ORDER BY rowid")]
    conn.close()
    store = ResultsStore(db, group_window=0.2, event_id=event_id)
    store.repair_export()  # as a resume would: the stopped run may have left the export behind
    by_parity: dict[int, list] = {}
    for r in real:
        by_parity.setdefault(r.game_number % 2, []).append(r)
    made = 0
    for mid, number, players in slots:
        pool = by_parity[number % 2]
        src = pool[(number // 2) % len(pool)]
        store.save_game(msgspec.structs.replace(
            src, match_id=mid, game_number=number, game_id=f"{mid}.{number}.{uuid.uuid4().hex[:6]}",
            players=players or src.players, match_seq=0, prev_hash="", event_seq=0, event_prev_hash=""))
        made += 1
        if made % 10000 == 0:
            store.sync()
            print(f"  {made} copies written", flush=True)
    store.close()
    assert store.problem is None, store.problem


def build_match(folder: Path, games: int, played: int) -> Path:
    db = folder / "match.sqlite"
    if count(db) >= games - 1:
        return db
    play_until([PY, "-m", "arbiter.cli", "match", "--game", "einstein", "--engine", RANDOM, "--engine", RANDOM,
                "--format", f"games={games}", "--tc", "10", "--quiet", "--db", str(db)], db, played)
    conn = sqlite3.connect(db)
    (mid,), = conn.execute("SELECT match_id FROM matches")
    have = [n for (n,) in conn.execute("SELECT game_number FROM games ORDER BY game_number")]
    conn.close()
    print(f"match: {len(have)} games played, replicating to {games - 1}", flush=True)
    replicate(db, ((mid, n, None) for n in range(len(have) + 1, games)))
    return db


def build_tournament(folder: Path, games: int, played: int) -> Path:
    db = folder / "tournament.sqlite"
    if count(db) >= games:
        return db
    toml = folder / "tournament.toml"
    toml.write_text(TOURNAMENT.format(per=games // PAIRINGS, db=db))
    play_until([PY, "-m", "tournaments", "run", str(toml), "--quiet", "--no-report"], db, played)
    conn = sqlite3.connect(db)
    have = set(conn.execute("SELECT match_id, game_number FROM games"))
    pairings = [(m, json.loads(e)) for m, e in conn.execute(
        "SELECT match_id, engines FROM tournament_pairings WHERE kind = 'match' ORDER BY match_id")]
    conn.close()
    assert len(pairings) == PAIRINGS, pairings
    print(f"tournament: {len(have)} games played, replicating to {games}", flush=True)
    slots = ((m, n, [f"r{e[0]}", f"r{e[1]}"] if n % 2 else [f"r{e[1]}", f"r{e[0]}"])
             for m, e in pairings for n in range(1, games // PAIRINGS + 1) if (m, n) not in have)
    replicate(db, slots, event_id="records-bench")
    return db


LAUNCHER = """
import os, subprocess, sys, time
start = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:])
_, status, usage = os.wait4(proc.pid, 0)
sys.stdout.flush()
print(f"\\n@@{os.waitstatus_to_exitcode(status)} {time.perf_counter() - start:.3f} {usage.ru_maxrss} "
      f"{usage.ru_utime + usage.ru_stime:.3f}")
"""


def measure(label: str, argv: list[str], ok=(0,)) -> tuple[float, float]:
    """Run one tool; print and return (wall seconds, peak RSS in MB); CPU seconds (user + system,
    the tool and whatever it started) are printed too: on a loaded machine they say more."""
    # Started by a small launcher: a child's peak RSS starts at its parent's (kept across exec),
    # and this process holds the records it replicated.
    proc = subprocess.run([PY, "-c", LAUNCHER, *argv], cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    out, stats = proc.stdout.rsplit(b"\n@@", 1)
    code, seconds, kb, cpu = stats.split()
    code, seconds, mb, cpu = int(code), float(seconds), int(kb) / 1024, float(cpu)
    tail = out.decode(errors="replace").strip().splitlines()[-1:] or [""]
    print(f"{label:<34} {seconds:7.2f} s wall {cpu:7.2f} s cpu {mb:7.1f} MB  exit {code}  | {tail[0][:70]}",
          flush=True)
    if code not in ok:
        print(out.decode(errors="replace")[-2000:])
    return seconds, mb


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=100_000)
    ap.add_argument("--played", type=int, default=2000, help="real games played before replicating")
    ap.add_argument("--dir", default=str(Path(tempfile.gettempdir()) / "arbiter-records-bench"))
    ap.add_argument("--skip-verify", action="store_true")
    ap.add_argument("--jsonl", action="store_true", help="verify the .jsonl export too")
    ap.add_argument("--match-memory", metavar="N,N,...",
                    help="only: peak RSS of `arbiter match --quiet --format games=N` for each N")
    args = ap.parse_args()
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    if args.match_memory:
        for n in [int(x) for x in args.match_memory.split(",")]:
            db = folder / f"memory-{n}.sqlite"
            for suffix in (".sqlite", ".jsonl", ".sqlite-wal", ".sqlite-shm"):
                db.with_suffix(suffix).unlink(missing_ok=True)
            measure(f"match --quiet games={n}", [PY, "-m", "arbiter.cli", "match", "--game", "einstein", "--engine",
                                                 RANDOM, "--engine", RANDOM, "--format", f"games={n}", "--tc", "10",
                                                 "--quiet", "--db", str(db)])
        return 0
    tdb = build_tournament(folder, args.games, args.played)
    mdb = build_match(folder, args.games, args.played)
    conn = sqlite3.connect(tdb)
    (gid, mid, num), = conn.execute("SELECT game_id, match_id, game_number FROM games "
                                    "WHERE rowid = (SELECT max(rowid) / 2 FROM games)")
    conn.close()
    print(f"load average {os.getloadavg()[0]:.2f}; {count(tdb)} games in {tdb} "
          f"({tdb.stat().st_size / 1e6:.0f} MB), {count(mdb)} in {mdb}", flush=True)
    arbiter = [PY, "-m", "arbiter.cli"]
    measure("baseline: `arbiter games` (imports)", arbiter + ["games"])
    measure("show by id", arbiter + ["show", str(tdb), gid])
    measure("show by match.number", arbiter + ["show", str(tdb), f"{mid}.{num}"])
    measure("show the last game", arbiter + ["show", str(tdb)])
    measure("show the last game (.jsonl)", arbiter + ["show", str(tdb.with_suffix(".jsonl"))])
    measure("show by id (.jsonl)", arbiter + ["show", str(tdb.with_suffix(".jsonl")), gid])
    measure("tournament report", [PY, "-m", "tournaments", "report", str(tdb)])
    work = folder / "resume.sqlite"  # a copy: resuming finishes the match
    for suffix in (".sqlite", ".jsonl"):
        subprocess.run(["cp", str(mdb.with_suffix(suffix)), str(work.with_suffix(suffix))], check=True)
    measure("match --resume (1 game left)", arbiter + ["match", "--resume", "--db", str(work), "--quiet"])
    if not args.skip_verify:
        measure("verify (database)", arbiter + ["verify", str(tdb)])
        if args.jsonl:
            measure("verify (.jsonl)", arbiter + ["verify", str(tdb.with_suffix(".jsonl"))])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
