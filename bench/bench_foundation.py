#!/usr/bin/env python
"""Foundation benchmark: transport, referee overhead, games per second, rules playouts.

Run from the repository root::

    .venv/bin/python bench/bench_foundation.py           # full run (~1-2 minutes on 2 cores)
    .venv/bin/python bench/bench_foundation.py --quick   # CI smoke (< 30 s)

Everything printed is measured in the same run, on the machine described at the top.

1. Round trip: a ROUTER (this process) and a DEALER peer (a subprocess) over ``ipc://``.
   ``raw`` echoes a 200-byte frame with plain pyzmq; ``ours`` sends a real EinStein ``Request``
   through ``ZmqConnection`` (poll + recv, as ``EngineSession`` does) to a peer that decodes it with
   ``EngineSocket`` and answers a ``Reply``; ``kit`` is the same with the real
   ``sample_engines.random_engine`` (``protocol.kit.run_engine``) as the peer. The modes run
   interleaved in blocks so that machine noise hits all of them alike.
2. Referee overhead per decision, in real games between two random engine subprocesses: the
   time from the start of reading an engine's reply to the end of sending the next request
   (``EngineSession._read_one`` / ``EngineSession._send`` are wrapped with timestamps). Cross-checked by
   (play() wall time - time blocked in poll) / decisions, and by the same referee driven by
   in-process loopback engines (no IPC at all), with a per-component breakdown.
3. Games per second between two random engines, tc 180: one ``Match`` process, then one per
   core in parallel.
4. Random playouts per second: our rules (fast path and generic string interface) vs
   OpenSpiel's ``einstein_wurfelt_nicht`` driven from Python.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import msgspec  # noqa: E402
import zmq  # noqa: E402

from arbiter.clock import parse_time_control  # noqa: E402
from arbiter.dice import Dice, stream_name  # noqa: E402
from arbiter.hosting import EngineConfig, EngineSession  # noqa: E402
from arbiter.games import CHANCE, SIMULTANEOUS, load_game  # noqa: E402
from arbiter.games.einstein import LAYOUTS, EinsteinGame  # noqa: E402
from arbiter.formats.match import Match, MatchFormat  # noqa: E402
from arbiter.records import Event  # noqa: E402
from arbiter.referee import Referee  # noqa: E402
from protocol.codec import decode, encode  # noqa: E402
from protocol.messages import Hello, Info, NewGame, Quit, Ready, Reply, Request, Welcome  # noqa: E402
from protocol.transport import EngineSocket, ZmqConnection, new_ipc_endpoint  # noqa: E402

PY = sys.executable
SELF = str(Path(__file__).resolve())
RANDOM_ENGINE = [PY, "-m", "sample_engines.random_engine"]
TC = "180"

SIZES = {
    # name: (round trips per mode, warm-up, games for part 2, games per match in part 3,
    #        seconds per playout measurement, loopback games)
    "full": dict(rt=10000, rt_warm=1000, ref_games=400, match_games=600, playout_s=5.0, loop_games=400,
                 olympiads=6),
    "quick": dict(rt=600, rt_warm=200, ref_games=12, match_games=25, playout_s=0.4, loop_games=40,
                  olympiads=1),
}


# --- small helpers -------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank on the sorted values."""
    s = sorted(values)
    if not s:
        return float("nan")
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def median(values: list[float]) -> float:
    return pct(values, 0.5)


def verdict(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


def header(title: str) -> None:
    print()
    print(title)
    print("-" * len(title))


def cpu_snapshot() -> tuple[float, float, float, float]:
    """(wall, system-wide busy CPU s, steal s, CPU s of this process and its waited-for children)."""
    import psutil

    t = psutil.cpu_times()
    busy = t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0)
    mine = os.times()
    return (time.monotonic(), busy, getattr(t, "steal", 0.0),
            mine.user + mine.system + mine.children_user + mine.children_system)


@contextmanager
def load_note(results: dict, key: str):
    """After a part, print how busy the rest of the machine was while it ran (noise indicator)."""
    a = cpu_snapshot()
    yield
    b = cpu_snapshot()
    wall = b[0] - a[0]
    other = max(0.0, ((b[1] - a[1]) - (b[3] - a[3])) / wall)
    steal = (b[2] - a[2]) / wall
    results.setdefault("load", {})[key] = {"other_cores": other, "steal_cores": steal, "seconds": wall}
    warn = "  <- numbers disturbed by other work on this machine" if other > 0.25 or steal > 0.1 else ""
    print(f"[{wall:.1f} s; meanwhile other processes used {other:.2f} cores, hypervisor steal "
          f"{steal:.2f} cores{warn}]")


