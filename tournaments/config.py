"""The tournament file: one TOML document describes a whole tournament (docs/tournaments.md).

``load_config(path)`` returns a validated ``TournamentConfig`` or raises ``ConfigError`` whose
message names the file, the line and the key (``olympiad.toml:12: engines[1].command: ...``).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from arbiter.adjudication import Adjudication
from arbiter.clock import DEFAULT_MARGIN_MS, parse_time_control
from arbiter.dice import shared_dice_remembered
from arbiter.enginefile import (ENGINE_KEYS, Checker, ConfigError, EngineDefaults, EnginesFile, EngineSpec,
                                check_limits, check_sandbox, engine_name, engine_options, engine_spec, name_problem,
                                toml_document)
from arbiter.formats.match import MAX_GAMES, MatchFormat
from arbiter.games import Game, OptionError, Utility, load_game
from arbiter.hosting import Limits
from arbiter.openings import ORDERS, OpeningsError, parse_openings
from arbiter.records import Opening
from protocol.messages import TimeControl

from .director import ScheduleSpec

__all__ = ["ConfigError", "EngineSpec", "TournamentConfig", "load_config", "parse_config", "game_kind"]

FORMATS = ("round_robin", "double_round_robin", "gauntlet", "swiss", "knockout")
TWO_SEAT_ONLY = ("swiss", "knockout")

TOP_KEYS = {
    "name": "display name (default: the file name)",
    "game": "game name (required)",
    "game_options": "table of game options",
    "format": "|".join(FORMATS),
    "match": "match format per pairing of a two-seat game: olympiad, boN[:ABBA..], games=N",
    "games": "games per table / team / engine for multi-seat, cooperative and solo games",
    "rounds": "rounds (swiss) or cycles (round robin, gauntlet)",
    "time_control": "time control, e.g. 180, 180+2, st=1, inf",
    "margin_ms": "ms an engine may overrun before losing on time",
    "concurrency": "games played in parallel (default: the number of cores)",
    "pin": "run each worker and its engines on one core, the workers round robin over the cores (default false; "
           "faster short games, docs/tournaments.md)",
    "rating_interval": "print standings, ratings, rate and ETA every N committed games (0: never, the default)",
    "scale_time_control": "cluster: scale each worker's time control by its measured speed (default false)",
    "cluster": "play on a Dask cluster: a scheduler address (tcp://host:8786) or local:N (N worker processes here)",
    "seed": "tournament seed (string or integer): schedule and dice derive from it",
    "seed_file": "file holding the tournament seed instead of 'seed' (mode 600: engines must not read it)",
    "key_file": "the referee's secret key (arbiter keygen): every record is signed with it",
    "output": "SQLite results database",
    "duplicate_dice": "play games in pairs on the same dice with seats swapped",
    "seeding": "order | random: initial ranking for swiss and knockout",
    "candidates": "gauntlet: names of the engines that play everyone else",
    "tiebreak_games": "knockout: games per tie-break block",
    "tiebreak_blocks": "knockout: tie-break blocks before the higher seed advances",
    "self_pairs": "cooperative games: also pair each engine with a copy of itself",
    "bye_points": "swiss: match points for a bye",
    "restart": "default for engines: start a fresh engine process for every game",
    "sandbox": "default for engines: auto | required | none (SECURITY.md)",
    "on_start_failure": "stop (default: every engine is started once before the first game; one that cannot "
                        "start stops the event, exit 3) | forfeit (its games are lost, 'not_started')",
    "ponder": "default for engines: may they think on the opponent's time (default false: stopped)",
    "limits": "default engine limits: memory_mb, processes, open_files, log_mb, log_total_mb, info_chars, disk_mb",
    "anchor": "rating anchor: 'engine name' or {engine = 'name', elo = 1500}",
    "sprt": "table: elo0, elo1, alpha, beta (logistic Elo)",
    "adjudication": "table: max_plies, resign_moves, resign_score (end games early; docs/tournaments.md)",
    "engines": "array of tables [[engines]], or of names of engines in engines_file",
    "engines_file": "a file of [[engines]] tables shared by events: refer to them by name",
    "openings": "a file of start positions, one per line: each is played by every pairing twice, seats swapped",
    "openings_order": "sequential (default) | shuffled (by the tournament seed)",
    "remote": "table: roster, server_key, listen, wait, grace, insecure, lag_move_ms, lag_quota_ms (remote participants)",
}
REMOTE_KEYS = {
    "roster": "TOML roster of the remote participants (required with remote engines)",
    "server_key": "the referee's CURVE key file (arbiter keygen referee-curve); required unless insecure",
    "listen": "where participants connect (default tcp://0.0.0.0:7340)",
    "wait": "seconds from the start of a run that participants may take to connect; later: absent",
    "grace": "seconds a disconnected participant may take to come back (default 30)",
    "insecure": "plain tcp without CURVE (shouted, recorded in every record)",
    "lag_move_ms": "network lag compensated per decision at most (default 250)",
    "lag_quota_ms": "network lag compensated per game at most (default 5000)",
}
ADJUDICATION_KEYS = {
    "max_plies": "end a game still going after this many decisions (rolls not counted): scored as the game scores "
                 "an unfinished one, a draw unless its rules say otherwise",
    "resign_moves": "resign rule (two-seat zero-sum games): consecutive moves per engine the scores must agree for",
    "resign_score": "resign rule: the winner reports at least this score and the loser at most minus it",
}
SPRT_KEYS = {"elo0": "", "elo1": "", "alpha": "", "beta": "",
             "stop": "true: end the tournament (two engines) when the head-to-head GSPRT accepts H0 or H1"}


@dataclass
class RemoteSpec:
    roster: Path
    server_key: Path | None
    listen: str = "tcp://0.0.0.0:7340"
    wait: float = 300.0
    grace: float = 30.0
    insecure: bool = False
    lag_move_ms: int = 250
    lag_quota_ms: int = 5000


@dataclass
class SprtSpec:
    elo0: float = -3.0
    elo1: float = 1.0
    alpha: float = 0.05
    beta: float = 0.05
    stop: bool = False
    """The SPRT decides: no game is started once it has accepted a hypothesis (``tournaments.runner``)."""


@dataclass
class TournamentConfig:
    name: str
    tid: str
    """Tournament id: a slug of the name. Part of every match id and dice stream."""
    game: str
    game_options: dict[str, Any]
    num_seats: int
    kind: str
    """``match`` (two-seat competitive), ``table`` (3+ seats), ``team`` (cooperative), ``solo``:
    ``game_kind`` of the game."""
    format: str
    match_text: str
    match: MatchFormat | None
    games: int
    rounds: int
    time_control: TimeControl
    margin_ms: int
    concurrency: int
    seed: str | None
    output: Path
    duplicate_dice: bool
    seeding: str
    candidates: list[int]
    tiebreak_games: int
    tiebreak_blocks: int
    self_pairs: bool
    bye_points: float
    anchor: tuple[int, float] | None
    sprt: SprtSpec
    engines: list[EngineSpec]
    sprt_given: bool = False
    source_text: str = ""
    source_path: str = ""
    seed_file: Path | None = None
    """Where ``seed`` was read from (then the seed is secret: not printed)."""
    key_file: Path | None = None
    on_start_failure: str = "stop"
    rating_interval: int = 0
    """Print standings and ratings every this many committed games (0: never)."""
    remote: RemoteSpec | None = None
    """The listening side for remote participants (``[remote]``), if any engine is remote."""
    adjudication: Adjudication | None = None
    """``[adjudication]``: the rules that end games early (``arbiter.adjudication``), if any."""
    openings: list[Opening] = field(default_factory=list)
    """The openings file's positions in file order (``play_order`` gives the order games take them)."""
    openings_order: str = "sequential"
    included: dict[str, str] = field(default_factory=dict)
    """The texts of the files the tournament file names (engines_file, openings), stored with it."""
    cluster: str | None = None
    """Where the games are played: None (local worker processes) or a Dask cluster (``tournaments.cluster``)."""
    scale_time_control: bool = False
    """Cluster backend: each worker's time control × (director's speed / worker's speed), recorded."""
    pin: bool = False
    """Local workers: each runs, with its engines, on one core (``arbiter.hosting.pin_process``)."""
    notices: list[str] = field(default_factory=list)
    """``FILE:LINE: key: ...`` warnings that ``check``, ``run`` and ``resume`` print: with openings, an
    odd number of games leaves the last game's position played once, with one seating."""
    unused: list[str] = field(default_factory=list)
    """Settings given that this event never uses (``bye_points`` outside Swiss, ``anchor`` for a
    table game, ...: ``FORMAT_KEYS``, ``KIND_KEYS``): one
    ``FILE:LINE: key: why`` each. A new event is refused with them (``api.claim``, ``check``);
    an event started before they were refused resumes with a warning (they change none of its games)."""

    def fingerprint(self) -> str:
        """A hash of everything that decides which games are played and how: a resume refuses a
        file whose fingerprint differs from the one stored with the tournament. Concurrency,
        output and engine commands (and limits: ``engine_play``) may change between runs."""
        return hashlib.sha256(json.dumps(self.fingerprinted(), sort_keys=True, default=str).encode()).hexdigest()[:16]

    def fingerprinted(self) -> dict[str, Any]:
        """What ``fingerprint`` hashes, by name (a refused resume names what changed)."""
        data = dict(game=self.game, game_options=self.game_options, format=self.format, match=self.match_text,
                    games=self.games, rounds=self.rounds, tc=self.time_control.text, margin=self.margin_ms,
                    duplicate=self.duplicate_dice, seeding=self.seeding, candidates=self.candidates,
                    tiebreak=[self.tiebreak_games, self.tiebreak_blocks], self_pairs=self.self_pairs,
                    bye=self.bye_points, engines=[e.name for e in self.engines], tid=self.tid)
        for key, name in (("seeding", "seeding"), ("tiebreak_games", "tiebreak"), ("bye_points", "bye")):
            if self.format not in FORMAT_KEYS[key][0]:  # changes nothing here: a file may drop it on resume
                del data[name]
        if self.adjudication:  # decides how games end (absent otherwise: fingerprints unchanged)
            data["adjudication"] = msgspec.structs.asdict(self.adjudication)
        if self.openings:  # which positions are played (absent otherwise: fingerprints unchanged)
            data["openings"] = [[o.index, o.position] for o in self.openings] + [self.openings_order]
        if self.sprt.stop:  # the SPRT decides which games are played (absent otherwise: fingerprints unchanged)
            data["sprt_stop"] = [self.sprt.elo0, self.sprt.elo1, self.sprt.alpha, self.sprt.beta]
        for e in self.engines:  # how it plays: one name must not cover two strengths (absent if default)
            if play := engine_play(e):
                data[f"engine {e.name}"] = play
        return data


