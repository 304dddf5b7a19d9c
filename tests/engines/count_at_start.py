"""A random engine that, as it starts, notes how many games a results database holds then.

Usage: python tests/engines/count_at_start.py DB NOTES [--endpoint ...]

Run unsandboxed (it reads the results), restarted every game: each line of NOTES is what the
database held committed when the referee started the engine again, i.e. whether every finished
game was on disk before a new engine process began (one that could make the referee abort).
"""
from __future__ import annotations

import os
import sqlite3
import sys

db_path, notes = sys.argv[1], sys.argv[2]
try:
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    (count,), = db.execute("SELECT count(*) FROM games")
    db.close()
except sqlite3.Error:  # not made yet: the first start
    count = 0
with open(notes, "a") as f:
    f.write(f"{count}\n")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from protocol.kit import engine_arguments, run_engine  # noqa: E402
import random  # noqa: E402

args = engine_arguments(__doc__.splitlines()[0], "counter").parse_args(sys.argv[3:])
raise SystemExit(run_engine(lambda request, game: random.choice(request.legal_moves), name=args.name,
                            wants_legal_moves=True, endpoint=args.endpoint))
