"""The C sample engine (sample_engines/c): built with its own Makefile into a temporary folder, it
plays real EinStein matches against the Python random engine (sandboxed, as by default), answers
every message kind as SPEC.md says, and connects with CURVE as a remote participant would.

Needs a C compiler, make and the libzmq and msgpack-c headers; without them every test here is
skipped with one reason (tests/conftest.py names it at the end of the run)."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import zmq

from arbiter.clock import parse_time_control
from arbiter.formats.match import Match, MatchFormat
from arbiter.games import load_game
from arbiter.games.einstein import LAYOUTS
from arbiter.hosting import EngineConfig
from arbiter.records.store import ResultsStore, load_records
from protocol.codec import decode, encode
from protocol.messages import (Error, GameOver, Hello, NewGame, Ping, Pong, Quit, Ready, Reject, Reply, Request,
                               TimeControl, Welcome)

ROOT = Path(__file__).resolve().parent.parent
C_DIR = ROOT / "sample_engines" / "c"
PY = sys.executable
RANDOM = f"{PY} -m sample_engines.random_engine --seed 3"
SKIP_PREFIX = "needs the C engine's build tools: "
"""tests/conftest.py groups skips by this prefix."""


def build_tools_missing() -> str | None:
    """What this machine lacks to build the C engine (one line), or None."""
    missing = [f"`{tool}`" for tool in ("cc", "make") if not shutil.which(tool)]
    if missing:
        return "no " + " or ".join(missing)
    for header, package in (("zmq.h", "libzmq3-dev"), ("msgpack.h", "libmsgpack-dev")):
        probe = subprocess.run(["cc", "-E", "-x", "c", "-"], input=f"#include <{header}>\n", capture_output=True,
                               text=True)
        if probe.returncode:
            missing.append(f"{header} (Debian: {package})")
    return "no " + ", no ".join(missing) if missing else None


MISSING = build_tools_missing()
pytestmark = pytest.mark.skipif(MISSING is not None, reason=f"{SKIP_PREFIX}{MISSING}")
needs_curve = pytest.mark.skipif(not zmq.has("curve"), reason=f"{SKIP_PREFIX}pyzmq without CURVE")


@pytest.fixture(scope="module")
def engine(tmp_path_factory) -> Path:
    """The engine built by its Makefile (never a committed binary). In a bin/ folder: the sandbox
    shows an engine the folder above its program's."""
    out = tmp_path_factory.mktemp("c-engine") / "bin"
    run = subprocess.run(["make", "-C", str(C_DIR), f"BUILD={out}"], capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "warning" not in run.stderr, run.stderr
    return out / "einstein-c"


# --- real matches --------------------------------------------------------------------------------


def test_cli_match_against_the_random_engine_is_recorded_and_verifies(engine, tmp_path):
    db = tmp_path / "results.sqlite"
    run = subprocess.run([PY, "-m", "arbiter.cli", "match", "--game", "einstein", "--engine", f"{engine} --seed 1",
                          "--name", "c", "--engine", RANDOM, "--name", "random", "--tc", "30", "--format", "games=6",
                          "--db", str(db), "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "COLUMNS": "200"})
    assert run.returncode == 0, run.stdout + run.stderr
    records = load_records(tmp_path / "results.jsonl")
    assert len(records) == 6
    for record in records:
        assert record.reason == "normal", (record.reason, record.detail)
        mine = [e for e in record.events if e.seat >= 0 and record.players[e.seat] == "c"]
        assert mine[0].kind == "setup" and mine[0].move in LAYOUTS
        moves = [e for e in mine if e.kind == "move"]
        assert moves and all(e.info is not None and e.info.depth == 1 and e.info.nodes >= 1 for e in moves)
        assert all(e.reported_ms is not None for e in moves)  # info.time_ms reached the record
    log = "".join(p.read_text() for p in tmp_path.rglob("engine-c-*.log"))
    assert "welcome" in log and "6 games" in log  # it ran every game in one process and said goodbye
    verify = subprocess.run([PY, "-m", "arbiter.cli", "verify", str(db)], cwd=ROOT, capture_output=True, text=True)
    assert verify.returncode == 0 and "6 of 6 records consistent" in verify.stdout, verify.stdout + verify.stderr


def play(engine: Path, run_dir: Path, games: int) -> list:
    store = ResultsStore(run_dir / "results.sqlite")
    configs = (EngineConfig(f"{engine} --seed 7", name="c"), EngineConfig(RANDOM, name="random", cwd=str(ROOT)))
    try:
        return Match(load_game("einstein"), configs, parse_time_control("30"), MatchFormat.parse(f"games={games}"),
                     store=store, run_dir=run_dir, seed=b"c-engine-test", match_id="c-engine").play().records
    finally:
        store.close()


def test_same_seeds_same_games_and_it_beats_random_play(engine, tmp_path):
    first, second = play(engine, tmp_path / "a", 6), play(engine, tmp_path / "b", 6)
    assert [[e.move for e in r.events] for r in first] == [[e.move for e in r.events] for r in second]
    assert all(r.reason == "normal" for r in first)
    wins = sum(1 for r in first if r.players[r.winner()] == "c")
    assert wins >= 5, [(r.players, r.returns) for r in first]  # random play wins about half


# --- the protocol, message by message ------------------------------------------------------------


class ScriptedReferee:
    """The referee's side of the protocol written by hand on a pyzmq ROUTER (127.0.0.1, real
    sockets), to say exactly what the engine is sent and check each answer."""

    def __init__(self, ctx: zmq.Context, server_secret: bytes | None = None, endpoint: str | None = None):
        self.router = ctx.socket(zmq.ROUTER)
        self.router.linger = 0
        if server_secret is not None:
            self.router.curve_server = True
            self.router.curve_secretkey = server_secret
        if endpoint:  # a socket closed a moment ago still holds it: ZeroMQ closes in the background
            deadline = time.monotonic() + 5
            while True:
                try:
                    self.router.bind(endpoint)
                    break
                except zmq.ZMQError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
        else:
            endpoint = f"tcp://127.0.0.1:{self.router.bind_to_random_port('tcp://127.0.0.1')}"
        self.endpoint = endpoint
        self.peer = b""
        self.user_id = ""

    def recv(self, timeout_ms: int = 5000):
        assert self.router.poll(timeout_ms), "no message from the engine"
        frames = self.router.recv_multipart(copy=False)
        assert len(frames) == 2, "one frame per message"
        self.peer = frames[0].bytes
        try:
            self.user_id = frames[1].get("User-Id")  # set by the ZAP handler
        except zmq.ZMQError:
            self.user_id = ""
        return decode(frames[1].bytes)

    def send(self, message) -> None:
        self.send_raw(encode(message))

    def send_raw(self, *frames: bytes) -> None:
        self.router.send_multipart([self.peer, *frames])

    def ask(self, message, expect: type):
        self.send(message)
        answer = self.recv()
        assert isinstance(answer, expect), answer
        assert (answer.game_id, answer.seq) == (message.game_id, message.seq)  # echoed
        return answer


def new_game(seat: int = 0, game_id: str = "m1.1.abc", seq: int = 1) -> NewGame:
    return NewGame(game_id=game_id, seq=seq, game="einstein", options={"seat0_colour": "red", "setup": "choose"},
                   seat=seat, seats=["c", "other"], seat_roles=["first", "second"],
                   time_control=TimeControl(text="30", kind="sudden_death", base_ms=30000),
                   match_id="m1", game_number=1, dice_stream="m1|1")


def start(engine: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ARBITER_")}
    return subprocess.Popen([str(engine), *args], env={**base, **(env or {})}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen, timeout: float = 5) -> tuple[int, str]:
    try:
        code = proc.wait(timeout)
    finally:
        proc.kill()
    return code, proc.stderr.read()


def random_positions(count: int, seed: int):
    """States at move decisions of random games, both colours to move and both seat-0 colours."""
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        state = load_game("einstein", seat0_colour=rng.choice(["red", "blue"])).new_initial_state()
        state.apply_joint({0: rng.choice(LAYOUTS), 1: rng.choice(LAYOUTS)})
        while not state.is_terminal():
            state.apply_chance(rng.randint(1, 6))
            out.append(state.clone())
            state.apply(rng.choice(state.legal_moves()))
    return out[:count]


def wins_at_once(state, move: str) -> bool:
    s = state.clone()
    mover = s.side_to_move()
    s.apply(move)
    return s.is_terminal() and s.winner_colour() == mover


def winning_rolls_left(state, move: str) -> int:
    """After the move, how many of the six rolls give the opponent a winning move."""
    after = state.clone()
    after.apply(move)
    count = 0
    for die in range(1, 7):
        s = after.clone()
        s.apply_chance(die)
        count += any(wins_at_once(s, m) for m in s.legal_moves())
    return count


def test_spawned_engine_answers_every_message_as_the_spec_says(engine, tmp_path):
    """Endpoint and session secret from the environment; ready, reply, pong echo game_id and seq;
    what it cannot read gets an error and it keeps going; its moves are legal and take a win
    when there is one; quit ends it with status 0."""
    ctx = zmq.Context()
    referee = ScriptedReferee(ctx)
    (tmp_path / "secret").write_text("  s3cr3t-text\n")
    proc = start(engine, env={"ARBITER_ENDPOINT": referee.endpoint, "ARBITER_SECRET_FILE": str(tmp_path / "secret")})
    try:
        hello = referee.recv()
        assert isinstance(hello, Hello)
        assert (hello.name, hello.protocol_version, hello.games, hello.secret) == ("einstein-c", 1, ["einstein"],
                                                                                  "s3cr3t-text")
        referee.send(Welcome(referee="scripted"))
        referee.ask(Ping(seq=41), Pong)
        for bad, expect in ((b"\xc1", "not msgpack"), (b"", "empty message"), (b"\x92\x01\x02", "not a map"),
                            (encode(Ping(seq=1)) + b"\x00", "trailing")):
            referee.send_raw(bad)
            error = referee.recv()
            assert isinstance(error, Error) and error.code == "malformed" and expect in error.message, (bad, error)
        referee.send_raw(encode(Ping()), encode(Ping()))
        error = referee.recv()
        assert error.code == "malformed" and "got 2" in error.message
        referee.send_raw(b"\x82\xa4type\xa5bogus\xa3seq\x05")  # unknown keys and types are not fatal
        error = referee.recv()
        assert error.code == "unexpected" and error.seq == 5
        referee.ask(new_game(seat=1), Ready)
        state = load_game("einstein").new_initial_state()
        setup = referee.ask(Request(game_id="m1.1.abc", seq=4, kind="setup", seat=1, position=state.to_text()), Reply)
        assert setup.move in LAYOUTS
        for bad in ("R1R2R32/R4R53/R63B1/3B2B3 r 3 r play", "R1R2R32/R4R53/R63B1/3B2B3/2B4B5B6 r 7 r play",
                    "R1R2R32/R4R53/R63B1/3B2B3/2B4B5B6 r 3"):
            referee.send(Request(game_id="m1.1.abc", seq=5, kind="move", seat=1, position=bad))
            error = referee.recv()
            assert isinstance(error, Error) and error.code == "malformed" and bad in error.message, error
        seq, wins_taken, wins_offered, careful = 10, 0, 0, 0
        for state in random_positions(300, seed=4):
            seat = state.seat_of_colour(state.side_to_move())
            reply = referee.ask(Request(game_id="m1.1.abc", seq=seq, kind="move", seat=seat, position=state.to_text(),
                                        time_left_ms=30000), Reply)
            legal = state.legal_moves()
            assert reply.move in legal, (state.to_text(), reply.move)
            assert reply.info is not None and reply.info.nodes == len(legal)
            if any(wins_at_once(state, m) for m in legal):
                wins_offered += 1
                wins_taken += wins_at_once(state, reply.move)
            else:  # no win: it leaves the opponent the fewest winning rolls it can
                risks = {m: winning_rolls_left(state, m) for m in legal}
                assert risks[reply.move] == min(risks.values()), (state.to_text(), reply.move, risks)
                careful += len(set(risks.values())) > 1
            seq += 1
        assert wins_offered >= 20 and wins_taken == wins_offered and careful >= 10, (wins_offered, careful)
        referee.send(GameOver(game_id="m1.1.abc", seq=seq, returns=[1.0, -1.0], reason="normal"))
        referee.ask(Ping(seq=seq + 1), Pong)  # nothing answers game_over; the engine still listens
        referee.send(Quit())
        code, log = finish(proc)
        assert code == 0, log
        assert "game m1.1.abc over: lost" in log
    finally:
        proc.kill()
        ctx.destroy(linger=0)


def test_a_reject_ends_the_engine_with_status_1(engine):
    ctx = zmq.Context()
    referee = ScriptedReferee(ctx)
    proc = start(engine, referee.endpoint)  # the endpoint as an argument
    try:
        assert isinstance(referee.recv(), Hello)
        referee.send(Reject(reason="this match is smess; the engine plays einstein"))
        code, log = finish(proc)
        assert code == 1 and "this match is smess" in log
    finally:
        proc.kill()
        ctx.destroy(linger=0)


# --- CURVE: a remote participant ------------------------------------------------------------------


def write_keys(folder: Path, name: str) -> tuple[Path, Path, bytes, bytes]:
    """NAME.key (public and secret, mode 0600) and NAME.pub, in the agreed TOML form."""
    public, secret = zmq.curve_keypair()
    key, pub = folder / f"{name}.key", folder / f"{name}.pub"
    key.write_text(f'public = "{public.decode()}"\nsecret = "{secret.decode()}"\n')
    key.chmod(0o600)
    pub.write_text(f'public = "{public.decode()}"\n')
    return key, pub, public, secret


class Roster:
    """A ZAP credentials provider: the public keys allowed in."""

    def __init__(self, *keys: bytes):
        self.keys = set(keys)

    def callback(self, domain: str, key: bytes) -> bool:
        return key in self.keys


def curve_referee(ctx: zmq.Context, tmp_path: Path, allowed: list[bytes]):
    from zmq.auth.thread import ThreadAuthenticator

    auth = ThreadAuthenticator(ctx)
    auth.start()
    auth.configure_curve_callback("*", credentials_provider=Roster(*allowed))
    _, server_pub, _, server_secret = write_keys(tmp_path, "referee")
    return auth, ScriptedReferee(ctx, server_secret), server_pub


@needs_curve
def test_connects_with_curve_and_its_own_key(engine, tmp_path):
    key, _, public, _ = write_keys(tmp_path, "alice")
    ctx = zmq.Context()
    auth, referee, server_pub = curve_referee(ctx, tmp_path, [public])
    proc = start(engine, "--connect", referee.endpoint, "--server-key", str(server_pub), "--key", str(key),
                 "--name", "alice-c")
    try:
        hello = referee.recv()
        assert isinstance(hello, Hello) and hello.name == "alice-c" and hello.secret == ""
        assert hello.games == ["einstein"] and hello.protocol_version == 1
        assert referee.user_id == public.decode()  # authenticated as its own key
        referee.send(Welcome(referee="scripted"))
        referee.ask(new_game(), Ready)
        state = load_game("einstein").from_text("R2R3R42/R5R63/5/3R1B1/B2B3B4B5B6 r 1 r play")
        reply = referee.ask(Request(game_id="m1.1.abc", seq=3, kind="move", seat=0, position=state.to_text()), Reply)
        assert reply.move == "d2e1"  # the winning step
        referee.send(Quit())
        code, log = finish(proc)
        assert code == 0 and "CURVE handshake done" in log, log
    finally:
        proc.kill()
        auth.stop()
        ctx.destroy(linger=0)


@needs_curve
def test_a_key_not_in_the_roster_is_refused_and_the_engine_says_so(engine, tmp_path):
    key, *_ = write_keys(tmp_path, "mallory")
    ctx = zmq.Context()
    auth, referee, server_pub = curve_referee(ctx, tmp_path, [])
    proc = start(engine, "--connect", referee.endpoint, "--server-key", str(server_pub), "--key", str(key))
    try:
        code, log = finish(proc, timeout=10)
        assert code == 1 and "refused this engine's key" in log, log
        assert not referee.router.poll(100)  # nothing of it got through
    finally:
        proc.kill()
        auth.stop()
        ctx.destroy(linger=0)


@needs_curve
def test_a_wrong_server_key_is_given_up_on_with_a_hint(engine, tmp_path):
    key, _, public, _ = write_keys(tmp_path, "carol")
    _, other_pub, *_ = write_keys(tmp_path, "not-the-referee")
    ctx = zmq.Context()
    auth, referee, _ = curve_referee(ctx, tmp_path, [public])
    proc = start(engine, "--connect", referee.endpoint, "--server-key", str(other_pub), "--key", str(key))
    try:
        code, log = finish(proc, timeout=20)
        assert code == 1 and "is --server-key the referee's public key?" in log and "giving up" in log, log
    finally:
        proc.kill()
        auth.stop()
        ctx.destroy(linger=0)


def test_after_a_lost_connection_it_says_hello_again(engine):
    ctx = zmq.Context()
    referee = ScriptedReferee(ctx)
    proc = start(engine, referee.endpoint)
    try:
        assert isinstance(referee.recv(), Hello)
        referee.send(Welcome(referee="scripted"))
        referee.ask(Ping(seq=1), Pong)  # the connection is up
        referee.router.close(linger=0)
        back = ScriptedReferee(ctx, endpoint=referee.endpoint)  # the same endpoint, a new socket
        assert isinstance(back.recv(timeout_ms=10000), Hello)
        back.send(Quit())
        code, log = finish(proc)
        assert code == 0 and "connection lost" in log and "hello again" in log, log
    finally:
        proc.kill()
        ctx.destroy(linger=0)


def test_bad_input_is_one_line_naming_the_flag_or_file(engine, tmp_path):
    key, pub, *_ = write_keys(tmp_path, "bob")
    loose = tmp_path / "loose.key"
    loose.write_text(key.read_text())
    loose.chmod(0o644)
    broken = tmp_path / "broken.key"
    broken.write_text('public = "short"\nsecret = "also short"\n')
    broken.chmod(0o600)
    garbled = tmp_path / "garbled.pub"
    garbled.write_text("# a comment\n\npublic: nope\n")
    curve = ["--connect", "tcp://127.0.0.1:9"]
    cases = [
        ([], "no endpoint"),
        ([*curve, "--server-key", str(pub)], "needs both --server-key"),
        ([*curve, "--server-key", str(pub), "--key", str(loose)], f"--key {loose}: mode 644"),
        ([*curve, "--server-key", str(pub), "--key", str(broken)], f"--key {broken}: line 1: public is not 40 Z85"),
        ([*curve, "--server-key", str(garbled), "--key", str(key)], f"--server-key {garbled}: line 3: expected"),
        ([*curve, "--server-key", str(tmp_path / "nope.pub"), "--key", str(key)], "nope.pub: cannot read it"),
        ([*curve, "--seed", "x"], "--seed x: expected a whole number"),
        ([*curve, "--bogus"], "unknown option --bogus"),
    ]
    for args, expect in cases:
        code, log = finish(start(engine, *args))
        assert code == 2 and expect in log and len(log.strip().splitlines()) == 1, (args, log)
