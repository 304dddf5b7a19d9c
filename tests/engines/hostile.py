"""A hostile engine: plays randomly with the protocol kit's pieces until it attacks, in one way.

Usage: python tests/engines/hostile.py MODE [--marker TEXT] [--after N]

It reports what its attack found or did on stderr (the engine log), one ``HOSTILE key=value``
line each, so the tests can tell "the sandbox hid it" from "the attack code is broken" (the
control test runs some modes without a sandbox, where they must find their targets).

Attacks on others (see issue 11): ``recon`` (look for the referee, read its command line,
environment and memory for the dice seed), ``hijack`` (say hello on every other ipc endpoint it
can find, before its own hello), ``steal`` (the same with the other engines' session secrets, looked
for in the referee's temporary folder), ``kill``/``stop`` (SIGKILL/SIGSTOP every other engine it can
see), ``db`` (delete rows from every results database it can find, before every game),
``escape`` (double fork + setsid + closed fds + exec with an empty environment, and a grandchild
that re-forks every 5 ms), ``fdflood`` (~20k connections to its own endpoint before hello),
``stranger`` (a second connection to its own endpoint that sends 2000 x 1 MB frames),
``tcpflood`` (1100 tcp connections to its own tcp endpoint), ``memory`` (allocate 3 GB),
``stderr`` (write 200 MB to stderr), ``info`` (~0.8 MB of info on every reply: the most a 1 MiB frame holds), ``busy`` (4 threads
spinning for ever), ``readfiles`` (read the operator's signing key, seed file and other root-only
files: ``--files A,B``), ``cgroup`` (leave its control group, lift its memory limit, then spin
like ``busy``), ``disk`` (write 600 MB into its work folder), ``tmpfs`` (600 MB into /dev/shm, memory),
``sockdir`` (600 MB into the folder of its own socket, a folder of the referee's),
``forkbomb`` (fork until refused), ``unfreeze`` (20 child processes that spin and keep sending SIGCONT to
their whole process group, so that those the referee stops first are resumed by the others),
``junk`` (before its reply: 63 stale replies of ~0.75 MB that are slow to decode, then ``--delay`` seconds
of thought; ``--for S``: keep sending them for S seconds instead), ``overrun`` (every reply 25 ms past its
``time_left_ms``: within the referee's default margin), ``after_reply`` (a reply of ~0.75 MB that is slow
to decode, then 20 ms of CPU while the referee decodes it). Protocol abuse: ``no_hello``, ``hello_exit``, ``crash``, ``hang``,
``garbage``, ``oversize``, ``flood``, ``loud_hello`` (terminal escapes in its name), ``huge_games`` (a 1 MB
game name in its hello), ``illegal``, ``stale``, ``reply_twice``, ``multi_frame``,
``after_game_over``, ``reconnect``, ``children``. Everything happens at the (N+1)-th decision
of every game (default N=0) unless the mode must act before its hello.
"""
from __future__ import annotations

import glob
import os
import random
import signal
import socket
import sqlite3
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from protocol import encode  # noqa: E402
from protocol.kit import endpoint_from_environment, session_secret  # noqa: E402
from protocol.messages import (GameOver, Hello, Info, NewGame, Ping, Pong, Quit, Ready, Reply,  # noqa: E402
                               Request)
from protocol.transport import EngineSocket  # noqa: E402

ME = os.getpid()
TOKEN = os.environ.get("ARBITER_ENGINE_TOKEN", "")


def report(key: str, value) -> None:
    print(f"HOSTILE {key}={value}", file=sys.stderr, flush=True)


def processes() -> dict[int, tuple[str, dict[str, str]]]:
    """Every process this one can see: pid -> (command line, environment or {} if unreadable)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == ME:
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        env = {}
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                for item in f.read().split(b"\0"):
                    key, _, value = item.decode(errors="replace").partition("=")
                    if key:
                        env[key] = value
        except OSError:
            pass
        found[int(entry)] = (cmdline, env)
    return found


def foreign(procs) -> dict[int, tuple[str, dict[str, str]]]:
    """The referee and other engines: anything with our programs' names that is not of our own tree."""
    names = ("arbiter", "pytest", "random_engine", "misbehave", "hostile.py")
    return {pid: (cmd, env) for pid, (cmd, env) in procs.items()
            if any(n in cmd for n in names) and not (TOKEN and env.get("ARBITER_ENGINE_TOKEN") == TOKEN)
            and "bwrap" not in cmd.split(" ")[0]}


