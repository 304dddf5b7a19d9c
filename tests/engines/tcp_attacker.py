"""Abuse of a referee's tcp endpoint, from outside, all at once for ``--seconds``.

Usage: python tests/engines/tcp_attacker.py tcp://HOST:PORT KEYS_DIR [--seconds S] [--connections N]

* ``storm``: N raw tcp connections in waves of 200, each sending a few junk bytes and closing;
* ``slowloris``: 300 connections that dribble a ZMTP greeting one byte a second;
* ``strangers``: 100 CURVE connections with ``mallory``'s key (not in the roster);
* ``oversize``: ``bob`` (in the roster, in no game) sends a 2 MiB frame;
* ``flood``: ``bob`` sends 50000 hellos as fast as it can.

Prints ``ATTACK key=value`` lines saying what happened.
"""
from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import zmq  # noqa: E402

from protocol import curve  # noqa: E402
from protocol.codec import encode  # noqa: E402
from protocol.messages import Hello  # noqa: E402


def report(key: str, value) -> None:
    print(f"ATTACK {key}={value}", flush=True)


def storm(host: str, port: int, total: int) -> None:
    done = refused = 0
    while done < total:
        wave = []
        for _ in range(min(200, total - done)):
            s = socket.socket()
            s.settimeout(2)
            try:
                s.connect((host, port))
                s.sendall(b"\x00junk\x01\x02" * 2)
            except OSError:
                refused += 1
            wave.append(s)
            done += 1
        for s in wave:
            s.close()
    report("storm", done)
    report("storm_refused", refused)


def slowloris(host: str, port: int, seconds: float) -> None:
    socks = []
    for _ in range(300):
        s = socket.socket()
        s.settimeout(0.5)
        try:
            s.connect((host, port))
            socks.append(s)
        except OSError:
            s.close()
    greeting = b"\xff" + b"\x00" * 8 + b"\x7f\x03\x00CURVE"
    report("slowloris_connected", len(socks))
    for i in range(int(seconds)):
        for s in socks:
            try:
                s.send(greeting[i % len(greeting):i % len(greeting) + 1])
            except OSError:
                pass
        time.sleep(1)
    closed = 0
    for s in socks:  # the referee's greeting, then end of file if it dropped us
        s.setblocking(False)
        try:
            while True:
                data = s.recv(4096)
                if not data:
                    closed += 1
                    break
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
        s.close()
    report("slowloris_dropped_by_referee", closed)


def dealer(endpoint: str, keys: str, who: str) -> zmq.Socket:
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.linger = 0
    sock.sndhwm = 100000
    curve.client_options(sock, curve.load_public(os.path.join(keys, "referee.pub")),
                         curve.load_keypair(os.path.join(keys, f"{who}.key")))
    sock.connect(endpoint)
    return sock


def strangers(endpoint: str, keys: str) -> None:
    socks = [dealer(endpoint, keys, "mallory") for _ in range(100)]
    unsent = 0
    for s in socks:
        try:
            s.send(encode(Hello(name="alice")), zmq.NOBLOCK)
        except zmq.Again:  # the referee refused this key at the handshake already: nothing left to send to
            unsent += 1
    time.sleep(2)
    got = sum(1 for s in socks if s.poll(0))
    report("strangers_refused_before_hello", unsent)
    report("strangers_answered", got)
    for s in socks:
        s.close(0)


def oversize_and_flood(endpoint: str, keys: str) -> None:
    big = dealer(endpoint, keys, "bob")
    big.send(b"\x81\xa4type" + b"x" * (2 << 20))
    time.sleep(1)
    big.close(0)
    flood = dealer(endpoint, keys, "bob")
    sent = 0
    hello = encode(Hello(name="bob"))
    deadline = time.monotonic() + 5
    while sent < 50000 and time.monotonic() < deadline:
        try:
            flood.send(hello, zmq.NOBLOCK)
            sent += 1
        except zmq.Again:
            time.sleep(0.001)
    report("flood_sent", sent)
    time.sleep(1)
    flood.close(0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("endpoint")
    parser.add_argument("keys")
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--connections", type=int, default=3000)
    args = parser.parse_args()
    host, port = args.endpoint[len("tcp://"):].rsplit(":", 1)
    threads = [threading.Thread(target=storm, args=(host, int(port), args.connections)),
               threading.Thread(target=slowloris, args=(host, int(port), args.seconds)),
               threading.Thread(target=strangers, args=(args.endpoint, args.keys)),
               threading.Thread(target=oversize_and_flood, args=(args.endpoint, args.keys))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    report("done", 1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
