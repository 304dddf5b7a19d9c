"""Count how games ended and how long the slowest decisions took, from a results database.

    .venv/bin/python bench/forfeit_census.py runs/forfeit-census.sqlite

Prints games by end reason, the forfeit details, and the referee-measured decision times
(median, p99, p99.9, max, count over 50 ms). Streams the records (one at a time)."""
from __future__ import annotations

import json
import sqlite3
import sys
from collections import Counter
from pathlib import Path


def main(path: str) -> None:
    db = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True)
    reasons: Counter[str] = Counter()
    details: list[str] = []
    times: list[float] = []
    for reason, record in db.execute("SELECT reason, record FROM games"):
        reasons[reason] += 1
        rec = json.loads(record)
        if reason != "normal":
            details.append(f"{rec['game_id']}: {reason} (seat {rec.get('forfeit_seat')}): {rec.get('detail')}")
        times += [e["measured_ms"] for e in rec["events"] if e.get("seat", -1) >= 0 and e.get("measured_ms") is not None]
    times.sort()
    n = len(times)
    pick = lambda q: times[min(n - 1, int(q * n))] if n else float("nan")  # noqa: E731
    print(f"games {sum(reasons.values())}: " + ", ".join(f"{k} {v}" for k, v in reasons.most_common()))
    for line in details[:20]:
        print("  " + line)
    print(f"decisions {n}: median {pick(0.5):.2f} ms, p99 {pick(0.99):.2f} ms, p99.9 {pick(0.999):.2f} ms, "
          f"max {times[-1] if n else float('nan'):.2f} ms, over 50 ms: {sum(t > 50 for t in times)}")


if __name__ == "__main__":
    main(sys.argv[1])
