#!/usr/bin/env python
"""Remote engines benchmark (issue 12, "Numbers to reach"): what CURVE costs on a round trip.

Run from the repository root::

    .venv/bin/python bench/bench_remote.py                  # 5 rounds of 4000 round trips per variant
    .venv/bin/python bench/bench_remote.py --rounds 2 --trips 1000

Variants, measured side by side and interleaved in rounds (so machine noise hits them alike),
each over tcp on 127.0.0.1 with a ROUTER (the referee, this process) and a DEALER (the engine, a
process of its own, as in a real event: each side's ZeroMQ I/O thread does its own side's crypto):

* ``raw plain`` / ``raw curve``: pyzmq only, a 300-byte frame echoed back;
* ``hub plain`` / ``hub curve``: the referee's own path: a ``RemoteHub`` (ZAP-admitted, roster,
  User-Id routing) sends an encoded ``request`` through ``RemoteConnection``, the engine thread
  answers with a ``reply``, the referee decodes it.

Prints the median and 90th percentile round trip (µs) per variant and the CURVE/plain ratios.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import zmq  # noqa: E402

from arbiter.hosting.remote import RemoteHub, Roster  # noqa: E402
from protocol import curve  # noqa: E402
from protocol.codec import decode, encode  # noqa: E402
from protocol.messages import Hello, Info, Reply, Request  # noqa: E402

CTX = zmq.Context.instance()
PY = sys.executable


def peer(endpoint: str, folder: Path | None, protocol: bool) -> subprocess.Popen:
    """The engine side in its own process: echoes frames (raw) or answers requests (protocol)."""
    argv = [PY, __file__, "--peer", endpoint] + (["--keys", str(folder)] if folder else []) \
        + (["--protocol"] if protocol else [])
    return subprocess.Popen(argv, cwd=ROOT)


def run_peer(endpoint: str, keys: str | None, protocol: bool) -> int:
    sock = CTX.socket(zmq.DEALER)
    sock.linger = 0
    if keys:
        curve.client_options(sock, curve.load_public(Path(keys) / "referee.pub"),
                             curve.load_keypair(Path(keys) / "alice.key"))
    sock.connect(endpoint)
    sock.send(encode(Hello(name="alice")) if protocol else b"hello")
    while True:
        data = sock.recv()
        if data == b"stop":
            return 0
        if protocol:
            req = decode(data)
            data = encode(Reply(game_id=req.game_id, seq=req.seq, move="b4c4", info=Info(time_ms=0)))
        sock.send(data)


def raw(secure: bool, trips: int, folder: Path) -> list[float]:
    router = CTX.socket(zmq.ROUTER)
    router.linger = 0
    if secure:
        router.curve_server = True
        router.curve_publickey, router.curve_secretkey = curve.load_keypair(folder / "referee.key")
    router.bind("tcp://127.0.0.1:0")
    proc = peer(router.last_endpoint.decode(), folder if secure else None, protocol=False)
    ident, _ = router.recv_multipart()
    payload = os.urandom(300)
    times = []
    for _ in range(trips):
        t0 = time.perf_counter()
        router.send_multipart([ident, payload])
        router.recv_multipart()
        times.append(time.perf_counter() - t0)
    router.send_multipart([ident, b"stop"])
    proc.wait(10)
    router.close(0)
    return times


def hub(secure: bool, trips: int, folder: Path) -> list[float]:
    roster = Roster.load(folder / "roster.toml")
    h = RemoteHub("tcp://127.0.0.1:0", roster, None if not secure else folder / "referee.key", insecure=not secure,
                  log=lambda text: None)
    proc = peer(h.endpoint, folder if secure else None, protocol=True)
    conn = h.connection("alice")
    assert conn.wait(10000) and isinstance(conn.receive(), Hello)
    request = Request(game_id="20261201-000000-abcdef.1.123456", seq=0, kind="move", seat=0,
                      position="r1 r2 . . . / r3 . . . . / . . . . b6 / . . . b5 b4 / . . b3 b2 b1 0 5",
                      ply=12, clocks_ms=[59000, 58000], time_left_ms=59000,
                      legal_moves=["b4c4", "b4b3", "b4c3"], last_moves=["a1b2", "e5d4"])
    times = []
    for i in range(trips):
        request.seq = i + 1
        t0 = time.perf_counter()
        conn.send(request)
        while not conn.wait(5000):
            pass
        reply = conn.receive()
        times.append(time.perf_counter() - t0)
        assert reply.seq == i + 1
    h.send(conn.peer, b"stop")
    proc.wait(10)
    h.close()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--trips", type=int, default=4000)
    parser.add_argument("--peer", help=argparse.SUPPRESS)
    parser.add_argument("--keys", help=argparse.SUPPRESS)
    parser.add_argument("--protocol", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.peer:
        return run_peer(args.peer, args.keys, args.protocol)
    folder = Path(tempfile.mkdtemp(prefix="bench-remote-"))
    for name in ("referee", "alice"):
        curve.keygen(name, folder)
    (folder / "roster.toml").write_text(f'[[participant]]\nname = "alice"\n'
                                        f'public = "{curve.load_public(folder / "alice.pub").decode()}"\n')
    variants = {"raw plain": lambda: raw(False, args.trips, folder), "raw curve": lambda: raw(True, args.trips, folder),
                "hub plain": lambda: hub(False, args.trips, folder), "hub curve": lambda: hub(True, args.trips, folder)}
    results: dict[str, list[float]] = {k: [] for k in variants}
    for r in range(args.rounds):
        for name, run in variants.items():
            results[name] += run()[args.trips // 10:]  # the first tenth warms up
    print(f"{args.rounds} rounds x {args.trips} round trips per variant, tcp 127.0.0.1, "
          f"load {os.getloadavg()[0]:.2f} (2 cores)")
    med = {}
    for name, times in results.items():
        times.sort()
        med[name] = statistics.median(times) * 1e6
        print(f"  {name:10}  median {med[name]:7.1f} µs   p90 {times[int(len(times) * 0.9)] * 1e6:7.1f} µs")
    print(f"  CURVE / plain: raw {med['raw curve'] / med['raw plain']:.2f}x, "
          f"hub {med['hub curve'] / med['hub plain']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
