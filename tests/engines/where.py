"""A correct engine that says where it runs: every reply's comment is the cores it may use
(``Cpus_allowed_list``); it waits ``--think`` ms (default 0) and plays the first legal move.

Usage: python tests/engines/where.py [--think MS]
"""
from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from protocol.kit import engine_arguments, run_engine  # noqa: E402
from protocol.messages import Info  # noqa: E402


def main() -> int:
    parser = engine_arguments(__doc__.splitlines()[0], "where")
    parser.add_argument("--think", type=int, default=0)
    args = parser.parse_args()

    def decide(request, game):
        time.sleep(args.think / 1000)
        cores = ",".join(map(str, sorted(os.sched_getaffinity(0))))
        return request.legal_moves[0], Info(comment=cores)

    return run_engine(decide, name=args.name, wants_legal_moves=True, endpoint=args.endpoint)


if __name__ == "__main__":
    raise SystemExit(main())