def engine_play(spec: EngineSpec) -> dict[str, Any]:
    """The settings of an engine that change how it plays, those not at their defaults: ``options``,
    ``args`` (flags), ``restart`` (state kept between games) and ``ponder``. Its command, cwd, env,
    limits, cpus, sandbox and timeouts may change between runs (a moved program, a machine's limits)."""
    play: dict[str, Any] = {}
    if spec.options:
        play["options"] = dict(spec.options)
    if spec.args:
        play["args"] = dict(spec.args)
    if spec.restart:
        play["restart"] = True
    if spec.ponder:
        play["ponder"] = True
    return play


def default_concurrency() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def slug(text: str) -> str:
    s = re.sub(r"[^A-Za-z0-9._-]+", "-", text.strip()).strip("-")
    return s[:48] or "tournament"


def _remote(c: "Checker", doc: dict, source: str, check_paths: bool):
    """The ``[remote]`` table (and its roster, loaded when paths are checked), or (None, None)."""
    table = c.get(doc, "remote", (), dict, None)
    if table is None:
        return None, None
    p = ("remote",)
    c.unknown_keys(table, REMOTE_KEYS, p)
    roster_path = Path(c.get(table, "roster", p, str))
    insecure = c.get(table, "insecure", p, bool, False)
    key = c.get(table, "server_key", p, str, None)
    if key is None and not insecure:
        raise c.error(p, "missing required key 'server_key' in [remote] (arbiter keygen referee-curve), "
                         "or insecure = true")
    spec = RemoteSpec(roster=roster_path, server_key=Path(key) if key else None,
                      listen=c.get(table, "listen", p, str, RemoteSpec.listen),
                      wait=float(c.get(table, "wait", p, (int, float), RemoteSpec.wait)),
                      grace=float(c.get(table, "grace", p, (int, float), RemoteSpec.grace)), insecure=insecure,
                      lag_move_ms=c.get(table, "lag_move_ms", p, int, RemoteSpec.lag_move_ms),
                      lag_quota_ms=c.get(table, "lag_quota_ms", p, int, RemoteSpec.lag_quota_ms))
    from arbiter.hosting.remote import listen_problem  # ZeroMQ's module: loaded for a remote event only

    if problem := listen_problem(spec.listen):
        raise c.error(p + ("listen",), problem)
    for k in ("wait", "grace", "lag_move_ms", "lag_quota_ms"):
        if getattr(spec, k) < 0:  # (nan, inf: refused by the checker, as for every number)
            raise c.error(p + (k,), "must not be negative")
    if not check_paths:
        return spec, None
    from arbiter.hosting.remote import Roster, RosterError
    from protocol.curve import KeyFileError, load_keypair

    try:
        roster = Roster.load(roster_path)
    except RosterError as exc:
        raise c.error(p + ("roster",), str(exc)) from None
    if spec.server_key is not None and not insecure:
        try:
            load_keypair(spec.server_key)
        except KeyFileError as exc:
            raise c.error(p + ("server_key",), str(exc)) from None
    return spec, roster


