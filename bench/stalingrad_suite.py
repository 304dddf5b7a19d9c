"""Measure the two Stalingrad sample engines on the same seeded suite.

Usage: nice -n 10 .venv/bin/python bench/stalingrad_suite.py [--seeds 1000] [--referee-seeds 1000]
                                                               [--master HEX] [--json out.json]

Both engines play seeds 0..N-1 of one master seed: seed k is the dice stream ``suite|k``, so both
get the same dice (arbiter.formats.solo). Two measurements:

* in-process: each engine's ``decide`` function called by the referee in the same process
  (``arbiter.hosting.InProcessPlayer``: same dice stream, same requests, no IPC);
* through the real referee: ``arbiter.formats.solo.run_suite`` with the engines as subprocesses over the
  protocol (clocks, records, a results database in a temporary folder).

The engines are deterministic per game (seeded from the public dice commitment), so the two
measurements must agree seed by seed; the script reports any seed where they differ.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arbiter.clock import parse_time_control  # noqa: E402
from arbiter.hosting import EngineConfig  # noqa: E402
from arbiter.games import load_game  # noqa: E402
from arbiter.formats.solo import SuiteResult, compare, run_suite  # noqa: E402
from arbiter.hosting import InProcessPlayer  # noqa: E402
from arbiter.records.store import ResultsStore  # noqa: E402
from sample_engines import stalingrad_planner, stalingrad_random  # noqa: E402

ENGINES = {"random": stalingrad_random, "planner": stalingrad_planner}
DEFAULT_MASTER = b"stalingrad-suite-1".hex()


def in_process(name: str, module, seeds: int, master: bytes, tmp: Path) -> SuiteResult:
    player = InProcessPlayer(module.make_decider(0), name=name)
    return run_suite(load_game("stalingrad"), player, parse_time_control("inf"), seeds, master, run_dir=tmp)


def through_referee(name: str, module, seeds: int, master: bytes, tmp: Path) -> SuiteResult:
    game = load_game("stalingrad")
    config = EngineConfig(f"{sys.executable} -m {module.__name__}", name=name, cwd=str(ROOT))
    store = ResultsStore(tmp / f"{name}.sqlite")
    try:
        return run_suite(game, config, parse_time_control("60"), seeds, master, store=store, run_dir=tmp)
    finally:
        store.close()


def report(label: str, suites: list[SuiteResult], seconds: dict[str, float]) -> dict:
    print(f"\n## {label}")
    print("| engine | games | wins | win rate | 95% CI (Wilson) | forfeits | mean ms/decision | wall s |")
    print("|---|---|---|---|---|---|---|---|")
    out = {}
    for s in suites:
        lo, hi = s.ci()
        ms = s.mean_ms()
        print(f"| {s.engine} | {s.games} | {s.wins} | {s.win_rate:.1%} | {lo:.1%} – {hi:.1%} | {s.forfeits} | "
              f"{ms:.2f} | {seconds[s.engine]:.0f} |")
        out[s.engine] = {"games": s.games, "wins": s.wins, "ci": [lo, hi], "forfeits": s.forfeits}
    c = compare(suites[0], suites[1])
    print(f"\npaired on {c.n} common seeds: both won {c.both}, {suites[0].engine} only {c.a_only}, "
          f"{suites[1].engine} only {c.b_only}, neither {c.neither}; exact sign test p = {c.p_value:.3g}; "
          f"win-rate difference {suites[1].engine} − {suites[0].engine} = {-c.rate_diff:+.1%} "
          f"(95% CI {-c.rate_high:+.1%} … {-c.rate_low:+.1%})")
    out["paired"] = c.__dict__
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1000, help="seeds played in-process")
    parser.add_argument("--referee-seeds", type=int, default=1000, help="seeds played through the referee (0: skip)")
    parser.add_argument("--master", default=DEFAULT_MASTER, help="hex master seed")
    parser.add_argument("--json", help="write the numbers here")
    args = parser.parse_args()
    master = bytes.fromhex(args.master)
    print(f"master seed {args.master}; seed k = dice stream suite|k")
    results = {}
    local, seconds = [], {}
    with tempfile.TemporaryDirectory(prefix="stalingrad-suite-") as tmp:
        for name, module in ENGINES.items():
            t0 = time.monotonic()
            local.append(in_process(name, module, args.seeds, master, Path(tmp)))
            seconds[name] = time.monotonic() - t0
    results["in_process"] = report(f"in-process, {args.seeds} seeds", local, seconds)
    if args.referee_seeds:
        remote, seconds = [], {}
        with tempfile.TemporaryDirectory(prefix="stalingrad-suite-") as tmp:
            for name, module in ENGINES.items():
                t0 = time.monotonic()
                remote.append(through_referee(name, module, args.referee_seeds, master, Path(tmp)))
                seconds[name] = time.monotonic() - t0
        results["referee"] = report(f"through the referee (engine subprocesses), {args.referee_seeds} seeds",
                                    remote, seconds)
        print("\n## agreement, seed by seed")
        for a, b in zip(local, remote):
            common = sorted(set(a.results) & set(b.results))
            differ = [k for k in common if a.results[k].returns != b.results[k].returns
                      or a.results[k].events != b.results[k].events]
            print(f"{a.engine}: {len(common) - len(differ)} of {len(common)} seeds identical (result and number "
                  f"of events){'; differ: ' + ', '.join(map(str, differ[:20])) if differ else ''}")
            results.setdefault("agreement", {})[a.engine] = {"seeds": len(common), "differ": differ}
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
