"""The tournament director's toolkit, end to end with real engine subprocesses and SQLite:

* openings files: every position is played twice with the seats swapped on the same dice (an
  n-seat game: once per seat rotation), the record names the opening and replays from it, a
  resumed match or tournament plays exactly the openings it would have, a bad line is exit 2
  naming the file and line;
* ``arbiter match`` with 3-5 engines at an n-seat game: the seats rotate, a wrong count is exit 2;
* an engines file shared by events: tournaments and ``arbiter match`` take engines by name,
  errors name the file and line.
"""
from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from arbiter.games import load_game
from arbiter.openings import OpeningsError, parse_openings, play_order
from arbiter.records.replay import replay, verify
from arbiter.records.store import load_records
from tournaments import api
from tournaments.config import ConfigError, parse_config
from tournaments.director import Director, GameResult, ScheduleSpec

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
RANDOM = "{python} -m sample_engines.random_engine"

EINSTEIN = """\
# EinStein layouts (both sides set up), red to move, the die not yet rolled
R1R2R32/R4R53/R63B1/3B2B3/2B4B5B6 r - r play

R6R5R42/R3R23/R13B6/3B5B4/2B3B2B1 r - r play
R3R1R62/R5R23/R43B2/3B6B1/2B5B4B3 r - r play
"""

ENGINES = """\
# shared by every event of the season
[[engines]]
name = "rand-a"
command = "{python} -m sample_engines.random_engine"
args = { seed = 1 }

[[engines]]
name = "rand-b"
command = ["{python}", "-m", "sample_engines.random_engine"]
args = { seed = 2 }
limits = { memory_mb = 1024 }
"""