def _adjudication(c: "Checker", doc: dict, game: Game) -> Adjudication | None:
    """The ``[adjudication]`` table, checked against the game (the resign rule: two-seat zero-sum only)."""
    table = c.get(doc, "adjudication", (), dict, None)
    if table is None:
        return None
    p = ("adjudication",)
    c.unknown_keys(table, ADJUDICATION_KEYS, p)
    rules = Adjudication(max_plies=c.get(table, "max_plies", p, int, 0),
                         resign_moves=c.get(table, "resign_moves", p, int, 0),
                         resign_score=float(c.get(table, "resign_score", p, (int, float), 0)))
    if problem := rules.problem(game):
        raise c.error(p + (problem[0],), problem[1])
    return rules or None


def game_kind(game: Game) -> str:
    """How a tournament pairs engines for ``game``, read from its ``GameType``: ``solo``, ``team``
    (cooperative: identical returns), else ``match`` (two seats) or ``table`` (3+ seats)."""
    utility = game.game_type.utility
    if utility is Utility.SOLO:
        return "solo"
    if utility is Utility.IDENTICAL:
        return "team"
    return "match" if game.num_seats == 2 else "table"


def read_seed_file(path: Path, error) -> str:
    """The tournament seed from ``path``; refused (``error(message)`` is raised) when group or
    others may read it: engines run as other users and must not learn the dice."""
    try:
        mode = path.stat().st_mode
        text = path.read_text().strip()
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    if mode & 0o044:
        raise error(f"{path}: readable by group or others (mode {mode & 0o777:o}); chmod 600 it")
    if not text:
        raise error(f"{path}: empty")
    return text


