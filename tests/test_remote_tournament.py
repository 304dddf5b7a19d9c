"""Olympiad server mode: a tournament in which some engines are remote participants, connecting
over tcp with CURVE to the one port the tournament listens on, each playing all its games over
its one connection; a participant who never comes forfeits its games ``absent`` and the event
goes on. Bad remote configuration is one line naming the file and line (exit 2)."""
from __future__ import annotations

import json
import re
import sqlite3
import subprocess
from pathlib import Path

import pytest

from test_remote import ROOT, PY, free_port, keys  # noqa: F401  (fixture)


def cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    done = subprocess.run([PY, "-m", "tournaments", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)
    done.stdout = " ".join(done.stdout.split())  # the console wraps long lines at spaces
    return done


def event(tmp_path: Path, folder: Path, roster: Path, port: int, remote_engines: dict[str, str], *,
          wait: float = 60, extra: str = "") -> Path:
    engines = "".join(f'[[engines]]\nname = "{name}"\nremote = "{who}"\n\n' for name, who in remote_engines.items())
    path = tmp_path / "event.toml"
    path.write_text(f'''name = "remote-event"
game = "einstein"
format = "round_robin"
match = "games=2"
time_control = "20"
seed = "remote"
output = "{tmp_path / 'event.sqlite'}"
{extra}
[remote]
roster = "{roster}"
server_key = "{folder / 'referee.key'}"
listen = "tcp://127.0.0.1:{port}"
wait = {wait}
grace = 5

[[engines]]
name = "local-random"
command = "{{python}} -m sample_engines.random_engine"

{engines}''')
    return path


def participant(port: int, folder: Path, who: str) -> subprocess.Popen:
    return subprocess.Popen([PY, "-m", "sample_engines.random_engine", "--connect", f"tcp://127.0.0.1:{port}",
                             "--server-key", str(folder / "referee.pub"), "--key", str(folder / f"{who}.key"),
                             "--name", who], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def records(db: Path) -> list[dict]:
    with sqlite3.connect(db) as con:
        return [json.loads(r[0]) for r in con.execute("SELECT record FROM games ORDER BY match_id, game_number")]


def test_remote_participants_play_a_round_robin_and_an_absent_one_forfeits(tmp_path, keys):
    folder, roster = keys
    port = free_port()
    path = event(tmp_path, folder, roster, port, {"alice-random": "alice", "bob-random": "bob"}, wait=8)
    alice = participant(port, folder, "alice")
    try:
        done = cli("run", str(path), "--quiet")
        assert done.returncode == 0, done.stdout + done.stderr
        games = records(tmp_path / "event.sqlite")
        assert len(games) == 6  # three pairings of two games
        by_pair = {}
        for g in games:
            by_pair.setdefault(frozenset(g["players"]), []).append(g["reason"])
        assert by_pair[frozenset({"local-random", "alice-random"})] == ["normal", "normal"]
        assert set(by_pair[frozenset({"local-random", "bob-random"})]) == {"absent"}
        assert set(by_pair[frozenset({"alice-random", "bob-random"})]) == {"absent"}
        absent = [g for g in games if g["reason"] == "absent"]
        assert all(g["players"][g["forfeit_seat"]] == "bob-random" for g in absent)
        assert alice.wait(15) == 0  # one connection for all its games, told to quit at the end
    finally:
        if alice.poll() is None:
            alice.kill()
        alice.wait(5)


@pytest.mark.parametrize("change, problem", [
    (lambda t: t.replace('remote = "bob"', 'remote = "carol"'), "engines[2].remote: 'carol' is not in the roster"),
    (lambda t: t.replace('server_key = ', 'serverkey = '), "remote.serverkey: unknown key"),
    (lambda t: t.replace('remote = "bob"', 'remote = "bob"\ncommand = "x"'), "give command or remote, not both"),
    (lambda t: re.sub(r'listen = "tcp://127.0.0.1:\d+"', 'listen = "tcp://127.0.0.1:99999"', t),
     "remote.listen: the port is a number 0..65535, not '99999'"),
    (lambda t: t.replace("grace = 5", "grace = nan"), "remote.grace: expected a finite number, got nan"),
])
def test_bad_remote_configuration_is_one_line_naming_file_and_line(tmp_path, keys, change, problem):
    folder, roster = keys
    path = event(tmp_path, folder, roster, free_port(), {"alice-random": "alice", "bob-random": "bob"})
    path.write_text(change(path.read_text()))
    done = cli("check", str(path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert problem in done.stdout + done.stderr and f"{path}:" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def test_a_malformed_roster_or_an_open_key_file_is_refused(tmp_path, keys):
    folder, roster = keys
    path = event(tmp_path, folder, roster, free_port(), {"alice-random": "alice"})
    roster.write_text(roster.read_text().replace('public = "', 'public = "x', 1))
    done = cli("check", str(path))
    assert done.returncode == 2 and f"{roster}:1: participant 'alice': public must be" in done.stdout + done.stderr
    roster.write_text(roster.read_text().replace('public = "x', 'public = "', 1))
    (folder / "referee.key").chmod(0o644)
    done = cli("check", str(path))
    assert done.returncode == 2 and "chmod 600" in done.stdout + done.stderr, done.stdout + done.stderr


def test_the_director_killed_and_resumed_finishes_with_its_participants_still_connected(tmp_path, keys):
    """kill -9 of the tournament mid-event: the port closes with it; the participant's engine
    keeps redialling, says hello again when ``resume`` listens anew, and plays the rest."""
    import os
    import signal
    import time

    from test_remote import STEADY

    folder, roster = keys
    port = free_port()
    path = event(tmp_path, folder, roster, port, {"alice-steady": "alice"}, extra='time_control = "st=0.1"\n')
    path.write_text(path.read_text().replace('time_control = "20"\n', "").replace('match = "games=2"',
                                                                                  'match = "games=6"'))
    alice = subprocess.Popen([PY, str(STEADY), "--connect", f"tcp://127.0.0.1:{port}", "--server-key",
                              str(folder / "referee.pub"), "--key", str(folder / "alice.key"), "--reserve", "60"],
                             cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        first = subprocess.Popen([PY, "-m", "tournaments", "run", str(path), "--quiet", "--no-report"], cwd=ROOT,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(records(tmp_path / "event.sqlite") if (tmp_path / "event.sqlite").exists() else []) < 2:
            time.sleep(0.2)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
        before = len(records(tmp_path / "event.sqlite"))
        assert 2 <= before < 6, before
        time.sleep(1.0)
        assert alice.poll() is None  # still there, redialling
        done = cli("resume", str(path), "--quiet", "--no-report")
        assert done.returncode == 0, done.stdout + done.stderr
        games = records(tmp_path / "event.sqlite")
        assert len(games) == 6 and all(g["reason"] == "normal" for g in games), [g["detail"] for g in games]
        assert alice.wait(15) == 0  # the same process played the whole event, told to quit at the end
    finally:
        if alice.poll() is None:
            alice.kill()
        alice.wait(5)


def test_pin_is_refused_for_an_event_with_remote_engines(tmp_path, keys):
    folder, roster = keys
    path = event(tmp_path, folder, roster, free_port(), {"alice-random": "alice"}, extra="pin = true")
    done = cli("run", str(path), "--quiet")
    out = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 2 and "event.toml:8: pin: remote engines run elsewhere" in out, out
    assert not (tmp_path / "event.sqlite").exists()


def test_duplicate_dice_with_a_remote_engine_are_warned_of(tmp_path, keys):
    """A remote engine is never restarted: it can remember the first game of a pair, whose rolls
    are the second's (a red team's remote engine predicted every die of each second game)."""
    from tournaments.config import load_config

    folder, roster = keys
    path = event(tmp_path, folder, roster, free_port(), {"alice-random": "alice"}, extra="duplicate_dice = true")
    notices = " ".join(" ".join(load_config(path).notices).split())
    assert "event.toml:8: duplicate_dice: games in pairs share their dice, and the remote engine(s) alice-random " \
           "can remember the first game's" in notices, notices
    path = event(tmp_path, folder, roster, free_port(), {"alice-random": "alice"})
    assert load_config(path).notices == []