def machine_facts() -> dict[str, str]:
    cpu_model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu_model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 1
    try:
        import pyspiel  # noqa: F401
        from importlib.metadata import version

        spiel = version("open_spiel")
    except Exception:  # noqa: BLE001
        spiel = "not installed"
    return {
        "cpu count": f"{os.cpu_count()} (usable by this process: {usable})",
        "cpu model": cpu_model or platform.processor() or "unknown",
        "platform": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "pyzmq / libzmq": f"{zmq.__version__} / {zmq.zmq_version()}",
        "msgspec": msgspec.__version__,
        "open_spiel": spiel,
    }


def make_dice(seed: bytes, match_id: str, number: int) -> Dice:
    """The dice of one game in its default stream."""
    return Dice(seed, stream_name(match_id, number))


def offline_referee(game: EinsteinGame, seed: int = 1) -> Referee:
    """A Referee over two never-started engines that asked for legal moves (for building
    realistic requests and timing the referee's own steps)."""
    tmp = Path(tempfile.gettempdir())
    engines = []
    for name in ("A", "B"):
        e = EngineSession(EngineConfig(["true"], name=name), tmp)
        e.hello = Hello(name=name, wants_legal_moves=True)
        engines.append(e)
    return Referee(game, engines, parse_time_control(TC), make_dice(seed.to_bytes(8, "big"), "bench", 1),
                   match_id="bench", game_number=1)


def realistic_request(rng: random.Random) -> Request:
    """A mid-game EinStein move request exactly as the referee builds it."""
    game = load_game("einstein")
    ref = offline_referee(game)
    st = ref.state
    seq = 0
    while True:
        p = st.current_player()
        if p == SIMULTANEOUS:
            moves = {0: rng.choice(LAYOUTS), 1: rng.choice(LAYOUTS)}
            st.apply_joint(moves)
            for s in (0, 1):
                ref._add(Event(ply=len(ref.record.events), seat=s, kind="setup", move=moves[s]))
        elif p == CHANCE:
            ref._roll()
        else:
            seq += 1
            req = ref._request_for(p)
            if seq >= 5 or st.is_terminal():
                return req
            move = rng.choice(req.legal_moves)
            st.apply(move)
            ref._add(Event(ply=len(ref.record.events), seat=p, kind="move", move=move,
                           measured_ms=0.123, reported_ms=0, clock_ms=179000))


def spawn(argv: list[str]) -> subprocess.Popen:
    return subprocess.Popen(argv, cwd=str(ROOT), stdin=subprocess.DEVNULL)