def load_config(path: str | Path, text: str | None = None, check_paths: bool = True) -> TournamentConfig:
    """Read and validate a tournament file (``text`` overrides reading ``path``)."""
    path = Path(path)
    if text is None:
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
        if raw.startswith(b"SQLite format 3\0"):  # `run DB` meant as `resume DB`: not "not UTF-8 text"
            raise ConfigError(f"{path}: a SQLite database, not a tournament file (TOML); `resume {path}` continues "
                              f"a tournament from its database, `report {path}` reports it")
        if raw.lstrip()[:1] == b"{":  # no TOML document starts so: an export's line ("TOML syntax error")
            raise ConfigError(f"{path}: a JSON file (records of an export?), not a tournament file (TOML); `resume` "
                              f"takes the tournament's file or its .sqlite database")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:  # TOML is UTF-8: say where it is not
            line = raw.count(b"\n", 0, exc.start) + 1
            raise ConfigError(f"{path}:{line}: not UTF-8 text (byte 0x{raw[exc.start]:02x}); a tournament file "
                              f"is UTF-8") from None
    return parse_config(text, str(path), check_paths=check_paths)


def _included_text(c: Checker, key: str, name: str, included: dict[str, str] | None, what: str) -> str:
    """The text of the file ``name`` that key ``key`` names: from ``included`` (the copy stored
    with a started tournament) when given, else read now."""
    if included is not None and name in included:
        return included[name]
    try:
        return Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise c.error((key,), f"{name}: cannot read the {what}: {getattr(exc, 'strerror', None) or exc}") from None


def _engines_file(c: Checker, doc: dict, included: dict[str, str] | None, read: dict[str, str]) -> EnginesFile | None:
    name = c.get(doc, "engines_file", (), str, None)
    if name is None:
        return None
    text = _included_text(c, "engines_file", name, included, "engines file")
    read[name] = text
    return EnginesFile.parse(text, name)


def _openings(c: Checker, doc: dict, game: Game, included: dict[str, str] | None,
              read: dict[str, str]) -> tuple[list[Opening], str]:
    """The openings file's positions (checked against the game) and their order, or ([], order)."""
    order = c.get(doc, "openings_order", (), str, "sequential")
    if order not in ORDERS:
        raise c.error(("openings_order",), f"expected {' or '.join(repr(o) for o in ORDERS)}, got {order!r}")
    name = c.get(doc, "openings", (), str, None)
    if name is None:
        if "openings_order" in doc:
            raise c.error(("openings_order",), "needs openings = \"FILE\"")
        return [], order
    text = _included_text(c, "openings", name, included, "openings file")
    read[name] = text
    try:
        return parse_openings(text, game, name), order
    except OpeningsError as exc:
        raise ConfigError(str(exc)) from None


FORMAT_KEYS = {
    "bye_points": (("swiss",), "only a Swiss event gives byes"),
    "tiebreak_games": (("knockout",), "only a knockout plays tie-breaks"),
    "tiebreak_blocks": (("knockout",), "only a knockout plays tie-breaks"),
    "seeding": (("swiss", "knockout"), "only Swiss and knockout events rank their engines before the first round"),
}
"""Keys that only some formats use: (the formats, why the others ignore them)."""


KIND_KEYS = {
    "anchor": "only two-seat competitive games get Elo ratings to anchor",
    "sprt": "only two-seat competitive games get a GSPRT",
}
"""Keys that only two-seat competitive events (``kind == "match"``) use, and why the others ignore them."""


