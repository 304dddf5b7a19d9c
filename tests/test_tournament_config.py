"""The tournament file: valid files load, and every error names the file, the line and the key."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tournaments.config import ConfigError, load_config, parse_config
from arbiter.tomlpos import dotted, key_lines

ROOT = Path(__file__).resolve().parent.parent

GOOD = """\
name = "Test event"
game = "einstein"
format = "swiss"
rounds = 3
match = "olympiad"
time_control = "60+1"
seed = 42
duplicate_dice = true

[game_options]
setup = "random"

[sprt]
elo0 = 0
elo1 = 50

[[engines]]
name = "a"
command = "{python} -m sample_engines.random_engine --seed 1"
args = { name = "x" }

[[engines]]
name = "b"
command = ["{python}", "-m", "sample_engines.random_engine"]
restart = true

[[engines]]
name = "c"
command = "{python} -m sample_engines.random_engine"
env = { FOO = "1" }
"""


def err(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(text, "t.toml")
    return str(info.value)


def replace_line(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new)


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_good_file_loads():
    cfg = parse_config(GOOD, "t.toml")
    assert cfg.name == "Test event" and cfg.tid == "Test-event"
    assert cfg.kind == "match" and cfg.match.schedule == "ABBAABB"
    assert cfg.seed == "42" and cfg.rounds == 3 and cfg.duplicate_dice
    assert cfg.game_options == {"seat0_colour": "red", "setup": "random"}
    assert [e.name for e in cfg.engines] == ["a", "b", "c"]
    argv = cfg.engines[0].argv()
    assert argv[0] == sys.executable and argv[-2:] == ["--name", "x"]
    assert cfg.engines[1].restart and not cfg.engines[0].restart
    assert cfg.engines[2].env == {"FOO": "1"}
    assert cfg.engines[0].cpus is None
    pinned = parse_config(GOOD.replace("restart = true", 'cpus = "0"'), "t.toml").engines[1]
    assert pinned.cpus == (0,) and pinned.engine_config().cpus == (0,)
    assert not cfg.pin and parse_config(GOOD.replace("seed = 42", "seed = 42\npin = true"), "t.toml").pin
    pondering_apart = GOOD.replace("seed = 42", "seed = 42\npin = true").replace("restart = true", 'ponder = true\ncpus = "0"')
    assert parse_config(pondering_apart, "t.toml").engines[1].ponder  # a pondering engine with cores of its own
    assert cfg.sprt.elo1 == 50 and cfg.sprt_given
    assert cfg.output == Path("runs/Test-event.sqlite")
    assert cfg.fingerprint() == parse_config(GOOD.replace("seed = 42", "seed = 43"), "t.toml").fingerprint()
    assert cfg.fingerprint() != parse_config(GOOD.replace("rounds = 3", "rounds = 2"), "t.toml").fingerprint()


def test_example_olympiad_file_is_valid():
    cfg = load_config(ROOT / "tournaments" / "examples" / "einstein_olympiad.toml")
    assert cfg.game == "einstein" and cfg.match.games == 7 and cfg.format == "double_round_robin"
    assert "sample_engines.einstein_expectimax" in cfg.engines[0].argv()


@pytest.mark.parametrize("old, new, needle, key, words", [
    ('format = "swiss"', 'formt = "swiss"', "formt", "formt", "did you mean 'format'"),
    ('format = "swiss"', 'format = "swis"', "format", "format", "unknown format 'swis'"),
    ('rounds = 3', 'rounds = "3"', "rounds", "rounds", "expected an integer"),
    ('rounds = 3', 'rounds = 0', "rounds", "rounds", "at least 1"),
    ('match = "olympiad"', 'match = "bo7:ABX"', "match", "match", "bo7:ABX"),
    ('match = "olympiad"', 'match = "bo99999999999999999999"', "match", "match", "at most 10,000,000 games"),
    ('time_control = "60+1"', 'time_control = "40/"', "time_control", "time_control", "40/"),
    ('setup = "random"', 'setup = "shuffle"', "setup = ", "game_options.setup", "setup"),
    ('setup = "random"', 'colour = "red"', "colour", "game_options.colour", "unknown option"),
    ('setup = "random"', 'setup = "random"\nfoo = 1', "foo", "game_options.foo", "unknown option(s) foo"),
    ('elo1 = 50', 'elo1 = -50', "elo1", "sprt.elo1", "greater than elo0"),
    ('elo1 = 50', 'elo2 = 50', "elo2", "sprt.elo2", "unknown key"),
    ('restart = true', 'restart = "yes"', 'restart = "yes"', "engines[1].restart", "true or false"),
    ('args = { name = "x" }', 'args = { name = ["x"] }', "args = {", "engines[0].args.name", "flag"),
    ('env = { FOO = "1" }', 'env = { FOO = true }', "env", "engines[2].env.FOO", "environment"),
    ('duplicate_dice = true', 'duplicate_dice = 1', "duplicate_dice", "duplicate_dice", "true or false"),
    ('restart = true', 'cpus = "x"', 'cpus = "x"', "engines[1].cpus", "expected core numbers"),
    ('restart = true', 'cpus = [4096]', 'cpus = [4096]', "engines[1].cpus", "core(s) 4096 not available"),
    ('game = "einstein"', 'game = "chess960"', "game =", "game", "unknown game"),
    ('seed = 42', 'seed = 42\npin = "yes"', "pin", "pin", "true or false"),
    ('seed = 42', 'seed = 42\npin = true\ncluster = "local:2"', "pin", "pin", "a cluster's workers"),
    ('restart = true', 'restart = true\nponder = true', "pin", "pin", "b may ponder"),
    # nan and inf: a report that crashed on every run (anchor), a traceback in the pre-flight (timeouts)
    ('elo1 = 50', 'elo1 = inf', "elo1", "sprt.elo1", "expected a finite number, got inf"),
    ('seed = 42', 'seed = 42\nanchor = { engine = "a", elo = nan }', "anchor", "anchor.elo", "finite number"),
    ('seed = 42', 'seed = 42\nanchor = { engine = "a", elx = 1500 }', "anchor", "anchor.elx", "did you mean 'elo'"),
    ('seed = 42', 'seed = 42\nbye_points = nan', "bye_points", "bye_points", "finite number"),
    ('seed = 42', 'seed = 42\nlimits = { memory_mb = 1e400 }', "limits", "limits.memory_mb", "finite number"),
    ('restart = true', 'limits = { log_mb = nan }', "limits", "engines[1].limits.log_mb", "finite number"),
    ('restart = true', 'handshake_timeout = nan', "handshake_timeout", "engines[1].handshake_timeout",
     "finite number"),
    ('restart = true', 'handshake_timeout = -1', "handshake_timeout", "engines[1].handshake_timeout",
     "more than 0 seconds"),
    ('restart = true', 'ready_timeout = 0', "ready_timeout", "engines[1].ready_timeout", "more than 0 seconds"),
    ('seed = 42', 'seed = ""', "seed", "seed", "must not be empty (leave it out for a random seed)"),
    ('name = "Test event"', 'name = " "', "name", "name", "must not be empty"),
    # what no process can be given: tracebacks (ValueError) in the pre-flight or when reading a path
    ('seed = 42', 'seed = 42\noutput = "r\\u0000.sqlite"', "output", "output", "must not hold a NUL character"),
    ('seed = 42', 'seed = 42\nopenings = "o\\u0000.txt"', "openings", "openings", "must not hold a NUL character"),
    ('env = { FOO = "1" }', 'env = { "A=B" = "1" }', "env", 'engines[2].env."A=B"', "not an environment variable"),
    ('env = { FOO = "1" }', r'env = { FOO = "a\u0000b" }', "env", "engines[2].env.FOO", "NUL character"),
    ('command = ["{python}", "-m", "sample_engines.random_engine"]', r'command = ["{python}", "-m", "x\u0000"]',
     'command = ["{python}", "-m", "x', "engines[1].command", "NUL character"),
])
def test_errors_name_the_key_and_the_line(old, new, needle, key, words):
    text = replace_line(old, new)
    if "ponder" in new:  # pondering is refused only with pin
        text = text.replace("seed = 42", "seed = 42\npin = true")
    message = err(text)
    line = line_of(text, needle)
    assert message.startswith(f"t.toml:{line}: {key}:"), message
    assert words in message, message


def test_a_file_that_is_not_utf8_names_the_line(tmp_path):
    """Before: a UnicodeDecodeError traceback (a file saved as Latin-1, say)."""
    path = tmp_path / "t.toml"
    path.write_bytes(GOOD.replace('name = "c"', 'name = "caf\xe9"').encode("latin-1"))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    line = line_of(GOOD, 'name = "c"')
    assert str(info.value) == f"{path}:{line}: not UTF-8 text (byte 0xe9); a tournament file is UTF-8"


def test_a_file_saved_with_a_byte_order_mark_says_so(tmp_path):
    """Before: 'TOML syntax error: Invalid statement (column 1)' for a file that looks right in any
    editor (a UTF-8 file saved by Notepad starts with U+FEFF); an engines file too."""
    path = tmp_path / "t.toml"
    path.write_text("\ufeff" + GOOD, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}:1: starts with a byte order mark (U+FEFF"), str(info.value)
    shared = tmp_path / "engines.toml"
    shared.write_text('\ufeff[[engines]]\nname = "x"\ncommand = "x"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        parse_config(GOOD.replace("seed = 42", f'seed = 42\nengines_file = "{shared}"'), "t.toml")
    assert str(info.value).startswith(f"{shared}:1: starts with a byte order mark"), str(info.value)


def test_a_database_or_an_export_given_for_the_tournament_file_says_what_it_is(tmp_path):
    """``run runs/x.sqlite`` (meant: ``resume``) said "not UTF-8 text (byte 0xf8)"; ``resume x.jsonl``
    (the export, not the database) "TOML syntax error: Invalid statement"."""
    import sqlite3
    import subprocess

    db = tmp_path / "event.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (x)")
    export = tmp_path / "event.jsonl"
    export.write_text('{"game_id": "x.1.abcdef", "game": "einstein"}\n')
    before = db.read_bytes(), export.read_bytes()
    for path, words in ((db, "a SQLite database, not a tournament file (TOML)"),
                        (export, "a JSON file (records of an export?), not a tournament file (TOML)")):
        with pytest.raises(ConfigError) as info:
            load_config(path)
        assert str(info.value).startswith(f"{path}: {words}"), str(info.value)
    out = subprocess.run([sys.executable, "-m", "tournaments", "run", str(db)], capture_output=True, text=True,
                         timeout=60, cwd=Path(__file__).resolve().parent.parent)
    assert out.returncode == 2 and out.stderr.startswith(f"error: {db}: a SQLite database"), out.stderr
    assert "resume" in out.stderr and (db.read_bytes(), export.read_bytes()) == before


def test_an_infinite_time_control_may_be_a_bare_toml_inf():
    assert parse_config(replace_line('time_control = "60+1"', "time_control = inf"), "t.toml").time_control.text == "inf"


def test_missing_engine_key_points_at_its_table_header():
    text = GOOD.replace('name = "b"\n', "")
    message = err(text)
    header = [i for i, line in enumerate(text.splitlines(), 1) if line == "[[engines]]"][1]
    assert message.startswith(f"t.toml:{header}: engines[1]:") and "missing required key 'name'" in message


def test_duplicate_engine_names_are_refused_with_the_line():
    text = GOOD.replace('name = "c"', 'name = "a"')
    message = err(text)
    lines = [i for i, line in enumerate(text.splitlines(), 1) if line == 'name = "a"']
    assert message.startswith(f"t.toml:{lines[1]}: engines[2].name: duplicate engine name 'a'"), message


def test_syntax_error_names_the_line():
    text = GOOD.replace('rounds = 3', 'rounds = = 3')
    message = err(text)
    assert message.startswith(f"t.toml:{line_of(text, 'rounds = = 3')}: TOML syntax error"), message


def test_missing_game_and_engines():
    assert "missing required key 'game'" in err('format = "round_robin"\n')
    assert "missing required key 'engines'" in err('game = "einstein"\n')


def test_format_and_game_must_fit():
    one_engine = GOOD.split("[[engines]]")[0] + "[[engines]]" + GOOD.split("[[engines]]")[1]
    assert "needs at least 2 engine" in err(one_engine)
    text = replace_line('format = "swiss"', 'format = "swiss"\ngames = 4')
    assert "games per pairing come from 'match'" in err(text)
    text = replace_line("rounds = 3", "rounds = 4")
    assert "at most 3 swiss rounds" in err(text)


@pytest.mark.parametrize("game, kind", [('"aachess"\ngame_options = { seats = 3 }', "table"),
                                        ('"catalonia"', "team"), ('"stalingrad"', "solo")])
def test_double_round_robin_is_refused_where_it_would_play_one_cycle(game, kind):
    """A table event (3+ seats) took double_round_robin and played a single cycle, as round_robin
    (each table's seat rotations already reverse the order): refused, as for teams and solo."""
    engines = "".join(f'[[engines]]\nname = "{e}"\ncommand = "{{python}} -m sample_engines.random_engine"\n'
                      for e in "abc")
    message = err(f'game = {game}\nformat = "double_round_robin"\n{engines}')
    assert "format: double_round_robin is for two-seat competitive games" in message, message
    assert f"for {kind} games" in message


def test_inline_engine_tables_and_candidates_have_lines():
    text = """\
game = "einstein"
format = "gauntlet"
candidates = ["a", "zz"]
engines = [
  { name = "a", command = "x" },
  { name = "b", command = 5 },
]
"""
    message = err(text)
    assert message.startswith("t.toml:6: engines[1].command: expected a string or an array"), message
    text = text.replace("command = 5", 'command = "y"')
    message = err(text)
    assert message.startswith("t.toml:3: candidates[1]: no engine named 'zz'"), message



def test_a_gauntlet_candidate_listed_twice_is_named():
    """``candidates = ["a", "a", "b"]`` with engines a, b, c was refused as a gauntlet without an
    engine that is not a candidate (c is one), and ``["a", "a"]`` counted a's opponents twice
    in the event's size: the second mention is named instead."""
    engines = "".join(f'[[engines]]\nname = "{e}"\ncommand = "x"\n' for e in "abc")
    message = err(f'game = "einstein"\nformat = "gauntlet"\ncandidates = ["a", "a", "b"]\n{engines}')
    assert message.startswith("t.toml:3: candidates[1]: 'a' is listed twice"), message


def test_self_pairs_in_a_cooperative_gauntlet_is_refused_not_ignored():
    """A cooperative gauntlet pairs the candidates with the others only: ``self_pairs = true``
    was taken and no engine was ever paired with its copy. It is refused, naming the key."""
    engines = "".join(f'[[engines]]\nname = "{e}"\ncommand = "x"\n' for e in "abc")
    message = err(f'game = "catalonia"\nformat = "gauntlet"\nself_pairs = true\n{engines}')
    assert message.startswith("t.toml:3: self_pairs: "), message
    assert "gauntlet" in message, message

def test_key_lines_scanner():
    text = GOOD + '\n[[engines]]\nname = "d"\ncommand = """multi\nline"""\n[engines.options]\ndepth = 3\n'
    lines = key_lines(text)
    assert lines[("engines", 3, "options", "depth")] == len(text.splitlines())
    assert lines[("engines", 0, "args", "name")] == line_of(text, 'args = { name = "x" }')
    assert lines[("sprt", "elo0")] == line_of(text, "elo0")
    assert dotted(("engines", 3, "options", "depth")) == "engines[3].options.depth"


def test_seed_file_is_read_and_a_file_others_may_read_is_refused(tmp_path):
    seed = tmp_path / "seed"
    seed.write_text("olympiad-secret\n")
    seed.chmod(0o600)
    text = GOOD.replace("seed = 42", f'seed_file = "{seed}"')
    cfg = parse_config(text, "t.toml")
    assert cfg.seed == "olympiad-secret" and cfg.seed_file == seed
    assert cfg.fingerprint() == parse_config(GOOD, "t.toml").fingerprint()  # the seed is not in it
    seed.chmod(0o640)
    with pytest.raises(ConfigError, match=r"t.toml:\d+: seed_file: .*chmod 600"):
        parse_config(text, "t.toml")
    with pytest.raises(ConfigError, match="seed_file: give 'seed' or 'seed_file', not both"):
        parse_config(text.replace("duplicate_dice", "seed = 1\nduplicate_dice"), "t.toml")
    with pytest.raises(ConfigError, match="key_file: .*arbiter keygen"):
        parse_config(GOOD.replace("seed = 42", f'key_file = "{tmp_path / "nokey"}"'), "t.toml")


def test_the_example_file_in_the_docs_is_valid():
    text = (ROOT / "docs" / "tournaments.md").read_text(encoding="utf-8")
    block = re.search(r"## The file\n\n```toml\n(.*?)```", text, re.S).group(1)
    cfg = parse_config(block, "docs.toml", check_paths=False)
    assert cfg.engines[0].options == {"depth": 3, "movetime": 0} and cfg.engines[0].args == {"seed": 7}
    assert cfg.engines[0].argv()[-2:] == ["--seed", "7"]
    assert cfg.adjudication is not None and cfg.adjudication.max_plies == 400


def test_pin_is_refused_where_the_system_cannot_pin(monkeypatch):
    import os

    monkeypatch.delattr(os, "sched_setaffinity")
    text = GOOD.replace("seed = 42", "seed = 42\npin = true")
    message = err(text)
    assert message.startswith(f"t.toml:{line_of(text, 'pin =')}: pin: pinning to cores needs Linux"), message


def test_an_output_named_jsonl_is_refused_with_the_key_and_the_line(tmp_path):
    """The database's export is written beside it as .jsonl: ``output = "r.jsonl"`` would make the
    export lines go into the database itself (they did, and the export was lost)."""
    text = GOOD.replace("seed = 42", f'seed = 42\noutput = "{tmp_path / "r.jsonl"}"')
    message = err(text)
    assert message.startswith(f"t.toml:{line_of(text, 'output =')}: output: {tmp_path / 'r.jsonl'}: the results "
                              f"database's export is written beside it"), message
    assert not (tmp_path / "r.jsonl").exists()


def test_an_output_that_is_a_folder_names_the_key_and_the_line(tmp_path):
    """``output = "results"`` where results is a folder: the key, the line and a file name to give
    (before: SQLite's "unable to open database file", put on the tournament file's name)."""
    text = GOOD.replace("seed = 42", f'seed = 42\noutput = "{tmp_path}"')
    message = err(text)
    assert message.startswith(f"t.toml:{line_of(text, 'output =')}: output: {tmp_path} is a folder"), message
    assert f'"{tmp_path / "results.sqlite"}"' in message



@pytest.mark.parametrize("name, shown", [(r"a\nb", r"'\n' at position 2"), (r"\u001b[31mred", r"'\x1b' at position 1"),
                                         (r"evil\u202eexe", r"'\u202e' at position 5"),
                                         (r"a\u2028b", r"'\u2028' at position 2")])
def test_an_engine_name_with_a_control_character_is_refused(name, shown):
    """Engine names go on one line into records, text exports, tables and logs: a newline or an
    escape sequence in one forged lines or colours there (before, any string was taken)."""
    text = GOOD.replace('name = "b"', f'name = "{name}"')
    assert err(text) == f"t.toml:{line_of(text, name)}: engines[1].name: must not hold a control character or " \
                        f"line break ({shown})"


def test_a_tournament_name_with_a_line_break_is_refused():
    """It heads the report, the export's Event tag and the web page, on one line."""
    text = GOOD.replace('name = "Test event"', 'name = "olympiad\\nforged line"')
    assert err(text) == "t.toml:1: name: must not hold a control character or line break ('\\n' at position 9)"


def test_control_characters_in_engine_names_are_refused_by_check_and_arbiter_match(tmp_path):
    """Through the commands, in real processes: one error line naming the key (and the line), exit
    2 as for every bad file or flag; an engines file's entry too; nothing started or written."""
    import os
    import subprocess

    env = {**os.environ, "COLUMNS": "300"}

    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", *argv], cwd=tmp_path, capture_output=True, text=True,
                              timeout=60, env=env)

    event = tmp_path / "t.toml"
    event.write_text(GOOD.replace('name = "c"', r'name = "c\r"'))
    checked = run("tournaments", "check", str(event))
    assert checked.returncode == 2, checked.stdout + checked.stderr
    line = line_of(GOOD, 'name = "c"')
    assert checked.stderr == f"error: {event}:{line}: engines[2].name: must not hold a " \
                             f"control character or line break ('\\r' at position 2)\n"
    shared = tmp_path / "engines.toml"
    shared.write_text('[[engines]]\nname = "x\\ty"\ncommand = "{python} -m sample_engines.random_engine"\n')
    event.write_text(GOOD.replace("seed = 42", f'seed = 42\nengines_file = "{shared}"'))
    checked = run("tournaments", "check", str(event))
    assert checked.returncode == 2 and checked.stderr.startswith(f"error: {shared}:2: engines[0].name: must not hold"), \
        checked.stderr
    played = run("arbiter.cli", "match", "--game", "einstein", "--engine", "{python} -m sample_engines.random_engine",
                 "--engine", "{python} -m sample_engines.random_engine", "--name", "one", "--name", "two\nlines")
    assert played.returncode == 2, played.stdout + played.stderr
    assert played.stderr == "error: --name 'two\\nlines' (engine 2): must not hold a control character or line " \
                            "break ('\\n' at position 4)\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["engines.toml", "t.toml"]


