#!/usr/bin/env python
"""What the web view of a big tournament costs per request, on an existing tournament database.

    .venv/bin/python bench/bench_web_source.py DB

Each of: the standings (``Hub.summary``: the report and the last 200 games), one finished game's
record, one engine's page, the last 200 games, timed in a fresh process (wall, CPU, peak RSS).
A 100,000-game database: ``bench/bench_records.py`` builds one (its ``tournament.sqlite``).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import resource, sqlite3, sys, time
sys.path.insert(0, {root!r})
from tournaments.web import TournamentSource
from arbiter.web.app import Hub
db, what = {db!r}, {what!r}
source = TournamentSource(db)  # reads the report once: the baseline's memory
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
con = sqlite3.connect(db)
gid, players = con.execute("SELECT game_id, players FROM games ORDER BY rowid LIMIT 1 OFFSET 5").fetchone()
name = __import__("json").loads(players)[0]
wall, cpu = time.perf_counter(), time.process_time()
if what == "standings":
    Hub(source).summary()
elif what == "one game":
    assert source.record(gid) is not None
elif what == "engine page":
    assert source.engine(name) is not None
else:
    assert len(source.recent(200)) == min(200, con.execute("SELECT count(*) FROM games").fetchone()[0])
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{{what:<12}} {{time.perf_counter() - wall:6.2f}} s wall {{time.process_time() - cpu:6.2f}} s CPU"
      f"   peak {{peak:6.0f}} MB (after opening the source: {{base:.0f}} MB)")
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db")
    args = ap.parse_args()
    for what in ("standings", "one game", "engine page", "last 200"):
        subprocess.run([sys.executable, "-c", PROBE.format(root=str(ROOT), db=str(Path(args.db).resolve()), what=what)],
                       check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