def _unused(c: Checker, doc: dict, fmt: str, kind: str, game: str) -> list[str]:
    """``FILE:LINE: key: why`` for each key in ``doc`` that this event would ignore."""
    out = [str(c.error((key,), f"{why}, and format is {fmt!r}: remove it (it would change nothing)"))
           for key, (formats, why) in FORMAT_KEYS.items() if key in doc and fmt not in formats]
    if kind != "match":
        out += [str(c.error((key,), f"{why}, and {game} has {kind} games: remove it (it would change nothing)"))
                for key, why in KIND_KEYS.items() if key in doc]
    return out


def _single_openings(c: Checker, doc: dict, kind: str, fmt: str, match: MatchFormat | None, games: int,
                     tb_games: int) -> list[str]:
    """With openings every position is played twice, seats swapped; an odd number of games
    leaves the last one's position played once, with one seating: a warning naming the key."""
    out = []
    once = "with openings, the last game's position is played once, with one seating (not twice, seats swapped)"
    if kind == "match" and match.games % 2:
        out.append(str(c.error(("match",), f"{match.games} games per match: {once}; an even number plays "
                                            f"every position twice")))
    if kind == "match" and fmt == "knockout" and tb_games % 2:
        out.append(str(c.error(("tiebreak_games",) if "tiebreak_games" in doc else ("format",),
                               f"{tb_games} games per tie-break block: in each block, {once}")))
    if kind == "team" and games % 2:
        out.append(str(c.error(("games",) if "games" in doc else ("game",),
                               f"{games} games per team: {once}")))
    return out


