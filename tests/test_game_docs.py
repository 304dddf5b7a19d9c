"""The repository is self-contained: every registered game has its complete rules in
``docs/games/<game>.md`` (a reader of the repository alone must be able to write an engine), and
no file refers to a path outside the repository."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from arbiter.games import game_names, load_game

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "games"
SPEC = (ROOT / "protocol" / "SPEC.md").read_text(encoding="utf-8")

OUTSIDE = re.compile("|".join(re.escape(p) for p in ("/" + "work/", ".." + "/shared", "shared/" + "rules")))
"""Paths that lead out of the repository (written in pieces so that this file does not match)."""
SKIPPED_DIRS = {".git", ".venv", "__pycache__", ".pytest_cache", "runs", "node_modules"}


def repository_files() -> list[Path]:
    """The files the repository holds: git's tracked files when this is a checkout (not stray
    engine logs or results a local run left behind), else every file under the root outside
    build and cache folders."""
    if (ROOT / ".git").exists() and shutil.which("git"):
        out = subprocess.run(["git", "ls-files", "-z", "--cached"],
                             cwd=ROOT, capture_output=True, check=True).stdout
        return [ROOT / name for name in out.decode().split("\0") if name and (ROOT / name).is_file()]
    return [p for p in ROOT.rglob("*") if p.is_file() and not SKIPPED_DIRS & set(p.relative_to(ROOT).parts)
            and not any(part.endswith(".egg-info") for part in p.relative_to(ROOT).parts)]


@pytest.mark.parametrize("name", game_names())
def test_every_game_has_its_rules_document(name):
    doc = DOCS / f"{name}.md"
    assert doc.is_file(), f"game {name!r} has no rules document {doc.relative_to(ROOT)}"
    text = doc.read_text(encoding="utf-8")
    assert text.startswith(f"# `{name}`"), f"{doc.name} should open with the game's name"
    assert f"docs/games/{name}.md" in SPEC, f"protocol/SPEC.md does not point engine authors to {doc.name}"
    for option in load_game(name).options:
        assert f"`{option}`" in text, f"{doc.name} does not document the option {option!r}"


def test_no_rules_document_without_a_game():
    assert sorted(p.stem for p in DOCS.glob("*.md")) == game_names()


def test_no_file_refers_to_a_path_outside_the_repository():
    files = repository_files()
    assert len(files) > 50 and Path(__file__) in files  # the listing itself works
    found = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary files
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    assert not found, "references to paths outside the repository:\n" + "\n".join(found)


def test_the_pattern_catches_what_it_is_for():
    for line in ("see /" + "work/notes.md", "rules in .." + "/shared/x.md", "the shared/" + "rules/ folder"):
        assert OUTSIDE.search(line)
    assert not OUTSIDE.search("docs/games/smess.md and ../docs/games/einstein.md")


@pytest.mark.parametrize("name", game_names())
def test_game_info_is_plain_data_and_documented(name):
    """What ``new_game.game_info`` carries is plain msgpack data, well under the message limit,
    and a game that sends any documents it."""
    import msgspec

    from protocol.codec import MAX_MESSAGE_SIZE

    info = load_game(name).game_info()
    assert isinstance(info, dict)
    assert msgspec.msgpack.decode(msgspec.msgpack.encode(info)) == info
    assert len(msgspec.msgpack.encode(info)) < MAX_MESSAGE_SIZE // 8
    if info:
        text = (DOCS / f"{name}.md").read_text(encoding="utf-8")
        assert "game_info" in text and all(f"game_info.{key}" in text for key in info), name


def test_arbiter_games_says_each_games_kind_options_and_rules():
    """``arbiter games``: one line per game, its name first (scripts take the first word);
    ``arbiter games NAME``: every option with its default and what it takes (the same words an
    ``OptionError`` ends with), and the rules document; an unknown name is exit 2 naming the known."""
    import sys

    def run(*args):
        return subprocess.run([sys.executable, "-m", "arbiter.cli", "games", *args], cwd=ROOT, capture_output=True,
                              text=True, timeout=60)

    listed = run()
    assert listed.returncode == 0 and [line.split()[0] for line in listed.stdout.splitlines()] == game_names()
    assert "catalonia    2 seat(s), cooperative" in listed.stdout and "stalingrad   1 seat(s), solo" in listed.stdout
    one = run("aachess")
    assert one.returncode == 0 and one.stdout.startswith("aachess: 2-5 seat(s), competitive (general-sum)")
    assert f"rules and notation: {DOCS / 'aachess.md'}" in one.stdout
    options = {line.split()[0]: line for line in one.stdout.splitlines() if line.startswith("  ")}
    assert sorted(options) == sorted(load_game("aachess").options)
    assert "seats = 2" in options["seats"] and options["seats"].endswith("2, 3, 4 or 5")
    with pytest.raises(Exception, match="seats must be 2, 3, 4 or 5"):
        load_game("aachess", seats=7)
    unknown = run("chess")
    assert unknown.returncode == 2 and "unknown game 'chess'" in unknown.stderr and "einstein" in unknown.stderr