def stop(proc: subprocess.Popen) -> None:
    """End a peer we started (by its own handle only)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(2)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(2)


# --- peers (run as subprocesses of this script) ----------------------------------------------


def peer_raw(endpoint: str) -> int:
    """Echo every frame back, plain pyzmq, blocking recv."""
    ctx = zmq.Context.instance()
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.connect(endpoint)
    s.send(b"hi")
    recv, send = s.recv, s.send
    while True:
        frame = recv()
        if frame == b"quit":
            return 0
        send(frame)


def peer_ours(endpoint: str) -> int:
    """Decode each Request with EngineSocket/codec, answer a Reply (first legal move)."""
    sock = EngineSocket(endpoint)
    sock.send(Hello(name="bench-peer", wants_legal_moves=True))
    while True:
        msg = sock.recv()  # blocking
        if not isinstance(msg, Request):
            return 0
        sock.send(Reply(game_id=msg.game_id, seq=msg.seq, move=msg.legal_moves[0], info=Info(time_ms=0)))


# --- part 1: round trip ----------------------------------------------------------------------


def part_round_trip(cfg: dict) -> dict:
    header("1. Round trip over ipc:// (ROUTER here, DEALER peer in a subprocess)")
    rng = random.Random(7)
    request = realistic_request(rng)
    req_bytes = len(encode(request))
    reply_bytes = len(encode(Reply(game_id=request.game_id, seq=request.seq, move=request.legal_moves[0],
                                   info=Info(time_ms=0))))
    payload = bytes(rng.getrandbits(8) for _ in range(200))
    procs: list[subprocess.Popen] = []
    ctx = zmq.Context.instance()
    raw = ctx.socket(zmq.ROUTER)
    raw.setsockopt(zmq.LINGER, 0)
    raw.bind(new_ipc_endpoint())
    raw_ep = raw.getsockopt(zmq.LAST_ENDPOINT).decode()
    ours = ZmqConnection()
    kit = ZmqConnection()
    try:
        procs.append(spawn([PY, SELF, "--peer", "raw", raw_ep]))
        procs.append(spawn([PY, SELF, "--peer", "ours", ours.endpoint]))
        procs.append(spawn(RANDOM_ENGINE + ["--endpoint", kit.endpoint]))
        if not raw.poll(20000):
            raise RuntimeError("raw peer did not connect")
        ident, _ = raw.recv_multipart()
        for sock in (ours, kit):
            if not sock.socket.poll(20000) or not isinstance(sock.receive(), Hello):
                raise RuntimeError("peer did not say hello")
        kit.send(Welcome(referee="bench"))
        kit.send(NewGame(game_id=request.game_id, seq=1, game="einstein", seat=request.seat, seats=["A", "B"],
                         time_control=parse_time_control(TC)))
        if not kit.socket.poll(20000) or not isinstance(kit.receive(), Ready):
            raise RuntimeError("kit engine did not answer ready")

        seq = [100]

        def rt_raw(n: int, out: list[int]) -> None:
            send, recv, pc = raw.send_multipart, raw.recv_multipart, time.perf_counter_ns
            msg = [ident, payload]
            for _ in range(n):
                t0 = pc()
                send(msg)
                frames = recv()
                out.append(pc() - t0)
            assert frames[1] == payload

        def rt_raw_poll(n: int, out: list[int]) -> None:
            # What the referee does around the bytes: socket.poll(timeout) then a NOBLOCK recv.
            send, recv, poll, pc = raw.send_multipart, raw.recv_multipart, raw.poll, time.perf_counter_ns
            msg = [ident, payload]
            for _ in range(n):
                t0 = pc()
                send(msg, flags=zmq.NOBLOCK)
                poll(1000)
                recv(flags=zmq.NOBLOCK)
                out.append(pc() - t0)

        def rt_ours(sock: ZmqConnection):
            def run(n: int, out: list[int]) -> None:
                pc = time.perf_counter_ns
                poll = sock.wait
                for _ in range(n):
                    seq[0] += 1
                    request.seq = seq[0]
                    t0 = pc()
                    sock.send(request)
                    poll(1000)  # EngineSession.wait
                    reply = sock.receive()
                    out.append(pc() - t0)
                    if not isinstance(reply, Reply) or reply.seq != request.seq:
                        raise RuntimeError(f"bad answer {reply!r}")
            return run

        modes = {"raw": rt_raw, "raw+poll": rt_raw_poll, "ours": rt_ours(ours), "kit": rt_ours(kit)}
        for fn in modes.values():
            fn(cfg["rt_warm"], [])
        samples: dict[str, list[int]] = {m: [] for m in modes}
        block = 200
        for _ in range(max(1, cfg["rt"] // block)):
            for m, fn in modes.items():
                fn(block, samples[m])
    finally:
        # Polite exits first (the bare peer exits on anything but a request), then stop them.
        for fn in (lambda: raw.send_multipart([ident, b"quit"], flags=zmq.NOBLOCK),
                   lambda: ours.send(Quit()), lambda: kit.send(Quit())):
            try:
                fn()
            except Exception:  # noqa: BLE001
                pass
        time.sleep(0.1)
        for p in procs:
            stop(p)
        raw.close(linger=0)
        ours.close()
        kit.close()

    res = {m: {"median_us": median(v) / 1000, "p99_us": pct(v, 0.99) / 1000, "n": len(v)}
           for m, v in samples.items()}
    print(f"request: {req_bytes} bytes msgpack (mid-game move with {len(request.legal_moves)} legal moves, "
          f"clocks; no state dict: the random engine does not ask for it); reply: {reply_bytes} bytes; raw frame: {len(payload)} bytes")
    print(f"{'mode':<10} {'median us':>10} {'p99 us':>10} {'n':>7}  what")
    what = {
        "raw": "send_multipart / blocking recv_multipart; peer echoes (blocking)",
        "raw+poll": "same bytes, but socket.poll() + NOBLOCK recv like the referee",
        "ours": "ZmqConnection.send(Request) / poll / recv+decode; peer EngineSocket decode -> Reply",
        "kit": "same, peer = sample_engines.random_engine (protocol.kit.run_engine)",
    }
    for m, r in res.items():
        print(f"{m:<10} {r['median_us']:>10.1f} {r['p99_us']:>10.1f} {r['n']:>7}  {what[m]}")
    ratio = res["ours"]["median_us"] / res["raw"]["median_us"]
    ratio_p99 = res["ours"]["p99_us"] / res["raw"]["p99_us"]
    ratio_kit = res["kit"]["median_us"] / res["raw"]["median_us"]
    print(f"ratio ours/raw: median {ratio:.3f}x, p99 {ratio_p99:.2f}x  (target <= 1.3x median: "
          f"{verdict(ratio <= 1.3)});  kit/raw median {ratio_kit:.2f}x")
    res.update(ratio=ratio, ratio_p99=ratio_p99, ratio_kit=ratio_kit, req_bytes=req_bytes, reply_bytes=reply_bytes)
    return res


# --- part 2: referee overhead ----------------------------------------------------------------


@contextmanager
def instrumented_referee():
    """Wrap EngineSession._read_one / EngineSession._send / the referee's wait_any / Referee.play
    with timestamps (perf_counter_ns). Yields the timeline and the per-game timings."""
    import arbiter.referee as referee_module

    timeline: list[tuple] = []  # (kind, t_start, t_end, message), kind "read" or "send"
    games: list[dict] = []
    blocked = [0]
    orig = (EngineSession._read_one, EngineSession._send, referee_module.wait_any, Referee.play)
    pc = time.perf_counter_ns

    def read_one(self):
        t = pc()
        msg = orig[0](self)
        timeline.append(("read", t, pc(), msg))
        return msg

    def send(self, message):
        t = pc()
        r = orig[1](self, message)
        timeline.append(("send", t, pc(), message))
        return r

    def wait_any(sessions, timeout_ms):
        t = pc()
        try:
            return orig[2](sessions, timeout_ms)
        finally:
            blocked[0] += pc() - t

    def play(self):
        b0, t0 = blocked[0], pc()
        rec = orig[3](self)
        games.append({"wall_ns": pc() - t0, "blocked_ns": blocked[0] - b0,
                      "decisions": sum(1 for e in rec.events if e.seat >= 0), "reason": rec.reason,
                      "measured_ms": [e.measured_ms for e in rec.events if e.seat >= 0]})
        return rec

    EngineSession._read_one, EngineSession._send, referee_module.wait_any, Referee.play = (
        read_one, send, wait_any, play)
    try:
        yield timeline, games
    finally:
        EngineSession._read_one, EngineSession._send, referee_module.wait_any, Referee.play = orig


def overheads_from_timeline(timeline: list[tuple]) -> dict[str, list[float]]:
    """Per decision (µs): from the start of reading the reply that completed a decision to the
    end of sending the next request ("total"), split into reading that reply (recv, decode,
    checks: "read"), the referee's logic up to handing the request to the transport ("logic"),
    and EngineSession._send (msgpack encode + the zmq send call: "send"). Game starts (new_game/ready)
    and ends (game_over) are not decisions and are excluded; a simultaneous set-up counts once,
    from its last reply."""
    out: dict[str, list[float]] = {"total": [], "read": [], "logic": [], "send": []}
    last = None
    for kind, t0, t1, msg in timeline:
        if kind == "read":
            if isinstance(msg, Reply):
                last = (t0, t1)
            elif msg is not None:
                last = None
        else:
            if isinstance(msg, Request) and last is not None:
                out["total"].append((t1 - last[0]) / 1000)
                out["read"].append((last[1] - last[0]) / 1000)
                out["logic"].append((t0 - last[1]) / 1000)
                out["send"].append((t1 - t0) / 1000)
            last = None
    return out


class _LoopbackConnection:
    """A ``protocol.connection.Connection`` to an in-process random engine: no IPC. ``send`` only
    encodes (the referee's share); the engine's work (decode the request, choose, encode the
    reply) happens when the referee waits, i.e. in time counted as waiting for the engine."""

    endpoint = "loopback"
    connected = True
    disconnected = False

    def __init__(self, rng: random.Random):
        self.inbox: list[bytes] = []
        self.queue: list[bytes] = []
        self.rng = rng

    def send(self, message) -> None:
        self.inbox.append(encode(message))  # the referee's encode, as in ZmqConnection.send

    def run_engine(self) -> None:
        while self.inbox:
            msg = decode(self.inbox.pop(0))
            if isinstance(msg, Request):
                self.queue.append(encode(Reply(game_id=msg.game_id, seq=msg.seq,
                                               move=self.rng.choice(msg.legal_moves), info=Info(time_ms=0))))
            elif isinstance(msg, NewGame):
                self.queue.append(encode(Ready(game_id=msg.game_id, seq=msg.seq)))

    def receive(self):
        return decode(self.queue.pop(0)) if self.queue else None

    def wait(self, timeout_ms: int) -> bool:
        self.run_engine()
        return bool(self.queue)

    def close(self) -> None:
        pass


def loopback_games(n: int) -> dict:
    """Play n games with the real Referee against in-process engines; per-decision overhead."""
    game = load_game("einstein")
    rng = random.Random(3)
    tmp = Path(tempfile.gettempdir())
    engines = []
    for name in ("A", "B"):
        e = EngineSession(EngineConfig(["true"], name=name), tmp)
        e.hello = Hello(name=name, wants_legal_moves=True)
        e.connection = _LoopbackConnection(rng)
        engines.append(e)
    tc = parse_time_control(TC)
    with instrumented_referee() as (timeline, games):
        for g in range(n):
            order = engines if g % 2 == 0 else engines[::-1]
            Referee(game, order, tc, make_dice(os.urandom(32), "loop", g + 1), match_id="loop",
                             game_number=g + 1).play()
    decisions = sum(g["decisions"] for g in games)
    busy = sum(g["wall_ns"] - g["blocked_ns"] for g in games)
    return {"per": overheads_from_timeline(timeline), "decisions": decisions, "games": n,
            "all_in_us": busy / decisions / 1000}


def component_breakdown(reps: int) -> list[tuple[str, float]]:
    """Time each step the referee does per move decision, on real mid-game positions (µs)."""
    game = load_game("einstein")
    rng = random.Random(11)
    # Collect mid-game positions at a die node (before the roll).
    positions = []
    while len(positions) < reps:
        st = game.new_initial_state()
        st.apply_joint({0: rng.choice(LAYOUTS), 1: rng.choice(LAYOUTS)})
        while not st.is_terminal():
            positions.append(st.clone())
            st.set_die(rng.randint(1, 6))
            f, t = rng.choice(st.moves_ints())
            st.apply_move_ints(f, t)
    positions = positions[:reps]
    ref = offline_referee(game)
    for _ in range(30):  # a realistic record length for last_moves and ply
        ref._add(Event(ply=len(ref.record.events), seat=0, kind="move", move="a5b4"))
    pc = time.perf_counter_ns
    rows: list[tuple[str, float]] = []

    def timed(name: str, fn, items) -> list:
        out = []
        t = pc()
        for it in items:
            out.append(fn(it))
        rows.append((name, (pc() - t) / len(items) / 1000))
        return out

    # The die roll (HMAC-SHA256), and the whole _roll step (outcomes, apply_chance, event).
    timed("dice.roll(6) (HMAC-SHA256)", lambda _: ref.dice.roll(6), range(reps))
    rolled = []

    def roll(st):
        ref.state = st
        ref._roll()
        rolled.append(st)

    timed("Referee._roll (incl. dice, apply_chance, Event)", roll, [p.clone() for p in positions])
    # Request building.
    seat_of = [st.current_player() for st in rolled]

    def build(i):
        ref.state = rolled[i]
        ref.seen_events[seat_of[i]] = len(ref.record.events) - 2
        return ref._request_for(seat_of[i])

    reqs = timed("Referee._request_for (legal moves, position, clocks)", build, range(reps))
    timed("  of which state.legal_moves(seat)", lambda i: rolled[i].legal_moves(seat_of[i]), range(reps))
    timed("  of which state.observation(seat) (to_text)", lambda i: rolled[i].observation(seat_of[i]), range(reps))
    timed("  (state.observation_data(seat), only for engines that ask)",
          lambda i: rolled[i].observation_data(seat_of[i]), range(reps))
    timed("encode(Request)", encode, reqs)
    replies = [encode(Reply(game_id=r.game_id, seq=r.seq, move=rng.choice(r.legal_moves), info=Info(time_ms=1)))
               for r in reqs]
    decoded = timed("decode(Reply)", decode, replies)
    timed("state.check_move(move, seat)", lambda i: rolled[i].check_move(decoded[i].move, seat_of[i]), range(reps))
    clocks = [ref.clocks[0]] * reps
    timed("Clock.charge + remaining_ms", lambda c: (c.charge(0.0001, 0.05), c.remaining_ms()), clocks)
    timed("state.apply(move) (validates again)", lambda i: rolled[i].apply(decoded[i].move), range(reps))
    ev = ref.record.events

    def add(i):
        r = decoded[i]
        ev.append(Event(ply=len(ev), seat=seat_of[i], kind="move", move=r.move, measured_ms=0.1,
                        reported_ms=r.info.time_ms, clock_ms=1000, info=r.info))

    timed("Event(...) + append", add, range(reps))
    return rows


def part_referee(cfg: dict) -> dict:
    header("2. Referee overhead per decision (real games, two random engine subprocesses, tc 180)")
    game = load_game("einstein")
    cfgs = (EngineConfig(RANDOM_ENGINE + ["--seed", "1"], name="A", cwd=str(ROOT)),
            EngineConfig(RANDOM_ENGINE + ["--seed", "2"], name="B", cwd=str(ROOT)))
    with tempfile.TemporaryDirectory(prefix="bench-") as d:
        match = Match(game, cfgs, parse_time_control(TC), MatchFormat.parse(f"games={cfg['ref_games']}"),
                      run_dir=Path(d), seed=b"bench")
        with instrumented_referee() as (timeline, games):
            result = match.play()
    per = overheads_from_timeline(timeline)
    tot = per["total"]
    reasons = {r.reason for r in result.records}
    decisions = sum(g["decisions"] for g in games)
    wall = sum(g["wall_ns"] for g in games)
    blocked = sum(g["blocked_ns"] for g in games)
    rtt = [m for g in games for m in g["measured_ms"]]
    cross = (wall - blocked) / decisions / 1000
    med, p90 = median(tot), pct(tot, 0.9)
    handoff = [r + lg for r, lg in zip(per["read"], per["logic"])]
    print(f"{len(result.records)} games ({', '.join(sorted(reasons))}), {decisions} decisions "
          f"({len(tot)} reply->next-request intervals)")
    print(f"referee overhead per decision: median {med:.1f} us, p90 {p90:.1f} us, p99 {pct(tot, 0.99):.1f} us, "
          f"mean {sum(tot) / len(tot):.1f} us  (target <= 100 us median: {verdict(med <= 100)})")
    print("  = from the start of EngineSession._read_one (reply waiting) to the return of EngineSession._send for the next "
          "request; waiting for the engine is excluded. Split (medians of each part):")
    print(f"  {median(per['read']):7.1f} us  read the reply: zmq recv, msgpack decode, seq/type checks")
    print(f"  {median(per['logic']):7.1f} us  referee logic: check_move, clock charge, state.apply, Event record, "
          f"terminal check, die roll (HMAC-SHA256 + Roll + apply_chance + chance Event), request building "
          f"(position text, state dict, legal-move list, clocks, last_moves)")
    print(f"  {median(per['send']):7.1f} us  EngineSession._send: msgpack encode (~1 us) + the zmq send call")
    print(f"  excluding the zmq send call (reply read -> request handed to the transport): median "
          f"{median(handoff):.1f} us, p90 {pct(handoff, 0.9):.1f} us")
    print(f"cross-check: (sum of play() wall - time blocked in poll) / decisions = {cross:.1f} us "
          f"(also includes new_game/ready, game_over, record finalisation and poll() call overhead)")
    print(f"engine round trip as the referee measures it (Event.measured_ms): median {median(rtt) * 1000:.1f} us, "
          f"p90 {pct(rtt, 0.9) * 1000:.1f} us")

    loop = loopback_games(cfg["loop_games"])
    lt = loop["per"]["total"]
    print(f"same Referee, in-process loopback engines (no IPC; {loop['games']} games, {loop['decisions']} "
          f"decisions): median {median(lt):.1f} us, p90 {pct(lt, 0.9):.1f} us per decision (read "
          f"{median(loop['per']['read']):.1f} + logic {median(loop['per']['logic']):.1f} + encode "
          f"{median(loop['per']['send']):.1f}); all-in incl. game start/end {loop['all_in_us']:.1f} us")
    rows = component_breakdown(3000 if cfg is SIZES["full"] else 500)
    print("per-step cost of a mid-game move decision, hot loop in-process (mean us):")
    for name, us in rows:
        print(f"  {us:7.2f}  {name}")
    return {"median_us": med, "p90_us": p90, "p99_us": pct(tot, 0.99), "mean_us": sum(tot) / len(tot),
            "read_us": median(per["read"]), "logic_us": median(per["logic"]), "send_us": median(per["send"]),
            "handoff_median_us": median(handoff), "handoff_p90_us": pct(handoff, 0.9),
            "cross_us": cross, "rtt_median_us": median(rtt) * 1000, "loop_median_us": median(lt),
            "loop_p90_us": pct(lt, 0.9), "loop_all_in_us": loop["all_in_us"], "rows": rows,
            "games": len(result.records), "decisions": decisions}


# --- part 3: games per second ----------------------------------------------------------------


def match_worker(fmt: str, matches: int, index: int) -> int:
    """Play ``matches`` Matches one after another (format ``fmt``, tc 180) between two random
    engines, each match starting its own engines as a tournament does; print timings as JSON."""
    game = load_game("einstein")
    ends: list[float] = []
    life: dict[str, list[float]] = {"start": [], "stop": []}
    orig_start, orig_stop = EngineSession.launch, EngineSession.stop

    def timed(name, fn):
        def wrapper(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                life[name].append(time.perf_counter() - t)
        return wrapper

    orig_handshake = EngineSession.handshake
    launched: dict[int, float] = {}

    def launch(self, *a, **k):
        launched[id(self)] = time.perf_counter()
        return orig_start(self, *a, **k)

    def handshake(self, *a, **k):  # engine start = from its launch to the end of its handshake
        try:
            return orig_handshake(self, *a, **k)
        finally:
            life["start"].append(time.perf_counter() - launched.pop(id(self)))

    EngineSession.launch, EngineSession.stop, EngineSession.handshake = launch, timed("stop", orig_stop), handshake
    recs = []
    with tempfile.TemporaryDirectory(prefix="bench-") as d:
        t0 = time.time()
        for m in range(matches):
            cfgs = (EngineConfig(RANDOM_ENGINE + ["--seed", str(2 * index + 1)], name="A", cwd=str(ROOT)),
                    EngineConfig(RANDOM_ENGINE + ["--seed", str(2 * index + 2)], name="B", cwd=str(ROOT)))
            match = Match(game, cfgs, parse_time_control(TC), MatchFormat.parse(fmt), run_dir=Path(d),
                          seed=f"bench{index}.{m}".encode(), on_game=lambda res, rec: ends.append(time.time()))
            recs += match.play().records
        t1 = time.time()
    print(json.dumps({"games": len(recs), "start": t0, "end": t1, "ends": [ends[0], ends[-1]],
                      "engine_start_s": life["start"], "engine_stop_s": life["stop"],
                      "decisions": sum(1 for r in recs for e in r.events if e.seat >= 0),
                      "abnormal": sum(1 for r in recs if r.reason != "normal")}))
    return 0


def run_matches(k: int, fmt: str, matches: int = 1) -> dict:
    t0 = time.time()
    procs = [subprocess.Popen([PY, SELF, "--match-worker", fmt, str(matches), str(i)], cwd=str(ROOT),
                              stdout=subprocess.PIPE, text=True) for i in range(k)]
    outs = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=600)
            if p.returncode != 0:
                raise RuntimeError(f"match worker failed ({p.returncode})")
            outs.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for p in procs:
            stop(p)
    outer = time.time() - t0
    total = sum(o["games"] for o in outs)
    play_wall = max(o["end"] for o in outs) - min(o["start"] for o in outs)
    # Steady state: between the end of each worker's first and last game (no engine start/stop
    # when it plays one match); the workers run side by side, so their rates add up.
    steady = sum((o["games"] - 1) / (o["ends"][1] - o["ends"][0]) for o in outs if o["games"] > 1)
    return {"k": k, "games": total, "play_gps": total / play_wall, "outer_gps": total / outer,
            "steady_gps": steady, "decisions_per_game": sum(o["decisions"] for o in outs) / total,
            "engine_start_ms": median([x for o in outs for x in o["engine_start_s"]]) * 1000,
            "engine_stop_ms": median([x for o in outs for x in o["engine_stop_s"]]) * 1000,
            "abnormal": sum(o["abnormal"] for o in outs)}


def import_ms(statement: str, reps: int) -> float:
    """Best-of-``reps`` wall time of a fresh interpreter running ``statement`` (ms)."""
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        subprocess.run([PY, "-c", statement], cwd=str(ROOT), check=True)
        best = min(best, time.perf_counter() - t)
    return best * 1000


def part_games(cfg: dict) -> dict:
    k = max(1, min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1, 8))
    n = cfg["match_games"]
    header(f"3. EinStein games per second, random vs random, tc {TC} (one Match of games={n} per process)")
    single = run_matches(1, f"games={n}")
    par = run_matches(k, f"games={n}")
    oly = run_matches(1, "olympiad", cfg["olympiads"])
    print(f"{'matches':<22} {'games':>6} {'games/s':>8} {'steady':>8} {'w/ spawn':>9} {'dec/game':>9} "
          f"{'engine start':>13} {'engine stop':>12}")
    for label, r in ((f"1 x games={n}", single), (f"{k} x games={n} parallel", par),
                     (f"{cfg['olympiads']} x olympiad, serial", oly)):
        steady = f"{r['steady_gps']:>8.1f}" if r is not oly else f"{'-':>8}"
        print(f"{label:<22} {r['games']:>6} {r['play_gps']:>8.1f} {steady} {r['outer_gps']:>9.1f} "
              f"{r['decisions_per_game']:>9.1f} {r['engine_start_ms']:>10.0f} ms {r['engine_stop_ms']:>9.0f} ms"
              + (f"  ({r['abnormal']} abnormal endings!)" if r["abnormal"] else ""))
    print("  games/s = games / wall time of Match.play() (incl. starting and stopping both engines); steady = "
          "between the first and the last game of a match; w/ spawn = also the worker's own Python start-up; "
          "engine start = spawn + hello (median), stop = quit + kill sweep (median)")
    judged = "judge on the full run: engine start/stop dominate so few games" if cfg is SIZES["quick"] else \
        f"target >= 100: {verdict(par['play_gps'] >= 100)}"
    print(f"parallel, {k} matches on {k} core(s): {par['play_gps']:.1f} games/s (steady {par['steady_gps']:.1f}) "
          f"({judged})")
    reps = 5 if cfg["olympiads"] > 2 else 3
    t_zmq = import_ms("import zmq", reps)
    t_mon = import_ms("import zmq, zmq.utils.monitor", reps)
    t_kit = import_ms("import protocol.kit", reps)
    print(f"engine start-up cost: a fresh interpreter importing protocol.kit takes {t_kit:.0f} ms "
          f"('import zmq' alone {t_zmq:.0f} ms; zmq.utils.monitor, which the referee side imports lazily, "
          f"would add {t_mon - t_zmq:.0f} ms; best of {reps})")
    return {"single": single, "parallel": par, "olympiad": oly,
            "import_ms": {"zmq": t_zmq, "zmq+monitor": t_mon, "protocol.kit": t_kit}}


# --- part 4: playouts ------------------------------------------------------------------------


def playouts_fast(seconds: float, seed: int = 0) -> tuple[int, float, int]:
    game = EinsteinGame(setup="random")
    rng = random.Random(seed * 10 + 1)
    rnd, choice, layouts = rng.random, rng.choice, LAYOUTS
    n = moves = 0
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while True:
        for _ in range(100):
            st = game.new_initial_state()
            st.apply_chance(choice(layouts))
            st.apply_chance(choice(layouts))
            set_die, moves_ints, apply = st.set_die, st.moves_ints, st.apply_move_ints
            while st.winner_colour() < 0:
                set_die(int(rnd() * 6) + 1)
                f, t = choice(moves_ints())
                apply(f, t)
                moves += 1
            n += 1
        now = time.perf_counter()
        if now >= deadline:
            return n, now - t0, moves


def playouts_generic(seconds: float, seed: int = 0) -> tuple[int, float, int]:
    game = EinsteinGame(setup="random")
    rng = random.Random(seed * 10 + 2)
    choice = rng.choice
    n = moves = 0
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while True:
        for _ in range(50):
            st = game.new_initial_state()
            while not st.is_terminal():
                if st.current_player() == CHANCE:
                    st.apply_chance(choice(st.chance_outcomes()))
                else:
                    st.apply(choice(st.legal_moves()))
                    moves += 1
            n += 1
        now = time.perf_counter()
        if now >= deadline:
            return n, now - t0, moves


def playouts_openspiel(seconds: float, seed: int = 0) -> tuple[int, float, int]:
    import pyspiel

    game = pyspiel.load_game("einstein_wurfelt_nicht")
    rng = random.Random(seed * 10 + 3)
    choice = rng.choice
    n = moves = 0
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while True:
        for _ in range(50):
            st = game.new_initial_state()
            while not st.is_terminal():
                if st.is_chance_node():
                    st.apply_action(choice(st.legal_actions()))
                else:
                    st.apply_action(choice(st.legal_actions()))
                    moves += 1
            n += 1
        now = time.perf_counter()
        if now >= deadline:
            return n, now - t0, moves


def part_playouts(cfg: dict) -> dict:
    header("4. Uniformly random playouts per second (one core; random set-up, Python random dice)")
    impls = {"ours, fast path": playouts_fast, "ours, generic strings": playouts_generic}
    try:
        import pyspiel  # noqa: F401

        impls["OpenSpiel (pyspiel)"] = playouts_openspiel
    except ImportError:
        print("pyspiel not installed: OpenSpiel comparison skipped")
    # Interleaved rounds, so that a change in machine load hits every implementation alike.
    rounds = 5
    rows = {name: [0, 0.0, 0] for name in impls}
    for r in range(rounds):
        for name, fn in impls.items():
            n, dt, moves = fn(cfg["playout_s"] / rounds, seed=r)
            rows[name][0] += n
            rows[name][1] += dt
            rows[name][2] += moves
    out = {}
    print(f"{'implementation':<24} {'playouts/s':>11} {'moves/playout':>14}")
    for name, (n, dt, moves) in rows.items():
        out[name] = n / dt
        print(f"{name:<24} {n / dt:>11.0f} {moves / n:>14.1f}")
    print("  fast path: apply_chance(layout) x2, then set_die / moves_ints / apply_move_ints until "
          "winner_colour() >= 0;  generic: current_player / chance_outcomes / apply_chance / legal_moves / "
          "apply;  OpenSpiel: is_chance_node / legal_actions / apply_action")
    if "OpenSpiel (pyspiel)" in out:
        os_rate = out["OpenSpiel (pyspiel)"]
        rf, rg = out["ours, fast path"] / os_rate, out["ours, generic strings"] / os_rate
        print(f"ratio ours/OpenSpiel: fast path {rf:.2f}x (target >= 1x: {verdict(rf >= 1)}), "
              f"generic {rg:.2f}x")
        out.update(ratio_fast=rf, ratio_generic=rg)
    return out


# --- main ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--peer"]:
        return peer_raw(argv[2]) if argv[1] == "raw" else peer_ours(argv[2])
    if argv[:1] == ["--match-worker"]:
        return match_worker(argv[1], int(argv[2]), int(argv[3]))
    parser = argparse.ArgumentParser(description="Foundation benchmark (see the module docstring).")
    parser.add_argument("--quick", action="store_true", help="small sizes, for a CI smoke run (< 30 s)")
    parser.add_argument("--json", metavar="FILE", help="also write the numbers as JSON")
    args = parser.parse_args(argv)
    cfg = SIZES["quick" if args.quick else "full"]
    started = time.perf_counter()
    print(f"bench_foundation ({'quick' if args.quick else 'full'} run, {time.strftime('%Y-%m-%d %H:%M:%S')})")
    facts = machine_facts()
    for k, v in facts.items():
        print(f"{k:<15} {v}")
    print(f"{'load average':<15} {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1/5/15 min, at start)")
    results = {"machine": facts, "quick": args.quick}
    with load_note(results, "round_trip"):
        results["round_trip"] = part_round_trip(cfg)
    with load_note(results, "referee"):
        results["referee"] = part_referee(cfg)
    with load_note(results, "games"):
        results["games"] = part_games(cfg)
    with load_note(results, "playouts"):
        results["playouts"] = part_playouts(cfg)
    print(f"\ntotal benchmark time {time.perf_counter() - started:.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