def check_under_limits(path: Path) -> "subprocess.CompletedProcess":
    """``arbiter-tournament check`` in a process of at most 1 GB of address space and a minute: an
    event planned game by game runs out of either, and fails, instead of taking the machine."""
    import os
    import resource
    import subprocess

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    return subprocess.run([sys.executable, "-m", "tournaments", "check", str(path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, preexec_fn=limit, env={**os.environ, "COLUMNS": "300"})


SIZED = """\
game = "einstein"
format = "{format}"
match = "games=2"
{extra}
output = "{output}"

[[engines]]
name = "a"
command = "{{python}} -m sample_engines.random_engine --seed 1"

[[engines]]
name = "b"
command = "{{python}} -m sample_engines.random_engine --seed 2"
"""


@pytest.mark.parametrize("fmt, extra, key, total", [
    ("round_robin", "rounds = 9223372036854775807", "rounds", "18,446,744,073,709,551,614"),
    ("gauntlet", "rounds = 5000001", "rounds", "10,000,002"),
    ("knockout", "tiebreak_blocks = 9223372036854775807", "tiebreak_blocks", "18,446,744,073,709,551,616"),
    ("knockout", "tiebreak_games = 9999999", "tiebreak_games", "29,999,999"),
])
def test_an_event_of_absurdly_many_games_is_refused_at_once(tmp_path, fmt, extra, key, total):
    """Before: ``check`` (and ``run``) planned every game of ``rounds = 9223372036854775807`` until
    the machine ran out of memory. Now one line names the key, the line and the total."""
    path = tmp_path / "t.toml"
    path.write_text(SIZED.format(format=fmt, extra=extra, output=tmp_path / "t.sqlite"))
    checked = check_under_limits(path)
    assert checked.returncode == 2, checked.stdout + checked.stderr[-2000:]
    assert checked.stderr.startswith(f"error: {path}:{line_of(path.read_text(), key)}: {key}: the event would have "
                                     f"up to {total} games "), checked.stderr
    assert checked.stderr.endswith("; at most 10,000,000\n") and checked.stderr.count("\n") == 1
    assert checked.stdout == "" and not (tmp_path / "t.sqlite").exists()


def test_an_event_of_100000_games_is_still_checked(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text(SIZED.format(format="round_robin", extra="rounds = 50000", output=tmp_path / "t.sqlite"))
    checked = check_under_limits(path)
    assert checked.returncode == 0, checked.stdout + checked.stderr[-2000:]
    assert "at most 100000 games" in checked.stdout and "every engine started and said hello" in checked.stdout


@pytest.mark.parametrize("text, words", [
    ("bo0", "a match is of at least one game (bo1"),
    ("games=0", "a match is of at least one game (games=1"),
    ("bo3:ab", "the schedule must have one letter (A/B) per game (3)"),
    ("bo", "expected 'olympiad', 'boN'"),
])
def test_a_match_format_of_no_games_or_a_short_schedule_says_which(text, words):
    """Before: bo0 said 'the schedule must have one letter (A/B) per game (0)' and games=0 only
    listed the forms; neither said that a match needs a game."""
    from arbiter.formats.match import MatchFormat

    with pytest.raises(ValueError) as caught:
        MatchFormat.parse(text)
    assert words in str(caught.value)


UNUSED = """\
name = "unused"
game = "einstein"
format = "round_robin"
match = "games=2"
time_control = "60"
seed = 5
bye_points = 0.5
tiebreak_games = 4
output = "t.sqlite"

[[engines]]
name = "a"
command = "{python} -m sample_engines.random_engine --seed 1"

[[engines]]
name = "b"
command = "{python} -m sample_engines.random_engine --seed 2"
"""


def test_a_setting_its_format_ignores_is_refused_for_a_new_event_and_warned_of_on_resume(tmp_path):
    """bye_points outside Swiss, tiebreak_* outside knockout, seeding outside both were accepted
    and ignored without a word. Now `check` and `run` refuse a new event with them (the file, the
    line and the key); an event started before that (its stored file has them) still resumes and
    finishes, warning of each. Real commands, real engines, a real database."""
    import dataclasses
    import os
    import subprocess

    from tournaments import api

    env = {**os.environ, "COLUMNS": "300"}

    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "tournaments", *argv], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120, env={**env, "PYTHONPATH": str(ROOT)})

    event = tmp_path / "t.toml"
    event.write_text(UNUSED)
    bye = (f"{event}:{line_of(UNUSED, 'bye_points')}: bye_points: only a Swiss event gives byes, and format is "
           f"'round_robin': remove it (it would change nothing)")
    tiebreak = (f"{event}:{line_of(UNUSED, 'tiebreak_games')}: tiebreak_games: only a knockout plays tie-breaks, "
                f"and format is 'round_robin': remove it (it would change nothing)")
    checked = run("check", str(event))
    assert checked.returncode == 2 and checked.stderr == f"error: {bye}\nerror: {tiebreak}\n", checked.stderr
    started = run("run", str(event))
    assert started.returncode == 2 and started.stderr == f"error: {bye} (and 1 more such)\n", started.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.toml"]  # nothing started, nothing written

    # An event started before such settings were refused: its stored file has them.
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        api.start(dataclasses.replace(load_config(event), unused=[])).db.close()
    finally:
        os.chdir(cwd)
    for target in ("t.toml", "t.sqlite"):
        resumed = run("resume", target)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        warnings = [line for line in resumed.stderr.splitlines() if line.startswith("warning: ")]
        where = "t.toml" if target == "t.toml" else str(event)
        assert [w.split(": ", 2)[1:] for w in warnings if "bye_points" in w or "tiebreak" in w] == [
            [f"{where}:{line_of(UNUSED, 'bye_points')}", "bye_points: only a Swiss event gives byes, and format is "
             "'round_robin': remove it (it would change nothing); ignored (this event was started before such "
             "settings were refused)"],
            [f"{where}:{line_of(UNUSED, 'tiebreak_games')}", "tiebreak_games: only a knockout plays tie-breaks, and "
             "format is 'round_robin': remove it (it would change nothing); ignored (this event was started before "
             "such settings were refused)"]], resumed.stderr
    import sqlite3
    conn = sqlite3.connect(tmp_path / "t.sqlite")
    assert conn.execute("SELECT count(*) FROM games").fetchone()[0] == 2
    conn.close()
    # The file may drop them as the warning says: they are not part of what a resume compares.
    event.write_text(UNUSED.replace("bye_points = 0.5\n", "").replace("tiebreak_games = 4\n", ""))
    resumed = run("resume", "t.toml")
    assert resumed.returncode == 0 and "bye_points" not in resumed.stderr, resumed.stdout + resumed.stderr
    # Where its format uses them they are fine.
    assert not parse_config(GOOD.replace("seed = 42", "seed = 42\nbye_points = 0.5\nseeding = \"random\""),
                            "t.toml").unused


ODD = """\
name = "odd"
game = "einstein"
format = "knockout"
match = "bo3"
tiebreak_games = 1
time_control = "60"
seed = 5
openings = "{layouts}"
output = "t.sqlite"

[[engines]]
name = "a"
command = "{{python}} -m sample_engines.random_engine --seed 1"

[[engines]]
name = "b"
command = "{{python}} -m sample_engines.random_engine --seed 2"
"""


def test_an_odd_number_of_games_with_openings_is_warned_of_by_check_run_and_resume(tmp_path):
    """Openings are played twice, seats swapped; a match of an odd number of games (bo3) plays
    its last game's position once, with one seating, and so does each tie-break block of one
    game. Nothing said so. Now check, run and resume warn, naming the file, the line and the key;
    the event plays as before. Real commands, real engines."""
    import os
    import subprocess

    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "tournaments", *argv], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120, env={**os.environ, "COLUMNS": "300", "PYTHONPATH": str(ROOT)})

    text = ODD.format(layouts=ROOT / "tournaments" / "examples" / "einstein_layouts.txt")
    event = tmp_path / "t.toml"
    event.write_text(text)
    once = "with openings, the last game's position is played once, with one seating (not twice, seats swapped)"
    expected = [f"warning: {event}:{line_of(text, 'match = ')}: match: 3 games per match: {once}; an even number "
                f"plays every position twice",
                f"warning: {event}:{line_of(text, 'tiebreak_games')}: tiebreak_games: 1 games per tie-break block: "
                f"in each block, {once}"]
    checked = run("check", str(event))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert [line for line in checked.stderr.splitlines() if line.startswith("warning: ")
            and "sandbox" not in line] == expected, checked.stderr
    assert "each played twice with the seats swapped, the last game's once (3 games per match)" in checked.stdout
    (tmp_path / "even.toml").write_text(text.replace('match = "bo3"', 'match = "games=4"'))
    even = run("check", str(tmp_path / "even.toml"))
    assert even.returncode == 0 and "openings: " in even.stdout, even.stdout + even.stderr
    assert "each played twice with the seats swapped\n" in even.stdout, even.stdout
    for argv in (("run", str(event)), ("resume", str(event))):
        played = run(*argv)
        assert played.returncode == 0, played.stdout + played.stderr
        assert [line for line in played.stderr.splitlines() if line.startswith("warning: ")
                and "sandbox" not in line] == expected, played.stderr
    # An even number of games, and blocks of two: nothing to say.
    even = text.replace('match = "bo3"', 'match = "games=2"').replace("tiebreak_games = 1", "tiebreak_games = 2")
    assert parse_config(even, "t.toml").notices == []


def test_elo_settings_in_an_event_without_elo_are_refused_naming_the_line():
    """anchor and [sprt] rate two-seat competitive games only: a table game's file took them and
    ignored them; now they are named like any setting the event ignores (refused by check and run,
    a warning on resume)."""
    text = ('game = "aachess"\ngame_options = { seats = 3 }\ngames = 3\nanchor = "a"\n\n[sprt]\nelo0 = 0\n'
            'elo1 = 20\n' + "".join(f'\n[[engines]]\nname = "{x}"\ncommand = "x"\n' for x in "abc"))
    cfg = parse_config(text, "t.toml")
    assert cfg.unused == [
        f"t.toml:{line_of(text, 'anchor')}: anchor: only two-seat competitive games get Elo ratings to anchor, and "
        f"aachess has table games: remove it (it would change nothing)",
        f"t.toml:{line_of(text, '[sprt]')}: sprt: only two-seat competitive games get a GSPRT, and aachess has "
        f"table games: remove it (it would change nothing)"]
    assert not parse_config(GOOD.replace("seed = 42", 'seed = 42\nanchor = "a"'), "t.toml").unused