def arbiter(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "arbiter.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_openings_file_format_and_order():
    game = load_game("einstein")
    openings = parse_openings(EINSTEIN, game, "ein.txt")
    assert [o.index for o in openings] == [1, 2, 3]
    assert openings[1].position == "R6R5R42/R3R23/R13B6/3B5B4/2B3B2B1 r - r play"
    with pytest.raises(OpeningsError, match=r"^bad\.txt:4: not a position of einstein: .*5 fields"):
        parse_openings("# c\n\nR1R2R32/R4R53/R63B1/3B2B3/2B4B5B6 r - r play\nR1R2R32 r\n", game, "bad.txt")
    with pytest.raises(OpeningsError, match=r"^over\.txt:1: the game is already over"):
        parse_openings("1R2R32/R4R53/R63B1/3B2B3/2B4B5R1 b - r over\n", game, "over.txt")
    with pytest.raises(OpeningsError, match=r"^empty\.txt: no positions"):
        parse_openings("# only a comment\n\n", game, "empty.txt")
    smess = load_game("smess")
    with pytest.raises(OpeningsError, match=r"^s\.txt:1: .*side to move"):
        parse_openings("1ssbss1/nnnnnnn/7/7/7/7/NNNNNNN/1SSBSS1 w b 0 1\n", smess, "s.txt")
    assert play_order(openings, "sequential", "x") == openings
    shuffled = play_order(openings, "shuffled", "seed-1")
    assert shuffled == play_order(openings, "shuffled", "seed-1") and sorted(o.index for o in shuffled) == [1, 2, 3]
    assert any(play_order(openings, "shuffled", f"seed-{i}") != openings for i in range(10))


def _pairs(records) -> dict[str, list]:
    by_stream: dict[str, list] = {}
    for r in sorted(records, key=lambda r: r.game_number):
        by_stream.setdefault(r.dice_stream, []).append(r)
    return by_stream


def _check_pair(g1, g2) -> None:
    assert g1.players == g2.players[::-1]  # seats swapped
    assert g1.opening == g2.opening and g1.dice_seed == g2.dice_seed
    common = min(len(g1.rolls), len(g2.rolls))
    assert common >= 1 and g1.rolls[:common] == g2.rolls[:common]
    first_steps = [next(iter(replay(g)))[1] for g in (g1, g2)]  # the game really began at the opening
    start = load_game("einstein").from_text(g1.opening.position)
    start.apply_chance(start.chance_outcomes()[g1.rolls[0].value])
    assert first_steps[0].to_text() == first_steps[1].to_text() == start.to_text()


def test_match_openings_pairs_and_resume(tmp_path):
    (tmp_path / "ein.txt").write_text(EINSTEIN)
    db = tmp_path / "m.sqlite"
    args = ["match", "--game", "einstein", "--engine", RANDOM, "--engine", RANDOM + " --seed 3", "--tc", "10",
            "--format", "games=6", "--openings", str(tmp_path / "ein.txt"), "--openings-order", "shuffled",
            "--seed", "00ff", "--db", str(db), "--quiet"]
    done = arbiter(*args)
    assert done.returncode == 0, done.stdout + done.stderr
    records = load_records(db)
    assert len(records) == 6 and all(verify(r) == [] for r in records)
    pairs = _pairs(records)
    assert len(pairs) == 3 and sorted(g1.opening.index for g1, _ in pairs.values()) == [1, 2, 3]
    for g1, g2 in pairs.values():
        _check_pair(g1, g2)
    before = {r.game_number: (r.opening, r.players, r.rolls) for r in records}
    # Interrupted after game 3 (the middle of a pair): --resume plays the rest with the stored openings.
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("DELETE FROM games WHERE game_number > 3")
        conn.execute("UPDATE matches SET status = 'interrupted'")
    conn.close()
    resumed = arbiter("match", "--resume", "--seed", "00ff", "--db", str(db), "--quiet")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    after = {r.game_number: (r.opening, r.players, r.rolls) for r in load_records(db)}
    assert after == before  # same openings, seats and dice as before the interruption
    shown = arbiter("show", str(db))
    assert shown.returncode == 0 and f"from opening {records[-1].opening.index}: " in shown.stdout

    bad = tmp_path / "bad.txt"
    bad.write_text("# layouts\n\nR1R2R32/R4R53/R63B1/3B2B3/2B4B5B6 r - r play\nnot a position\n")
    run = arbiter("match", "--game", "einstein", "--engine", RANDOM, "--engine", RANDOM, "--openings", str(bad),
                  "--db", str(tmp_path / "x.sqlite"))
    assert run.returncode == 2 and f"{bad}:4: not a position of einstein" in run.stderr.replace("\n", "")
    assert not (tmp_path / "x.sqlite").exists()


def test_match_openings_without_a_seed_resume_on_the_same_dice(tmp_path):
    """A pair's two games share their dice; the master seed drawn for them (no --seed given) was
    not kept, so a match interrupted between a pair's games gave the second game other dice."""
    (tmp_path / "ein.txt").write_text(EINSTEIN)
    db = tmp_path / "m.sqlite"
    done = arbiter("match", "--game", "einstein", "--engine", RANDOM, "--engine", RANDOM + " --seed 3", "--tc", "10",
                   "--format", "games=4", "--openings", str(tmp_path / "ein.txt"), "--db", str(db), "--quiet")
    assert done.returncode == 0, done.stdout + done.stderr
    before = {r.game_number: (r.opening, r.players, r.dice_seed, r.rolls) for r in load_records(db)}
    conn = sqlite3.connect(db)
    with conn:  # interrupted after game 1: the middle of the first pair
        conn.execute("DELETE FROM games WHERE game_number > 1")
        conn.execute("UPDATE matches SET status = 'interrupted'")
    conn.close()
    refused = arbiter("match", "--resume", "--seed", "00ff", "--db", str(db), "--quiet")
    assert refused.returncode == 2 and "drawn by the referee and is stored with it" in refused.stderr, refused.stderr
    resumed = arbiter("match", "--resume", "--db", str(db), "--quiet")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    records = load_records(db)
    assert {r.game_number: (r.opening, r.players, r.dice_seed, r.rolls) for r in records} == before
    for g1, g2 in _pairs(records).values():
        _check_pair(g1, g2)


def _tournament(tmp_path, extra: str, engines: str = 'engines = ["rand-a", "rand-b"]') -> str:
    return f"""
name = "suite"
game = "einstein"
match = "games=4"
rounds = 2
seed = 5
concurrency = 2
time_control = "10"
output = "{tmp_path / 'suite.sqlite'}"
engines_file = "{tmp_path / 'engines.toml'}"
{extra}
{engines}
"""


def test_tournament_openings_from_engines_file_deterministic(tmp_path):
    (tmp_path / "ein.txt").write_text(EINSTEIN)
    (tmp_path / "engines.toml").write_text(ENGINES)
    text = _tournament(tmp_path, f'openings = "{tmp_path / "ein.txt"}"\nopenings_order = "shuffled"')
    cfg = parse_config(text, str(tmp_path / "suite.toml"))
    assert [e.name for e in cfg.engines] == ["rand-a", "rand-b"] and cfg.engines[1].limits.memory_mb == 1024
    opened = api.start(cfg)
    _, summary = api.play(opened)
    opened.db.close()
    assert summary.finished and summary.committed == 8
    records = load_records(cfg.output)
    assert all(verify(r) == [] for r in records)
    pairs = _pairs(records)
    assert len(pairs) == 4
    for g1, g2 in pairs.values():
        _check_pair(g1, g2)
    # Two cycles of two pairs each take the first four openings of the shuffled order (wrapping).
    order = [o.index for o in play_order(cfg.openings, "shuffled", "5")]
    by_cycle = sorted((r.match_id, r.game_number, r.opening.index) for r in records)
    assert [i for _, n, i in by_cycle if n in (1, 3)] == (order * 2)[:4]

    # Resume: the openings follow from the schedule alone; replanning after half the games
    # (as a resumed run does) asks for the other half with the openings they were played with.
    spec = ScheduleSpec.from_config(cfg, "5")
    half = {(r.match_id, r.game_number): GameResult(tuple([0, 1] if r.players[0] == "rand-a" else [1, 0]),
                                                    tuple(r.returns)) for r in records if r.game_number <= 2}
    ready = {g.key: g.opening for g in Director(spec).plan(half).ready}
    assert ready == {(r.match_id, r.game_number): r.opening.index - 1 for r in records if r.game_number > 2}

    # A changed openings file is a different tournament: resuming from the file is refused.
    (tmp_path / "suite.toml").write_text(text)
    (tmp_path / "ein.txt").write_text(EINSTEIN.replace("R3R1R62", "R1R3R62"))
    with pytest.raises(api.TournamentStateError, match="openings"):
        api.resume(tmp_path / "suite.toml")
    # The files named are stored with the tournament: it reopens without them.
    (tmp_path / "ein.txt").unlink()
    (tmp_path / "engines.toml").unlink()
    reopened = api.resume(cfg.output)
    assert reopened.cfg.openings == cfg.openings and [e.name for e in reopened.cfg.engines] == ["rand-a", "rand-b"]
    reopened.db.close()


def test_config_errors_name_file_and_line(tmp_path):
    (tmp_path / "engines.toml").write_text(ENGINES)
    (tmp_path / "bad.txt").write_text("R1R2R32/R4R53/R63B1/3B2B3/2B4B5B6 r - r play\n\n# c\nxyz\n")
    src = str(tmp_path / "t.toml")
    with pytest.raises(ConfigError, match=r"bad\.txt:4: not a position of einstein"):
        parse_config(_tournament(tmp_path, f'openings = "{tmp_path / "bad.txt"}"'), src)
    with pytest.raises(ConfigError, match=r"t\.toml:\d+: openings_order: expected 'sequential' or 'shuffled'"):
        parse_config(_tournament(tmp_path, f'openings = "{tmp_path / "bad.txt"}"\nopenings_order = "random"'), src)
    with pytest.raises(ConfigError, match=r"t\.toml:12: engines\[1\]: no engine named 'rand-c' .* did you mean"):
        parse_config(_tournament(tmp_path, "", 'engines = ["rand-a", "rand-c"]'), src)
    with pytest.raises(ConfigError, match=r"t\.toml:\d+: openings: .*cannot read the openings file"):
        parse_config(_tournament(tmp_path, 'openings = "missing.txt"'), src)
    # [[engines]] use = ... takes the file's engine, this table's keys over its own.
    cfg = parse_config(_tournament(tmp_path, "", '[[engines]]\nuse = "rand-a"\n[[engines]]\nuse = "rand-b"\n'
                                                 'name = "b-fast"\nargs = { seed = 9 }\n'), src)
    assert [e.name for e in cfg.engines] == ["rand-a", "b-fast"] and cfg.engines[1].args == {"seed": 9}
    (tmp_path / "engines.toml").write_text(ENGINES + '\n[[engines]]\nname = "x"\ncommand = "prog"\ncwd = 3\n')
    with pytest.raises(ConfigError, match=r"engines\.toml:16: engines\[2\]\.cwd: expected a string"):
        parse_config(_tournament(tmp_path, ""), src)
    with pytest.raises(ConfigError, match=r"t\.toml:\d+: engines\[0\]: engine 'a': no engines_file"):
        parse_config('game = "einstein"\nengines = ["a", "b"]\n', src)


def test_match_engines_file_and_three_seats(tmp_path):
    (tmp_path / "engines.toml").write_text(ENGINES)
    db = tmp_path / "e.sqlite"
    run = arbiter("match", "--game", "einstein", "--engines-file", str(tmp_path / "engines.toml"), "--engine", "rand-a",
                  "--engine", "rand-b", "--format", "games=2", "--tc", "10", "--db", str(db), "--quiet")
    assert run.returncode == 0, run.stdout + run.stderr
    assert sorted(tuple(r.players) for r in load_records(db)) == [("rand-a", "rand-b"), ("rand-b", "rand-a")]
    run = arbiter("match", "--game", "einstein", "--engines-file", str(tmp_path / "engines.toml"), "--engine", "rand-a",
                  "--engine", "rand-x", "--db", str(db))
    assert run.returncode == 2 and "no engine named 'rand-x'" in run.stderr and "did you mean" in run.stderr
    (tmp_path / "broken.toml").write_text('[[engines]]\nname = "a"\ncommand = 5\n')
    run = arbiter("match", "--game", "einstein", "--engines-file", str(tmp_path / "broken.toml"), "--engine", "a",
                  "--engine", "a", "--db", str(db))
    assert run.returncode == 2 and "broken.toml:3: engines[0].command: expected a string or an array" in run.stderr

    db3 = tmp_path / "t.sqlite"
    engines = [f"{{python}} -m sample_engines.aachess_random --seed {i}" for i in range(3)]
    args = ["match", "--game", "aachess", "--option", "max_rounds=2", "--tc", "30", "--db", str(db3), "--quiet"]
    wrong = arbiter(*args, *[a for e in engines for a in ("--engine", e)])
    assert wrong.returncode == 2 and "has 2 seats, not 3" in wrong.stderr.replace("\n", "")
    six = arbiter(*args, *[a for e in engines * 2 for a in ("--engine", e)])
    assert six.returncode == 2 and "2 to 5 seats" in six.stderr.replace("\n", "")
    odd = arbiter(*args, "--option", "seats=3", "--format", "games=4", *[a for e in engines for a in ("--engine", e)])
    assert odd.returncode == 2 and "multiple of 3" in odd.stderr.replace("\n", "")
    start = load_game("aachess", seats=3, max_rounds=2).new_initial_state()
    first = start.to_text()
    start.apply("")  # the first seat buys nothing
    (tmp_path / "aa.txt").write_text(f"# two A&A Chess positions\n{first}\n{start.to_text()}\n")
    run = arbiter(*args, "--option", "seats=3", "--format", "games=6", "--name", "x", "--name", "y", "--name", "z",
                  "--openings", str(tmp_path / "aa.txt"), *[a for e in engines for a in ("--engine", e)])
    assert run.returncode == 0, run.stdout + run.stderr
    records = sorted(load_records(db3), key=lambda r: r.game_number)
    assert [r.players for r in records] == [["x", "y", "z"], ["y", "z", "x"], ["z", "x", "y"],
                                            ["z", "y", "x"], ["y", "x", "z"], ["x", "z", "y"]]
    assert all(verify(r) == [] for r in records)
    assert [r.opening.index for r in records] == [1, 1, 1, 2, 2, 2]  # one opening per rotation block
    assert len({r.dice_stream for r in records[:3]}) == len({r.dice_stream for r in records[3:]}) == 1
    assert "total return" in run.stdout


def test_example_suite_parses_and_every_pairing_plays_the_same_positions(monkeypatch):
    monkeypatch.chdir(ROOT)  # the example's paths are relative to the project folder
    cfg = parse_config((ROOT / "tournaments/examples/einstein_suite.toml").read_text(), "einstein_suite.toml")
    assert len(cfg.openings) == 8 and [e.name for e in cfg.engines] == ["expectimax-d2", "expectimax-d1", "random"]
    plan = Director(ScheduleSpec.from_config(cfg, cfg.seed)).plan({})
    per_pairing = {}
    for g in plan.ready:
        per_pairing.setdefault(g.match_id, []).append(g.opening)
    assert len(per_pairing) == 3
    (played,) = {tuple(v) for v in per_pairing.values()}  # the same positions, in the same order
    assert len(set(played)) == 4 and all(played[i] == played[i + 1] for i in range(0, 8, 2))


def test_tournament_openings_interrupted_and_resumed_match_an_uninterrupted_run(tmp_path):
    (tmp_path / "ein.txt").write_text(EINSTEIN)
    (tmp_path / "engines.toml").write_text(ENGINES)

    def run(name: str, stop_after: int | None) -> dict:
        text = _tournament(tmp_path, f'openings = "{tmp_path / "ein.txt"}"\nopenings_order = "shuffled"')
        text = text.replace(str(tmp_path / "suite.sqlite"), str(tmp_path / f"{name}.sqlite"))
        opened = api.start(parse_config(text, str(tmp_path / "suite.toml")))
        seen = []

        def on_game(*_):
            seen.append(1)
            if stop_after is not None and len(seen) == stop_after:
                raise KeyboardInterrupt  # as Ctrl-C: finished games are kept
        _, summary = api.play(opened, on_game=on_game)
        opened.db.close()
        if stop_after is not None:
            assert summary.interrupted and not summary.finished
            reopened = api.resume(tmp_path / f"{name}.sqlite")
            _, summary = api.play(reopened)
            reopened.db.close()
        assert summary.finished
        return {(r.match_id, r.game_number): (r.opening, r.players, r.dice_stream, r.dice_seed)
                for r in load_records(tmp_path / f"{name}.sqlite")}

    whole, resumed = run("whole", None), run("resumed", 3)
    assert len(whole) == 8 and resumed == whole


def test_match_sprt_with_openings_counts_pairs(tmp_path):
    """With openings a game and its seat-swapped twin are one unit: the SPRT is pentanomial on the
    finished pairs (as fastchess does), so the match can only stop after an even number of games."""
    (tmp_path / "ein.txt").write_text(EINSTEIN)
    db = tmp_path / "m.sqlite"
    strong = "{python} -m sample_engines.einstein_expectimax --depth 2 --movetime 0"
    run = arbiter("match", "--game", "einstein", "--engine", strong, "--engine", RANDOM, "--tc", "60",
                  "--format", "games=200", "--sprt", "0,150", "--openings", str(tmp_path / "ein.txt"),
                  "--seed", "ab", "--db", str(db), "--quiet")
    assert run.returncode == 0, run.stdout + run.stderr
    out = " ".join(run.stdout.split())
    played = len(load_records(db))
    assert played % 2 == 0 and 4 <= played < 200, out
    assert f"after {played} games (pentanomial: {played // 2} pairs); the match stopped" in out, out
    assert "SPRT: H1 accepted (elo1 = 150)" in out, out


def test_match_with_openings_decided_mid_pair_plays_the_pairs_other_game(tmp_path):
    """bo5 with openings: A leads 3-0 after game 3, the first game of opening 2's pair. The match
    used to stop there, opening 2 played with one seating only; like a tournament's duplicate
    pairs it now stops between pairs: game 4 plays opening 2 with the seats swapped."""
    (tmp_path / "ein.txt").write_text(EINSTEIN)
    db = tmp_path / "m.sqlite"
    loser = f"{{python}} {ROOT / 'tests/engines/misbehave.py'} illegal --after 0"
    run = arbiter("match", "--game", "einstein", "--engine", RANDOM, "--engine", loser, "--tc", "10",
                  "--format", "bo5", "--openings", str(tmp_path / "ein.txt"), "--seed", "00ff", "--db", str(db),
                  "--quiet")
    assert run.returncode == 0, run.stdout + run.stderr
    records = sorted(load_records(db), key=lambda r: r.game_number)
    assert [r.game_number for r in records] == [1, 2, 3, 4]
    assert [r.opening.index for r in records] == [1, 1, 2, 2]
    assert records[3].players == records[2].players[::-1] and records[3].dice_stream == records[2].dice_stream


def test_check_says_how_a_solo_suite_takes_the_openings(tmp_path):
    """``check`` said every opening is "played twice with the seats swapped" whatever the game: a
    solo suite has no seats to swap (every engine plays game g of the suite from the same opening)."""
    (tmp_path / "op.txt").write_text("turn=1 ast=4 step=setup queue=- german=- soviet=- pool=1,1,1,2,2,3,1s,1s,2a "
                                     "removed=-\n")
    (tmp_path / "solo.toml").write_text(f"""
name = "solo"
game = "stalingrad"
games = 2
seed = 3
openings = "{tmp_path / 'op.txt'}"
output = "{tmp_path / 'solo.sqlite'}"
[[engines]]
name = "r"
command = "{{python}} -m sample_engines.stalingrad_random"
""")
    run = subprocess.run([PY, "-m", "tournaments", "check", str(tmp_path / "solo.toml")], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    out = " ".join(run.stdout.split())
    assert "seats swapped" not in out, out
    assert "openings: 1 positions, sequential, one per game of the suite, the same for every engine" in out, out


def test_match_openings_with_an_odd_number_of_games_say_the_last_position_is_played_once(tmp_path):
    """Games 2k-1 and 2k play opening k with the seats swapped; a bo3 (or the default olympiad,
    7 games) plays its last game's position once, with one seating, and nothing said so. Now a
    warning says it; an even number of games says nothing."""
    (tmp_path / "ein.txt").write_text(EINSTEIN)
    base = ["match", "--game", "einstein", "--engine", RANDOM, "--engine", RANDOM + " --seed 3", "--tc", "10",
            "--openings", str(tmp_path / "ein.txt"), "--seed", "00ff", "--quiet"]
    odd = arbiter(*base, "--format", "bo3", "--db", str(tmp_path / "odd.sqlite"))
    assert odd.returncode == 0, odd.stdout + odd.stderr
    assert ("warning: --format bo3: 3 games: with openings, the last game's position is played once, with one "
            "seating (not twice, seats swapped); an even number plays every position twice") in \
        " ".join(odd.stderr.split()), odd.stderr
    even = arbiter(*base, "--format", "games=2", "--db", str(tmp_path / "even.sqlite"))
    assert even.returncode == 0 and "played once" not in even.stderr, even.stdout + even.stderr
