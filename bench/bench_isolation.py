#!/usr/bin/env python
"""Engine isolation benchmark (issue 11, "Numbers to reach"): what the sandbox and freezing cost.

Run from the repository root::

    .venv/bin/python bench/bench_isolation.py                 # full run (several minutes on 2 cores)
    .venv/bin/python bench/bench_isolation.py --quick         # smoke run (< 1 min)
    .venv/bin/python bench/bench_isolation.py --parts 4 --forfeit-games 10000

Every comparison is measured side by side in one run, variants interleaved in rounds so that
machine noise hits them alike. After each part the load of the rest of the machine is printed.

1. Engine start-up: spawn -> hello received (``EngineSession.launch`` + ``handshake``) of
   ``python -m sample_engines.random_engine``, sandboxed (default) vs ``sandbox="none"``; and the
   bare ``bwrap <our flags> -- true`` vs plain ``true`` (the sandbox's own floor, no Python).
2. Referee overhead per decision (reply read -> next request sent, as in bench_foundation.py)
   in real games of two random engines: sandbox + freezing (default) vs sandbox none + ponder
   (the brief's "off"), plus sandbox + ponder and a bare run (none, ponder, without the ponder
   CPU accounting). Freeze / thaw (``EngineProcess.freeze``) timed separately.
3. Nodes per move of ``sample_engines.einstein_expectimax`` against ``bench/busy_engine.py``
   (answers at once, burns 4 processes the rest of the time): opponent frozen (ponder=false,
   default), opponent pondering (ponder=true), and no load (``--spin 0``).
4. Spurious time forfeits: N games at ``st=0.05`` between random engines, sandbox on, 4 match
   processes in parallel; forfeits counted, worst decision time and its margin to the flag.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(ROOT), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

from bench_foundation import (cpu_snapshot, header, instrumented_referee, machine_facts, median,  # noqa: E402
                              overheads_from_timeline, pct, verdict)

from arbiter.clock import DEFAULT_MARGIN_MS, parse_time_control  # noqa: E402
from arbiter.formats.match import Match, MatchFormat  # noqa: E402
from arbiter.games import load_game  # noqa: E402
from arbiter.hosting import EngineConfig, EngineSession  # noqa: E402
from arbiter.hosting.process import EngineProcess  # noqa: E402
from arbiter.hosting.sandbox import bwrap_argv, support  # noqa: E402

PY = sys.executable
SELF = str(Path(__file__).resolve())
RANDOM_ENGINE = [PY, "-m", "sample_engines.random_engine"]
EXPECTIMAX = [PY, "-m", "sample_engines.einstein_expectimax"]
BUSY = [PY, str(HERE / "busy_engine.py")]

SIZES = {
    "full": dict(starts=40, bare=100, ref_rounds=6, ref_games=40, freeze_cycles=2000, node_rounds=6, node_games=2,
                 movetime=0.1, forfeit_games=2000),
    "quick": dict(starts=6, bare=20, ref_rounds=2, ref_games=6, freeze_cycles=200, node_rounds=1, node_games=1,
                  movetime=0.05, forfeit_games=100),
}


@contextmanager
def load_note(results: dict, key: str):
    """Print (and keep) how busy the rest of the machine was during a part: other processes'
    CPU (system busy time minus ours and our children's) and the load average."""
    a, la = cpu_snapshot(), os.getloadavg()
    yield
    b, lb = cpu_snapshot(), os.getloadavg()
    wall = b[0] - a[0]
    other = max(0.0, ((b[1] - a[1]) - (b[3] - a[3])) / wall)
    steal = (b[2] - a[2]) / wall
    results.setdefault("load", {})[key] = {"other_cores": round(other, 2), "steal_cores": round(steal, 2),
                                           "seconds": round(wall, 1), "loadavg_before": la, "loadavg_after": lb}
    warn = "  <- disturbed by other work on this machine" if other > 0.25 or steal > 0.1 else ""
    print(f"[{wall:.1f} s; other processes used {other:.2f} of {os.cpu_count()} cores, steal {steal:.2f}; "
          f"load average {la[0]:.2f} -> {lb[0]:.2f}{warn}]")


def cfg(command: list[str], name: str, **kw) -> EngineConfig:
    return EngineConfig(command, name=name, cwd=str(ROOT), **kw)


# --- part 1: start-up ----------------------------------------------------------------------------


def part_startup(size: dict) -> dict:
    header("1. Engine start-up: spawn -> hello received (random_engine), sandbox vs none")
    modes = {"sandbox": "auto", "none": "none"}
    launch_ms: dict[str, list[float]] = {m: [] for m in modes}
    total_ms: dict[str, list[float]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory(prefix="bench-iso-") as d:
        for rep in range(size["starts"] + 1):
            for m, mode in (modes.items() if rep % 2 else reversed(modes.items())):
                s = EngineSession(cfg(RANDOM_ENGINE, f"{m}{rep}", sandbox=mode), Path(d))
                t0 = time.perf_counter()
                s.launch()
                t1 = time.perf_counter()
                s.handshake("einstein")
                t2 = time.perf_counter()
                s.stop()
                if rep:  # the first round warms the page cache
                    launch_ms[m].append((t1 - t0) * 1000)
                    total_ms[m].append((t2 - t0) * 1000)
        # The sandbox's own floor: the same bwrap command line around /bin/true.
        work = Path(d) / "work"
        work.mkdir()
        argv_bwrap = bwrap_argv(["true"], work_dir=work, endpoint_dir=None, cwd=None, hide=[], network=False,
                                uid=None)
        bare: dict[str, list[float]] = {"bwrap true": [], "true": []}
        for _ in range(size["bare"]):
            for name, argv in (("bwrap true", argv_bwrap), ("true", ["true"])):
                t = time.perf_counter()
                subprocess.run(argv, check=True)
                bare[name].append((time.perf_counter() - t) * 1000)
    out = {}
    print(f"{'variant':<24} {'median ms':>10} {'p90 ms':>8} {'n':>4}   (launch part: median ms)")
    for m in modes:
        v = total_ms[m]
        out[m] = {"median_ms": median(v), "p90_ms": pct(v, 0.9), "launch_median_ms": median(launch_ms[m]), "n": len(v)}
        print(f"{'random_engine, ' + m:<24} {median(v):>10.1f} {pct(v, 0.9):>8.1f} {len(v):>4}   "
              f"({median(launch_ms[m]):.1f})")
    for name, v in bare.items():
        out[name] = {"median_ms": median(v), "p90_ms": pct(v, 0.9), "n": len(v)}
        print(f"{name:<24} {median(v):>10.1f} {pct(v, 0.9):>8.1f} {len(v):>4}")
    extra = out["sandbox"]["median_ms"] - out["none"]["median_ms"]
    extra90 = out["sandbox"]["p90_ms"] - out["none"]["p90_ms"]
    floor = out["bwrap true"]["median_ms"] - out["true"]["median_ms"]
    print(f"sandbox's extra start-up: median {extra:+.1f} ms, p90 {extra90:+.1f} ms (target <= 50 ms: "
          f"{verdict(extra <= 50)}); bare bwrap over plain exec: {floor:+.1f} ms")
    print("  launch = work folder, secret, socket, control group, bwrap argv, Popen; the rest is the engine's "
          "own start (Python + imports) and the handshake")
    out.update(extra_ms=extra, extra_p90_ms=extra90, bwrap_floor_ms=floor)
    return out


# --- part 2: referee overhead per decision ---------------------------------------------------------


@contextmanager
def timed_freeze(samples: dict[str, list[float]], accounting: list[bool]):
    """Time EngineProcess.freeze calls that change state (freeze / thaw, µs) and optionally turn
    the ponder CPU accounting (EngineProcess.cpu_seconds) off."""
    orig_freeze, orig_cpu = EngineProcess.freeze, EngineProcess.cpu_seconds
    pc = time.perf_counter_ns

    def freeze(self, frozen):
        if frozen == self._frozen:
            return orig_freeze(self, frozen)
        t = pc()
        orig_freeze(self, frozen)
        samples["freeze" if frozen else "thaw"].append((pc() - t) / 1000)

    def cpu_seconds(self):
        if not accounting[0]:
            return None
        t = pc()
        try:
            return orig_cpu(self)
        finally:
            samples["cpu_seconds"].append((pc() - t) / 1000)

    EngineProcess.freeze, EngineProcess.cpu_seconds = freeze, cpu_seconds
    try:
        yield
    finally:
        EngineProcess.freeze, EngineProcess.cpu_seconds = orig_freeze, orig_cpu


REF_VARIANTS = {
    # name: (sandbox, ponder, ponder CPU accounting)
    "sandbox+freeze": ("auto", False, True),
    "none+ponder": ("none", True, True),
    "sandbox+ponder": ("auto", True, True),
    "sandbox only": ("auto", True, False),
    "bare": ("none", True, False),
}


def part_referee(size: dict) -> dict:
    header("2. Referee overhead per decision, random vs random, tc 180 (variants interleaved)")
    game = load_game("einstein")
    tc = parse_time_control("180")
    per: dict[str, dict[str, list[float]]] = {v: {"total": [], "read": [], "logic": [], "send": []}
                                              for v in REF_VARIANTS}
    fz: dict[str, dict[str, list[float]]] = {v: {"freeze": [], "thaw": [], "cpu_seconds": []} for v in REF_VARIANTS}
    with tempfile.TemporaryDirectory(prefix="bench-iso-") as d:
        for r in range(size["ref_rounds"]):
            order = list(REF_VARIANTS.items())
            order = order if r % 2 == 0 else order[::-1]
            for name, (sandbox, ponder, accounting) in order:
                cfgs = tuple(cfg(RANDOM_ENGINE + ["--seed", str(i + 2 * r)], n, sandbox=sandbox, ponder=ponder)
                             for i, n in enumerate("AB"))
                match = Match(game, cfgs, tc, MatchFormat.parse(f"games={size['ref_games']}"), run_dir=Path(d),
                              seed=f"iso{r}".encode())
                with timed_freeze(fz[name], [accounting]), instrumented_referee() as (timeline, _games):
                    result = match.play()
                bad = [rec.reason for rec in result.records if rec.reason != "normal"]
                if bad:
                    print(f"  ({name}: abnormal endings {Counter(bad)})")
                for k, v in overheads_from_timeline(timeline).items():
                    per[name][k].extend(v)
    out = {}
    print(f"{'variant':<16} {'median us':>10} {'p90 us':>8} {'mean us':>8} {'n':>6}   freeze / thaw / cpu_seconds "
          f"(median us, per call)")
    for name in REF_VARIANTS:
        t = per[name]["total"]
        f = fz[name]
        out[name] = {"median_us": median(t), "p90_us": pct(t, 0.9), "mean_us": sum(t) / len(t), "n": len(t),
                     "freeze_us": median(f["freeze"]) if f["freeze"] else None,
                     "thaw_us": median(f["thaw"]) if f["thaw"] else None,
                     "cpu_seconds_us": median(f["cpu_seconds"]) if f["cpu_seconds"] else None,
                     "freeze_p90_us": pct(f["freeze"], 0.9) if f["freeze"] else None,
                     "thaw_p90_us": pct(f["thaw"], 0.9) if f["thaw"] else None}
        o = out[name]
        fmt = lambda x: "-" if x is None else f"{x:.1f}"  # noqa: E731
        print(f"{name:<16} {o['median_us']:>10.1f} {o['p90_us']:>8.1f} {o['mean_us']:>8.1f} {o['n']:>6}   "
              f"{fmt(o['freeze_us'])} / {fmt(o['thaw_us'])} / {fmt(o['cpu_seconds_us'])}")
    d_off = out["sandbox+freeze"]["median_us"] - out["none+ponder"]["median_us"]
    d_bare = out["sandbox+freeze"]["median_us"] - out["bare"]["median_us"]
    d_sandbox = out["sandbox only"]["median_us"] - out["bare"]["median_us"]
    print(f"sandbox+freeze minus bare (unsandboxed, nothing per decision): {d_bare:+.1f} us median (target <= +15 us: "
          f"{verdict(d_bare <= 15)}); the sandbox alone (no freezing, no accounting): {d_sandbox:+.1f} us; "
          f"sandbox+freeze minus none+ponder: {d_off:+.1f} us (none+ponder pays psutil CPU accounting instead)")
    print("  per decision = start of reading the reply -> end of sending the next request. Off that path: "
          "the CPU counter reads of watching (ponder=false: an engine is frozen between games, and between moves "
          "only once seen pondering) or of ponder accounting (psutil tree walk without a control group), and "
          "the freezing of the engine that answered")
    n = out["sandbox+freeze"]["n"]
    f = fz["sandbox+freeze"]
    off = (sum(f["freeze"]) + sum(f["cpu_seconds"])) / n
    print(f"sandbox+freeze, off the path per decision: {off:.1f} us ({len(f['freeze'])} freezes and "
          f"{len(f['thaw'])} thaws in {n} decisions, {len(f['cpu_seconds'])} counter reads); all referee work "
          f"over bare: {d_bare + off:+.1f} us")
    out.update(delta_vs_none_ponder_us=d_off, delta_vs_bare_us=d_bare, delta_sandbox_only_us=d_sandbox,
               off_path_us=off, referee_work_delta_us=d_bare + off)
    out["freeze_loop"] = freeze_loop(size["freeze_cycles"])
    return out


def freeze_loop(cycles: int) -> dict:
    """Freeze/thaw one idle sandboxed engine in a tight loop, outside any game, and split the
    cost of the control group v1 path (read cgroup.procs, one signal per process)."""
    import signal

    with tempfile.TemporaryDirectory(prefix="bench-iso-") as d:
        s = EngineSession(cfg(RANDOM_ENGINE, "idle"), Path(d))
        s.launch()
        s.handshake("einstein")
        proc = s.process
        pc = time.perf_counter_ns
        fr, th, reads, kills = [], [], [], []
        try:
            for _ in range(cycles):
                t = pc()
                proc.freeze(False)
                t1 = pc()
                proc.freeze(True)
                t2 = pc()
                th.append((t1 - t) / 1000)
                fr.append((t2 - t1) / 1000)
            if proc.cgroup is not None:
                for _ in range(cycles):
                    t = pc()
                    pids = proc.cgroup.pids()
                    t1 = pc()
                    for pid in pids:
                        os.kill(pid, signal.SIGSTOP)
                    t2 = pc()
                    reads.append((t1 - t) / 1000)
                    kills.append((t2 - t1) / 1000 / max(1, len(pids)))
            alt: dict[str, list[float]] = {"os.open+read+close": [], "pread on a kept fd": [], "killpg": []}
            if proc.cgroup is not None:  # cheaper ways to do the same, for reference
                path = str(proc.cgroup.dirs["pids"] / "cgroup.procs")
                fd = os.open(path, os.O_RDONLY)
                try:
                    for _ in range(cycles):
                        t = pc()
                        f = os.open(path, os.O_RDONLY)
                        a = os.read(f, 65536)
                        os.close(f)
                        t1 = pc()
                        b = os.pread(fd, 65536, 0)
                        t2 = pc()
                        os.killpg(proc.pid, signal.SIGCONT)
                        os.killpg(proc.pid, signal.SIGSTOP)
                        t3 = pc()
                        alt["os.open+read+close"].append((t1 - t) / 1000)
                        alt["pread on a kept fd"].append((t2 - t1) / 1000)
                        alt["killpg"].append((t3 - t2) / 2000)
                    assert a == b, (a, b)
                finally:
                    os.close(fd)
            npids = len(proc.cgroup.pids()) if proc.cgroup is not None else 0
        finally:
            s.stop()
    out = {"freeze_us": median(fr), "thaw_us": median(th), "freeze_p90_us": pct(fr, 0.9),
           "thaw_p90_us": pct(th, 0.9), "read_procs_us": median(reads) if reads else None,
           "kill_us": median(kills) if kills else None, "processes": npids,
           "alternatives_us": {k: median(v) for k, v in alt.items() if v}}
    print(f"idle sandboxed engine, {cycles} freeze/thaw cycles in a loop: freeze median {out['freeze_us']:.1f} us "
          f"(p90 {out['freeze_p90_us']:.1f}), thaw median {out['thaw_us']:.1f} us (p90 {out['thaw_p90_us']:.1f}); "
          f"the engine has {npids} processes in its control group")
    if reads:
        print(f"  of which: one read of cgroup.procs {out['read_procs_us']:.1f} us (a freeze reads it twice: "
              f"once to signal, once to see that no process appeared; a thaw signals the processes it stopped), one kill() {out['kill_us']:.1f} us per process")
        print("  for reference, per call: " + ", ".join(f"{k} {v:.1f} us" for k, v in out["alternatives_us"].items())
              + " (killpg: one signal to the engine's process group)")
    return out


# --- part 3: nodes per move against a busy opponent -------------------------------------------------


NODE_VARIANTS = {
    # name: (opponent spinner processes, opponent ponder)
    "no load": (0, False),
    "busy, frozen (ponder=false)": (4, False),
    "busy, pondering (ponder=true)": (4, True),
}


def part_nodes(size: dict) -> dict:
    mt = size["movetime"]
    header(f"3. einstein_expectimax nodes per move (--movetime {mt}) vs bench/busy_engine.py, sandboxed")
    game = load_game("einstein")
    tc = parse_time_control("600")
    nodes: dict[str, list[int]] = {v: [] for v in NODE_VARIANTS}
    ms: dict[str, list[float]] = {v: [] for v in NODE_VARIANTS}
    with tempfile.TemporaryDirectory(prefix="bench-iso-") as d:
        for r in range(size["node_rounds"]):
            order = list(NODE_VARIANTS.items())
            order = order if r % 2 == 0 else order[::-1]
            for name, (spin, ponder) in order:
                honest = cfg(EXPECTIMAX + ["--movetime", str(mt), "--seed", str(r)], "honest")
                busy = cfg(BUSY + ["--spin", str(spin)], "busy", ponder=ponder)
                match = Match(game, (honest, busy), tc, MatchFormat.parse(f"games={2 * size['node_games']}"),
                              run_dir=Path(d), seed=f"nodes{r}".encode())
                result = match.play()
                for rec in result.records:
                    if rec.reason != "normal":
                        print(f"  ({name}: a game ended {rec.reason})")
                    seat = rec.players.index("honest")
                    for e in rec.events:
                        if e.seat == seat and e.kind == "move" and e.info is not None and e.info.nodes:
                            nodes[name].append(e.info.nodes)
                            ms[name].append(e.measured_ms)
    out = {}
    base = median(nodes["no load"])
    print(f"{'opponent':<30} {'median nodes/move':>18} {'mean':>8} {'nodes/s':>9} {'median':>9} {'moves':>6}  "
          f"vs no load (nodes/move, nodes/s)")
    for name in NODE_VARIANTS:
        n = nodes[name]
        rate = sum(n) / (sum(ms[name]) / 1000)
        per_move = median([x / (t / 1000) for x, t in zip(n, ms[name])])
        out[name] = {"median_nodes": median(n), "mean_nodes": sum(n) / len(n), "nodes_per_s": rate, "moves": len(n),
                     "vs_baseline": median(n) / base, "median_nodes_per_s": per_move}
        print(f"{name:<30} {median(n):>18.0f} {sum(n) / len(n):>8.0f} {rate:>9.0f} {per_move:>9.0f} {len(n):>6}  "
              f"{median(n) / base:>6.1%} {rate / out['no load']['nodes_per_s']:>7.1%}")
    frozen = out["busy, frozen (ponder=false)"]["vs_baseline"]
    rate = out["busy, frozen (ponder=false)"]["nodes_per_s"] / out["no load"]["nodes_per_s"]
    print(f"frozen busy opponent: {frozen:.1%} of the baseline's median nodes/move (target >= 90 %: "
          f"{verdict(frozen >= 0.9)}); nodes/s {rate:.1%} of the baseline's")
    print("  only search moves counted (immediate wins / only moves report 0 nodes); nodes/s = all nodes / all "
          "referee-measured time of those moves; median = of each move's nodes/time. The engine stops deepening after "
          "20 % of its budget, so nodes/move is quantised by the depth reached: nodes/s shows lost CPU better")
    return out


# --- part 4: spurious forfeits ----------------------------------------------------------------------


def forfeit_worker(games: int, index: int, per_match: int, sandbox: str = "auto") -> int:
    """Play ``games`` games at st=0.05 between random engines, in matches of ``per_match``."""
    game = load_game("einstein")
    tc = parse_time_control("st=0.05")
    reasons: Counter = Counter()
    worst, times, played, details = 0.0, [], 0, []
    with tempfile.TemporaryDirectory(prefix="bench-iso-") as d:
        m = 0
        while played < games:
            n = min(per_match, games - played)
            cfgs = tuple(cfg(RANDOM_ENGINE + ["--seed", str(1000 * index + 2 * m + i)], n_, sandbox=sandbox)
                         for i, n_ in enumerate("AB"))
            result = Match(game, cfgs, tc, MatchFormat.parse(f"games={n}"), run_dir=Path(d),
                           seed=f"forfeit{index}.{m}".encode()).play()
            for rec in result.records:
                reasons[str(rec.reason)] += 1
                if rec.reason != "normal":
                    details.append(str(getattr(rec, "detail", "")))
                for e in rec.events:
                    if e.seat >= 0 and e.measured_ms is not None:
                        times.append(e.measured_ms)
            played += len(result.records)
            m += 1
    times.sort()
    print(json.dumps({"games": played, "reasons": reasons, "details": details[:5], "decisions": len(times),
                      "worst_ms": times[-1] if times else None,
                      "p999_ms": times[int(0.999 * (len(times) - 1))] if times else None,
                      "over_50_ms": sum(1 for t in times if t > 50)}))
    return 0


def part_forfeits(n: int, workers: int = 4, per_match: int = 250, sandbox: str = "auto", setsid: bool = False) -> dict:
    """``sandbox="mixed"``: half the workers sandboxed, half not, side by side under the same load."""
    header(f"4. Spurious forfeits: {n} games at st=0.05, random engines, sandbox={sandbox}, {workers} matches in "
           f"parallel")
    t0 = time.time()
    share = [n // workers + (1 if i < n % workers else 0) for i in range(workers)]
    modes = [("auto", "none")[i % 2] if sandbox == "mixed" else sandbox for i in range(workers)]
    procs = [subprocess.Popen([PY, SELF, "--forfeit-worker", str(share[i]), str(i), str(per_match), modes[i]],
                              cwd=str(ROOT), stdout=subprocess.PIPE, text=True, start_new_session=setsid)
             for i in range(workers)]
    outs = []
    for p in procs:
        out, _ = p.communicate()
        if p.returncode != 0:
            raise RuntimeError(f"forfeit worker failed ({p.returncode})")
        outs.append(json.loads(out.strip().splitlines()[-1]))
    wall = time.time() - t0
    if setsid:
        print("(each match process in its own session: its own scheduler autogroup, like each engine)")
    allowed = 50 + DEFAULT_MARGIN_MS
    print(f"{n} games in {wall:.0f} s ({n / wall:.1f} games/s)")
    res = {"seconds": wall}
    for mode in dict.fromkeys(modes):
        mine = [o for o, m in zip(outs, modes) if m == mode]
        reasons: Counter = Counter()
        for o in mine:
            reasons.update(o["reasons"])
        games = sum(o["games"] for o in mine)
        worst = max(o["worst_ms"] for o in mine)
        forfeits = games - reasons.get("normal", 0)
        over = sum(o["over_50_ms"] for o in mine)
        decisions = sum(o["decisions"] for o in mine)
        print(f"sandbox={mode}: {games} games, {decisions} decisions; endings {dict(reasons)}; time forfeits "
              f"{reasons.get('time', 0)}, other abnormal {forfeits - reasons.get('time', 0)} (target 0: "
              f"{verdict(forfeits == 0)})")
        if forfeits:
            print("  first details per worker: " + "; ".join(x for o in mine for x in o["details"]))
        print(f"  worst completed decision (referee-measured, request sent -> reply read): {worst:.1f} ms; the flag "
              f"falls past {allowed} ms (50 ms + {DEFAULT_MARGIN_MS} ms margin): margin left {allowed - worst:.1f} ms; "
              f"p99.9 (worst worker) {max(o['p999_ms'] for o in mine):.1f} ms; decisions over 50 ms: {over} "
              f"({over / decisions:.2%})")
        res[mode] = {"games": games, "reasons": dict(reasons), "forfeits": forfeits, "worst_ms": worst,
                     "margin_left_ms": allowed - worst, "over_50_ms": over, "decisions": decisions}
    return res


# --- main ------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--forfeit-worker"]:
        return forfeit_worker(int(argv[1]), int(argv[2]), int(argv[3]), argv[4])
    parser = argparse.ArgumentParser(description="Engine isolation benchmark (see the module docstring).")
    parser.add_argument("--quick", action="store_true", help="small sizes, smoke run (< 1 min)")
    parser.add_argument("--parts", default="1234", help="which parts to run, e.g. 12 (default 1234)")
    parser.add_argument("--forfeit-games", type=int, default=None, help="games in part 4")
    parser.add_argument("--forfeit-sandbox", default="auto", choices=("auto", "none", "mixed"),
                        help="part 4: default sandbox (auto), none, or mixed (half the matches each, side by side)")
    parser.add_argument("--forfeit-setsid", action="store_true",
                        help="part 4: start each match process in its own session (own autogroup)")
    parser.add_argument("--json", metavar="FILE", help="also write the numbers as JSON")
    args = parser.parse_args(argv)
    size = dict(SIZES["quick" if args.quick else "full"])
    if args.forfeit_games:
        size["forfeit_games"] = args.forfeit_games
    started = time.perf_counter()
    print(f"bench_isolation ({'quick' if args.quick else 'full'} run, {time.strftime('%Y-%m-%d %H:%M:%S %Z')})")
    facts = machine_facts()
    facts.pop("open_spiel", None)
    s = support()
    facts["sandbox"] = (f"bwrap {s.bwrap}, cgroup {s.cgroup}, root {s.root}" if s.sandbox else f"none: {s.problem}")
    for k, v in facts.items():
        print(f"{k:<15} {v}")
    print(f"{'load average':<15} {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1/5/15 min, at start)")
    results: dict = {"machine": facts, "quick": args.quick}
    parts = {"1": ("startup", lambda: part_startup(size)), "2": ("referee", lambda: part_referee(size)),
             "3": ("nodes", lambda: part_nodes(size)), "4": ("forfeits", lambda: part_forfeits(size["forfeit_games"],
                                                                    sandbox=args.forfeit_sandbox,
                                                                    setsid=args.forfeit_setsid))}
    for key in args.parts:
        name, fn = parts[key]
        with load_note(results, name):
            results[name] = fn()
    print(f"\ntotal benchmark time {time.perf_counter() - started:.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