def _check_size(c: Checker, spec: ScheduleSpec) -> None:
    """Refuse an event of more than ``MAX_GAMES`` games (the bound of one match), counted without
    planning it: the director plans every game, and ``rounds = 9223372036854775807`` ate all the
    memory in ``check``. The error names the key that, made small, brings the count down."""
    per, meetings, cycles = spec.most_games()
    total = per * meetings * cycles
    if total <= MAX_GAMES:
        return
    if per * meetings * (cycles // spec.rounds) <= MAX_GAMES:
        key = "rounds"
    elif spec.format == "knockout" and spec.match.games * meetings <= MAX_GAMES:
        key = "tiebreak_games" if spec.tiebreak_games > spec.tiebreak_blocks else "tiebreak_blocks"
    elif meetings <= MAX_GAMES:
        key = "match" if spec.kind == "match" else "games"
    else:
        key = "engines"
    raise c.error((key,), f"the event would have up to {total:,} games ({meetings:,} pairing(s) x {per:,} games x "
                          f"{cycles:,} cycle(s)); at most {MAX_GAMES:,}")


def parse_config(text: str, source: str = "<tournament>", check_paths: bool = True,
                 included: dict[str, str] | None = None) -> TournamentConfig:
    """``included``: the texts of the files the tournament file names (engines_file, openings) as
    stored with the tournament, read instead of the files (which may have moved or changed)."""
    doc = toml_document(text, source)
    c = Checker(source, text)
    read: dict[str, str] = {}  # the texts of the files it names, stored with the tournament
    c.unknown_keys(doc, TOP_KEYS, ())

    game_name = c.get(doc, "game", (), str)
    game_options = c.get(doc, "game_options", (), dict, {})
    try:
        game = load_game(game_name, **game_options)
    except OptionError as exc:
        # the option the message names first (an unknown one is named before the list of known ones)
        found = ((m.start(), k) for k in game_options if (m := re.search(rf"\b{re.escape(k)}\b", str(exc))))
        bad = [k for _, k in sorted(found)]
        if "unknown game" in str(exc):
            raise c.error(("game",), str(exc)) from None
        raise c.error(("game_options", bad[0]) if bad else ("game_options",), str(exc)) from None
    except Exception as exc:  # a broken game module: still say where the game was named
        raise c.error(("game",), f"cannot load game {game_name!r}: {exc}") from None

    name = c.get(doc, "name", (), str, Path(source).stem)
    if not name.strip():
        raise c.error(("name",), "must not be empty (leave it out for the file's name)")
    if problem := name_problem(name):  # it heads reports, exports and the web page, on one line
        raise c.error(("name",), problem)
    openings, openings_order = _openings(c, doc, game, included, read)
    fmt = c.get(doc, "format", (), str, "round_robin")
    if fmt not in FORMATS:
        raise c.error(("format",), f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    num_seats, kind = game.num_seats, game_kind(game)
    if fmt in TWO_SEAT_ONLY and kind != "match":
        raise c.error(("format",), f"{fmt} needs a two-seat competitive game; {game_name} is "
                                   f"{'cooperative' if kind == 'team' else f'{num_seats}-seat'}")
    if fmt == "double_round_robin" and kind != "match":
        raise c.error(("format",), f"double_round_robin is for two-seat competitive games; use 'games' (or "
                                   f"'rounds') for {kind} games")

    match_text = c.get(doc, "match", (), str, "games=2")
    match = None
    if kind == "match":
        try:
            match = MatchFormat.parse(match_text)
        except ValueError as exc:
            raise c.error(("match",), str(exc)) from None
    elif "match" in doc:
        raise c.error(("match",), f"'match' is for two-seat competitive games; use 'games' for {kind} games")

    games = c.get(doc, "games", (), int, num_seats if kind == "table" else 2 if kind == "team" else 10)
    if games < 1:
        raise c.error(("games",), "must be at least 1")
    if kind == "table" and games % num_seats:
        raise c.error(("games",), f"must be a multiple of the number of seats ({num_seats}) so that every "
                                  f"engine sits in every seat equally often")
    if kind == "match" and "games" in doc:
        raise c.error(("games",), "for a two-seat game the games per pairing come from 'match' (e.g. games=4)")
    rounds = c.get(doc, "rounds", (), int, ... if fmt == "swiss" else 1)
    if rounds < 1:
        raise c.error(("rounds",), "must be at least 1")
    if fmt == "knockout" and "rounds" in doc:
        raise c.error(("rounds",), "a knockout has as many rounds as its bracket needs; remove 'rounds'")

    tc_text = c.get(doc, "time_control", (), (str, int, float), "180")
    try:
        tc = parse_time_control(str(tc_text))
    except ValueError as exc:
        raise c.error(("time_control",), str(exc)) from None
    margin = c.get(doc, "margin_ms", (), int, DEFAULT_MARGIN_MS)
    if margin < 0:
        raise c.error(("margin_ms",), "must not be negative")
    concurrency = c.get(doc, "concurrency", (), int, None)
    if concurrency is not None and concurrency < 1:
        raise c.error(("concurrency",), f"must be at least 1 (leave it out for one game per core), got {concurrency}")
    concurrency = concurrency or default_concurrency()
    rating_interval = c.get(doc, "rating_interval", (), int, 0)
    if rating_interval < 0:
        raise c.error(("rating_interval",), f"must be 0 (never) or a number of games, got {rating_interval}")
    cluster = c.get(doc, "cluster", (), str, None)
    if cluster is not None:
        from .cluster import parse_cluster

        try:
            cluster = parse_cluster(cluster)
        except ValueError as exc:
            raise c.error(("cluster",), str(exc)) from None
    seed = c.get(doc, "seed", (), (str, int), None)
    seed = None if seed is None else str(seed)
    if seed is not None and not seed.strip():  # as guessable as a seed gets; a seed_file may not be empty either
        raise c.error(("seed",), "must not be empty (leave it out for a random seed)")
    seed_file = c.get(doc, "seed_file", (), str, None)
    if seed_file is not None:
        if seed is not None:
            raise c.error(("seed_file",), "give 'seed' or 'seed_file', not both")
        seed_file = Path(seed_file)
        if check_paths:
            seed = read_seed_file(seed_file, lambda msg: c.error(("seed_file",), msg))
    key_file = c.get(doc, "key_file", (), str, None)
    key_file = Path(key_file) if key_file is not None else None
    if key_file is not None and check_paths and not key_file.is_file():
        raise c.error(("key_file",), f"{key_file}: no such file (make one with `arbiter keygen`)")
    output = Path(c.get(doc, "output", (), str, f"runs/{slug(name)}.sqlite"))
    if check_paths and output.is_dir():
        raise c.error(("output",), f"{output} is a folder: name the results file (e.g. \"{output / 'results.sqlite'}\")")
    if output.suffix == ".jsonl":
        raise c.error(("output",), f"{output}: the results database's export is written beside it as .jsonl; "
                                   f"name the database otherwise (e.g. \"{output.with_suffix('.sqlite')}\")")
    duplicate = c.get(doc, "duplicate_dice", (), bool, False) or bool(openings)  # a position's games share dice
    seeding = c.get(doc, "seeding", (), str, "order")
    if seeding not in ("order", "random"):
        raise c.error(("seeding",), f"expected 'order' or 'random', got {seeding!r}")
    tb_games = c.get(doc, "tiebreak_games", (), int, 2)
    tb_blocks = c.get(doc, "tiebreak_blocks", (), int, 3)
    if tb_games < 1 or tb_blocks < 0:
        raise c.error(("tiebreak_games" if tb_games < 1 else "tiebreak_blocks",), "out of range")
    self_pairs = c.get(doc, "self_pairs", (), bool, False)
    if self_pairs and kind != "team":
        raise c.error(("self_pairs",), "only cooperative games pair an engine with itself")
    bye_points = float(c.get(doc, "bye_points", (), (int, float), 1.0))
    default_restart = c.get(doc, "restart", (), bool, False)
    default_sandbox = check_sandbox(c, doc, ())
    default_ponder = c.get(doc, "ponder", (), bool, False)
    default_limits = check_limits(c, doc, (), Limits())
    on_start_failure = c.get(doc, "on_start_failure", (), str, "stop")
    if on_start_failure not in ("stop", "forfeit"):
        raise c.error(("on_start_failure",), f"expected 'stop' or 'forfeit', got {on_start_failure!r}")

    sprt_table = c.get(doc, "sprt", (), dict, {})
    c.unknown_keys(sprt_table, SPRT_KEYS, ("sprt",))
    sprt = SprtSpec(**{k: float(c.get(sprt_table, k, ("sprt",), (int, float), getattr(SprtSpec, k)))
                       for k in SPRT_KEYS if k != "stop"}, stop=c.get(sprt_table, "stop", ("sprt",), bool, False))
    if not sprt.elo0 < sprt.elo1:
        raise c.error(("sprt", "elo1"), "elo1 must be greater than elo0")
    for k in ("alpha", "beta"):
        if not 0 < getattr(sprt, k) < 0.5:
            raise c.error(("sprt", k), "must be between 0 and 0.5")

    adjudication = _adjudication(c, doc, game)
    remote_spec, roster = _remote(c, doc, source, check_paths)
    defaults = EngineDefaults(restart=default_restart, sandbox=default_sandbox, ponder=default_ponder,
                              limits=default_limits)
    engines_file = _engines_file(c, doc, included, read)
    raw_engines = c.get(doc, "engines", (), list, ..., what="an array of tables [[engines]]")
    engines: list[EngineSpec] = []
    seen: dict[str, int] = {}
    for i, e in enumerate(raw_engines):
        p = ("engines", i)
        named = isinstance(e, str)  # engines = ["a", "b"]: the engines file's
        if named:
            e = {"use": e}
        if not isinstance(e, dict):
            raise c.error(p, "each engine must be a table ([[engines]] or {name = ..., command = ...}), "
                             "or the name of an engine in engines_file")
        c.unknown_keys(e, ENGINE_KEYS, p)
        use = c.get(e, "use", p, str, None)
        file_options_at = None
        if use is not None:
            where = p if named else p + ("use",)
            if engines_file is None:
                raise c.error(where, f"engine {use!r}: no engines_file to take it from")
            if use not in engines_file.tables:
                raise c.error(where, engines_file.unknown(use))
            if "remote" in e:
                raise c.error(p + ("remote",), "an engine of the engines_file runs here; remote engines are "
                                               "[[engines]] tables with name and remote")
            spec = engines_file.spec(use, defaults, check_paths)  # its own keys, errors at its own line
            if "options" not in e:  # (the event's own options replace the file's, and are at the event's lines)
                file_options_at = spec.options_at
            e = {**engines_file.tables[use][1], **{k: v for k, v in e.items() if k != "use"}}
        ename = engine_name(c, e, p)
        if ename in seen:
            raise c.error(p + ("name",), f"duplicate engine name {ename!r} (also engines[{seen[ename]}])")
        seen[ename] = i
        remote = c.get(e, "remote", p, str, None)
        if remote is not None:
            if "command" in e:
                raise c.error(p + ("remote",), "give command or remote, not both")
            if remote_spec is None:
                raise c.error(p + ("remote",), "a remote engine needs the [remote] table (roster, server_key)")
            if roster is not None and roster.find(remote) is None:
                raise c.error(p + ("remote",), f"{remote!r} is not in the roster {remote_spec.roster}")
            options = engine_options(c, e, p, "options")
            engines.append(EngineSpec(name=ename, command=[], remote=remote, options=options,
                                      options_at={k: c.where(p + ("options", k)) for k in options},
                                      ready_timeout=c.seconds(e, "ready_timeout", p, 10.0),
                                      limits=check_limits(c, e, p, default_limits)))
            continue
        engines.append(engine_spec(c, e, p, defaults, check_paths))
        if file_options_at is not None:
            engines[-1].options_at = file_options_at

    n = len(engines)
    need = {"solo": 1, "team": 1 if self_pairs else 2, "match": 2, "table": num_seats}[kind]
    if n < need:
        raise c.error(("engines",), f"{game_name} needs at least {need} engine(s) for this format; the file lists {n}")
    names = [e.name for e in engines]
    cand_names = c.get(doc, "candidates", (), list, [])
    candidates = []
    for j, cn in enumerate(cand_names):
        if cn not in names:
            raise c.error(("candidates", j), f"no engine named {cn!r}; engines: {', '.join(names)}")
        if names.index(cn) in candidates:
            raise c.error(("candidates", j), f"{cn!r} is listed twice")
        candidates.append(names.index(cn))
    if fmt == "gauntlet":
        candidates = candidates or [0]
        if kind == "solo":
            raise c.error(("format",), "solo games have no opponents; use round_robin (every engine plays the suite)")
        if len(candidates) >= n:
            raise c.error(("candidates",), "a gauntlet needs at least one engine that is not a candidate")
        if kind == "table" and n - len(candidates) < num_seats - 1:
            raise c.error(("candidates",), f"each gauntlet table needs {num_seats - 1} opponents")
        if self_pairs:
            raise c.error(("self_pairs",), "a gauntlet pairs each candidate with the other engines only; "
                                           "self_pairs is for round_robin")
    elif cand_names:
        raise c.error(("candidates",), "candidates are for format = \"gauntlet\"")
    if fmt == "swiss":
        max_rounds = n - 1 if n % 2 == 0 else n
        if rounds > max_rounds:
            raise c.error(("rounds",), f"{n} engines can play at most {max_rounds} swiss round{'s' if max_rounds != 1 else ''} "
                                       f"(more would need repeat pairings)")

    _check_size(c, ScheduleSpec(tid="", n=n, kind=kind, num_seats=num_seats, format=fmt, match=match, games=games,
                                rounds=rounds, candidates=tuple(candidates or (0,)), tiebreak_games=tb_games,
                                tiebreak_blocks=tb_blocks, self_pairs=self_pairs))

    pin = c.get(doc, "pin", (), bool, False)
    if pin and not hasattr(os, "sched_setaffinity"):
        raise c.error(("pin",), "pinning to cores needs Linux")
    if pin and cluster is not None:
        raise c.error(("pin",), "pins this machine's workers; a cluster's workers are placed by the cluster")
    if pin and remote_spec is not None and any(e.remote for e in engines):
        raise c.error(("pin",), "remote engines run elsewhere, and one worker referees all their games: "
                                "nothing to pin")
    if pin and (pondering := [e.name for e in engines if e.ponder and not e.cpus]):
        raise c.error(("pin",), f"{', '.join(pondering)} may ponder: engines that think at the same time would "
                                f"share their worker's one core (give them cpus of their own, or no pin)")

    if sprt.stop and (kind != "match" or n != 2):
        raise c.error(("sprt", "stop"), f"an SPRT that stops the run needs a two-seat competitive game and two "
                                        f"engines (this file: {kind} games, {n} engines)")

    anchor = None
    raw_anchor = doc.get("anchor")
    if raw_anchor is not None:
        if isinstance(raw_anchor, str):
            raw_anchor = {"engine": raw_anchor, "elo": 0}
        if not isinstance(raw_anchor, dict):
            raise c.error(("anchor",), "expected an engine name or {engine = 'name', elo = 1500}")
        c.unknown_keys(raw_anchor, {"engine": "", "elo": ""}, ("anchor",))
        an = c.get(raw_anchor, "engine", ("anchor",), str)
        if an not in names:
            raise c.error(("anchor", "engine"), f"no engine named {an!r}")
        anchor = (names.index(an), float(c.get(raw_anchor, "elo", ("anchor",), (int, float), 0)))

    unused = _unused(c, doc, fmt, kind, game_name)
    notices = _single_openings(c, doc, kind, fmt, match, games, tb_games if tb_blocks else 0) if openings else []
    if duplicate and (far := [e.name for e in engines if e.remote]):
        notices.append(str(c.error(("openings",) if openings and "duplicate_dice" not in doc else ("duplicate_dice",),
                                   shared_dice_remembered(far))))
    return TournamentConfig(
        unused=unused, notices=notices,
        name=name, tid=slug(name), game=game_name, game_options=dict(game.options), num_seats=num_seats,
        kind=kind, format=fmt, match_text=match_text, match=match, games=games, rounds=rounds,
        time_control=tc, margin_ms=margin, concurrency=concurrency, seed=seed, output=output,
        duplicate_dice=duplicate, seeding=seeding, candidates=candidates, tiebreak_games=tb_games,
        tiebreak_blocks=tb_blocks, self_pairs=self_pairs, bye_points=bye_points, anchor=anchor, sprt=sprt,
        engines=engines, remote=remote_spec if any(e.remote for e in engines) else None, sprt_given="sprt" in doc,
        adjudication=adjudication,
        openings=openings, openings_order=openings_order, included=read,
        source_text=text, seed_file=seed_file, key_file=key_file, on_start_failure=on_start_failure,
        rating_interval=rating_interval, cluster=cluster,
        scale_time_control=c.get(doc, "scale_time_control", (), bool, False),
        pin=pin,
        source_path=str(Path(source).resolve()) if source[:1] != "<" else source)
