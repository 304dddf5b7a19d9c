"""Engine options over the protocol, with real engine subprocesses: declared in ``hello``, set by
the operator (``--engine-option``, a tournament engine's ``options``), checked before any game
(exit 2 naming the engine and the option), sent in ``new_game``, recorded per seat; ``arbiter
engine-info`` lists them; the expectimax sample's ``depth`` really limits its search."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arbiter.clock import parse_time_control
from arbiter.formats.match import Series
from arbiter.games import load_game
from arbiter.hosting import EngineConfig, OptionFault
from arbiter.records.replay import verify
from arbiter.records.store import load_records
from protocol.messages import EngineOption, check_engine_options, declaration_problems

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
SCORER = f"{PY} {ROOT / 'tests' / 'engines' / 'scorer.py'}"
RANDOM = f"{PY} -m sample_engines.random_engine"
EXPECTIMAX = f"{PY} -m sample_engines.einstein_expectimax"

DECLARED = [EngineOption(name="depth", type="spin", default=3, min=1, max=9),
            EngineOption(name="open", type="spin", default=0),
            EngineOption(name="ponder", type="check", default=False),
            EngineOption(name="style", type="combo", default="calm", choices=["calm", "wild"]),
            EngineOption(name="book", type="string", default="")]


@pytest.mark.parametrize("given, expected", [
    ({"depth": 9, "ponder": True, "style": "wild", "book": "x.bin"}, {"depth": 9, "ponder": True, "style": "wild",
                                                                       "book": "x.bin"}),
    ({"depth": "4", "ponder": "FALSE", "open": "-12"}, {"depth": 4, "ponder": False, "open": -12}),  # text: converted
    ({}, {}),
])
def test_values_are_converted_to_the_declared_types(given, expected):
    assert check_engine_options(DECLARED, given) == expected


@pytest.mark.parametrize("given, words", [
    ({"Depth": 3}, "unknown option 'Depth' (the engine declares: book, depth, open, ponder, style)"),
    ({"depth": 10}, "option depth: must be in [1, 9], not 10"),
    ({"depth": 2.5}, "option depth: must be an integer, not 2.5"),
    ({"depth": True}, "option depth: must be an integer, not True"),
    ({"ponder": 1}, "option ponder: must be true or false, not 1"),
    ({"style": "mad"}, "option style: must be one of calm, wild, not 'mad'"),
    ({"book": 3}, "option book: must be a string, not 3"),
])
def test_bad_values_are_named(given, words):
    with pytest.raises(ValueError) as info:
        check_engine_options(DECLARED, given)
    assert str(info.value) == words


def series(tmp_path, commands: list[str], options: list[dict]) -> Series:
    configs = [EngineConfig(cmd, name=f"e{i}", cwd=str(ROOT), options=o)
               for i, (cmd, o) in enumerate(zip(commands, options))]
    return Series(load_game("einstein"), configs, parse_time_control("inf"), run_dir=tmp_path, seed=b"options")


def test_options_reach_the_engine_in_new_game_and_the_record(tmp_path):
    s = series(tmp_path, [SCORER, SCORER], [{"score": "7", "style": "wild", "silent": "false"}, {}])
    try:
        assert s.start_all() == []
        records = [s.play_game(1, [0, 1]), s.play_game(2, [1, 0])]
    finally:
        s.close()
    for record, seat in zip(records, (0, 1)):
        assert record.engine_options[seat] == {"score": 7, "style": "wild", "silent": False}  # as declared types
        assert record.engine_options[1 - seat] == {}
        seen = {e.seat: json.loads(e.info.comment) for e in record.events if e.seat >= 0}
        assert seen[seat] == {"score": 7, "style": "wild", "silent": False, "from_move": 1, "label": ""}  # + defaults
        assert seen[1 - seat] == {"score": 0, "style": "calm", "silent": False, "from_move": 1, "label": ""}
        assert {e.info.score for e in record.events if e.seat == seat} == {7.0}
        assert verify(record) == []


def test_an_option_that_does_not_fit_stops_the_pre_flight_and_is_rejected(tmp_path):
    s = series(tmp_path, [SCORER, RANDOM], [{"score": 20_000}, {"depth": 3}])
    try:
        failures = s.start_all()
    finally:
        s.close()
    assert [i for i, _ in failures] == [0, 1]
    assert all(isinstance(f, OptionFault) for _, f in failures)
    assert failures[0][1].detail == "option score: must be in [-10000, 10000], not 20000"
    assert failures[1][1].detail == "unknown option 'depth' (the engine declares: none)"  # an engine of before options
    assert "rejected by the referee: option score" in next(tmp_path.rglob("engine-e0-*.log")).read_text()


def match(tmp_path, *args: str, engines=(SCORER, RANDOM)) -> subprocess.CompletedProcess:
    cmd = [PY, "-m", "arbiter.cli", "match", "--game", "einstein", "--tc", "st=0.05", "--format", "games=2",
           "--db", str(tmp_path / "r.sqlite"), "--quiet"]
    for engine in engines:
        cmd += ["--engine", engine]
    return subprocess.run(cmd + list(args), cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("flag, words", [
    ("1:style=bold", "engine A:scorer.py --engine-option: option style: must be one of calm, wild, not 'bold'"),
    ("1:silent=maybe", "engine A:scorer.py --engine-option: option silent: must be true or false, not 'maybe'"),
    ("2:score=1", "engine B:random_engine --engine-option: unknown option 'score' (the engine declares: none)"),
])
def test_match_with_a_bad_engine_option_exits_2_before_any_game(tmp_path, flag, words):
    run = match(tmp_path, "--engine-option", flag)
    out = " ".join((run.stdout + run.stderr).split())
    assert run.returncode == 2, run.stdout + run.stderr
    assert words in out and "no game was played" in out
    assert load_records(tmp_path / "r.sqlite") == []


def test_a_bad_option_of_an_engines_file_engine_names_its_line_unless_given_again(tmp_path):
    engines = tmp_path / "engines.toml"
    engines.write_text('[[engines]]\nname = "scorer"\ncommand = "{python} tests/engines/scorer.py"\n\n'
                       'options = { style = "bold" }\n')
    run = match(tmp_path, "--engines-file", str(engines), engines=("scorer", RANDOM))
    out = " ".join((run.stdout + run.stderr).split())
    assert run.returncode == 2, run.stdout + run.stderr
    assert (f"error: {engines}:5: engines[0].options.style: engine scorer: options: option style: must be one of "
            "calm, wild, not 'bold'") in out
    run = match(tmp_path, "--engines-file", str(engines), "--engine-option", "1:style=loud", engines=("scorer", RANDOM))
    out = " ".join((run.stdout + run.stderr).split())
    assert run.returncode == 2 and "error: engine scorer --engine-option: option style: must be one of calm, wild, " \
        "not 'loud'" in out, out
    assert load_records(tmp_path / "r.sqlite") == []


@pytest.mark.parametrize("flag", ["score=1", "0:score=1", "3:score=1", "1:=1", "1:score"])
def test_a_malformed_engine_option_flag_exits_2(tmp_path, flag):
    run = match(tmp_path, "--engine-option", flag)
    assert run.returncode == 2 and "--engine-option" in run.stderr and "N:NAME=VALUE" in run.stderr


@pytest.mark.parametrize("command, flags, words", [
    ("match", ["--name", "a", "--name", "b", "--name", "c"], "--name given 3 times for 2 --engine(s)"),
    ("match", ["--cpus", "0", "--cpus", "0", "--cpus", "0"], "--cpus given 3 times for 2 --engine(s)"),
    ("coop", ["--name", "a", "--name", "b"], "--name given 2 times for 1 --engine(s)"),
    ("solo", ["--cpus", "0", "--cpus", "1"], "--cpus given 2 times for 1 --engine(s)"),
])
def test_more_names_or_cpus_than_engines_is_a_usage_error(tmp_path, command, flags, words):
    """One --name and one --cpus per --engine, in order; extra ones were silently dropped."""
    game = {"match": ["--game", "einstein", "--engine", RANDOM, "--engine", RANDOM],
            "coop": ["--game", "catalonia", "--engine", RANDOM], "solo": ["--game", "stalingrad", "--engine", RANDOM]}
    run = subprocess.run([PY, "-m", "arbiter.cli", command, *game[command], *flags, "--db", str(tmp_path / "r.sqlite")],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and words in " ".join(run.stderr.split()), run.stdout + run.stderr
    assert not (tmp_path / "r.sqlite").exists()


def test_match_sends_the_options_and_records_them(tmp_path):
    run = match(tmp_path, "--engine-option", "1:score=-3", "--engine-option", "1:label=a b=c")
    assert run.returncode == 0, run.stdout + run.stderr
    records = load_records(tmp_path / "r.sqlite")
    assert [r.engine_options for r in records] == [[{"score": -3, "label": "a b=c"}, {}],
                                                   [{}, {"score": -3, "label": "a b=c"}]]


def arbiter(tmp_path, command: str, game: str, engines: list[str], *args: str) -> subprocess.CompletedProcess:
    cmd = [PY, "-m", "arbiter.cli", command, "--game", game, "--tc", "60", "--db", str(tmp_path / "r.sqlite"),
           "--quiet", "--seed", "0c0c", *args]
    for engine in engines:
        cmd += ["--engine", engine]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_coop_and_solo_send_the_options_and_record_them(tmp_path):
    coop = arbiter(tmp_path, "coop", "catalonia", [SCORER], "--games", "1", "--engine-option", "1:score=5")
    assert coop.returncode == 0, coop.stdout + coop.stderr  # one --engine in both seats: its options in both
    solo = arbiter(tmp_path, "solo", "stalingrad", [SCORER, SCORER], "--seeds", "1", "--engine-option", "2:score=-2")
    assert solo.returncode == 0, solo.stdout + solo.stderr
    records = {r.game: r for r in load_records(tmp_path / "r.sqlite") if r.game != "stalingrad"}
    assert records["catalonia"].engine_options == [{"score": 5}, {"score": 5}]
    solos = [r for r in load_records(tmp_path / "r.sqlite") if r.game == "stalingrad"]
    assert [(r.players, r.engine_options or None) for r in sorted(solos, key=lambda r: r.players)] == \
        [(["scorer.py#1"], None), (["scorer.py#2"], [{"score": -2}])]


@pytest.mark.parametrize("command, game, engines, args, words, code", [
    ("coop", "catalonia", [SCORER, RANDOM], ["--engine-option", "2:score=1"],
     "random_engine --engine-option: unknown option 'score' (the engine declares: none)", 2),
    ("coop", "catalonia", [SCORER], ["--engine-option", "1:style=bold"],
     "scorer.py#1 --engine-option: option style: must be one of calm, wild, not 'bold'", 2),
    ("coop", "catalonia", [SCORER, f"{PY} /nonexistent/engine.py"], [],  # with the engine's last words
     "engine.py cannot start: crash: engine process exited with code 2; its last output: ", 3),
    ("solo", "stalingrad", [SCORER, f"{PY} -m no_such_engine"], [], "its last output: ", 3),
    # the last engine of a solo run is checked before the first one's suite is played
    ("solo", "stalingrad", [SCORER, SCORER], ["--engine-option", "2:score=99999"],
     "scorer.py#2 --engine-option: option score: must be in [-10000, 10000], not 99999", 2),
    ("match", "aachess", [RANDOM, RANDOM, SCORER], ["--engine-option", "3:depth=2", "--option", "seats=3"],
     "scorer.py --engine-option: unknown option 'depth'", 2),
])
def test_a_bad_option_or_engine_stops_coop_solo_and_n_seat_runs_before_any_game(tmp_path, command, game, engines,
                                                                              args, words, code):
    run = arbiter(tmp_path, command, game, engines, *args, *(["--games", "3"] if command == "coop" else
                                                             ["--seeds", "3"] if command == "solo" else []))
    out = " ".join((run.stdout + run.stderr).split())
    assert run.returncode == code, run.stdout + run.stderr
    assert words in out and "no game was played" in out, out
    if code == 3:
        assert "No such file or directory" in out or "No module named no_such_engine" in out, out
    assert load_records(tmp_path / "r.sqlite") == []


def test_engine_info_lists_the_declared_options(tmp_path):
    run = subprocess.run([PY, "-m", "arbiter.cli", "engine-info", SCORER, "--game", "einstein",
                          "--logs", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "scorer 1 by tests"
    row = next(line for line in lines if " score " in line)
    assert all(w in row for w in ("spin", "0", "-10000 .. 10000", "the score reported with every move"))
    assert any("style" in line and "calm | wild" in line for line in lines)
    assert any("silent" in line and "check" in line and "false" in line for line in lines)
    plain = subprocess.run([PY, "-m", "arbiter.cli", "engine-info", RANDOM, "--logs", str(tmp_path)], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    assert plain.returncode == 0 and "options: none" in plain.stdout


@pytest.mark.parametrize("command, words", [
    ("/no/such/engine", "no such program: '/no/such/engine'"),
    (f"{PY} -m no_such_engine", "its last output: '"),  # then what the engine printed: Python's complaint
])
def test_engine_info_of_an_engine_that_cannot_start_exits_3(tmp_path, command, words):
    run = subprocess.run([PY, "-m", "arbiter.cli", "engine-info", command, "--logs", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    out = " ".join((run.stdout + run.stderr).split())
    assert run.returncode == 3 and "cannot start" in out and words in out, out
    if "no_such_engine" in command:
        assert "No module named no_such_engine" in out


def test_expectimax_depth_option_limits_its_search(tmp_path):
    depths = {}
    for depth in (1, 3):
        s = series(tmp_path, [EXPECTIMAX, RANDOM], [{"depth": depth, "movetime": 0}, {}])
        try:
            record = s.play_game(1, [0, 1])
        finally:
            s.close()
        assert record.engine_options == [{"depth": depth, "movetime": 0}, {}]
        depths[depth] = {e.info.depth for e in record.events if e.seat == 0 and e.kind == "move"
                         and e.info and e.info.depth is not None}
    assert depths[1] == {1} or depths[1] <= {0, 1}  # depth 0: a move that wins at once needs no search
    assert 3 in depths[3] and max(depths[3]) == 3


TOURNAMENT = """
game = "einstein"
match = "games=2"
seed = 3
concurrency = 1
output = "{out}"
on_start_failure = "{on_fail}"

