"""A hostile-but-legal EinStein engine for bench_isolation.py: it answers every request at once
with a legal move, and meanwhile keeps ``--spin`` CPU-burning child processes busy, so an opponent
that may not ponder shows whether freezing really takes its CPU away (``--spin 0``: no load)."""
from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def spin_forever() -> None:
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # die with the engine
    except OSError:
        pass
    while True:
        pass


def main() -> int:
    from protocol.kit import engine_arguments, run_engine

    parser = engine_arguments("busy-looping EinStein engine (benchmark opponent)", "busy")
    parser.add_argument("--spin", type=int, default=4, help="CPU-burning child processes (default 4)")
    args = parser.parse_args()
    for _ in range(args.spin):  # before any socket exists: a plain fork is safe here
        if os.fork() == 0:
            spin_forever()
    return run_engine(lambda request, game: request.legal_moves[0], name=args.name, games=["einstein"],
                      wants_legal_moves=True, endpoint=args.endpoint)


if __name__ == "__main__":
    raise SystemExit(main())