def recon(own: str) -> None:
    report("endpoints", len(other_endpoints(own)))
    procs = processes()
    others = foreign(procs)
    report("visible", len(procs))
    report("foreign", len(others))
    seeds = []
    mem_bytes = 0
    for pid, (cmd, env) in others.items():
        words = cmd.split()
        for flag in ("--seed", "--seed-file"):
            if flag in words and words.index(flag) + 1 < len(words):
                seeds.append(f"{flag}:{words[words.index(flag) + 1]}")
        if "ARBITER_SEED" in env:
            seeds.append("env:" + env["ARBITER_SEED"])
        try:  # the referee's memory: the first readable mapping
            with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb") as mem:
                for line in maps:
                    start, end = (int(x, 16) for x in line.split()[0].split("-"))
                    if "r" in line.split()[1]:
                        mem.seek(start)
                        mem_bytes += len(mem.read(min(end - start, 4096)))
                        break
        except (OSError, ValueError, OverflowError):
            pass
    report("seeds", ",".join(seeds) or "none")
    report("mem_read", mem_bytes)
    report("canary", ",".join(k for k in os.environ if "CANARY" in k) or "none")
    report("env", ",".join(sorted(os.environ)))


def other_endpoints(own: str) -> set[str]:
    endpoints = {env["ARBITER_ENDPOINT"] for _, env in foreign(processes()).values() if "ARBITER_ENDPOINT" in env}
    for pattern in ("/tmp/arb-*/*/s", "/tmp/arb-*/*.sock", "/tmp/*/arb-*/*/s"):
        endpoints |= {"ipc://" + p for p in glob.glob(pattern)}
    endpoints.discard(own)
    return endpoints


def hijack(own: str) -> list:
    """Say hello (without the secret: it cannot know it) on every other endpoint it can find."""
    import zmq

    sockets = []
    targets = other_endpoints(own)
    for endpoint in targets:
        s = zmq.Context.instance().socket(zmq.DEALER)
        s.connect(endpoint)
        for secret in ("", session_secret()):
            s.send(encode(Hello(name="hijacker", wants_legal_moves=True, secret=secret)))
        sockets.append(s)
    report("hijack_targets", len(targets))
    return sockets


def steal(own: str) -> list:
    """Look for the other engines' session secrets and sockets in the referee's temporary folder
    (where its own lie: it knows the path from its environment) for 3 s, and say hello on every
    other socket with every secret found, taking the first seat it can."""
    import zmq

    base = os.path.dirname(os.path.dirname(os.environ.get("ARBITER_SECRET_FILE", "/nonexistent/x/y")))
    secrets, targets, sockets = set(), set(), []
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and not (secrets and targets):
        for path in glob.glob(os.path.join(base, "arb-engine-*", "session-secret")):
            try:
                with open(path) as f:
                    secrets.add(f.read().strip())
            except OSError:
                pass
        secrets.discard(session_secret())
        targets = {"ipc://" + p for p in glob.glob(os.path.join(base, "arb-*", "*", "s"))} - {own}
        time.sleep(0.005)
    for endpoint in targets:
        s = zmq.Context.instance().socket(zmq.DEALER)
        s.connect(endpoint)
        for secret in secrets:
            s.send(encode(Hello(name="hijacker", wants_legal_moves=True, secret=secret)))
        sockets.append(s)
    report("stolen_secrets", len(secrets))
    report("steal_targets", len(targets))
    return sockets


def signal_others(sig: int) -> None:
    victims = [pid for pid, (cmd, env) in foreign(processes()).items()
               if "ARBITER_ENGINE_TOKEN" in env or "random_engine" in cmd or "misbehave" in cmd]
    hit = 0
    for pid in victims:
        try:
            os.kill(pid, sig)
            hit += 1
        except OSError:
            pass
    report("signalled", hit)