[[engines]]
name = "scorer"
command = "{{python}} tests/engines/scorer.py"
options = {options}
args = {{ seed = 4 }}

[[engines]]
name = "random"
command = "{{python}} -m sample_engines.random_engine"
"""


@pytest.mark.parametrize("on_fail", ["stop", "forfeit"])
def test_tournament_with_a_bad_option_exits_2_before_any_game(tmp_path, on_fail):
    path = tmp_path / "t.toml"
    path.write_text(TOURNAMENT.format(out=tmp_path / "t.sqlite", on_fail=on_fail, options='{ style = "loud" }'))
    for command in ("check", "run"):
        run = subprocess.run([PY, "-m", "tournaments", command, str(path)] + (["-q"] if command == "run" else []),
                             cwd=ROOT, capture_output=True, text=True, timeout=120)
        out = " ".join((run.stdout + run.stderr).split())
        assert run.returncode == 2, run.stdout + run.stderr
        assert (f"{path}:12: engines[0].options.style: engine scorer: options: option style: must be one of calm, "
                "wild, not 'loud'") in out
        assert ": ok" not in out, out  # `check` said "ok" before starting the engines
    assert not (tmp_path / "t.sqlite").exists()


def test_a_bad_option_from_an_engines_file_is_named_at_its_line_there(tmp_path):
    """The event takes the engine by name from a shared engines file: the refused option's line is
    the engines file's, unless the event gives options of its own (then the event's line)."""
    engines = tmp_path / "engines.toml"
    engines.write_text('[[engines]]\nname = "random"\ncommand = "{python} -m sample_engines.random_engine"\n\n'
                       '[[engines]]\nname = "scorer"\ncommand = "{python} tests/engines/scorer.py"\n'
                       'options = { style = "loud" }\n')
    event = tmp_path / "t.toml"
    for own, line, where in (("", 8, engines), ('\n[[engines]]\nuse = "scorer"\noptions = { style = "mute" }\n', 11, event)):
        event.write_text(f'game = "einstein"\nmatch = "games=2"\noutput = "{tmp_path / "t.sqlite"}"\n'
                         f'engines_file = "{engines}"\n' + ('engines = ["scorer", "random"]\n' if not own else
                                                             '\n[[engines]]\nuse = "random"\n' + own))
        run = subprocess.run([PY, "-m", "tournaments", "check", str(event)], cwd=ROOT, capture_output=True, text=True,
                             timeout=120)
        out = " ".join((run.stdout + run.stderr).split())
        assert run.returncode == 2, run.stdout + run.stderr
        assert f"error: {where}:{line}: engines[1].options.style: engine scorer: options: option style: must be one" \
            in out, out


def test_tournament_sends_each_engine_its_options(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text(TOURNAMENT.format(out=tmp_path / "t.sqlite", on_fail="stop", options="{ score = 11 }"))
    run = subprocess.run([PY, "-m", "tournaments", "run", str(path), "-q", "--no-report"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    records = load_records(tmp_path / "t.sqlite")
    assert len(records) == 2
    for r in records:
        seat = r.players.index("scorer")
        assert r.engine_options[seat] == {"score": 11} and r.engine_options[1 - seat] == {}
        assert {e.info.score for e in r.events if e.seat == seat} == {11.0}


def test_declarations_an_engine_gets_wrong_are_named():
    assert declaration_problems(DECLARED) == []
    assert declaration_problems([
        EngineOption(name="a", type="spin", default=0, min=5, max=9),
        EngineOption(name="a", type="check", default=False),
        EngineOption(name="b", type="spin", default=1, min=3, max=2),
        EngineOption(name="c", type="combo", default="x"),
        EngineOption(name="d", type="string"),
    ]) == ["option a: its default must be in [5, 9], not 0", "option a is declared twice",
           "option b: min 3 is above max 2", "option c: a combo without choices",
           "option d: its default must be a string, not None"]


def test_a_resumed_match_keeps_its_engine_options_and_adjudication(tmp_path):
    import signal
    import time

    db = tmp_path / "r.sqlite"
    paced = f"{PY} {ROOT / 'tests' / 'engines' / 'paced.py'} --think 10"  # the match outlasts the first commits
    cmd = [PY, "-m", "arbiter.cli", "match", "--game", "einstein", "--engine", SCORER, "--engine", paced,
           "--engine-option", "1:score=5", "--max-plies", "6", "--format", "games=60", "--tc", "60", "--quiet",
           "--db", str(db)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if (tmp_path / "r.jsonl").exists() and len((tmp_path / "r.jsonl").read_text().splitlines()) >= 2:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130, out
    played = len(load_records(db))
    again = subprocess.run([PY, "-m", "arbiter.cli", "match", "--resume", "--db", str(db), "--quiet"], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    records = load_records(db)
    assert len(records) == 60 > played
    for r in records:
        a = r.players.index(next(p for p in r.players if p.startswith("A:")))
        assert r.engine_options[a] == {"score": 5} and r.adjudication.max_plies == 6
        assert r.reason == "adjudicated" or len([e for e in r.events if e.seat >= 0]) < 6
