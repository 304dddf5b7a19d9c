"""The live web view (docs/web.md) with real engines, a real feed socket, a real HTTP server.

* No leaks: while a game runs, the served data (the SSE stream and the JSON API) never holds the
  dice seed, a Stalingrad face-down counter or the code of a drawn counter; once it is over the
  game's page shows the seed (verified) and everything.
* Bad input: a port in use and a file that is not an event are one-line errors (exit 2).
"""
from __future__ import annotations

import http.client
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from arbiter.clock import parse_time_control  # noqa: E402
from arbiter.feed import Feed, chain  # noqa: E402
from arbiter.formats.match import Series  # noqa: E402
from arbiter.games import load_game  # noqa: E402
from arbiter.hosting import EngineConfig  # noqa: E402
from arbiter.web import MemorySource, PortError, WebServer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable

pytestmark = pytest.mark.usefixtures("web_servers_at_games_priority")


class SSE:
    """Reads a server's event stream in a thread: (event name, parsed data) in arrival order."""

    def __init__(self, host: str, port: int):
        self.conn = http.client.HTTPConnection(host, port, timeout=60)
        self.conn.request("GET", "/events")
        self.resp = self.conn.getresponse()
        self.raw: list[str] = []
        self.events: list[tuple[str, dict]] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        name, data = "message", []
        try:
            for line in self.resp:
                line = line.decode().rstrip("\n")
                self.raw.append(line)
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    data.append(line[6:])
                elif not line and data:
                    self.events.append((name, json.loads("\n".join(data))))
                    name, data = "message", []
        except (OSError, ValueError, AttributeError):  # closed under it
            pass

    def wait(self, pred, timeout: float = 30.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for ev in list(self.events):
                if pred(ev):
                    return ev
            time.sleep(0.05)
        raise AssertionError(f"no such event in {timeout} s; got {[e[0] for e in self.events]}")

    def close(self) -> None:
        """Shut the socket down first: closing the response waits for the reading thread's blocked
        read (its buffer's lock), which returned only with the server's next keep-alive, 10 s on."""
        if self.conn.sock is not None:
            try:
                self.conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.conn.close()
        self.thread.join(timeout=5)


def apply_board_patch(board: str, patch: list) -> str:
    """A board after ``Hub.delta``'s edits of it (page.js ``merge``, in Python)."""
    parts = board.split("<")
    for start, end, add in reversed(patch):
        parts[start:end] = add
    return "<".join(parts)


def merge_view(known: dict | None, g: dict) -> dict | None:
    """A browser's running game after a live event's ``g`` (page.js ``merge``, in Python)."""
    if not g.get("delta"):
        return g
    if known is None or known["ply"] > g["ply"]:
        return known  # (page.js: null, and the view held stays)
    fresh = {e["ply"] for e in g["last"]}
    merged = sorted([e for e in known["last"] if e["ply"] not in fresh] + g["last"], key=lambda e: e["ply"])
    view = {**known, **g, "last": merged[max(0, len(merged) - g["keep"]):]}
    if "board_patch" in g:
        if known["ply"] == g["board_from"]:
            view["board"] = apply_board_patch(known["board"], g["board_patch"])
        del view["board_patch"], view["board_from"]
    del view["delta"], view["keep"]
    return view


def live_views(events: list[tuple[str, dict]]) -> list[dict]:
    """Every running game's whole view as a browser holds it after each live event it was sent."""
    held: dict[str, dict] = {}
    out = []
    for name, data in events:
        if name == "snapshot":
            held = {g["game_id"]: g for g in data["live"]}
        elif name == "live":
            for g in data["games"]:
                held[g["game_id"]] = merge_view(held.get(g["game_id"]), g)
                out.append(held[g["game_id"]])
    return out


def free_port() -> int:
    """A port nothing listens on now (for a command that binds it itself)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get_json(server: WebServer, path: str) -> tuple[int, dict]:
    # beside two busy loops under coverage a long A&A game's page took over 30 s (the server then at niceness 19)
    conn = http.client.HTTPConnection(server.host, server.port, timeout=120)
    conn.request("GET", path)
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, json.loads(body) if resp.getheader("content-type", "").startswith("application/json") else body


def test_stalingrad_spectators_see_no_hidden_counter_and_no_seed(tmp_path):
    game = load_game("stalingrad")
    endpoint = f"ipc://{tmp_path}/feed"
    server = WebServer(MemorySource("leak test"), endpoint, port=0, tick=0.001)  # (nearly) every view served
    server.start()
    sse = SSE(server.host, server.port)
    try:
        sse.wait(lambda e: e[0] == "snapshot")
        feed = Feed(endpoint, interval=0)  # a view at every request, not the newest per 50 ms
        truth: dict[int, tuple[int, list[str]]] = {}  # ply -> (counters face down on the map, codes face up)

        def capture(record, state, event, clocks):
            codes = state.ed.soviet_codes
            placed = [a for a in range(len(state.s_type)) if state.s_type[a] >= 0]
            truth[len(record.events)] = (sum(not state.s_up[a] for a in placed),
                                         sorted(codes[state.s_type[a]] for a in placed if state.s_up[a]))

        paced = [PY, "-c", "import time; from protocol.kit import run_engine; "  # the random engine at 10 ms a move:
                 "from sample_engines.stalingrad_random import make_decider; decide = make_decider(3); "  # views drawn
                 "run_engine(lambda r, g: time.sleep(0.01) or decide(r, g), name='random', games=['stalingrad'])"]
        series = Series(game, [EngineConfig(paced, name="random", cwd=str(ROOT))],  # while it thinks reach the page
                        parse_time_control("60"), run_dir=tmp_path / "logs", seed=b"leak-test",
                        on_event=chain(capture, feed.hook))
        try:
            record = series.play_game(1, [0])
        finally:
            series.close()
        last_asked = [e for e in record.events if e.seat >= 0][-1].ply  # views are drawn while the engine thinks
        sse.wait(lambda e: e[0] == "live" and any(g["ply"] == last_asked for g in e[1]["games"]))
        status, mid_game = get_json(server, f"/api/game/{record.game_id}")  # still running for the server
        assert status == 200 and mid_game["type"] == "live"
        feed.finished(record)
        feed.flush()  # a game's end goes with the next game's first view, or now
        sse.wait(lambda e: e[0] == "end")
        feed.close()
        served = [g for name, data in sse.events if name == "live" for g in data["games"]]
        lives = live_views(sse.events)  # whole views, from the deltas as a browser merges them
        assert len(lives) >= 5 and lives[-1]["ply"] == last_asked
        assert any(g.get("delta") for g in served) and "board" in lives[-1]
        for data in served:
            text = json.dumps(data)
            assert record.dice_seed not in text, "the dice seed was served during the game"
            assert "dice_seed" not in text and "final_position" not in text
        checked = 0
        for data in lives + [mid_game]:
            text = json.dumps(data)
            assert record.dice_seed not in text, "the dice seed was served during the game"
            assert "dice_seed" not in text and "final_position" not in text
            down, up = truth[data["ply"]]
            labels = re.findall(r'class="soviet-code"[^>]*>([^<]*)<', data["board"])
            assert labels.count("?") == down, f"ply {data['ply']}: {labels} for {down} face-down counters"
            assert sorted(x for x in labels if x != "?") == up, f"ply {data['ply']}: a face-down counter shown"
            checked += down
            for e in data["last"]:
                if e["seat"] < 0:
                    assert e["move"] == "?", f"a draw or roll of a hidden-information game was shown: {e}"
        assert checked > 0
        # once over: the seed, the final position and the face-down counters are there
        status, done = get_json(server, f"/api/game/{record.game_id}")
        assert status == 200 and done["type"] == "finished"
        assert done["dice"]["seed"] == record.dice_seed and done["dice"]["verified"] is True and done["verified"]
        assert done["record"]["final_position"] == record.final_position
        status, board = get_json(server, f"/api/game/{record.game_id}/board/{done['steps'] - 1}")
        assert status == 200 and b"?" not in board.split(b"</title>")[1]  # revealed: no face-down counter
        status, state = get_json(server, "/api/state")
        assert [r["game_id"] for r in state["summary"]["finished"]] == [record.game_id]
        status, engine = get_json(server, "/api/engine/random")
        assert status == 200 and engine["games"] == 1 and engine["decisions"] > 0
    finally:
        sse.close()
        server.stop()


def test_a_finished_game_keeps_the_dice_secret_of_a_game_rolling_the_same_dice(tmp_path):
    """``arbiter solo --engine A --engine B --web``: A plays every seed of the suite, then B plays
    the same seeds. A's finished game's page showed its seed (sha256 = B's running game's
    commitment: every roll of B's game), its counter draws and its revealed boards while B played
    on the same dice. A game whose dice stream other games share keeps all that to itself until
    the run (or event) is over; then its page shows everything."""
    from arbiter.formats.solo import suite_stream

    game = load_game("stalingrad")
    endpoint = f"ipc://{tmp_path}/feed"
    server = WebServer(MemorySource("suite", total=2), endpoint, port=0, tick=0.001)
    server.start()
    sse = SSE(server.host, server.port)
    feed = Feed(endpoint, interval=0)
    records = []
    try:
        sse.wait(lambda e: e[0] == "snapshot")
        for name, seed in (("A", "3"), ("B", "4")):
            series = Series(game, [EngineConfig([PY, "-m", "sample_engines.stalingrad_random", "--seed", seed],
                                                name=name, cwd=str(ROOT))],
                            parse_time_control("60"), run_dir=tmp_path / "logs", seed=b"one-suite",
                            on_event=feed.hook)
            try:
                records.append(series.play_game(0, [0], dice_stream=suite_stream(0)))
            finally:
                series.close()
            if name == "A":
                feed.finished(records[0])
                feed.flush()
                sse.wait(lambda e: e[0] == "end")
        first, second = records
        assert first.dice_seed == second.dice_seed  # the same dice, by design
        status, page = get_json(server, f"/api/game/{first.game_id}")  # B's game is running
        assert status == 200 and page["type"] == "finished"
        text = json.dumps(page)
        assert first.dice_seed not in text, "a finished game's page gave away the dice of a running game"
        assert first.final_position not in text
        assert all(e["move"] == "?" for e in page["record"]["events"] if e["seat"] < 0)
        assert not page["record"]["rolls"] and page["dice"]["withheld"]
        from arbiter.records.replay import replay

        state = [state for _, state in replay(first)][-1]
        status, board = get_json(server, f"/api/game/{first.game_id}/board/{page['steps'] - 1}")
        assert status == 200 and board.decode() == state.render_svg(), "a face-down counter was shown"
        feed.finished(second)  # the run is over: everything may be shown
        feed.flush()
        sse.wait(lambda e: e[0] == "end" and e[1]["game_id"] == second.game_id)
        status, page = get_json(server, f"/api/game/{first.game_id}")
        assert page["dice"]["seed"] == first.dice_seed and page["dice"]["verified"] and not page["dice"]["withheld"]
        status, board = get_json(server, f"/api/game/{first.game_id}/board/{page['steps'] - 1}")
        assert board.decode() == state.render_svg(reveal=True)
    finally:
        feed.close()
        sse.close()
        server.stop()


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "tournaments", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_serve_bad_input(tmp_path):
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    try:
        db = tmp_path / "notevent.sqlite"
        import sqlite3

        sqlite3.connect(db).execute("CREATE TABLE x (y)").connection.commit()
        r = cli("serve", str(db), "--port", str(port + 1 if port < 65535 else 1))
        assert r.returncode == 2 and "not a tournament database" in r.stderr and "Traceback" not in r.stderr
        r = cli("serve", str(tmp_path / "missing.sqlite"))
        assert r.returncode == 2 and "no such file" in r.stderr
        r = cli("serve", "x.sqlite", "--port", "70000")
        assert r.returncode == 2 and "--port" in r.stderr
        r = subprocess.run([PY, "-m", "arbiter.cli", "match", "--game", "einstein", "--engine", "true", "--engine",
                            "true", "--db", str(tmp_path / "m.sqlite"), "--web", str(port)], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and f"--web {port}: cannot listen on 127.0.0.1:{port}" in r.stderr, r.stderr
        for command in (["match", "--game", "einstein"], ["coop", "--game", "catalonia"], ["solo", "--game", "stalingrad"]):
            r = subprocess.run([PY, "-m", "arbiter.cli", *command, "--engine", "true", "--web", "99999"], cwd=ROOT,
                               capture_output=True, text=True, timeout=60)  # was a traceback (bind's OverflowError)
            assert r.returncode == 2 and "argument --web: a port is 0..65535, not 99999" in r.stderr, r.stderr
    finally:
        busy.close()


def test_port_in_use_is_named(tmp_path):
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    try:
        with pytest.raises(PortError, match=f"cannot listen on 127.0.0.1:{port}"):
            WebServer(MemorySource(), None, port=port)
        server = WebServer(MemorySource(), None, port=0)  # this machine only unless asked
        assert server.sock.getsockname()[0] == "127.0.0.1"
        server.stop()
        with pytest.raises(PortError, match="an empty address would be every interface"):
            WebServer(MemorySource(), None, host="", port=0)  # it bound 0.0.0.0, without a word
    finally:
        busy.close()


def test_the_server_runs_after_the_games_unless_the_operator_says_otherwise(monkeypatch, tmp_path):
    """The serving thread runs at niceness 19 by default (the games first); ``ARBITER_WEB_NICE``
    sets it from 0 (a machine of its own) to 19. A value outside that is refused, naming the
    variable, before anything listens: never below 0, where the spectators would go first."""
    for value, expected in ((None, 19), ("0", 0), ("7", 7)):
        if value is None:
            monkeypatch.delenv("ARBITER_WEB_NICE", raising=False)
        else:
            monkeypatch.setenv("ARBITER_WEB_NICE", value)
        server = WebServer(MemorySource(), None, port=0)
        server.start()
        try:
            assert os.getpriority(os.PRIO_PROCESS, server.thread.native_id) == expected
            assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == 0  # the caller's own: untouched
        finally:
            server.stop()
    for bad in ("-5", "20", "high", ""):
        monkeypatch.setenv("ARBITER_WEB_NICE", bad)
        with pytest.raises(ValueError, match=f"ARBITER_WEB_NICE={bad!r}: expected a niceness from 0"):
            WebServer(MemorySource(), None, port=0)
    port = free_port()
    r = subprocess.run([PY, "-m", "arbiter.cli", "match", "--game", "einstein", "--engine", "true", "--engine", "true",
                        "--db", str(tmp_path / "m.sqlite"), "--web", str(port)], cwd=ROOT, capture_output=True,
                       text=True, timeout=60, env={**os.environ, "ARBITER_WEB_NICE": "-5"})
    assert r.returncode == 2 and f"--web {port}: ARBITER_WEB_NICE='-5': expected a niceness" in r.stderr, r.stderr


def _http_json(port: int, path: str) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def test_a_resumed_match_shows_the_games_played_before_it(tmp_path):
    """``arbiter match --resume --web``: the page's standings are the match's, not only those of
    the games played since the resume (before: a match resumed at 1,104 games showed 176 played
    and their score), and a game played before the resume can be opened."""
    from tests.test_resume_runs import games_in, interrupted

    from arbiter.records.store import load_records

    db = tmp_path / "m.sqlite"
    engine = f"{PY} -m sample_engines.random_engine"
    common = ("--engine", engine, "--engine", engine, "--tc", "10", "--quiet")
    cut = interrupted("match", "--game", "einstein", *common, "--format", "games=3000", "--db", str(db), after=5)
    assert cut.returncode == 130, cut.stdout + cut.stderr
    before = load_records(db)
    assert len(before) >= 5
    first = min(before, key=lambda r: r.game_number)
    port = free_port()
    proc = subprocess.Popen([PY, "-m", "arbiter.cli", "match", "--resume", "--db", str(db), "--web", str(port),
                             "--quiet"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline, summary = time.monotonic() + 60, {}
        while time.monotonic() < deadline:
            try:
                summary = _http_json(port, "/api/state")[1]["summary"]
            except OSError:
                summary = {}
            if summary.get("progress", {}).get("played", 0) >= len(before):
                break
            time.sleep(0.2)
        assert summary.get("progress", {}).get("played", 0) >= len(before), summary
        assert summary["progress"]["total"] == 3000
        assert all(row["games"] == summary["progress"]["played"] and row["W"] + row["L"] == row["games"]
                   for row in summary["standings"])
        status, page = _http_json(port, f"/api/game/{first.game_id}")
        assert status == 200 and page["row"]["number"] == first.game_number and page["row"]["returns"] == first.returns
        while time.monotonic() < deadline and games_in(db) <= len(before):  # playing again: its start is over
            time.sleep(0.05)  # (a Ctrl-C while Python still imports the match's modules may end it by SIGINT)
    finally:
        proc.send_signal(signal.SIGINT)
        out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 130, out


def random_match(db: Path, a: str, b: str, games: int) -> Path:
    """``db`` after an EinStein match of two random engines named ``a`` and ``b``."""
    engine = f"{PY} -m sample_engines.random_engine"
    done = subprocess.run([PY, "-m", "arbiter.cli", "match", "--game", "einstein", "--engine", engine, "--engine",
                           engine, "--name", a, "--name", b, "--format", f"games={games}", "--tc", "10", "--quiet",
                           "--db", str(db)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return db


def test_the_view_keeps_a_line_per_game_and_reads_an_older_record_from_the_database(tmp_path, monkeypatch):
    """A long event's page never holds every record: an engine's page comes from the per-seat sums
    saved with each game (the same numbers as a walk over every decision), and a match's view
    keeps its last few whole records, reading an older game's from the results database (before:
    every record in the view's memory, ~22 KB a game; a tournament's view parsed every record of
    the database to open one game)."""
    import sqlite3

    import msgspec

    from arbiter.records import to_json
    from arbiter.records.store import GameLine, game_lines, load_records
    from arbiter.web.app import engine_page

    db = random_match(tmp_path / "m.sqlite", "a", "b", games=6)
    records, lines = load_records(db), list(game_lines(db))
    assert [line.game_id for line in lines] == [r.game_id for r in records]
    for name in ("a", "b"):
        page = engine_page(lines, name)
        walked = [e for r in records for e in r.events if 0 <= e.seat < 2 and r.players[e.seat] == name
                  and e.measured_ms is not None]
        lags = [e.measured_ms - e.reported_ms for e in walked if e.reported_ms is not None]
        assert page["games"] == 6 and page["decisions"] == len(walked) > 0
        assert page["max_ms"] == max(e.measured_ms for e in walked)
        assert page["total_ms"] == pytest.approx(sum(e.measured_ms for e in walked), abs=0.1)
        assert page["mean_latency_ms"] == pytest.approx(sum(lags) / len(lags), abs=1e-3)
        from_records = engine_page([GameLine.of(r) for r in records], name)
        assert {k: v for k, v in from_records.items() if k != "results"} == \
            {k: v for k, v in page.items() if k != "results"}
        monkeypatch.setattr("arbiter.web.app.RESULT_ROWS", 4)  # the page lists the newest games, counts all
        short = engine_page(lines, name)
        assert short["games"] == 6 and [row["number"] for row in short["results"]] == [3, 4, 5, 6]
        monkeypatch.undo()
    with sqlite3.connect(db) as con:  # a database from before the summaries: lines from the records
        assert con.execute("DELETE FROM game_summaries WHERE rowid % 2 = 0").rowcount == 3
    assert [dict(msgspec.structs.asdict(x), started_at=None) for x in game_lines(db)] == \
        [dict(msgspec.structs.asdict(x), started_at=None) for x in lines]

    source = MemorySource("m", db=str(db))
    source.KEEP = 2
    for r in records:
        source.announced(r)
    assert len(source._records) == 2 and source.version() == 6
    oldest = source.record(records[0].game_id)  # no longer in memory: read from the database
    assert oldest is not None and to_json(oldest) == to_json(records[0])
    assert source.record("no-such-game") is None
    alone = MemorySource("m")  # no database to read from: every record stays
    for r in records:
        alone.announced(r)
    assert to_json(alone.record(records[0].game_id)) == to_json(records[0])


def game_line(n: int):
    """A finished game's line (``GameLine``) numbered ``n``, for a source's standings."""
    from arbiter.records.store import GameLine

    return GameLine(f"g{n}", "m", n, "einstein", ["a", "b"], [1.0, -1.0], "normal", "", None, 20, 1000.0 + n,
                    f"m|{n}", [[10, 10, 10.0, 2.0, 0, 0.0, None, 0, 0.0, 0, 0.0, 0.0, 0.0, None, None]] * 2)


def test_standings_that_take_long_to_make_are_made_again_only_after_summary_share_times_as_long():
    """A 100,000-game tournament's standings take seconds of CPU to make; made again at every
    commit they held a core (before: 18.7 s of CPU and 2.3 GB each, made whenever a game was
    committed). The hub serves the last standings until ``SUMMARY_SHARE`` times their making's CPU
    time has passed (measured in CPU time, not wall time, which grows with the machine's load)."""
    from arbiter.web.app import SUMMARY_SHARE, Hub

    class Slow(MemorySource):
        def summary(self):
            spent = time.thread_time() + 0.05
            while time.thread_time() < spent:  # 50 ms of CPU
                pass
            return super().summary()

    source = Slow("slow")
    hub = Hub(source)
    source.preload([game_line(1)])
    started = time.monotonic()
    assert hub.summary()["progress"]["played"] == 1
    made = time.monotonic() - started
    source.preload([game_line(2)])
    assert hub.summary()["progress"]["played"] == 1  # not due yet: the standings made a moment ago
    time.sleep(made * SUMMARY_SHARE + 0.05)
    assert hub.summary()["progress"]["played"] == 2


def test_a_match_s_progress_counts_the_games_its_standings_hold():
    """A game announced while the standings were being made (the feed's thread announces, the
    hub's makes them) made ``progress.played`` one more than the standings' games: the progress
    counted the games again after the standings had read them (seen in CI on a resumed match)."""

    class Racing(MemorySource):
        def lines(self):
            lines = super().lines()
            if len(lines) == 1:  # the next game ends right after the standings read the games
                self.preload([game_line(2)])
            return lines

    source = Racing("race", total=10)
    source.preload([game_line(1)])
    summary = source.summary()
    assert summary["progress"] == {"played": 1, "total": 10}
    assert [row["games"] for row in summary["standings"]] == [1, 1]
    assert source.summary()["progress"]["played"] == 2


def test_standings_slow_to_make_only_for_want_of_the_cpu_are_not_held_back_for_it():
    """On a busy machine the server (niceness 19) waits for the CPU: timed in wall time, the
    standings were then held back ``SUMMARY_SHARE`` times that wait (a finished event's seeds came
    up to a minute late). The hold is that many times the CPU time the making took."""
    from arbiter.web.app import Hub

    class Waiting(MemorySource):
        def summary(self):
            time.sleep(0.3)  # waiting, not computing
            return super().summary()

    source = Waiting("busy")
    hub = Hub(source)
    source.preload([game_line(1)])
    assert hub.summary()["progress"]["played"] == 1  # the first making (its imports take CPU)
    time.sleep(max(0.0, hub.summary_due - time.monotonic()))
    source.preload([game_line(2)])
    assert hub.summary()["progress"]["played"] == 2  # 0.3 s of waiting, little CPU
    time.sleep(0.2)
    source.preload([game_line(3)])
    assert hub.summary()["progress"]["played"] == 3  # held for SUMMARY_SHARE times that CPU, not 9 s


def test_live_events_carry_only_what_changed_and_merge_into_the_whole_view():
    """After a game's first live event, browsers get its ply, the fields that changed and the new
    events (the static fields and the repeated events were two thirds of the bytes, 20 times a
    second to every browser), the board as edits of the one before. Merged as page.js merges them they make exactly the hub's view, also
    for a browser whose snapshot is newer than the deltas queued for it before the snapshot."""
    import os
    import random

    from arbiter.dice import Dice
    from arbiter.feed import spectator_view
    from arbiter.hosting.session import InProcessPlayer, InProcessSession
    from arbiter.referee import Referee
    from arbiter.web.app import Hub, Viewer

    views = []

    def capture(record, state, event, clocks):  # what Feed.draw publishes, at every event
        views.append(json.loads(json.dumps(spectator_view(record, state, record.events[-40:],
                                                          [c.remaining_ms() for c in clocks], False, time.time()))))

    sessions = []
    for seed in (1, 2):
        rng = random.Random(seed)
        choose = lambda request, game, rng=rng: rng.choice(request.legal_moves)  # noqa: E731
        session = InProcessSession(InProcessPlayer(decide=choose, wants_legal_moves=True, wants_state=False))
        session.handshake()
        sessions.append(session)
    for number in range(1, 30):  # a game long enough to pass the 40 events a view holds
        views.clear()
        Referee(load_game("einstein"), sessions, parse_time_control("60"), Dice(os.urandom(32), f"t|{number}"),
                match_id="t", game_number=number, on_event=capture).play()
        if len(views) > 50:
            break
    assert len(views) > 50

    def received(viewer: Viewer) -> list[tuple[str, dict]]:
        text, viewer.pending = b"".join(viewer.pending).decode(), []
        out = []
        for block in filter(None, text.split("\n\n")):
            lines = dict(line.split(": ", 1) for line in block.split("\n"))
            out.append((lines["event"], json.loads(lines["data"])))
        return out

    hub = Hub(MemorySource("deltas"))
    browsers = {"early": Viewer(), "between ticks": Viewer(), "queued before its snapshot": Viewer()}
    hub.viewers.add(browsers["early"])
    held: dict[str, dict[str, dict]] = {"early": {}}
    whole = delta = patched = 0
    for i, view in enumerate(views):
        hub.on_feed(view)
        if i == 20:  # arrives while a newer view than the last broadcast waits for the tick
            hub.viewers.add(browsers["between ticks"])
            held["between ticks"] = {g["game_id"]: g for g in hub.snapshot()["live"]}
        if i % 3 == 2:
            continue  # two events in one tick: the second's delta holds both
        if i == 30:  # its stream has this tick's delta queued before its snapshot is made
            hub.viewers.add(browsers["queued before its snapshot"])
            hub.flush()
            held["queued before its snapshot"] = {g["game_id"]: g for g in hub.snapshot()["live"]}
        else:
            hub.flush()
        for who, games in held.items():
            for name, data in received(browsers[who]):
                assert name == "live"
                for g in data["games"]:
                    if who == "early" and g.get("delta"):
                        delta += len(json.dumps(g))
                        whole += len(json.dumps(hub.live[g["game_id"]]))  # what the event carried before
                        assert "players" not in g and "dice_commitment" not in g
                        patched += "board_patch" in g
                    games[g["game_id"]] = merge_view(games.get(g["game_id"]), g)
            assert games == hub.live, f"{who}, after event {i}"
    assert len(held) == 3
    assert delta < 0.2 * whole, (delta, whole)  # 0.11 (0.43 with every changed board whole)
    assert patched > 10


def merge_summary(held: dict | None, summary: dict) -> dict:
    """A browser's standings after a summary event (page.js's ``summary`` listener, in Python)."""
    if held is not None and held["made"] >= summary["made"]:
        return held  # queued before a newer snapshot
    if "finished_new" in summary:
        rows = {r["game_id"]: r for r in held["finished"]}
        rows.update((r["game_id"], r) for r in summary["finished_new"])
        newest = sorted(rows.values(), key=lambda r: (-(r["ended_at"] or 0), r["game_id"]))
        keep = summary["finished_keep"]
        summary = {k: v for k, v in summary.items() if k not in ("finished_new", "finished_keep")}
        summary["finished"] = newest[:keep]
    return summary


def test_summaries_carry_the_new_finished_games_and_merge_into_the_whole_list():
    """A summary repeated the 200 newest finished games' rows every time (70 % of its bytes); it now
    carries the rows new or changed since the last broadcast. Merged as page.js merges them they
    make exactly the hub's list: past 200 games, games ending out of order, a row that changed (a
    resumed run's line that learnt its start), a browser that came between two broadcasts, and one
    whose snapshot is newer than the summary queued for it; games replaced go whole."""
    import random

    from arbiter.web.app import Hub, MemorySource, Viewer, game_row

    def received(viewer: Viewer) -> list[dict]:
        text, viewer.pending = b"".join(viewer.pending).decode(), []
        blocks = [dict(line.split(": ", 1) for line in b.split("\n")) for b in filter(None, text.split("\n\n"))]
        assert all(b["event"] == "summary" for b in blocks)
        return [json.loads(b["data"]) for b in blocks]

    def line(n: int, ended: float, started: float | None = None):
        out = game_line(n)
        out.ended_at, out.started_at = ended, started
        return out

    rng = random.Random(7)
    source = MemorySource("rows")
    hub = Hub(source)
    browsers: dict[str, Viewer] = {}
    held: dict[str, dict] = {}

    def come(who: str) -> None:
        browsers[who] = Viewer()
        hub.viewers.add(browsers[who])
        held[who] = hub.snapshot()["summary"]

    def publish() -> dict:
        hub.summary_due = 0.0  # made at once (the hold is another test's)
        summary = hub.summary()
        event = hub.summary_event(summary)
        hub.broadcast(event)
        for who, viewer in browsers.items():
            for message in received(viewer):
                held[who] = merge_summary(held[who], message)
            assert held[who] == summary, who
        return event

    come("early")
    n, sizes = 0, []
    for step in range(60):
        for _ in range(rng.randint(1, 8)):
            n += 1
            source.preload([line(n, 1000.0 + n + rng.choice([0.0, -3.5, 0.25]))])  # some end before others
        if step == 10:
            third = next(g for g in source.lines() if g.game_id == "g3")
            source.preload([line(3, third.ended_at, started=900.0)])  # a line that learnt when its game started
        if step == 20:
            come("between broadcasts")
        if step == 30:  # a summary made and queued before its snapshot, which is newer
            hub.summary_due = 0.0
            browsers["queued"] = Viewer()
            hub.viewers.add(browsers["queued"])
            hub.broadcast(hub.summary_event(hub.summary()))
            n += 1
            source.preload([line(n, 1000.0 + n)])
            hub.summary_due = 0.0
            held["queued"] = hub.snapshot()["summary"]
            for message in received(browsers["queued"]):  # the older summary, queued first
                held["queued"] = merge_summary(held["queued"], message)
            assert held["queued"] == hub.summary()
        event = publish()
        if step > 0 and "finished_new" in event:
            sizes.append((len(json.dumps(event)), len(json.dumps(hub.summary()))))
    assert n > 200 and len(held["early"]["finished"]) == 200
    assert held["early"]["finished"][0]["game_id"] == f"g{n}"
    assert len(sizes) >= 55 and sum(a for a, _ in sizes) < 0.5 * sum(b for _, b in sizes), sizes
    hub.source = MemorySource("another run")  # the games replaced: the next summary is whole
    hub.source.preload([line(1, 5.0)])
    assert "finished" in publish() and held["early"]["finished"] == [game_row(line(1, 5.0))]


def test_with_no_browser_the_hub_keeps_no_broadcast_and_a_late_one_merges_to_its_view():
    """Nobody watching: ``flush`` sends nothing and keeps nothing to build deltas on (no board is
    diffed for no one); a browser that comes then gets its snapshot and whole views, then deltas,
    and merges them into exactly the hub's views."""
    from arbiter.web.app import Hub, Viewer

    hub = Hub(MemorySource("nobody"))
    board = "<svg>" + "".join(f'<use x="{i}"/>' for i in range(50)) + "</svg>"

    def view(ply: int) -> dict:
        return {"type": "live", "game_id": "g", "ply": ply, "acting": [ply % 2], "sent_at": time.time(),
                "board": board.replace(f'x="{ply}"', 'x="moved"'), "last": [{"ply": ply - 1, "seat": 0}]}
    for ply in range(1, 5):
        hub.on_feed(view(ply))
        hub.flush()
    assert hub.broadcast_views == {} and hub.dirty == {}
    browser = Viewer()
    hub.viewers.add(browser)
    held = {g["game_id"]: g for g in hub.snapshot()["live"]}
    patched = 0
    for ply in range(5, 12):
        hub.on_feed(view(ply))
        hub.flush()
        text, browser.pending = b"".join(browser.pending).decode(), []
        for block in filter(None, text.split("\n\n")):
            for g in json.loads(block.split("data: ", 1)[1])["games"]:
                patched += "board_patch" in g
                held[g["game_id"]] = merge_view(held.get(g["game_id"]), g)
        assert held == hub.live
    assert patched >= 5


@pytest.mark.parametrize("name", ["einstein", "smess", "catalonia"])
def test_a_board_patch_makes_the_next_board_and_is_much_smaller(name):
    """Each game's boards over a random game: the patch of one board into the next makes exactly the
    next (or is None, and the board goes whole), and over the game the patches are a small part of
    the boards they stand for."""
    import random

    from arbiter.web.app import board_patch

    rng = random.Random(7)
    state = load_game(name).new_initial_state()
    before, whole, patched, patches = state.render_svg(), 0, 0, 0
    for _ in range(80):
        if state.is_terminal():
            break
        seats = state.acting_seats()
        if not seats:
            outcome = rng.choice(state.chance_outcomes())
            state.apply_chance(outcome[0] if isinstance(outcome, tuple) else outcome)
        elif len(seats) == 1:
            state.apply(rng.choice(state.legal_moves(seats[0])))
        else:
            state.apply_joint({s: rng.choice(state.legal_moves(s)) for s in seats})
        board = state.render_svg()
        patch = board_patch(before, board)
        whole += len(board)
        if patch is None:
            patched += len(board)
        else:
            patches += 1
            assert apply_board_patch(before, patch) == board
            patched += len(json.dumps(patch))
        before = board
    assert patches > 5
    assert patched < 0.6 * whole, (patched, whole)


def test_a_board_patch_is_exact_for_any_edit():
    """Elements changed, added, taken away, at either end or none; a board that shares nothing
    with the one before goes whole (None); a huge one is one hunk."""
    import random

    from arbiter.web.app import board_patch

    rng = random.Random(3)
    elements = [f'<use href="#sq" x="{i}" y="{j}"/>' for i in range(12) for j in range(12)]
    checked = 0
    for _ in range(400):
        old = list(elements)
        new = list(old)
        for _ in range(rng.randint(0, 4)):
            k = rng.randrange(len(new))
            op = rng.choice("cad")
            if op == "c":
                new[k] = new[k].replace("sq", "cube")
            elif op == "a":
                new.insert(k, f'<text x="{k}">{rng.random()}</text>')
            else:
                del new[k]
        a, b = "<svg>" + "".join(old) + "</svg>", "<svg>" + "".join(new) + "</svg>"
        patch = board_patch(a, b)
        if patch is not None:
            assert apply_board_patch(a, patch) == b
            checked += 1
    assert checked > 200
    assert board_patch("<svg><a/></svg>", "<svg><b/></svg>") is None  # no smaller than the board
    assert board_patch("<p>x", "<p>x") == []
    many = elements * 60  # 8,640 elements, two changed 5,000 apart: past BOARD_DIFF_PARTS, one hunk
    changed = list(many)
    changed[2000] = changed[7000] = "<text>!</text>"
    big, bigger = "<svg>" + "".join(many) + "</svg>", "<svg>" + "".join(changed) + "</svg>"
    patch = board_patch(big, bigger)
    assert len(patch) == 1 and apply_board_patch(big, patch) == bigger


def test_a_cooperative_or_solo_run_is_scored_as_a_tournament_report_scores_it(tmp_path):
    """Catalonia's two seats share one score: the page's standings give the pair's mean score
    (before: every game a "draw", 50 % each whatever the score) and no W/D/L; a solo run's give
    wins and the mean score, each with its interval, as a solo tournament's report does."""
    from arbiter.records.store import game_lines, load_records
    from arbiter.stats import mean_ci, wilson_interval
    from arbiter.web.app import engine_page, scores

    def run(command: str, game: str, engines: list[str], count: str, db: Path) -> tuple[list, list]:
        done = subprocess.run([PY, "-m", "arbiter.cli", command, "--game", game,
                               *[a for e in engines for a in ("--engine", f"{PY} -m {e}")],
                               "--games" if command == "coop" else "--seeds", count, "--tc", "10", "--quiet",
                               "--db", str(db)], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        return load_records(db), list(game_lines(db))

    records, lines = run("coop", "catalonia", ["sample_engines.random_engine"], "6", tmp_path / "c.sqlite")
    mean, lo, hi = mean_ci([r.returns[0] for r in records])
    rows = scores(lines)
    assert [row["games"] for row in rows] == [6, 6]
    assert all((row["mean"], row["lo"], row["hi"]) == pytest.approx((mean, lo, hi)) and "W" not in row
               and "points" not in row for row in rows)
    page = engine_page(lines, rows[0]["engine"])
    assert page["cooperative"] and page["mean"] == round(mean, 3)

    records, lines = run("solo", "stalingrad", ["sample_engines.stalingrad_random --seed 1",
                                         "sample_engines.stalingrad_random --seed 2"], "3", tmp_path / "s.sqlite")
    rows = scores(lines)
    assert len(rows) == 2
    for row in rows:
        mine = [r.returns[0] for r in records if r.players[0] == row["engine"]]
        wins = sum(v > 0 for v in mine)
        assert row["games"] == 3 and row["wins"] == wins and row["win_rate"] == wins / 3
        assert (row["win_lo"], row["win_hi"]) == pytest.approx(wilson_interval(wins, 3))
        assert row["mean"] == pytest.approx(sum(mine) / 3) and row["lo"] is None  # an interval from 5 games
        assert not engine_page(lines, row["engine"])["cooperative"]
    source = MemorySource("solo")
    source.preload(lines)
    (pair,) = source.summary()["paired"]  # the two engines on their 3 common seeds, as the report pairs them
    first, second = records[0].players[0], next(r.players[0] for r in records if r.players[0] != records[0].players[0])
    a = {r.dice_stream: r.returns[0] for r in records if r.players[0] == first}
    b = {r.dice_stream: r.returns[0] for r in records if r.players[0] == second}
    assert (pair["A"], pair["B"], pair["seeds"]) == (first, second, 3) and set(a) == set(b)
    assert pair["A_better"] == sum(a[k] > b[k] for k in a) and pair["B_better"] == sum(a[k] < b[k] for k in a)
    json.dumps(pair, allow_nan=False)  # what the page gets must be JSON (no NaN)


@pytest.mark.parametrize("name", ["einstein", "smess", "catalonia", "stalingrad", "aachess"])
def test_every_game_draws_its_board_as_svg(name):
    """``render_svg`` gives well-formed SVG along a random game, and the drawing changes as the game
    goes; the hidden-information game hides its face-down counters unless ``reveal``."""
    import random
    import xml.etree.ElementTree as ET

    from arbiter.games.base import CHANCE, SIMULTANEOUS

    rng = random.Random(7)
    state = load_game(name).new_initial_state()
    drawings = set()
    for _ in range(40):
        for reveal in (False, True):
            root = ET.fromstring(state.render_svg(reveal=reveal))
            assert root.tag == "{http://www.w3.org/2000/svg}svg" and root.get("viewBox")
        drawings.add(state.render_svg())
        if state.is_terminal():
            break
        p = state.current_player()
        if p == CHANCE:
            state.apply_chance(rng.choice(state.chance_outcomes()))
        elif p == SIMULTANEOUS:
            state.apply_joint({s: rng.choice(state.legal_moves(s)) for s in state.acting_seats()})
        else:
            moves = state.legal_moves()
            if moves is None and state.decision_kind() == "purchase":  # A&A: its library's random buyer
                from arbiter.games.aachess.library import random_purchase

                moves = [random_purchase(state, rng)]
            if moves is None:
                break
            state.apply(rng.choice(moves))
    assert len(drawings) > 1
    if name == "stalingrad":
        hidden = sum(1 for a in range(len(state.s_type)) if state.s_type[a] >= 0 and not state.s_up[a])
        assert hidden and state.render_svg().count(">?<") == hidden and ">?<" not in state.render_svg(reveal=True)


def test_stopping_with_browsers_connected_ends_their_streams_without_an_error(tmp_path):
    """A tournament that ends while spectators watch: every event stream is closed by the server
    (before this, uvicorn's graceful shutdown timed out and logged a traceback per browser)."""
    server = WebServer(MemorySource("stop test"), f"ipc://{tmp_path}/feed", port=0)
    server.start()
    streams = [SSE(server.host, server.port) for _ in range(5)]
    for sse in streams:
        sse.wait(lambda e: e[0] == "snapshot")
    logged: list[logging.LogRecord] = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = logged.append
    logging.getLogger("uvicorn.error").addHandler(handler)  # uvicorn's own logger does not propagate
    try:
        server.stop()
    finally:
        logging.getLogger("uvicorn.error").removeHandler(handler)
    for sse in streams:
        sse.thread.join(10)
        assert not sse.thread.is_alive(), "an event stream was left open"
        sse.close()
    assert not server.thread.is_alive()
    assert not logged, [r.getMessage() for r in logged]


def test_an_idle_stream_gets_keep_alive_comments(tmp_path, monkeypatch):
    from arbiter.web import app as web_app

    monkeypatch.setattr(web_app, "KEEP_ALIVE", 0.1)
    server = WebServer(MemorySource("idle"), f"ipc://{tmp_path}/feed", port=0, tick=0.01)
    server.start()
    sse = SSE(server.host, server.port)
    try:
        sse.wait(lambda e: e[0] == "snapshot")
        deadline = time.monotonic() + 10
        while sse.raw.count(": keep-alive") < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sse.raw.count(": keep-alive") >= 2, sse.raw[-5:]
    finally:
        sse.close()
        server.stop()


def test_a_connection_that_sends_no_request_is_closed_and_a_stream_is_not(tmp_path, monkeypatch):
    """uvicorn kept a connection that never sent a request open for ever: ~20,000 of them (the
    file limit) and the view accepted nobody. Silent and trickling connections are closed after
    FIRST_REQUEST_SECONDS; an event stream, a request under way, stays; others are still served."""
    from arbiter.web import app as web_app

    monkeypatch.setattr(web_app, "FIRST_REQUEST_SECONDS", 0.5)
    monkeypatch.setattr(web_app, "KEEP_ALIVE", 0.2)
    server = WebServer(MemorySource("guard"), f"ipc://{tmp_path}/feed", port=0, tick=0.01)
    server.start()
    silent = [socket.create_connection((server.host, server.port)) for _ in range(50)]
    trickling = socket.create_connection((server.host, server.port))
    trickling.sendall(b"GET /api/state HTTP/1.1\r\nHost: te")  # a request head never finished
    sse = SSE(server.host, server.port)
    try:
        sse.wait(lambda e: e[0] == "snapshot")
        for s in silent + [trickling]:
            s.settimeout(5)
        assert all(s.recv(100) == b"" for s in silent + [trickling])  # closed by the server
        streamed = len(sse.raw)
        time.sleep(1.0)  # twice the guard's time: the stream goes on (its keep-alive comments)
        assert sse.thread.is_alive() and len(sse.raw) > streamed, sse.raw[-3:]
        conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
        conn.request("GET", "/api/state")
        assert conn.getresponse().status == 200
        conn.close()
    finally:
        for s in silent + [trickling]:
            s.close()
        sse.close()
        server.stop()


def _publish_views(endpoint: str, stop: threading.Event, board: str) -> None:
    import msgspec
    import zmq

    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    pub.connect(endpoint)
    ply = 0
    while not stop.is_set():
        ply += 1
        now = time.time()
        pub.send(msgspec.msgpack.encode({
            "type": "live", "game_id": "g1", "match_id": "m", "number": 1, "game": "einstein",
            "players": ["a", "b"], "roles": ["x", "y"], "time_control": "60", "dice_commitment": "c",
            "started_at": now, "ply": ply, "acting": [0], "clocks_ms": [1000, 1000], "sent_at": now,
            "event_at": now, "board": board.replace(">", f">{ply}", 1), "last": []}))  # a new board each move, whole
        time.sleep(0.005)
    pub.close(0)
    ctx.term()


def test_a_browser_that_stops_reading_is_dropped_and_one_that_leaves_is_forgotten(tmp_path):
    """A spectator who stops reading holds up no one: its backlog grows to QUEUE messages, then
    its stream is ended (its browser would reconnect for a snapshot) while another keeps getting
    every tick; a spectator who closes the page is taken off the server's list."""
    endpoint = f"ipc://{tmp_path}/feed"
    server = WebServer(MemorySource("slow"), endpoint, port=0, tick=0.005)
    server.start()
    hub = server.app.state.hub
    stop = threading.Event()
    publisher = threading.Thread(target=_publish_views, args=(endpoint, stop, "<svg>" + "x" * 60_000 + "</svg>"))
    stalled = socket.socket()
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.connect((server.host, server.port))
    stalled.sendall(b"GET /events HTTP/1.1\r\nHost: test\r\n\r\n")  # and never reads
    reader = SSE(server.host, server.port)
    try:
        reader.wait(lambda e: e[0] == "snapshot")
        deadline = time.monotonic() + 10
        while len(hub.viewers) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(hub.viewers) == 2
        # each stream written to in place by the hub once its snapshot is sent (uvicorn with httptools)
        while not all(v.transport is not None for v in hub.viewers) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert all(v.transport is not None for v in hub.viewers)
        publisher.start()
        deadline = time.monotonic() + 30
        while len(hub.viewers) > 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(hub.viewers) == 1, "the stalled browser was not dropped"
        seen = sum(1 for e in reader.events if e[0] == "live")
        reader.wait(lambda e: e[0] == "live" and sum(1 for x in reader.events if x[0] == "live") > seen + 20)
        reader.close()
        deadline = time.monotonic() + 10
        while hub.viewers and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not hub.viewers, "a browser that left is still on the list"
    finally:
        stop.set()
        if publisher.is_alive():
            publisher.join(5)
        stalled.close()
        reader.close()
        server.stop()


def test_a_stalled_browser_leaves_no_connection_and_no_backlog_behind(tmp_path, monkeypatch):
    """A stranger who opens event streams and never reads them: once dropped, each held its
    connection and its backlog (up to QUEUE messages) for ever, its stream stuck in a write that
    never ended (memory and file descriptors without bound, one stream every ~13 s). Now the
    backlog goes when it is dropped, and a connection that takes nothing for STALLED_SECONDS is
    cut."""
    from arbiter.web import app as web_app

    monkeypatch.setattr(web_app, "STALLED_SECONDS", 1.0)
    endpoint = f"ipc://{tmp_path}/feed"
    server = WebServer(MemorySource("stalled"), endpoint, port=0, tick=0.005)
    server.start()
    hub = server.app.state.hub
    dropped: list = []
    monkeypatch.setattr(web_app.Viewer, "end", lambda self, end=web_app.Viewer.end: (dropped.append(self), end(self)))
    stop = threading.Event()
    publisher = threading.Thread(target=_publish_views, args=(endpoint, stop, "<svg>" + "x" * 60_000 + "</svg>"))
    stalled = []
    for _ in range(3):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect((server.host, server.port))
        s.sendall(b"GET /events HTTP/1.1\r\nHost: test\r\n\r\n")  # and never reads
        stalled.append(s)
    try:
        deadline = time.monotonic() + 10
        while len(hub.viewers) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        publisher.start()
        deadline = time.monotonic() + 30
        while (hub.viewers or server.server.server_state.connections) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not hub.viewers, "the stalled browsers were not dropped"
        assert len(dropped) >= 3 and not any(v.pending for v in dropped), "a dropped browser kept its backlog"
        assert not server.server.server_state.connections, "a stalled browser's connection is still open"
        conn = http.client.HTTPConnection(server.host, server.port, timeout=10)  # the view still serves
        conn.request("GET", "/api/state")
        assert conn.getresponse().status == 200
        conn.close()
    finally:
        stop.set()
        if publisher.is_alive():
            publisher.join(5)
        for s in stalled:
            s.close()
        server.stop()


def test_the_event_stream_answers_only_get(tmp_path):
    server = WebServer(MemorySource("methods"), f"ipc://{tmp_path}/feed", port=0)
    server.start()
    try:
        conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
        conn.request("POST", "/events", body=b"x")
        resp = conn.getresponse()
        assert resp.status == 405 and resp.getheader("allow") == "GET, HEAD"
        conn.close()
        conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
        conn.request("HEAD", "/events")
        resp = conn.getresponse()
        assert resp.status == 200 and resp.getheader("content-type").startswith("text/event-stream")
        conn.close()
    finally:
        server.stop()


@pytest.mark.serial
def test_spectators_on_a_finished_game_cost_the_engines_nothing(tmp_path, monkeypatch):
    """``arbiter match --web`` at 50 ms a move while eight spectators keep asking for a finished
    A&A game (its page replays the whole game: seconds of Python each) and 200 idle connections
    sit on the port. Every game ends normally and no decision waits on the referee's side: the
    server's work never delays the referee's reading of a reply; requests still running when the match ends are cut without a word. (With the server a thread of the referee's process, four games of six
    ended in time forfeits of honest engines: "took 170 ms; allowed 50 ms + 50 ms margin".)"""
    import sqlite3

    monkeypatch.delenv("ARBITER_WEB_NICE", raising=False)  # the server at its default niceness, as an operator runs it
    port = free_port()
    db = tmp_path / "r.sqlite"
    engine = "{python} -m sample_engines.aachess_random"
    match = subprocess.Popen([PY, "-m", "arbiter.cli", "match", "--game", "aachess", "--engine", engine, "--engine",
                              engine, "--tc", "st=0.25", "--format", "games=4", "--db", str(db), "--quiet",
                              "--web", str(port)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
    asked, stop, idle = [0], threading.Event(), []

    def spectator() -> None:
        game_id = None
        while not stop.is_set():
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                if game_id is None:
                    conn.request("GET", "/api/state")
                    finished = json.loads(conn.getresponse().read())["summary"]["finished"]
                    game_id = finished[0]["game_id"] if finished else None
                    time.sleep(0 if game_id else 0.05)
                else:
                    asked[0] += 1
                    conn.request("GET", f"/api/game/{game_id}")
                    conn.getresponse().read()
                conn.close()
            except (OSError, ValueError):
                time.sleep(0.02)
    spectators = [threading.Thread(target=spectator, daemon=True) for _ in range(8)]
    try:
        deadline = time.monotonic() + 30
        while not idle and time.monotonic() < deadline:
            try:
                idle.append(socket.create_connection(("127.0.0.1", port)))
            except OSError:
                time.sleep(0.05)
        idle += [socket.create_connection(("127.0.0.1", port)) for _ in range(199)]
        for s in spectators:
            s.start()
        out, _ = match.communicate(timeout=600)
    finally:
        stop.set()
        for s in idle:
            s.close()
        if match.poll() is None:
            match.kill()
    assert match.returncode == 0, out[-2000:]
    assert asked[0] >= 8, f"the spectators asked for the finished game {asked[0]} times during the match"
    assert "Traceback" not in out, out[-3000:]  # nor a spectator's unfinished request at the end
    conn = sqlite3.connect(db)
    records = [json.loads(x) for (x,) in conn.execute("SELECT record FROM games")]
    conn.close()
    assert [r["reason"] for r in records] == ["normal"] * 4, [(r["reason"], r["detail"]) for r in records]
    # what the referee's side adds to each decision (measured - the engine's own time): a server
    # in the referee's process showed here (decisions of 170 ms); the engines' own starvation on a
    # loaded 2-core machine does not (the time per move leaves room for it: st=0.05 flaked in CI)
    latencies = [e["measured_ms"] - e["reported_ms"] for r in records for e in r["events"]
                 if e["seat"] >= 0 and e.get("measured_ms") is not None and e.get("reported_ms") is not None]
    # (a few decisions of a loaded CI machine may exceed it: one of 112 ms failed a CI run while other
    # work ran beside the suite; the defect showed in every game)
    slow = [x for x in latencies if x >= 60]
    assert latencies and len(slow) <= max(2, len(latencies) // 100), (len(latencies), sorted(latencies)[-10:])


WEB_EVENT = """
name = "web-child"
game = "einstein"
format = "round_robin"
match = "games=100000"
time_control = "inf"
output = "{db}"
concurrency = 1
[[engines]]
name = "a"
command = "{{python}} -m sample_engines.random_engine"
[[engines]]
name = "b"
command = "{{python}} -m sample_engines.random_engine"
"""


@pytest.mark.parametrize("command", ["match", "tournament"])
def test_the_web_view_process_goes_when_its_parent_is_killed(tmp_path, command):
    """The web view of ``arbiter match --web`` and of ``arbiter-tournament run --web`` is a child
    process (no process that plays or schedules games has a server thread): it serves the page; its parent
    killed (kill -9, no cleanup of its own), it notices its closed stdin and exits, and the
    match's view removes its folder."""
    import psutil

    port = free_port()
    if command == "match":
        engine = "{python} -m sample_engines.random_engine"
        argv = [PY, "-m", "arbiter.cli", "match", "--game", "einstein", "--engine", engine, "--engine", engine,
                "--tc", "inf", "--format", "games=1000000", "--db", str(tmp_path / "r.sqlite"), "--quiet"]
    else:
        (tmp_path / "event.toml").write_text(WEB_EVENT.format(db=tmp_path / "event.sqlite"))
        argv = [PY, "-m", "tournaments.cli", "run", str(tmp_path / "event.toml"), "-q", "--no-report"]
    parent = subprocess.Popen(argv + ["--web", str(port)], cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    servers = []
    try:
        deadline, status = time.monotonic() + 60, None
        while status != 200 and time.monotonic() < deadline:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/api/state")
                status = conn.getresponse().status
                conn.close()
            except OSError:
                time.sleep(0.05)
        assert status == 200
        servers = [p for p in psutil.Process(parent.pid).children()
                   if "web" in " ".join(p.cmdline()) and "--fd" in p.cmdline()]
        assert len(servers) == 1, [p.cmdline() for p in psutil.Process(parent.pid).children()]
        # The process that plays or schedules games did not import the server's modules (asyncio,
        # numpy: a tournament's workers forked from a director that had played 6-10 % slower: bench/web.md)
        def players() -> list[int]:
            return [parent.pid] + [p.pid for p in psutil.Process(parent.pid).children()
                                   if p.cmdline() == argv + ["--web", str(port)]]  # forked workers

        while command == "tournament" and len(players()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert command == "match" or len(players()) == 2, "no worker found"
        for pid in players():
            maps = Path(f"/proc/{pid}/maps").read_text()  # their C parts, mapped once imported
            assert "numpy" not in maps and "_asyncio" not in maps, f"the server's modules in process {pid}"
        feed = servers[0].cmdline()[servers[0].cmdline().index("--feed") + 1] if command == "match" else None
        if feed:
            assert Path(feed.removeprefix("ipc://")).parent.is_dir()
    finally:
        parent.kill()
        parent.wait()
    gone, alive = psutil.wait_procs(servers, timeout=10)
    for p in alive:
        p.kill()
    assert not alive, "the web view outlived its parent"
    if feed:
        assert not Path(feed.removeprefix("ipc://")).parent.exists(), "the web view's folder was left behind"


def test_a_web_view_that_cannot_start_is_one_clear_error(tmp_path, monkeypatch):
    """The child that would serve the page exits at once (say, a broken install): LiveView says
    so with its exit status and leaves no folder behind."""
    from arbiter.web import live, process

    real = subprocess.Popen
    monkeypatch.setattr(process.subprocess, "Popen",
                        lambda argv, **kw: real([PY, "-c", "import sys; sys.exit(3)"], **kw))
    monkeypatch.setattr(live.tempfile, "tempdir", str(tmp_path))
    with pytest.raises(OSError, match="exited at its start \\(exit status 3"):
        live.LiveView("broken", 0)
    assert not list(tmp_path.iterdir())


def test_referees_playing_at_once_in_threads_each_publish_their_own_game(tmp_path):
    """The worker of an event with remote participants plays several games at once, a referee per
    thread, through its one feed. The feed kept a single newest view for all of them: a referee
    drew whichever game had moved last (another thread's, its state changing under the drawing),
    the views of the others were lost, and the threads sent on one ZeroMQ socket at once (which
    ZeroMQ does not allow). Here every game's first drawn view must reach the viewer."""
    import os
    import random

    import msgspec
    import zmq

    from arbiter.dice import Dice
    from arbiter.hosting.session import InProcessPlayer, InProcessSession
    from arbiter.referee import Referee

    endpoint = f"ipc://{tmp_path}/feed"
    viewer = zmq.Context.instance().socket(zmq.SUB)  # what the web view binds (arbiter.web.app)
    viewer.setsockopt(zmq.SUBSCRIBE, b"")
    viewer.setsockopt(zmq.RCVHWM, 100_000)
    viewer.setsockopt(zmq.LINGER, 0)
    viewer.bind(endpoint)
    feed = Feed(endpoint, interval=0)  # a view at every idle moment of each referee
    lanes = 8
    lined_up = threading.Barrier(lanes)
    first_view: dict[int, int] = {}  # game number -> the ply of the first view its referee draws
    records: dict[int, object] = {}
    errors: list[str] = []

    def lane(number: int) -> None:
        rng = random.Random(number)
        sessions = [InProcessSession(InProcessPlayer(decide=lambda request, game: rng.choice(request.legal_moves),
                                                     wants_legal_moves=True, wants_state=False)) for _ in range(2)]
        for session in sessions:
            session.handshake()

        def hook(record, state, event, clocks):
            work = feed.hook(record, state, event, clocks)
            if event.kind == "chance" and number not in first_view:  # next: a request, then the drawing
                first_view[number] = len(record.events)
                lined_up.wait(10)  # every game has moved before any referee draws
            return work

        try:
            record = Referee(load_game("einstein"), sessions, parse_time_control("60"),
                             Dice(os.urandom(32), f"lanes|{number}"), match_id="lanes", game_number=number,
                             on_event=hook).play()
            feed.finished(record)
            records[number] = record
        except Exception as exc:
            errors.append(f"game {number}: {type(exc).__name__}: {exc}")

    try:
        while not viewer.poll(50):  # the feed is connected once a message gets through
            feed._send({"type": "probe"})
        threads = [threading.Thread(target=lane, args=(n,)) for n in range(1, lanes + 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors, errors
        assert len(records) == lanes
        feed.flush()  # the games' ends not sent yet with a next game's first view go now
        got = []
        while viewer.poll(500):
            got.append(msgspec.msgpack.decode(viewer.recv()))
    finally:
        feed.close()
        viewer.close(0)
    plies = {n: {m["ply"] for m in got if m["type"] == "live" and m["game_id"] == r.game_id} for n, r in records.items()}
    lost = sorted(n for n in records if first_view[n] not in plies[n])
    assert not lost, f"games {lost} of {lanes}: their first view was not published"
    assert all(any(m["type"] == "end" and m["game_id"] == r.game_id for m in got) for r in records.values())


def test_an_engine_whose_name_has_a_slash_has_its_page(tmp_path):
    """The page links ``#/engine/team%2Fa`` and asks for ``/api/engine/team%2Fa``; the route took
    one path segment, so an engine named ``team/a`` had no page (404)."""
    from arbiter.records.store import load_records

    db = random_match(tmp_path / "m.sqlite", "team/a", "b", games=2)
    source = MemorySource("m", db=str(db))
    for r in load_records(db):
        source.announced(r)
    server = WebServer(source, None, port=0)
    server.start()
    try:
        status, page = get_json(server, "/api/engine/team%2Fa")
        assert status == 200 and page["engine"] == "team/a" and page["games"] == 2
        assert get_json(server, "/api/engine/b")[1]["games"] == 2
    finally:
        server.stop()


def test_a_game_forfeited_by_several_seats_names_every_forfeiting_seat(tmp_path):
    """A team event's pair whose engines both cannot start: the record's ``forfeit_seats`` is
    [0, 1], but the game's row (its page, the finished games, the end event) carried only
    ``forfeit_seat`` (0), and the page said "forfeit by" the first engine alone."""
    from tournaments.web import TournamentSource

    db = tmp_path / "teams.sqlite"
    (tmp_path / "teams.toml").write_text(f"""
name = "teams"
game = "catalonia"
format = "round_robin"
games = 2
time_control = "10"
seed = "s"
output = "{db}"
on_start_failure = "forfeit"
[[engines]]
name = "x"
command = "/bin/false"
[[engines]]
name = "y"
command = "/bin/false"
""")
    run = cli("run", str(tmp_path / "teams.toml"), "-q", "--no-report")
    assert run.returncode == 0, run.stdout + run.stderr
    server = WebServer(TournamentSource(db), None, port=0)
    server.start()
    try:
        finished = get_json(server, "/api/state")[1]["summary"]["finished"]
        assert len(finished) == 2 and all(r["forfeit_seats"] == [0, 1] for r in finished), finished
        status, page = get_json(server, f"/api/game/{finished[0]['game_id']}")
        assert status == 200 and page["row"]["forfeit_seats"] == [0, 1]
    finally:
        server.stop()


def test_an_engine_page_of_a_cooperative_or_solo_run_gives_scores_not_draws(tmp_path):
    """An engine's page listed each Catalonia game as a draw ("D": the pair's seats share one
    score) and a solo engine's games as points with draws; a cooperative game's result is now the
    shared score, and a solo engine's page says so (``solo``: wins and the mean score, no draws)."""
    from arbiter.records.store import game_lines
    from arbiter.web.app import engine_page

    def lines(command: str, game: str, engine: str, db: Path) -> list:
        done = subprocess.run([PY, "-m", "arbiter.cli", command, "--game", game, "--engine", f"{PY} -m {engine}",
                               "--games" if command == "coop" else "--seeds", "2", "--tc", "10", "--quiet",
                               "--db", str(db)], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        return list(game_lines(db))

    coop = lines("coop", "catalonia", "sample_engines.random_engine", tmp_path / "c.sqlite")
    page = engine_page(coop, coop[0].players[0])
    assert page["cooperative"] and not page["solo"]
    assert [row["result"] for row in page["results"]] == [line.returns[0] for line in coop]
    solo = lines("solo", "stalingrad", "sample_engines.stalingrad_random", tmp_path / "s.sqlite")
    page = engine_page(solo, solo[0].players[0])
    assert page["solo"] and not page["cooperative"] and page["D"] == 0
    assert [row["result"] for row in page["results"]] == ["W" if line.returns[0] > 0 else "L" for line in solo]


def test_a_game_this_installation_does_not_know_and_a_server_error_are_answered_in_json(tmp_path):
    """A finished record of a game this installation does not know (a database from a newer
    arbiter, an import) made its page a 500 whose plain-text body the page could not read (a
    SyntaxError in the console, the view left as it was). Its page now shows the record without
    boards; any other failure is a JSON error naming no internals, which the page shows."""
    import msgspec

    from arbiter.records.store import load_records

    db = random_match(tmp_path / "m.sqlite", "a", "b", games=1)
    record = msgspec.structs.replace(load_records(db)[0], game="nosuchgame")

    class Failing(MemorySource):
        def engine(self, name):
            raise RuntimeError("secret internals /etc/shadow")

    source = Failing("m")
    source.announced(record)
    server = WebServer(source, None, port=0)
    server.start()
    try:
        status, page = get_json(server, f"/api/game/{record.game_id}")
        assert status == 200 and page["steps"] == 0 and len(page["record"]["events"]) == len(record.events)
        status, body = get_json(server, f"/api/game/{record.game_id}/board/0")
        assert status == 404 and "error" in body
        status, body = get_json(server, "/api/engine/a")
        assert status == 500 and isinstance(body, dict) and body["error"] and "secret" not in json.dumps(body)
    finally:
        server.stop()


def test_the_feed_socket_is_private_whatever_the_umask(tmp_path):
    """Whoever can connect to the feed socket writes the running games spectators see (and a
    match's finished games); it was made with the process's umask, so under a permissive one
    (0o000) any local user could. The socket is now the user's alone (no group or other bits), for
    a tournament's view and for a match's (``--web``: in a private folder, 0700)."""
    import os
    import stat

    from arbiter.web.live import LiveView

    old = os.umask(0)
    try:
        server = WebServer(MemorySource("private"), f"ipc://{tmp_path}/feed", port=0)
        server.start()
        try:
            mode = stat.S_IMODE(os.stat(tmp_path / "feed").st_mode)
            assert mode & 0o077 == 0, oct(mode)
        finally:
            server.stop()
        view = LiveView("private", port=0)
        try:
            folder = Path(view.folder)
            assert stat.S_IMODE(folder.stat().st_mode) == 0o700
            mode = stat.S_IMODE((folder / "feed").stat().st_mode)
            assert mode & 0o077 == 0, oct(mode)
        finally:
            view.close()
    finally:
        os.umask(old)


def test_a_long_game_page_draws_only_the_boards_asked_for(tmp_path, monkeypatch):
    """A finished game's page drew the board of every step of the game at its first request (an
    A&A Chess game of ~400 moves: ~400 SVGs, 0.5 s of CPU and ~17 MB held per game; a long one
    seconds), and replayed the whole game again to verify it at every spectator's request. The
    page now replays the game once, keeping a copy of the position every few steps, draws a board
    when it is asked for (the same boards, a handful drawn), and keeps the game's page."""
    from arbiter.games.aachess.rules import AAChessState
    from arbiter.records.replay import replay
    from arbiter.web import app

    game = load_game("aachess")
    series = Series(game, [EngineConfig([PY, "-m", "sample_engines.aachess_random", "--seed", str(i)],
                                        name=f"r{i}", cwd=str(ROOT)) for i in (1, 2)],
                    parse_time_control("600"), run_dir=tmp_path / "logs", seed=b"a-long-game")
    try:
        record = series.play_game(1, [0, 1])
    finally:
        series.close()
    truth = [load_game("aachess").new_initial_state().render_svg(reveal=True)]
    for step, state in replay(record):
        truth += [state.render_svg(reveal=True)] * len(step)
    assert len(truth) > 100
    drawn = []
    render = AAChessState.render_svg
    monkeypatch.setattr(AAChessState, "render_svg", lambda self, reveal=False: drawn.append(1) or render(self, reveal))
    replayed = []
    real_verify = app.verify
    monkeypatch.setattr(app, "verify", lambda record: replayed.append(record.game_id) or real_verify(record))
    source = MemorySource("long")
    source.announced(record)
    server = WebServer(source, None, port=0)
    server.start()
    try:
        status, page = get_json(server, f"/api/game/{record.game_id}")
        assert status == 200 and page["steps"] == len(truth) and page["verified"]
        last = len(truth) - 1
        status, board = get_json(server, f"/api/game/{record.game_id}/board/{last}")
        assert status == 200 and board.decode() == truth[last]
        assert len(drawn) <= 2, f"{len(drawn)} boards drawn for the page and its last board"
        for step in [0, 1, 2, last - 1, last - 2, *range(3, last, 7)]:  # forwards, backwards, jumps
            status, board = get_json(server, f"/api/game/{record.game_id}/board/{step}")
            assert status == 200 and board.decode() == truth[step], f"step {step}"
        status, _ = get_json(server, f"/api/game/{record.game_id}/board/{last + 1}")
        assert status == 404
        drawn.clear()
        replayed.clear()
        for _ in range(3):  # more spectators: the game is not replayed for each
            assert get_json(server, f"/api/game/{record.game_id}") == (200, page)
        assert not replayed, replayed
    finally:
        server.stop()


def test_a_games_end_goes_with_the_next_view_drawn_or_at_the_close(tmp_path, feed_viewer):
    """Sent at the game's end, the viewer's handling of the whole record ran beside the next
    game's start (its ``new_game`` round trips took ~300 us longer, bench/web.md): the end is sent
    with the next view the referee draws while the next game's engines think, before that view,
    and the last game's when the feed closes."""
    feed = Feed(feed_viewer.endpoint, interval=0)
    engines = [EngineConfig([PY, "-m", "sample_engines.random_engine", "--seed", str(i)], name=f"r{i}", cwd=str(ROOT))
               for i in (1, 2)]
    series = Series(load_game("einstein"), engines, parse_time_control("60"), run_dir=tmp_path / "logs",
                    seed=b"ends", on_event=feed.hook)

    def kinds() -> list[tuple[str, str]]:
        return [(m["type"], m["game_id"]) for m in list(feed_viewer.messages)]

    try:
        first = series.play_game(1, [0, 1])
        feed.finished(first)
        assert feed_viewer.wait_for("live", first.game_id, 5), "the viewer missed the first game's views"
        time.sleep(0.3)
        assert ("end", first.game_id) not in kinds(), "the end went before the next view"
        second = series.play_game(2, [1, 0])
        feed.finished(second)
        assert feed_viewer.wait_for("live", second.game_id, 5) and feed_viewer.wait_for("end", first.game_id, 5)
        got = kinds()
        assert ("end", second.game_id) not in got
        assert got.index(("end", first.game_id)) < got.index(("live", second.game_id))
        end = next(m for m in feed_viewer.messages if m["type"] == "end")
        assert end["record"]["dice_seed"] == first.dice_seed and end["record"]["events"]
        feed.close()
        assert feed_viewer.wait_for("end", second.game_id, 5), "the last game's end did not go at the close"
        assert [k for k in kinds() if k[0] == "end"] == [("end", first.game_id), ("end", second.game_id)]
    finally:
        series.close()
        feed.close()