def delete_games() -> None:
    """Delete rows from every results database it can find: by path (HOSTILE_DB) or open in /proc."""
    paths = {os.environ["HOSTILE_DB"]} if os.environ.get("HOSTILE_DB") else set()
    for pid in foreign(processes()):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.endswith((".sqlite", ".db")):
                    paths.add(target)
        except OSError:
            pass
    deleted = 0
    for path in paths:
        try:
            db = sqlite3.connect(path, timeout=1)
            deleted += db.execute("DELETE FROM games WHERE game_number > 0").rowcount
            db.commit()
            db.close()
        except sqlite3.Error as exc:
            report("db_error", f"{path}: {exc}")
    report("db_paths", len(paths))
    report("db_deleted", deleted)


def escape(marker: str) -> None:
    """A grandchild in its own session with no fds and an empty environment, and a fork-hopper."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.closerange(0, 4096)
            os.execve(sys.executable, [sys.executable, "-c", "import time; time.sleep(3600)", marker], {})
        if os.fork() == 0:  # re-forks every 5 ms: its pid never stays the same
            os.closerange(0, 4096)
            while True:
                time.sleep(0.005)
                if os.fork() != 0:
                    os._exit(0)
        os._exit(0)
    os.wait()
    report("escaped", 2)


def fd_flood(own: str, total: int = 20_000) -> None:
    """~20k connections to its own socket, from children (one process may hold ~1000 fds)."""
    path = own[len("ipc://"):] if own.startswith("ipc://") else None
    host, port = (own[len("tcp://"):].rsplit(":", 1) if path is None else (None, None))
    per_child = 900
    read_end, write_end = os.pipe()
    children = 0
    for _ in range((total + per_child - 1) // per_child):
        pid = os.fork()
        if pid == 0:
            opened = []
            for _ in range(per_child):
                try:
                    s = socket.socket(socket.AF_UNIX if path else socket.AF_INET)
                    s.connect(path if path else (host, int(port)))
                    opened.append(s)
                except OSError:
                    break
            os.write(write_end, len(opened).to_bytes(4, "little"))
            time.sleep(3600)
            os._exit(0)
        children += 1
    count = 0
    for _ in range(children):
        count += int.from_bytes(os.read(read_end, 4), "little")
    report("connections", count)


def stranger(own: str) -> None:
    """A second connection to its own endpoint (made before the socket is sealed) that floods."""
    import zmq

    if os.fork() == 0:
        s = zmq.Context().socket(zmq.DEALER)
        s.connect(own)
        time.sleep(0.3)
        junk = b"\x00" * (1 << 20)
        for i in range(2000):
            s.send(junk)  # blocks when the referee stops reading (its receive high-water mark)
            report("stranger_sent", i + 1)
        time.sleep(3600)
        os._exit(0)
    time.sleep(0.2)


def read_files(paths: list[str]) -> None:
    """The operator's secrets at paths it knows or guesses (the signing key, the seed file)."""
    leaked = []
    for path in paths + ["keys/referee.key", os.path.expanduser("~root/.ssh/id_rsa"), "/etc/shadow"]:
        try:
            with open(path, "rb") as f:
                if f.read(64):
                    leaked.append(path)
        except OSError:
            pass
    report("leaked", ",".join(leaked) or "none")


def leave_cgroup() -> None:
    """Move itself to the root of every control group hierarchy it can write (out of reach of the
    memory limit, the process limit and the freezer), and lift its own memory limit."""
    moved = 0
    for controller in ("memory", "pids", "cpuacct", "freezer", "unified", ""):
        procs = os.path.join("/sys/fs/cgroup", controller, "cgroup.procs")
        try:
            with open(procs, "w") as f:
                f.write(str(os.getpid()))
            moved += 1
        except OSError:
            pass
    report("cgroup_left", moved)
    lifted = 0
    for line in open("/proc/self/cgroup"):
        _, controllers, path = line.strip().split(":", 2)
        if "memory" in controllers.split(","):
            for name in ("memory.limit_in_bytes", "memory.max"):
                try:
                    with open(f"/sys/fs/cgroup/memory{path}/{name}", "w") as f:
                        f.write("-1" if name.endswith("bytes") else "max")
                    lifted += 1
                except OSError:
                    pass
    report("memory_limit_lifted", lifted)


