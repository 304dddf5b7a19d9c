#!/usr/bin/env python
"""Records of a seeded match, timings left out: a digest to compare before/after a speed change.

    .venv/bin/python bench/seeded_records.py [--games 100] [--out normalized.jsonl]

Plays ``--games`` EinStein games between two seeded random engines with a fixed match id and
master seed, saves them through ``ResultsStore`` (SQLite + JSON Lines, as ``arbiter match``),
then drops from each JSON Lines record what depends on the clock (start/end times, measured,
reported and remaining times, off-turn CPU, the hash chain and signature over those) and the
random suffix of the game id. Prints the sha256 of what is left: equal digests on two commits
mean the referee made the same requests, moves, rolls and results, byte for byte.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arbiter.clock import parse_time_control  # noqa: E402
from arbiter.formats.match import Match, MatchFormat  # noqa: E402
from arbiter.games import load_game  # noqa: E402
from arbiter.hosting import EngineConfig  # noqa: E402
from arbiter.records.store import ResultsStore  # noqa: E402

TIMING = {"started_at", "ended_at", "measured_ms", "reported_ms", "clock_ms", "offturn_cpu_ms", "prev_hash",
          "event_prev_hash", "signature", "info"}
"""Fields whose values follow the clock (``info`` holds the engine's reported time)."""


def strip(value):
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--games", type=int, default=100)
    ap.add_argument("--out", help="also write the normalized JSON Lines here (for a diff)")
    args = ap.parse_args()
    game = load_game("einstein")
    engines = tuple(EngineConfig([sys.executable, "-m", "sample_engines.random_engine", "--seed", str(i + 1)],
                                 name=n, cwd=str(ROOT)) for i, n in enumerate("AB"))
    with tempfile.TemporaryDirectory(prefix="seeded-") as d:
        store = ResultsStore(Path(d) / "games.sqlite")
        match = Match(game, engines, parse_time_control("180"), MatchFormat.parse(f"games={args.games}"),
                      store=store, run_dir=Path(d) / "logs", seed=b"seeded-records", match_id="seeded")
        match.play()
        store.close()
        lines = []
        for line in (Path(d) / "games.jsonl").read_text().splitlines():
            rec = strip(json.loads(line))
            rec["game_id"] = re.sub(r"\.[0-9a-f]{6}$", "", rec["game_id"])
            lines.append(json.dumps(rec, sort_keys=True))
    text = "\n".join(lines) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    print(f"{len(lines)} records, sha256 {hashlib.sha256(text.encode()).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
