"""Abuse of the referee's tcp endpoint (issue 12, item 5), played for real: a separate ``arbiter
match`` process listens for a remote participant while ``tests/engines/tcp_attacker.py`` storms
its port with thousands of connections, slowloris handshakes, strangers' keys, an oversized frame
and a flood from an authenticated participant. The referee must stay within bounded file
descriptors and memory, never print a traceback, and nobody's clock may be charged for it."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from test_remote import ROOT, PY, RANDOM, STEADY, free_port, keys  # noqa: F401  (fixture)

ATTACKER = ROOT / "tests" / "engines" / "tcp_attacker.py"
ARBITER = str(Path(sys.executable).with_name("arbiter"))


@pytest.mark.hostile
def test_a_storm_on_the_tcp_port_is_bounded_and_charged_to_no_one(tmp_path, keys):
    """The match is longer than the attack (100 games, ~200 s): once the attack is over, the
    referee must give its descriptors back while it plays on; the test then stops it (SIGTERM). A
    match of 4 games used to end before the attack did on a busy machine, and nothing looked at
    what it gave back."""
    folder, roster = keys
    port = free_port()
    endpoint = f"tcp://127.0.0.1:{port}"
    referee = subprocess.Popen([ARBITER, "match", "--game", "einstein", "--engine", "remote:alice", "--engine",
                                RANDOM, "--roster", str(roster), "--server-key", str(folder / "referee.key"),
                                "--listen", endpoint, "--tc", "st=0.5", "--format", "games=100", "--quiet",
                                "--db", str(tmp_path / "r.sqlite"), "--wait", "30"],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    alice = subprocess.Popen([PY, str(STEADY), "--connect", endpoint, "--server-key", str(folder / "referee.pub"),
                              "--key", str(folder / "alice.key"), "--reserve", "300"],
                             cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    samples: list[tuple[int, int]] = []

    def sample() -> None:
        proc = psutil.Process(referee.pid)
        while referee.poll() is None:
            try:
                samples.append((proc.num_fds(), proc.memory_info().rss))
            except psutil.Error:
                return
            time.sleep(0.1)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the referee is up and listening
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        time.sleep(0.5)
        baseline = samples[-1][0] if samples else 0
        attack = subprocess.run([PY, str(ATTACKER), endpoint, str(folder), "--seconds", "7"], cwd=ROOT,
                                capture_output=True, text=True, timeout=120,
                                preexec_fn=lambda: os.nice(19))  # its own CPU would be on its own machine
        after_attack = len(samples)
        assert referee.poll() is None, "the match ended before the attack did"
        given_back = time.monotonic() + 10  # a sample after the attack, back near the baseline (or 10 s)
        while time.monotonic() < given_back and all(f >= baseline + 50 for f, _ in samples[after_attack:]):
            time.sleep(0.1)
        stopped_at = len(samples)
        referee.send_signal(signal.SIGTERM)
        out, _ = referee.communicate(timeout=60)
    finally:
        for p in (referee, alice):
            if p.poll() is None:
                p.kill()
            p.wait(5)
    watcher.join(5)
    said = dict(line.split(" ", 1)[1].split("=", 1) for line in attack.stdout.splitlines() if line.startswith("ATTACK "))
    assert said.get("done") == "1", attack.stdout + attack.stderr
    assert not attack.stderr, attack.stderr  # an attack thread that died would leave its report out
    assert referee.returncode == 130 and "interrupted" in out, out
    assert "Traceback" not in out, out
    records = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert records and [r["reason"] for r in records] == ["normal"] * len(records), [r["detail"] for r in records]
    assert int(said["storm"]) == 3000
    # the 5 s handshake limit closed them (under load some of the 300 do not get in within the attacker's 0.5 s:
    # one run connected 202)
    assert int(said["slowloris_connected"]) >= 100, said
    assert int(said["slowloris_dropped_by_referee"]) >= int(said["slowloris_connected"]) - 50, said
    assert said["strangers_answered"] == "0"
    assert "key not in the roster" in out  # logged, with address and fingerprint
    peak_fds = max(f for f, _ in samples)
    peak_rss = max(m for _, m in samples)
    settled = [f for f, _ in samples[after_attack:stopped_at]]  # the attack over, the match playing on
    print(f"referee fds: baseline {baseline}, peak {peak_fds}, after the attack {min(settled)}; "
          f"peak rss {peak_rss >> 20} MB; {len(records)} games")
    assert peak_fds < baseline + 700, (baseline, peak_fds)
    assert min(settled) < baseline + 50  # all given back
    assert peak_rss < 400 << 20
    local = [e for r in records for e in r["events"] if e["seat"] >= 0 and r["players"][e["seat"]] != "alice"]
    lag = [e["measured_ms"] - e["reported_ms"] for r in records for e in r["events"]
           if e["seat"] >= 0 and r["players"][e["seat"]] == "alice"]
    print(f"local engine: max {max(e['measured_ms'] for e in local):.1f} ms per decision; alice: max "
          f"{max(lag):.1f} ms beyond its own time")
    # the storm was nobody's time: far below the 500 ms a move may take (quiet machine: < 10 ms; one CI run
    # with the attacker on the same 2 cores saw 314 ms before the hub got its own I/O thread)
    assert max(e["measured_ms"] for e in local) < 400


FLOODER = ROOT / "tests" / "engines" / "flooder.py"


@pytest.mark.hostile
@pytest.mark.parametrize("junk", ["reply", "hello"])
def test_an_engine_flooding_costly_junk_costs_its_remote_opponent_nothing(tmp_path, keys, junk):
    """bob floods the referee with ~0.9 MB messages of its game (each ~25 ms to decode) while alice,
    another remote participant, thinks. The hub's I/O thread decoded every frame as it came, 256 at
    a time, holding the lock the sessions wait on and the socket's lock (a send waited 0.7 s): alice's
    reply was seen seconds late and she lost on time at her first move ("took 23251 ms"). Now the hub
    reads only a message's head (its bytes are decoded by the session that reads them, in its
    engine's time) and stamps each frame on arrival: alice is charged her own time (no lag is
    compensated here), and bob loses on time, its reply behind its own junk (read on its turn)."""
    from test_remote import hub_for, play, remote
    from arbiter.hosting.remote import LagPolicy

    folder, roster = keys
    hub = hub_for(folder, roster, lag=LagPolicy(move_ms=0, quota_ms=0))
    alice = subprocess.Popen([PY, str(STEADY), "--connect", hub.endpoint, "--server-key", str(folder / "referee.pub"),
                              "--key", str(folder / "alice.key"), "--reserve", "100"],
                             cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bob = subprocess.Popen([PY, str(FLOODER), hub.endpoint, str(folder), "bob", junk], cwd=ROOT,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           preexec_fn=lambda: os.nice(19))  # its own CPU would be on its own machine
    try:
        record = play(hub, remote(hub, "alice"), remote(hub, "bob"), tmp_path, fmt="games=1", tc="st=0.3").records[0]
    finally:
        for p in (bob, alice):
            p.kill()
            p.wait(5)
        hub.close()
    assert record.reason == "time" and record.players[record.forfeit_seat] == "bob", record.detail
    over = [e.measured_ms - e.reported_ms for e in record.events if e.seat >= 0 and record.players[e.seat] == "alice"]
    # before: seconds. What is left is the machine: bob's 100 MB/s to decrypt, and bob itself, share its 2 cores
    # (25-60 ms mostly, 124-130 ms in 2 of 34 runs). The bound is what alice keeps in hand, her reserve and the
    # margin: charged more, she would have lost on time at her first move, as before.
    assert len(over) >= 2 and max(over) < 100 + 50, over


@pytest.mark.hostile
def test_a_participant_not_playing_is_not_decoded_whatever_it_floods(tmp_path, keys):
    """A roster member with no game on flooded ~960 kB pongs (and the like): the hub decoded each
    pong whole in the thread that hears everyone, and the players' replies, stamped behind them,
    were charged up to 300 ms more (two lost on time). Frames that big from a participant with no
    session, and hellos or pongs that big from anyone, are now dropped unread (counted)."""
    import zmq

    from protocol import curve
    from protocol.codec import encode
    from protocol.messages import Hello, Pong
    from test_remote import hub_for

    folder, roster = keys
    hub = hub_for(folder, roster)
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.linger = 0
    curve.client_options(sock, curve.load_public(folder / "referee.pub"), curve.load_keypair(folder / "bob.key"))
    try:
        sock.connect(hub.endpoint)
        sock.send(encode(Hello(name="bob")))
        big = encode(Pong(seq=7, game_id="g" * 960_000))
        for _ in range(20):
            sock.send(big)
        sock.send(encode(Pong(seq=8)))  # small: read as ever
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and hub.peers["bob"].overflow < 20:
            time.sleep(0.05)
        assert hub.peers["bob"].overflow == 20
        assert hub.peers["bob"].hello is not None and hub.peers["bob"].hello.name == "bob"
    finally:
        sock.close()
        hub.close()


def test_reconnections_are_logged_at_most_once_in_ten_seconds_per_participant(keys):
    """An engine saying hello on two connections in turn was logged "bob reconnected" 62,016
    times in 40 s (1 MB of output); the lines now come at most every 10 s, with a count."""
    from test_remote import hub_for

    folder, roster = keys
    logs: list[str] = []
    hub = hub_for(folder, roster, logs=logs)
    try:
        bob = hub.peers["bob"]
        for _ in range(1000):
            hub.log_reconnection(bob)
        assert [line for line in logs if "reconnected" in line] == ["bob reconnected"]
        bob.reconnection_logged -= 10
        hub.log_reconnection(bob)
        assert logs[-1] == "bob reconnected (1000 times since its last such line)"
    finally:
        hub.close()