def fill_disk(megabytes: int, folder: str) -> None:
    """Write to a writable folder until refused or ``megabytes`` are written."""
    written = 0
    chunk = b"\x01" * (1 << 20)
    try:
        with open(os.path.join(folder, "fill"), "wb") as f:
            for _ in range(megabytes):
                f.write(chunk)
                written += 1
    except OSError as exc:
        report("disk_error", exc.strerror)
    report("disk_mb", written)


def spin() -> None:
    while True:
        pass


def spin_and_resume() -> None:
    """Spin, resuming every process of its group (itself, its sibling, the engine) between rounds."""
    while True:
        os.kill(0, signal.SIGCONT)


def main() -> int:
    mode = sys.argv[1]
    after = int(sys.argv[sys.argv.index("--after") + 1]) if "--after" in sys.argv else 0
    marker = sys.argv[sys.argv.index("--marker") + 1] if "--marker" in sys.argv else "hostile"
    own = endpoint_from_environment([])
    keep = []  # the hijacker's sockets stay open while it plays
    if mode == "no_hello":
        time.sleep(3600)
    if mode == "hijack":
        keep = hijack(own)
    if mode == "steal":
        keep = steal(own)
    if mode in ("fdflood", "tcpflood"):
        fd_flood(own, 20_000 if mode == "fdflood" else 1100)
    if mode == "stranger":
        stranger(own)
    if mode == "recon":
        recon(own)
    sock = EngineSocket(own)
    if mode == "loud_hello":  # terminal escapes: set the title, clear the screen, print a fake line in red
        loud = "hostile\x1b]0;PWNED\x07\x1b[2J\x1b[31mFAKE: H wins everything\x1b[0m"
        sock.send(Hello(name=loud, author=loud, version="1\x1b[5m", wants_legal_moves=True, secret=session_secret()))
    elif mode == "huge_games":  # a hello naming one 1 MB "game": a refusal that quotes it
        sock.send(Hello(name="hostile-huge_games", games=["x" * 1_000_000 + "\x1b[2J"], wants_legal_moves=True,
                        secret=session_secret()))
    else:
        sock.send(Hello(name=f"hostile-{mode}", wants_legal_moves=True, secret=session_secret()))
    if mode == "hello_exit":
        time.sleep(0.2)
        os._exit(0)
    if mode == "children":
        for _ in range(200):
            if os.fork() == 0:
                time.sleep(3600)
                os._exit(0)
        report("children", 200)
    rng = random.Random(1)
    decisions = 0
    cpu_at_reply = wall_at_reply = None
    game = None
    while True:
        msg = sock.recv()
        if isinstance(msg, Quit):
            return 0
        if isinstance(msg, NewGame):
            game, decisions = msg.game_id, 0  # every game is attacked the same way
            if mode == "db":
                delete_games()
            sock.send(Ready(game_id=msg.game_id, seq=msg.seq))
            continue
        if isinstance(msg, Ping):
            sock.send(Pong(game_id=msg.game_id, seq=msg.seq))
            continue
        if isinstance(msg, GameOver):
            if mode == "after_game_over":
                for seq in range(100):
                    sock.send(Reply(game_id=msg.game_id, seq=seq, move="zz99"))
                sock.socket.send(b"\xc1 garbage after the game")
                sock.send(Ping(game_id=game, seq=1))
                report("after_game_over", 102)
            continue
        if not isinstance(msg, Request):
            continue
        if cpu_at_reply is not None:
            t = os.times()
            report("offturn", f"{(t.user + t.system - cpu_at_reply) * 1000:.1f}/{(time.monotonic() - wall_at_reply) * 1000:.1f}")
        decisions += 1
        move = rng.choice(msg.legal_moves)
        reply = Reply(game_id=msg.game_id, seq=msg.seq, move=move)
        if decisions == after + 1:
            if mode == "kill":
                signal_others(signal.SIGKILL)
            elif mode == "stop":
                signal_others(signal.SIGSTOP)
            elif mode == "escape":
                escape(marker)
            elif mode == "readfiles":
                read_files(sys.argv[sys.argv.index("--files") + 1].split(","))
            elif mode == "cgroup":
                leave_cgroup()
                for _ in range(4):
                    threading.Thread(target=spin, daemon=True).start()
            elif mode == "disk":
                fill_disk(600, os.environ.get("HOME", "/tmp"))
            elif mode == "tmpfs":
                fill_disk(600, "/dev/shm")
            elif mode == "sockdir":
                fill_disk(600, os.path.dirname(own[len("ipc://"):]))
            elif mode == "forkbomb":
                forks = 0
                try:
                    while forks < 5000:
                        if os.fork() == 0:
                            time.sleep(3600)
                            os._exit(0)
                        forks += 1
                except OSError as exc:
                    report("fork_error", exc.strerror)
                report("forks", forks)
            elif mode == "memory":
                hog = []
                for i in range(30):
                    hog.append(b"\x01" * (100 << 20))
                    report("allocated_mb", (i + 1) * 100)
            elif mode == "stderr":
                chunk = "x" * (1 << 20) + "\n"
                for _ in range(200):
                    sys.stderr.write(chunk)
                sys.stderr.flush()
            elif mode == "busy":
                sys.setswitchinterval(0.0005)  # the main thread gets the GIL back soon after a thaw
                for _ in range(4):
                    threading.Thread(target=spin, daemon=True).start()
                report("threads", 4)
            elif mode == "unfreeze":
                for _ in range(20):
                    if os.fork() == 0:
                        spin_and_resume()
            elif mode == "crash":
                os._exit(7)
            elif mode == "hang":
                time.sleep(3600)
            elif mode == "illegal":
                reply.move = "zz99"
            elif mode == "garbage":
                sock.socket.send(b"\xc1\x00garbage")
                continue
            elif mode == "oversize":
                sock.socket.send(b"\x00" * (2 << 20))
                continue
            elif mode == "multi_frame":
                sock.socket.send_multipart([encode(reply), encode(reply)])
                continue
        if mode == "junk" and decisions == after + 1:
            heavy = encode(Reply(game_id=msg.game_id, seq=msg.seq - 1, move="zz99", info=Info(pv=["a1b2"] * 150_000)))
            until = time.monotonic() + float(sys.argv[sys.argv.index("--for") + 1]) if "--for" in sys.argv else 0
            for _ in range(63):
                sock.socket.send(heavy)
            while time.monotonic() < until:
                sock.socket.send(heavy)
            time.sleep(float(sys.argv[sys.argv.index("--delay") + 1]) if "--delay" in sys.argv else 0)
        if mode == "overrun" and decisions > after:
            time.sleep(msg.time_left_ms / 1000 + 0.025)
        if mode == "info":
            reply.info = Info(pv=["a1b2"] * 40_000, comment="c" * 600_000)  # ~0.8 MB: just under the frame limit
        if mode == "flood":
            for seq in range(2000):
                sock.send(Reply(game_id=msg.game_id, seq=msg.seq + 1 + seq, move="zz99"))
            report("flooded", 2000)
        if mode == "stale":
            sock.send(Reply(game_id=msg.game_id, seq=msg.seq - 1, move="zz99"))
            sock.send(Reply(game_id="other-game", seq=msg.seq, move="zz99"))
            report("stale", 2)
        if mode == "after_reply" and decisions > after:
            reply.info = Info(pv=["a1b2"] * 150_000)
        # Taken before the send: the referee may freeze this engine as soon as the reply is in, and
        # an instant taken after the thaw made that off-turn look ~0 ms long (CI: 486 ms of 1.5 s).
        t = os.times()
        cpu_at_reply, wall_at_reply = t.user + t.system, time.monotonic()
        sock.send(reply)
        if mode == "after_reply" and decisions > after:
            started = time.process_time()
            while time.process_time() - started < 0.02:
                pass
        if mode == "reply_twice":
            sock.send(Reply(game_id=msg.game_id, seq=msg.seq, move="zz99"))
            report("replied_twice", 1)
        if mode == "reconnect" and decisions == after + 1:
            sock.socket.close(linger=1000)
            sock = EngineSocket(own)
            sock.send(Hello(name="hostile-again", wants_legal_moves=True, secret=session_secret()))


if __name__ == "__main__":
    raise SystemExit(main())
