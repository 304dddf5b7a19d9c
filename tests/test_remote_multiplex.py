"""Several games at once per remote participant: an engine that says ``max_games = N`` in its
hello gets up to N games at once over its one connection (each message carries its game id);
an engine that says nothing gets one at a time, as before. Real tournament, real hub, real kit
engines over CURVE on 127.0.0.1."""
from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

from test_remote import PY, ROOT, free_port, keys  # noqa: F401  (fixture)

PACED = str(ROOT / "tests" / "engines" / "paced.py")


def overlap(intervals: list[tuple[float, float]]) -> int:
    """The most intervals in progress at one instant."""
    edges = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def participant(port: int, folder: Path, who: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([PY, PACED, "--connect", f"tcp://127.0.0.1:{port}", "--server-key",
                             str(folder / "referee.pub"), "--key", str(folder / f"{who}.key"), "--name", who,
                             "--think", "15", *extra], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def test_a_participant_accepting_three_games_plays_them_at_once_on_one_connection(tmp_path, keys):
    folder, roster = keys
    port = free_port()
    event = tmp_path / "event.toml"
    event.write_text(f'''name = "multi"
game = "einstein"
format = "round_robin"
match = "games=4"
time_control = "20"
seed = "multi"
concurrency = 4
output = "{tmp_path / 'event.sqlite'}"

[remote]
roster = "{roster}"
server_key = "{folder / 'referee.key'}"
listen = "tcp://127.0.0.1:{port}"
wait = 30
grace = 5

[[engines]]
name = "local"
command = "{{python}} -m sample_engines.random_engine"

[[engines]]
name = "alice"
remote = "alice"

[[engines]]
name = "bob"
remote = "bob"
''')
    alice = participant(port, folder, "alice", "--max-games", "3")
    bob = participant(port, folder, "bob")  # says nothing: one game at a time
    try:
        done = subprocess.run([PY, "-m", "tournaments", "run", str(event), "--quiet"], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "reconnected" not in done.stderr  # each connected once and played everything on it
        with sqlite3.connect(tmp_path / "event.sqlite") as con:
            games = [json.loads(r[0]) for r in con.execute("SELECT record FROM games")]
        assert len(games) == 12 and {g["reason"] for g in games} == {"normal"}, [(g["reason"], g["detail"], g["players"]) for g in games if g["reason"] != "normal"]
        spans = {who: [(g["started_at"], g["ended_at"]) for g in games if who in g["players"]]
                 for who in ("alice", "bob")}
        assert 2 <= overlap(spans["alice"]) <= 3, spans["alice"]
        assert overlap(spans["bob"]) == 1, spans["bob"]
        for g in games:  # each game's clocks are its own: a seat's clock is the base minus its charges in it
            for seat, who in enumerate(g["players"]):
                charged, decisions = 0.0, 0
                for e in g["events"]:
                    if e["seat"] != seat:
                        continue
                    charged += e["measured_ms"] - e.get("compensated_ms", 0)  # lag not charged
                    decisions += 1
                    assert abs(e["clock_ms"] - (20000 - charged)) <= decisions + 1, (who, e, charged)
                if who != "local":
                    assert all(e.get("lag_ms") is not None for e in g["events"] if e["seat"] == seat)
        assert alice.wait(15) == 0 and bob.wait(15) == 0  # told to quit at the end
    finally:
        for p in (alice, bob):
            if p.poll() is None:
                p.kill()
            p.wait(5)


def test_two_games_in_play_survive_a_restart_of_the_participant(tmp_path, keys):
    """alice plays two games at once on one connection (two series in two threads, as the
    tournament worker does); her engine is killed with -9 mid-game and restarted with the same
    key: both games are resent (new_game, pending request with every move) and end normally."""
    import threading
    import time

    from arbiter.clock import parse_time_control
    from arbiter.formats.match import Series
    from arbiter.games import load_game
    from arbiter.hosting import EngineConfig
    from test_remote import hub_for, remote, wait_until_thinking

    folder, roster = keys
    logs: list[str] = []
    hub = hub_for(folder, roster, grace=20, logs=logs)
    port = int(hub.endpoint.rsplit(":", 1)[1])
    first = participant(port, folder, "alice", "--max-games", "2", "--think", "150")
    second = None
    records: dict[int, object] = {}
    lanes = [Series(load_game("einstein"), [remote(hub, "alice"), EngineConfig(
        f"{PY} -m sample_engines.random_engine", name="local", cwd=str(ROOT))], parse_time_control("st=5"),
        run_dir=tmp_path / str(i), match_id=f"m{i}") for i in range(2)]

    def play(i: int) -> None:
        records[i] = lanes[i].play_game(1, [0, 1] if i == 0 else [1, 0])

    threads = [threading.Thread(target=play, args=(i,)) for i in range(2)]
    try:
        for t in threads:
            t.start()
        wait_until_thinking(lambda: lanes[0].engines[0], lambda: lanes[1].engines[0])
        assert hub.peers["alice"].playing == 0 and len(hub.peers["alice"].connections) == 2
        first.kill()
        first.wait(5)
        time.sleep(0.5)
        second = participant(port, folder, "alice", "--max-games", "2", "--think", "150")
        for t in threads:
            t.join(120)
        assert set(records) == {0, 1}
        for record in records.values():
            assert record.reason == "normal", record.detail
        assert sum("alice reconnected" in line for line in logs) == 1, logs
    finally:
        for series in lanes:
            series.close()
        for p in filter(None, (first, second)):
            if p.poll() is None:
                p.kill()
            p.wait(5)
        hub.close()
