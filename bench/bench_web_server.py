"""The web server's own CPU: 100 event-stream viewers, two running EinStein games each publishing a
view every 50 ms (40 views a second), for 10 s. Prints the CPU of the server's threads (the
process's CPU less the main thread, which publishes, and the viewers' thread) and the latency
from a view's publication to a viewer having read it.

    .venv/bin/python bench/bench_web_server.py [--viewers 100] [--seconds 10]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import msgspec  # noqa: E402
import zmq  # noqa: E402

from arbiter.games import load_game  # noqa: E402
from arbiter.web import MemorySource, WebServer  # noqa: E402
from bench_web import Viewers  # noqa: E402


def thread_cpu(tid: int) -> float:
    fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--viewers", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=10.0)
    a = ap.parse_args()
    folder = tempfile.mkdtemp(prefix="bench-web-server-")
    endpoint = f"ipc://{folder}/feed"
    server = WebServer(MemorySource("bench"), endpoint, port=0)
    server.start()
    viewers = Viewers(server.port, a.viewers)
    time.sleep(1)
    board = load_game("einstein").new_initial_state().render_svg()
    pub = zmq.Context.instance().socket(zmq.PUB)
    pub.connect(endpoint)
    time.sleep(0.3)

    def server_cpu() -> float:
        t = os.times()
        return t.user + t.system - thread_cpu(threading.main_thread().native_id) - thread_cpu(viewers.thread.native_id)

    before, start, ply = server_cpu(), time.time(), 0
    while time.time() - start < a.seconds:
        for game_id in ("g1", "g2"):
            ply += 1
            now = time.time()
            pub.send(msgspec.msgpack.encode({
                "type": "live", "game_id": game_id, "match_id": "m", "number": 1, "game": "einstein",
                "players": ["a", "b"], "roles": ["x", "y"], "time_control": "60", "dice_commitment": "c",
                "started_at": now, "ply": ply, "acting": [0], "clocks_ms": [1000, 1000], "sent_at": now,
                "event_at": now, "board": board,
                "last": [{"ply": i, "seat": 0, "kind": "move", "move": "a1b2"} for i in range(20)]}))
        time.sleep(0.05)
    spent = server_cpu() - before
    lat = sorted(viewers.latencies)
    print(f"load average {os.getloadavg()[0]:.2f}; {a.viewers} viewers, {ply} views in {a.seconds:.0f} s")
    print(f"server CPU {spent:.2f} s ({100 * spent / a.seconds:.1f} % of a core); messages per viewer "
          f"{min(viewers.counts)}-{max(viewers.counts)}; latency median {lat[len(lat) // 2] * 1000:.1f} ms")
    viewers.close()
    pub.close(0)
    server.stop()
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
