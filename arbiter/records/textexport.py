"""A compact text export of game records (PGN-like) and a CSV export, and their import.

The text form keeps what a game *is* (who played which seat, the moves in the game's notation,
the dice seed and commitment, the result and why) and drops how it was played (timings, clocks,
engine info, chain links, signatures). Import replays the moves through the rules, re-deriving
every roll from the recorded seed, so a reconstructed record holds exactly the original game;
anything that does not fit (an illegal move, a die the seed does not give, a result the rules do
not give) is refused with the file, line and game named. docs/records.md, "Text and CSV export".
"""
from __future__ import annotations

import csv
import glob
import hashlib
import io
import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TextIO

import msgspec
import psutil
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from protocol.messages import EndReason

from ..dice import Dice, commitment
from ..games import CHANCE, SIMULTANEOUS, IllegalMove, OptionError, load_game
from .record import Event, GameRecord, signed_bytes
from .signing import Signer, check_signature, key_id
from .store import ResultsStore

TEXT_FORMATS = ("text", "csv")


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _unix(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@dataclass(frozen=True)
class Tag:
    name: str
    kind: str
    """``str``, ``int`` (may be empty: None), ``json`` (list or object) or ``time`` (ISO 8601 UTC)."""
    get: Callable[[GameRecord], Any]


TAGS = (
    Tag("Event", "str", lambda r: r.event_id),
    Tag("Match", "str", lambda r: r.match_id),
    Tag("GameNumber", "int", lambda r: r.game_number),
    Tag("GameId", "str", lambda r: r.game_id),
    Tag("Game", "str", lambda r: r.game),
    Tag("Options", "json", lambda r: r.options),
    Tag("Players", "json", lambda r: r.players),
    Tag("Seats", "json", lambda r: r.seat_roles),
    Tag("Result", "json", lambda r: r.returns),
    Tag("Reason", "str", lambda r: str(r.reason)),
    Tag("Detail", "str", lambda r: r.detail),
    Tag("ForfeitSeat", "int", lambda r: r.forfeit_seat),
    Tag("Date", "time", lambda r: r.started_at),
    Tag("Ended", "time", lambda r: r.ended_at),
    Tag("TimeControl", "str", lambda r: r.time_control),
    Tag("Margin", "int", lambda r: r.margin_ms),
    Tag("DiceStream", "str", lambda r: r.dice_stream),
    Tag("DiceCommitment", "str", lambda r: r.dice_commitment),
    Tag("DiceSeed", "str", lambda r: r.dice_seed),
    Tag("Plies", "int", lambda r: len(r.events)),
)
TAG_NAMES = [t.name for t in TAGS]
OPTIONAL_TAGS = (
    Tag("ForfeitSeats", "seats", lambda r: r.forfeit_seats or None),
)
"""Tags a game has only when their value is set (text: no line; CSV: an empty cell); the digest
covers them only then, so the digests of games without them are those of earlier exports."""
OPTIONAL_NAMES = [t.name for t in OPTIONAL_TAGS]
SEAL = ("Digest", "KeyId", "Signature")
"""After the tags: SHA-256 of the game's content (``content_bytes``), and with ``--key`` the
referee key's id and its Ed25519 signature of ``seal_statement(digest)``."""
_KINDS = {t.name: t.kind for t in TAGS + OPTIONAL_TAGS} | {name: "str" for name in SEAL}
TEXT_FORMAT = "arbiter-text/1"


def record_tags(r: GameRecord) -> dict[str, Any]:
    """The tag values of a record as written (times as ISO 8601 text; optional tags when set)."""
    return {t.name: _iso(t.get(r)) if t.kind == "time" else t.get(r) for t in TAGS} \
        | {t.name: value for t in OPTIONAL_TAGS if (value := t.get(r)) is not None}


def content_bytes(tags: dict[str, Any], steps: list[tuple[bool, str]]) -> bytes:
    """What a game's digest covers: every tag value and every step (roll or move), as compact
    JSON; the same for the text and CSV forms of a game, however its lines are wrapped."""
    body = [TEXT_FORMAT, [tags[n] for n in TAG_NAMES], [[c, m] for c, m in steps]]
    if optional := {n: tags[n] for n in OPTIONAL_NAMES if tags.get(n) is not None}:
        body.append(optional)
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def seal_statement(digest: str) -> bytes:
    return f"{TEXT_FORMAT}|{digest}".encode()


def seal(r: GameRecord, signer: Signer | None) -> dict[str, str]:
    """The game's digest, and with ``signer`` its signature. A record the referee signed is sealed
    only if its own signature holds under that key: signing the export must never turn a record
    edited after the game (``arbiter verify`` names it) into one an import takes as the referee's.
    ValueError, naming the game, otherwise."""
    digest = hashlib.sha256(content_bytes(record_tags(r), [(e.seat < 0, e.move) for e in r.events])).hexdigest()
    if signer is None:
        return {"Digest": digest, "KeyId": "", "Signature": ""}
    if r.signature and (r.key_id != signer.key_id or not check_signature(signer.public, signed_bytes(r),
                                                                          r.signature)):
        why = (f"is signed with key {r.key_id or '(none)'}, not {signer.key_id}" if r.key_id != signer.key_id
               else "does not match its signature: it was edited after the game")
        raise ValueError(f"game {r.game_id} ({r.match_id} game {r.game_number}) {why}; not signing it "
                         f"(arbiter verify names every such game)")
    return {"Digest": digest, "KeyId": signer.key_id, "Signature": signer.sign(seal_statement(digest))}

# A move is written bare when it has no blank, quote, bracket or parenthesis, else as a JSON string;
# a chance outcome (a die) is written in parentheses.
_WORD = r'"(?:[^"\\]|\\.)*"|[^\s()"\[\]]+'
_BARE = re.compile(r'[^\s()"\[\]]+')
_TOKEN = re.compile(rf'\s*(?:\((?P<chance>{_WORD})\)|(?P<move>{_WORD}))')
_TAG_LINE = re.compile(r'\[(?P<name>[A-Za-z]+) (?P<value>.*)\]\s*')


class TextImportError(ValueError):
    """A game that cannot be rebuilt; the message names the file, line and game."""


def _word(text: str) -> str:
    return text if _BARE.fullmatch(text) else json.dumps(text, ensure_ascii=False)


def movetext(record: GameRecord) -> list[str]:
    """The game's steps as words: decisions bare (or quoted), dice in parentheses."""
    return [f"({_word(e.move)})" if e.seat < 0 else _word(e.move) for e in record.events]


def _wrap(words: list[str], width: int = 79) -> list[str]:
    lines, line = [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}" if line else w
    return lines + ([line] if line else [])


def to_text(records: Iterable[GameRecord], signer: Signer | None = None) -> Iterable[str]:
    """One block per game: tag lines, then the moves wrapped at 79 columns; a blank line between."""
    first = True
    for r in records:
        if not first:
            yield "\n"
        first = False
        tags = record_tags(r) | {k: v for k, v in seal(r, signer).items() if v}
        for name, value in tags.items():
            yield f"[{name} {json.dumps(value, ensure_ascii=False)}]\n"
        for line in _wrap(movetext(r)):
            yield line + "\n"


def _cell(kind: str, value: Any) -> str:
    if kind == "json" or (kind == "seats" and value is not None):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else str(value)


def to_csv(records: Iterable[GameRecord], signer: Signer | None = None) -> Iterable[str]:
    """One row per game: the tags as columns (lists and objects as JSON), ``Moves``, the seal."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(TAG_NAMES + OPTIONAL_NAMES + ["Moves", *SEAL])
    for r in records:
        tags = record_tags(r)
        writer.writerow([_cell(t.kind, tags.get(t.name)) for t in TAGS + OPTIONAL_TAGS] + [" ".join(movetext(r))]
                        + list(seal(r, signer).values()))
        yield buf.getvalue()
        buf.seek(0)
        buf.truncate()
    if buf.getvalue():
        yield buf.getvalue()


# --- reading ------------------------------------------------------------------------------------

@dataclass
class Step:
    chance: bool
    text: str
    line: int


@dataclass
class TextGame:
    """One game as read from a file, with the line of every tag and move (for messages)."""

    source: str
    line: int
    tags: dict[str, Any] = field(default_factory=dict)
    tag_lines: dict[str, int] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)

    def where(self, line: int | None = None) -> str:
        t = self.tags
        name = f"game {t.get('GameId', '?')} ({t.get('Match', '?')} game {t.get('GameNumber', '?')})"
        return f"{self.source}:{line or self.line}: {name}"


def _unword(text: str) -> str:
    return json.loads(text) if text.startswith('"') else text


def _steps(text: str, line: int, source: str) -> list[Step]:
    out, pos = [], 0
    while pos < len(text):
        if not text[pos:].strip():
            break
        m = _TOKEN.match(text, pos)
        if not m:
            raise TextImportError(f"{source}:{line}: cannot read the moves from {text[pos:].strip()[:40]!r}")
        try:
            word = _unword(m.group("chance") or m.group("move"))
        except ValueError:
            raise TextImportError(f"{source}:{line}: a quoted move is not a valid JSON string") from None
        out.append(Step(m.group("chance") is not None, word, line))
        pos = m.end()
    return out


def _typed(kind: str, value: Any, where: str, name: str) -> Any:
    if kind == "int":
        if value is None or value == "":
            return None
        if isinstance(value, str) and re.fullmatch(r"-?\d+", value):
            return int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif kind == "str" and isinstance(value, str):
        return value
    elif kind == "seats":  # a list of seat numbers, or nothing
        if value is None or value == "":
            return None
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                pass
        if isinstance(value, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in value):
            return value
    elif kind == "time" and isinstance(value, str):
        try:
            _unix(value)
            return value
        except ValueError:
            pass
    elif kind == "json":
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                pass
        if isinstance(value, (list, dict)):
            return value
    raise TextImportError(f"{where}: tag {name} has a bad value {value!r}")


def read_text(data: Iterable[str], source: str) -> Iterator[TextGame]:
    """The games of a text export (its lines), each once its block is read (TextImportError when
    it cannot be)."""
    game: TextGame | None = None
    for lineno, line in enumerate(data, 1):
        line = line.rstrip("\r\n")
        if not line.strip():
            if game is not None:
                yield game
            game = None
            continue
        if game is None:
            game = TextGame(source, lineno)
        m = _TAG_LINE.fullmatch(line.strip()) if line.lstrip().startswith("[") else None
        if m:
            if game.steps:
                raise TextImportError(f"{game.where(lineno)}: tag line after the moves (a blank line must "
                                   f"separate games)")
            name = m.group("name")
            if name not in _KINDS:
                raise TextImportError(f"{game.where(lineno)}: unknown tag {name}")
            try:
                value = json.loads(m.group("value"))
            except ValueError:
                raise TextImportError(f"{game.where(lineno)}: tag {name}: the value is not JSON") from None
            game.tags[name] = _typed(_KINDS[name], value, game.where(lineno), name)
            game.tag_lines[name] = lineno
        elif line.lstrip().startswith("["):
            raise TextImportError(f"{game.where(lineno)}: cannot read the tag line {line.strip()[:60]!r}")
        else:
            game.steps += _steps(line, lineno, source)
    if game is not None:
        yield game


def read_csv(data: Iterable[str], source: str) -> Iterator[TextGame]:
    """The games of a CSV export (a file opened with ``newline=""``), a row at a time; ValueError
    at once for a header that is not one."""
    reader = csv.reader(data)
    header = next(reader, None)
    if header is None:
        return iter(())
    unknown = [h for h in header if h not in _KINDS and h != "Moves"]
    if unknown or "Moves" not in header:
        raise ValueError(f"{source}:1: not an arbiter CSV export (columns {', '.join(unknown) or 'without Moves'})")
    return _csv_rows(reader, header, source)


def _csv_rows(reader, header: list[str], source: str) -> Iterator[TextGame]:
    line = reader.line_num
    for row in reader:
        start, line = line + 1, reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        game = TextGame(source, start)
        if len(row) != len(header):
            raise TextImportError(f"{source}:{start}: {len(row)} columns, the header has {len(header)}")
        for name, cell in zip(header, row):
            if name == "Moves":
                game.steps = _steps(cell, start, source)
            else:
                game.tags[name] = _typed(_KINDS[name], cell, game.where(), name)
                game.tag_lines[name] = start
        yield game


def read_games(data: str | TextIO, source: str) -> Iterator[TextGame]:
    """Games from a text export (starts with a tag line) or a CSV export (starts with its header),
    one at a time, from its text or from the file (opened with ``newline=""``: read as the games
    are, never whole); ValueError at once for a file that is neither, TextImportError (as the
    games are read) for one that is broken inside."""
    stream = io.StringIO(data, newline="") if isinstance(data, str) else data
    start = stream.tell()
    head = stream.read(1 << 16).lstrip()
    stream.seek(start)
    if head[:1] == "[":
        return read_text(stream, source)
    if head.startswith("Event,") or head.startswith('"Event"'):
        return read_csv(stream, source)
    raise ValueError(f"{source}:1: neither a text export (tag lines in brackets) nor a CSV export "
                       f"(header Event,Match,...)")


# --- rebuilding ---------------------------------------------------------------------------------

def rebuild(g: TextGame) -> GameRecord:
    """The full record of a game read from an export: its moves replayed through the rules and
    its dice re-derived from the seed. TextImportError names the line of the first thing that does
    not fit."""
    t = g.tags
    missing = [name for name in TAG_NAMES + ["Digest"] if name not in t]
    if missing:
        raise TextImportError(f"{g.where()}: missing tag(s) {', '.join(missing)}")

    def at(name: str) -> str:
        return g.where(g.tag_lines.get(name))

    try:
        game = load_game(t["Game"], **t["Options"])
    except (OptionError, TypeError) as exc:
        raise TextImportError(f"{at('Options')}: {exc}") from None
    if not all(isinstance(x, str) for x in t["Players"] + t["Seats"]):
        raise TextImportError(f"{at('Players')}: players and seats must be lists of names")
    if len(t["Players"]) != game.num_seats or len(t["Seats"]) != game.num_seats:
        raise TextImportError(f"{at('Players')}: {len(t['Players'])} players and {len(t['Seats'])} seats for a "
                           f"{game.num_seats}-seat game")
    try:
        seed = bytes.fromhex(t["DiceSeed"])
    except ValueError:
        raise TextImportError(f"{at('DiceSeed')}: the dice seed is not hex") from None
    if commitment(seed) != t["DiceCommitment"]:
        raise TextImportError(f"{at('DiceSeed')}: sha256 of the dice seed does not match the dice commitment")
    dice = Dice(seed, t["DiceStream"])
    state = game.new_initial_state()
    events: list[Event] = []
    steps, i = g.steps, 0

    def add(event: Event) -> None:
        note = state.event_note()
        if note:
            event.note = note
        events.append(event)

    while i < len(steps) and not state.is_terminal():
        step, p = steps[i], state.current_player()
        if p == CHANCE:
            if not step.chance:
                raise TextImportError(f"{g.where(step.line)}: a roll was due, the file has the move {step.text!r}")
            outcomes = state.chance_outcomes()
            outcome = outcomes[dice.roll(len(outcomes))]
            if str(outcome) != step.text:
                raise TextImportError(f"{g.where(step.line)}: roll {len(dice.rolls) - 1} gives ({outcome}) by the "
                                   f"dice seed, the file says ({step.text})")
            state.apply_chance(outcome)
            add(Event(ply=len(events), seat=-1, kind="chance", move=str(outcome), roll=len(dice.rolls) - 1))
            i += 1
            continue
        seats = state.acting_seats() if p == SIMULTANEOUS else [p]
        group = steps[i:i + len(seats)]
        moves: dict[int, str] = {}
        kinds: dict[int, str] = {}
        for seat, s in zip(seats, group):
            if s.chance:
                raise TextImportError(f"{g.where(s.line)}: seat {seat} was to decide, the file has a roll ({s.text})")
            kinds[seat] = state.decision_kind(seat)
            try:
                state.check_move(s.text, seat)
            except IllegalMove as exc:
                raise TextImportError(f"{g.where(s.line)}: move {i + 1 + len(moves)} {s.text!r} (seat {seat} "
                                   f"{kinds[seat]}) is illegal: {exc}") from None
            moves[seat] = s.text
        if len(moves) < len(seats):
            raise TextImportError(f"{g.where(group[-1].line if group else None)}: seats {seats} decide together, "
                               f"the file ends after {len(moves)} of their decisions")
        if len(seats) == 1:
            state.apply(moves[seats[0]])
        else:
            state.apply_joint(moves)
        for seat in seats:
            add(Event(ply=len(events), seat=seat, kind=kinds[seat], move=moves[seat]))
        i += len(seats)
    if i < len(steps):
        raise TextImportError(f"{g.where(steps[i].line)}: the game is over by the rules before {steps[i].text!r}")

    returns, reason, seat, forfeiters = t["Result"], t["Reason"], t["ForfeitSeat"], t.get("ForfeitSeats")
    try:
        reason = EndReason(reason)
        returns = [float(x) for x in returns]
    except (TypeError, ValueError):
        raise TextImportError(f"{at('Reason')}: reason {reason!r} or result {returns!r} is not one the referee "
                           f"writes") from None
    if reason == "normal":
        if not state.is_terminal():
            last = steps[-1].line if steps else None
            raise TextImportError(f"{g.where(last)}: the moves end before the game does, and the file says it ended "
                               f"normally")
        if list(state.returns()) != returns:
            raise TextImportError(f"{at('Result')}: the file says the result is {t['Result']}, "
                               f"the moves give {list(state.returns())}")
        if state.end_detail() != t["Detail"]:
            raise TextImportError(f"{at('Detail')}: the file says {t['Detail']!r}, the moves give "
                               f"{state.end_detail()!r}")
        if seat is not None or forfeiters is not None:
            raise TextImportError(f"{at('ForfeitSeat')}: a forfeiting seat in a game that ended normally")
    else:
        if state.is_terminal():
            raise TextImportError(f"{at('Reason')}: the file says {reason}, but the game ended normally by the rules")
        if seat is None or not 0 <= seat < game.num_seats:
            raise TextImportError(f"{at('ForfeitSeat')}: reason {reason} needs the forfeiting seat")
        if forfeiters is not None and (forfeiters != sorted(set(forfeiters)) or len(forfeiters) < 2
                                       or forfeiters[0] != seat or forfeiters[-1] >= game.num_seats):
            raise TextImportError(f"{at('ForfeitSeats')}: ForfeitSeats {forfeiters} does not list two or more "
                                  f"seats from the forfeiting seat {seat} up")
        if game.forfeits_returns(forfeiters or [seat]) != returns:
            raise TextImportError(f"{at('Result')}: the file says the result is {t['Result']}, a forfeit by "
                                  f"seat{'s' if forfeiters else ''} {forfeiters or seat} gives "
                                  f"{game.forfeits_returns(forfeiters or [seat])}")
    digest = hashlib.sha256(content_bytes(t, [(s.chance, s.text) for s in steps])).hexdigest()
    if digest != t["Digest"]:
        raise TextImportError(f"{at('Digest')}: the game was edited after export: its tags and moves no longer "
                              f"match its digest (a move or tag changed where the rules cannot tell)")
    if t["Plies"] != len(events):
        raise TextImportError(f"{at('Plies')}: the file says {t['Plies']} plies, its moves and rolls are {len(events)}")
    try:
        return GameRecord(
            game_id=t["GameId"], match_id=t["Match"], game_number=t["GameNumber"], game=game.name,
            options=dict(game.options), players=list(t["Players"]), seat_roles=list(t["Seats"]),
            time_control=t["TimeControl"], margin_ms=t["Margin"] or 0, started_at=_unix(t["Date"]),
            ended_at=_unix(t["Ended"]),
            events=events, rolls=list(dice.rolls), returns=returns, reason=reason, detail=t["Detail"],
            forfeit_seat=seat, forfeit_seats=forfeiters or msgspec.UNSET, final_position=state.to_text(),
            dice_stream=t["DiceStream"],
            dice_commitment=t["DiceCommitment"], dice_seed=t["DiceSeed"])
    except (TypeError, ValueError) as exc:
        raise TextImportError(f"{g.where()}: {exc}") from None


class SealCheck:
    """The export's seals, a game at a time. With ``public_key``: every game must be signed by it
    (``check`` raises TextImportError naming the first that is not). Without: ``notes`` says what
    was not checked."""

    def __init__(self, public_key: Ed25519PublicKey | None):
        self.public_key = public_key
        self.kid = key_id(public_key) if public_key is not None else None
        self.signed: set[str] = set()
        self.unsigned = 0

    def check(self, g: TextGame) -> None:
        if not g.tags.get("Signature"):
            self.unsigned += 1
        else:
            self.signed.add(g.tags.get("KeyId", ""))
        if self.public_key is None:
            return
        where = g.where(g.tag_lines.get("Signature", g.tag_lines.get("Digest")))
        if not g.tags.get("Signature"):
            raise TextImportError(f"{where}: not signed (the export was made without --key)")
        if g.tags.get("KeyId") != self.kid:
            raise TextImportError(f"{where}: signed with key {g.tags.get('KeyId') or '(none)'}, not with {self.kid}")
        if not check_signature(self.public_key, seal_statement(g.tags["Digest"]), g.tags["Signature"]):
            raise TextImportError(f"{where}: the signature does not match the digest: the game was edited")

    def notes(self) -> list[str]:
        if self.public_key is not None:
            return [f"export signatures checked against key {self.kid}"]
        notes = [f"export signatures not checked (key {', '.join(sorted(self.signed))}): give --public-key"] \
            if self.signed else []
        if self.unsigned:
            notes.append(f"{self.unsigned} game(s) carry a digest but no signature: an edit that also recomputes "
                         f"the digest cannot be told from the original")
        return notes


IMPORT_BATCH = 256
"""Games rebuilt, then saved in one transaction (one fsync), at a time."""


def remove_dead_imports(db_path: Path) -> list[Path]:
    """Remove what imports into ``db_path`` killed with -9 left (``NAME.importing-PID`` and its
    export, WAL and shared memory) once their process is gone; an import still running, or a
    file of any other name, is never touched. Returns the files removed."""
    prefix = f"{db_path.stem}.importing-"
    tails = {db_path.suffix, f"{db_path.suffix}-wal", f"{db_path.suffix}-shm", ".jsonl"}
    removed = []
    for path in db_path.parent.glob(glob.escape(prefix) + "*"):
        found = re.fullmatch(r"(\d+)(.*)", path.name[len(prefix):], re.S)
        if found is None or found.group(2) not in tails:
            continue
        pid = int(found.group(1))
        if pid != os.getpid() and psutil.pid_exists(pid):
            continue
        path.unlink(missing_ok=True)
        removed.append(path)
    return removed


def import_games(games: Iterable[TextGame], db_path: str | Path, signer: Signer | None = None,
                 public_key: Ed25519PublicKey | None = None) -> tuple[int, list[str], str | None]:
    """Rebuild every game and check its seal, then save them in file order into a new results
    database: chained anew (each game in its match's chain and, with an ``Event`` tag, in that
    event's) and signed with ``signer`` if given. Rebuilt ``IMPORT_BATCH`` at a time into the
    database and export under an ``.importing-PID`` name, renamed once every game fitted: nothing is
    written if one does not (TextImportError), and memory holds a batch of games, not the
    file's (a 20,000-game file took 524 MB rebuilt whole). Returns (games, notes, storage problem)."""
    seals = SealCheck(public_key)
    count = 0
    db_path = Path(db_path)
    if db_path.suffix == ".jsonl":
        raise ValueError(f"{db_path}: the database's export is written beside it as .jsonl; name the "
                         f"database otherwise (e.g. {db_path.with_suffix('.sqlite')})")
    building = db_path.with_name(f"{db_path.stem}.importing-{os.getpid()}{db_path.suffix}")
    export = db_path.with_name(f"{db_path.stem}.importing-{os.getpid()}.jsonl")
    leftovers = (building, export, Path(f"{building}-wal"), Path(f"{building}-shm"))
    remove_dead_imports(db_path)  # a killed import's of this process id too: its half is not continued
    stores: dict[str, ResultsStore] = {}
    problems: list[str] = []
    finished = False

    def save(event_id: str, records: list[GameRecord]) -> bool:
        if event_id not in stores:
            stores[event_id] = ResultsStore(building, export, signer=signer, event_id=event_id)
        return stores[event_id].save_games(records)

    def close() -> None:
        for store in stores.values():
            store.close()
            if store.problem:
                problems.append(store.problem)

    def discard() -> None:
        """No database, no half of one (nor the store's copy of unsaved games: the file imported is one)."""
        for leftover in (*leftovers, *(s.fallback for s in stores.values() if s.fallback is not None)):
            leftover.unlink(missing_ok=True)

    try:
        event_id, run = "", []  # consecutive games of one event (or of none), in file order
        for g in games:
            seals.check(g)
            count += 1
            if run and (g.tags["Event"] != event_id or len(run) >= IMPORT_BATCH):
                if not save(event_id, run):
                    break
                run = []
            event_id = g.tags["Event"]
            run.append(rebuild(g))
        else:
            finished = not run or save(event_id, run)
    except BaseException:  # a game that does not fit (TextImportError)
        close()
        discard()
        raise
    close()
    if not finished and not problems:
        problems.append(f"{building}: the games could not be saved")
    if finished and not problems and stores:
        os.replace(export, db_path.with_suffix(".jsonl"))
        os.replace(building, db_path)
    else:
        discard()
    return count, seals.notes(), "; ".join(problems) or None
