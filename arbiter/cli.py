"""The ``arbiter`` command line.

Exit codes: 0 success; 1 a record failed verification; 2 bad usage or configuration;
3 an engine could not be used at all (e.g. never started); 4 a game could not be saved in the
results database or its export (the message names the file, the error and the fallback file
holding the unsaved records); 130 interrupted.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import itertools
from collections import Counter
import json
import math
import os
import re
import shlex
import signal
import sqlite3
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator

from rich.console import Console
from rich.markup import escape
from rich.table import Table

import msgspec

from protocol.messages import EndReason

from . import forget_handled_interrupts, stop_raised
from .clock import DEFAULT_MARGIN_MS, parse_time_control
from .dice import commitment, seed_for, shared_dice_remembered
from .adjudication import Adjudication
from .games import OptionError, Utility, game_class, game_names, load_game
from .games.base import option_takes
from .web import parse_port
from .hosting.lag import LagPolicy
from .hosting.sandbox import SandboxMode
from .hosting.sandbox import support as sandbox_support
from .records import GameRecord
from .records.record import winners
from .records.replay import replay, verify
from .records.signing import KeyFileError, key_id, keygen, load_public_key, load_signer
from .records.store import (STORAGE_ERRORS, DoneGames, GameLine, MatchInUse, ResultsStore, count_records, done_games,
                            find_records, game_lines, holds_results, iter_records, last_record, match_setup,
                            records_in_chain_order, setup_command, stored_setups)
from .records.textexport import TEXT_FORMATS
from .sprt import concluded

if TYPE_CHECKING:  # the engine-hosting and match modules load when a command plays games (a quick `show`)
    from .formats.coop import CoopGame, CoopResult
    from .formats.match import MatchFormat
    from .formats.solo import SuiteResult
    from .hosting import EngineFault
    from .hosting.remote import RemoteHub

EXIT_OK, EXIT_VERIFY_FAILED, EXIT_USAGE, EXIT_ENGINE, EXIT_STORAGE, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130

SEED_ENV = "ARBITER_SEED"
"""The environment variable a master seed may come from (removed from the environment once read)."""

PIPED_WIDTH = 200
"""Columns of output that is not a terminal (unless ``COLUMNS`` says): tables whole, not cut."""


class ReaderMayLeave(Console):
    """A console whose reader may go away (``arbiter match ... | head``). rich's answer to the broken
    pipe is ``SystemExit(1)``: a match or a tournament ended mid-game with the code of a failed
    verification, before its games were saved. Here what is printed from then on goes to
    /dev/null and the command carries on to its own end and exit code."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        if not self.is_terminal and "width" not in kwargs and not os.environ.get("COLUMNS"):
            self.width = PIPED_WIDTH  # piped or redirected: rich's 80 cut names and numbers in tables

    def on_broken_pipe(self) -> None:
        self.quiet = True
        try:
            fd = self.file.fileno()
        except (AttributeError, OSError, ValueError):
            fd = sys.stdout.fileno()
        os.dup2(os.open(os.devnull, os.O_WRONLY), fd)


console = ReaderMayLeave(soft_wrap=True)
"""Lines longer than the terminal are left for the terminal to wrap: rich would break a long path
in an error message where it must stay whole to be copied."""
errors = ReaderMayLeave(stderr=True, soft_wrap=True)
"""Errors, warnings and interruptions go to stderr: what a command prints on stdout (an export, a
listing) stays clean when it is piped or redirected to a file."""


def _parse_options(pairs: list[str]) -> dict:
    options = {}
    for pair in pairs:
        if "=" not in pair:
            raise ValueError(f"--option {pair!r}: expected KEY=VALUE")
        key, value = pair.split("=", 1)
        try:
            import json

            options[key] = json.loads(value)
        except ValueError:
            options[key] = value
    return options


def _fmt_clock(ms: int | float | None) -> str:
    if ms is None:
        return "∞"
    tenths = int(ms) // 100
    return f"{tenths // 600}:{tenths % 600 // 10:02d}.{tenths % 10}"


def read_seed(args: argparse.Namespace) -> tuple[bytes | None, str]:
    """The master seed and where it came from: ``--seed-file FILE`` (``-``: stdin), else
    ``--seed HEX`` (visible to every process in /proc/PID/cmdline: warned about), else the
    ``ARBITER_SEED`` variable, else None (fresh randomness). A seed file that group or others
    may read is refused: an engine running as another user could read it (pipe it on stdin
    instead: ``--seed-file - < FILE``). Raises ValueError with the reason."""
    seed_file, seed_hex = getattr(args, "seed_file", None), getattr(args, "seed", None)
    env_hex = os.environ.pop(SEED_ENV, None)  # never passed on to anything started later
    if seed_file is not None and seed_hex is not None:
        raise ValueError("give --seed or --seed-file, not both")
    if seed_file == "":  # --seed-file "$FILE" with FILE unset: not fresh randomness
        raise ValueError("--seed-file: an empty argument, not a file")
    if seed_file == "-":
        text, source = sys.stdin.read(), "stdin"
    elif seed_file:
        try:
            mode = os.stat(seed_file).st_mode
            if mode & 0o044:
                raise ValueError(f"--seed-file {seed_file}: readable by group or others (mode {mode & 0o777:o}); "
                                 f"chmod 600 it, or give it on stdin with --seed-file - < {seed_file}")
            text = Path(seed_file).read_text()
        except OSError as exc:
            raise ValueError(f"--seed-file {seed_file}: {exc.strerror or exc}") from None
        source = seed_file
    elif seed_hex is not None:  # "" too: refused below as empty, not taken for no --seed
        errors.print("[bold yellow]warning:[/] --seed puts the master seed on the command line, where every "
                      "process on this machine can read it (/proc/PID/cmdline): use it only for "
                      "non-competitive runs; use --seed-file or the ARBITER_SEED variable otherwise")
        text, source = seed_hex, "--seed"
    elif env_hex is not None:
        text, source = env_hex, SEED_ENV
    else:
        return None, "fresh randomness"
    try:
        seed = bytes.fromhex(text.strip())
    except ValueError:
        raise ValueError(f"the seed from {source} is not hex: {text.strip()[:20]!r} (e.g. --seed 0123abcd)"
                         if source == "--seed" else f"the seed from {source} is not hex") from None
    if not seed:
        raise ValueError(f"the seed from {source} is empty")
    return seed, source


GROUP_WINDOW = 0.1
"""Seconds within which the games a match finishes are committed together (one fsync per batch)."""


def open_store(args: argparse.Namespace, group_window: float = 0.0) -> ResultsStore:
    """The results store, signing with ``--key`` when given. Raises KeyFileError or a storage error."""
    signer = load_signer(args.key) if getattr(args, "key", None) else None
    return ResultsStore(args.db, signer=signer, group_window=group_window)


def storage_exit(store: ResultsStore, code: int) -> int:
    """``code``, or EXIT_STORAGE with one clear message when games could not be saved."""
    if store.problem:
        errors.print(f"[bold red]error: results not saved:[/] {escape(store.problem)}")
        return EXIT_STORAGE
    return code


def _prepare(args: argparse.Namespace, configs, group_window: float = 0.0) -> tuple[ResultsStore | None, int]:
    """The results store, once the engines' configuration is known to be usable here; or the exit
    code that says why not."""
    if missing := _sandbox_missing(configs):
        errors.print(f"[red]error:[/] {escape(missing)}")
        return None, EXIT_ENGINE
    try:
        store = open_store(args, group_window)
    except KeyFileError as exc:
        errors.print(f"[red]error:[/] {escape(str(exc))}")
        return None, EXIT_USAGE
    except (OSError, sqlite3.Error) as exc:  # unwritable, not a database: fix the --db argument
        errors.print(f"[red]error:[/] --db {escape(str(args.db))}: cannot open the results database: "
                      f"{escape(str(exc))}")
        return None, EXIT_USAGE
    if event := store.db.execute("SELECT event_id FROM events LIMIT 1").fetchone():
        store.close()  # a tournament's: its games, its export and its report are the event's alone
        errors.print(f"[red]error:[/] --db {escape(str(args.db))} holds a tournament's games (event {escape(event[0])}): "
                     f"give this run a results database of its own")
        return None, EXIT_USAGE
    cut, appended = store.repair_export()  # after a crash (kill -9, power): from the export's tail
    if cut or appended:
        console.print(f"export {escape(str(store.export_path))} repaired: "
                      + ", ".join((["a torn last line cut"] if cut else []) +
                                  ([f"{appended} committed game(s) appended"] if appended else [])))
    if store.moved_export is not None:
        errors.print(f"[bold yellow]warning:[/] the export lacked committed games before others it held: it is "
                     f"written anew in commit order, the old one kept as {escape(str(store.moved_export))}")
    return store, EXIT_OK


def _claimed(store: ResultsStore, match_ids) -> bool:
    """Claim the matches a resumed run continues before anything starts (``ResultsStore.claim``);
    False, after saying so and closing the store, when another process is playing one now."""
    try:
        for match_id in match_ids:
            store.claim(match_id)
    except MatchInUse as exc:
        errors.print(f"[red]error:[/] {escape(str(exc))}")
        store.close()
        return False
    return True


def _refuse_stored_settings(args: argparse.Namespace, keys: tuple[str, ...], what: str) -> None:
    """A resumed run takes its settings (``keys`` of ``args``) from the database: one given on the
    command line as well would be silently replaced, so it is refused (ValueError naming it)."""
    defaults = vars(build_parser().parse_args([args.command]))
    flags = {"count": "--games" if args.command == "coop" else "--seeds"}
    given = [flags.get(k, "--" + k.replace("_", "-")) for k in keys if getattr(args, k, None) != defaults.get(k)]
    if given:
        raise ValueError(f"{', '.join(given)}: a resumed {what} keeps the settings it was started with "
                         f"(game, options, time control, engines...: stored in {args.db}); leave "
                         f"{'them' if len(given) > 1 else 'it'} out with --resume")


def _resume_match(args: argparse.Namespace) -> tuple[str, list[GameRecord], bool]:
    """``--resume [ID]``: the match's id and games so far from ``--db``; its game, options, time
    control, format, margin and engines are taken from the stored setup (ValueError if none, or if
    the command line gives one of them too)."""
    _refuse_stored_settings(args, ("game", "option", "tc", "format", "margin", "engine", "name", "engine_option",
                                   "sprt", "max_plies", "resign_moves", "resign_score", "engines_file", "openings",
                                   "openings_order"), "match")
    match_id, status, setup, done = match_setup(args.db, args.resume or None)
    if status == "finished":
        raise ValueError(f"match {match_id} in {args.db} is finished; nothing to resume")
    for key in ("game", "tc", "format", "margin", "engine", "name", "sprt", "max_plies", "resign_moves",
                "resign_score", "engines_file"):
        setattr(args, key, setup.get(key))
    args.engine_option = setup.get("engine_option") or []
    args.openings, args.openings_played = None, setup.get("openings")
    args.option = [f"{k}={json.dumps(v)}" for k, v in setup["options"].items()]
    args.stored_master = setup.get("master_seed")
    return match_id, done, setup.get("seeded", False)


def cmd_match(args: argparse.Namespace) -> int:
    from .formats.match import MatchFormat

    match_id, done, seeded = None, [], False
    try:
        if args.resume is not None:
            match_id, done, seeded = _resume_match(args)
        elif not args.game:
            raise ValueError("give --game (arbiter games lists them), or --resume to continue a match")
        game = load_game(args.game, **_parse_options(args.option))
        tc = parse_time_control(args.tc)
        sprt_bounds = parse_sprt(args.sprt) if getattr(args, "sprt", None) else None
        _check_match_game(game, len(args.engine))
        _check_per_engine(args)
        if game.num_seats > 2 and args.format is None:
            args.format = f"games={game.num_seats}"  # one rotation: every engine in every seat once
        if args.format is None:  # an SPRT runs until it decides: at most this many games
            args.format = "games=10000" if sprt_bounds else "olympiad"
        fmt = MatchFormat.parse(args.format)
        _check_table_format(game, fmt, args)
        seed, source = read_seed(args)
        if seeded and seed is not None and (played := _last_game(done)) is not None and played.dice_stream \
                and commitment(seed_for(seed, played.dice_stream)) != played.dice_commitment:
            raise ValueError(f"the seed from {source} is not the master seed this match was started with "
                             f"(game {played.game_number}'s dice commitment differs)")
        if stored := getattr(args, "stored_master", None):
            if seed is not None:
                raise ValueError("this match's master seed was drawn by the referee and is stored with it; "
                                 "resume it without --seed, --seed-file or ARBITER_SEED")
            seed = bytes.fromhex(stored)
        elif args.resume is not None and not seeded and seed is not None:
            raise ValueError(f"this match was started without a master seed (fresh dice every game): the seed "
                             f"from {source} would give its remaining games other dice than its first; resume it "
                             f"without --seed, --seed-file or ARBITER_SEED")
        engine_options = parse_engine_options(args.engine_option, len(args.engine))
        adjudication = parse_adjudication(args, game)
        configs = tuple(dataclasses.replace(c, options={**c.options, **engine_options[i]})
                        for i, c in enumerate(_match_engines(args)))
        openings = _match_openings(args, game, seed)
        drawn = None
        if openings and seed is None:  # a pair's games share their dice: one master seed, kept for a resume
            seed = drawn = os.urandom(32)
        hub = _open_hub(args, configs)
    except (OptionError, ValueError, KeyFileError) as exc:
        errors.print(f"[red]error:[/] {escape(str(exc))}")
        return EXIT_USAGE
    if seeded and seed is None:  # (a drawn seed is stored, never missing)
        errors.print("[bold yellow]warning:[/] the match was started with a master seed; without it the "
                      "remaining games get fresh dice (give the same --seed-file to keep them)")
    if openings and (far := [c.name for c in configs if getattr(c, "participant", None)]):
        errors.print(f"[bold yellow]warning:[/] --openings: {escape(shared_dice_remembered(far))}")
    if openings and game.num_seats == 2 and fmt.games % 2:  # pairs of games share a position
        errors.print(f"[bold yellow]warning:[/] --format {escape(args.format)}: {fmt.games} games: with openings, "
                     f"the last game's position is played once, with one seating (not twice, seats swapped); an "
                     f"even number plays every position twice")
    setup = dict(game=game.name, options=game.options, tc=tc.text, format=args.format, margin=args.margin,
                 sprt=args.sprt, engine_option=list(args.engine_option), max_plies=args.max_plies,
                 resign_moves=args.resign_moves, resign_score=args.resign_score,
                 engine=list(args.engine), name=[c.name for c in configs],
                 seeded=seed is not None and not (drawn or stored),
                 **({"master_seed": (drawn or bytes.fromhex(stored)).hex()} if drawn or stored else {}),
                 **_openings_setup(args, openings))
    if hub is not None:
        configs = tuple(dataclasses.replace(c, endpoint=hub.endpoint) if c.participant else c for c in configs)
    args.live_view = None
    try:
        try:
            args.live_view = _start_web(args, " vs ".join(c.name for c in configs), fmt.games, [match_id])
        except (OSError, ValueError) as exc:
            errors.print(f"[red]error:[/] --web {args.web}: {escape(str(exc))}")
            return EXIT_USAGE
        if game.num_seats > 2:
            return _run_table(args, game, tc, fmt, seed, configs, setup, match_id, done, openings, adjudication)
        return _run_match(args, game, tc, fmt, seed, configs, setup, match_id, done, sprt_bounds, adjudication,
                          openings)
    finally:
        if args.live_view is not None:
            args.live_view.close()
        if hub is not None:
            hub.close()


def _run_match(args, game, tc, fmt, seed, configs, setup, match_id, done, sprt_bounds, adjudication,
               openings=()) -> int:
    """The match itself, once its configuration is known to be good (and a remote hub listens)."""
    from rich.live import Live

    from .formats.match import Match

    store, code = _prepare(args, configs, GROUP_WINDOW)
    if store is None:
        return code
    if match_id and not _claimed(store, [match_id]):
        return EXIT_USAGE
    board = MatchBoard([c.name for c in configs], fmt.games)

    def on_event(record, state, event, clocks):  # the live display reads these when it redraws
        board.now = (record, event, clocks)

    def on_game(result, record):
        board.result = result

    web = getattr(args, "live_view", None)  # --web: the live web view (docs/web.md) wraps the hooks
    if web is not None:
        on_event, on_game = web.on_event(None if args.quiet else on_event), web.on_game(on_game)
    match = Match(game, configs, tc, fmt, store=store, run_dir=logs_dir(args.db), margin=args.margin / 1000,
                  seed=seed, match_id=match_id, on_event=None if args.quiet and web is None else on_event,
                  on_game=on_game, sprt=sprt_bounds, adjudication=adjudication, openings=openings, keep_records=False)
    if failed := _start_all(match.series, store):  # pre-flight: a broken command must not hand out wins
        return _not_started(configs, failed, args)
    with _stopped_if_interrupted(match.series, store):
        for config, engine in zip(configs, match.series.engines):
            console.print(escape(f"{config.name}: {hello_text(engine.hello)}"), highlight=False)
        console.print(f"match [bold]{match.match_id}[/]: " + escape(
            f"{game.name}, {configs[0].name} vs {configs[1].name}, tc {tc.text}, format {args.format}, results → {args.db}"
            + (f", adjudication: {adjudication.describe()}" if adjudication else "")
            + (f" (resumed after {len(done)} game(s))" if match_id else "")))
    try:
        if args.quiet:
            result = match.play(setup, done)
        else:
            with Live(board, console=console, refresh_per_second=4):
                result = match.play(setup, done)
    except KeyboardInterrupt:
        errors.print(f"[yellow]interrupted[/]: finished games are saved; continue with "
                      f"`arbiter match --resume {match.match_id} --db {escape(str(args.db))}`")
        store.close()
        return storage_exit(store, EXIT_INTERRUPTED)
    store.close()
    _print_summary(result)
    if result.sprt is not None:
        console.print(sprt_line(result.sprt, result.games), highlight=False)
    not_started = result.reasons.get(EndReason.NOT_STARTED, 0)
    return storage_exit(store, EXIT_ENGINE if not_started and not_started == result.games else EXIT_OK)


def _start_all(series, store: ResultsStore) -> list[tuple[int, EngineFault]]:
    """A match's pre-flight (``Series.start_all``); when engines failed, or when interrupted
    meanwhile (Ctrl-C, ``kill PID`` while engines start), the engines started so far are stopped
    and the store closed: before, an interrupt there left each started engine's temporary folder
    (its session secret) behind."""
    with _stopped_if_interrupted(series, store):
        failed = series.start_all()
    if failed:
        series.close()
        store.close()
    return failed


@contextlib.contextmanager
def _stopped_if_interrupted(series, store: ResultsStore):
    """From the pre-flight to the first game (``play`` stops its engines itself): an interrupt or
    error stops the engines started so far and closes the store, then goes on up (nothing was
    played: the command says "interrupted"). Before, one landing in the hellos' print left the
    engines and their folders to the guardian, after the exit."""
    try:
        yield
    except BaseException:
        series.close()
        store.close()
        raise


def _not_started(configs, failed: list[tuple[int, EngineFault]], args: argparse.Namespace) -> int:
    """Say which engines failed the pre-flight and why; the exit code: 2 for options an engine
    does not declare (the operator's mistake), 3 for engines that cannot start."""
    from .hosting import OptionFault

    for index, fault in failed:
        name = escape(configs[index].name)
        if not isinstance(fault, OptionFault):
            errors.print(f"[red]error:[/] engine {name} cannot start: {escape(str(fault))}")
        elif at := _option_from_engines_file(args, index, fault.option):
            errors.print(f"[red]error:[/] {escape(at)}: engine {name}: options: {escape(fault.detail)}")
        else:
            errors.print(f"[red]error:[/] engine {name} --engine-option: {escape(fault.detail)}")
    console.print("no game was played, no result recorded")
    return EXIT_USAGE if any(isinstance(fault, OptionFault) for _, fault in failed) else EXIT_ENGINE


def _preflight(game, configs, tc, args, store) -> tuple[str | None, int | None]:
    """Start every engine of ``configs`` and shake hands (then stop them) before a coop series or a
    solo suite records anything: (the series' match id, None), or (None, the exit code) after
    naming what failed."""
    from .formats.match import Series

    series = Series(game, list(configs), tc, store=store, run_dir=logs_dir(args.db))
    try:
        failed = series.start_all()
    finally:
        series.close()
    return (None, _not_started(configs, failed, args)) if failed else (series.match_id, None)


def _option_from_engines_file(args: argparse.Namespace, index: int, option: str) -> str | None:
    """``file:line: key`` of ``option`` when engine ``index`` took it from ``--engines-file`` (not
    given again with ``--engine-option``); None otherwise."""
    path, engines = getattr(args, "engines_file", None), getattr(args, "engine", None) or []
    if not path or index >= len(engines) or option in parse_engine_options(args.engine_option, len(engines))[index]:
        return None
    try:
        return _load_engines_file(path).spec(engines[index]).options_at.get(option)
    except (ValueError, KeyError):  # not a name of the file (a command line), or the file changed meanwhile
        return None


def parse_engine_options(pairs: list[str], engines: int) -> list[dict[str, str]]:
    """``--engine-option N:NAME=VALUE`` (N: the engine's place among the ``--engine``s, from 1) as
    one dict per engine; the values stay text until the engine's hello declares their types."""
    options: list[dict[str, str]] = [{} for _ in range(engines)]
    for pair in pairs:
        m = re.fullmatch(r"(\d+):([^=\s]+)=(.*)", pair, re.S)
        if not m or not 1 <= int(m.group(1)) <= engines:
            raise ValueError(f"--engine-option {pair!r}: expected N:NAME=VALUE, N the engine's place among the "
                             f"--engine commands (1 to {engines})")
        options[int(m.group(1)) - 1][m.group(2)] = m.group(3)
    return options


def parse_adjudication(args: argparse.Namespace, game) -> Adjudication | None:
    """``--max-plies``, ``--resign-moves``, ``--resign-score`` as ``Adjudication`` (None: no rule);
    ValueError names the flag."""
    rules = Adjudication(max_plies=args.max_plies or 0, resign_moves=args.resign_moves or 0,
                         resign_score=args.resign_score or 0.0)
    if problem := rules.problem(game):
        raise ValueError(f"--{problem[0].replace('_', '-')}: {problem[1]}")
    return rules or None


def parse_sprt(text: str) -> tuple[float, float, float, float]:
    """``--sprt elo0,elo1[,alpha,beta]`` (logistic Elo; alpha, beta default 0.05); ValueError names it."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = []
    if len(values) not in (2, 4):
        raise ValueError(f"--sprt {text!r}: expected elo0,elo1 or elo0,elo1,alpha,beta (e.g. 0,10,0.05,0.05)")
    elo0, elo1, alpha, beta = values + [0.05, 0.05][:4 - len(values)]
    if not elo0 < elo1:
        raise ValueError(f"--sprt {text!r}: elo1 must be greater than elo0")
    if not (0 < alpha < 0.5 and 0 < beta < 0.5):
        raise ValueError(f"--sprt {text!r}: alpha and beta must be between 0 and 0.5")
    return elo0, elo1, alpha, beta


def sprt_line(result: dict, games: int) -> str:
    """The SPRT's verdict: which bound was crossed after how many games, or that it goes on."""
    verdict = concluded(result)

    def shown(x: float) -> str:  # as the reports show it: - for none (nan), ∞ for a bound without limit
        return "-" if math.isnan(x) else ("+∞" if x > 0 else "-∞") if math.isinf(x) else f"{x:+.1f}"

    elo = f"Elo of A {shown(result['elo'])} [{shown(result['elo_lo'])}, {shown(result['elo_hi'])}]"
    on = f" (pentanomial: {sum(result['results'])} pairs)" if result.get("test") == "pairs" else ""
    after = f"after {games} game{'' if games == 1 else 's'}"
    if verdict:
        return f"SPRT: {verdict} {after}{on}; the match stopped. {elo}"
    return (f"SPRT: no decision {after}{on} (LLR {result['llr']:.3f}, bounds [{result['lower']:.3f}, "
            f"{result['upper']:.3f}]). {elo}")


def hello_text(hello) -> str:
    """How an engine introduced itself: its hello's name, version and author."""
    if hello is None:
        return "(no hello)"
    from protocol.codec import printable  # the engine's own words: no terminal escapes, no megabytes

    return printable(f"{hello.name}" + (f" {hello.version}" if hello.version else "") +
                     (f" by {hello.author}" if hello.author else ""), 300)


def logs_dir(db: str | Path) -> Path:
    """Engine logs go beside the results database, in ``<stem>-logs/`` (one folder per match)."""
    return Path(db).with_name(Path(db).stem + "-logs")


def _check_match_game(game, engines: int) -> None:
    """``arbiter match`` plays competitive games, one engine per seat; ValueError points elsewhere
    or says how many engines the game (with these options) seats."""
    utility = game.game_type.utility
    if utility is Utility.IDENTICAL:
        raise ValueError(f"--game {game.name}: a cooperative game; play it with 'arbiter coop'")
    if utility is Utility.SOLO:
        raise ValueError(f"--game {game.name}: a one-seat game; play it with 'arbiter solo'")
    if engines == game.num_seats:
        return
    low, high = game.game_type.min_seats, game.game_type.max_seats
    if low <= engines <= high:
        raise ValueError(f"--game {game.name} with options {game.options} has {game.num_seats} seats, not {engines}: "
                         f"choose the seat count with its options (docs/games/{game.name}.md), "
                         f"or give {game.num_seats} --engine")
    seats = f"{low} to {high} seats (by its options)" if low != high else f"{low} seats"
    raise ValueError(f"--game {game.name} has {seats}: give {game.num_seats} --engine, one per seat "
                     f"(got {engines})")


def _check_per_engine(args: argparse.Namespace, processes: int | None = None) -> None:
    """``--name`` and ``--cpus`` go with the ``--engine`` commands in order: more of them than
    engines is a mistake to say, not extra values to drop. ``processes``: engine processes when
    one command runs more than once (``coop`` with one --engine: a copy per seat, each placed by
    its own ``--cpus``)."""
    from .enginefile import name_problem

    cpus = getattr(args, "cpus", None) or []
    if processes is not None and len(cpus) > processes:
        raise ValueError(f"--cpus given {len(cpus)} times for {processes} engine processes: at most one per "
                         f"process, in seat order")
    for flag, given in (("--name", args.name or []), ("--cpus", cpus if processes is None else [])):
        if len(given) > len(args.engine):
            raise ValueError(f"{flag} given {len(given)} times for {len(args.engine)} --engine(s): at most one per "
                             f"engine, in the order of the --engine options")
    for i, name in enumerate(args.name or [], 1):
        if problem := name_problem(name):
            raise ValueError(f"--name {name!r} (engine {i}): {problem}")


def _engine_config(command: str, name: str, args: argparse.Namespace, restart: bool = False, index: int = 0):
    """An engine command line (``{python}``: the Python running the referee), or
    ``tcp://HOST:PORT`` to wait there for a remote engine; the hosting options (sandbox, limits,
    pondering, the index-th ``--cpus``) from ``args``."""
    from .hosting import EngineConfig, parse_cpus

    if command.startswith("remote:"):
        participant = command[len("remote:"):]
        if not participant:
            raise ValueError(f"--engine {command!r}: expected remote:NAME (a participant of --roster)")
        if not hasattr(args, "roster"):
            raise ValueError(f"--engine {command}: remote participants play in 'arbiter match' and tournaments")
        return EngineConfig(command=None, participant=participant, name=participant)
    if command.startswith("tcp://") and not getattr(args, "insecure", False):
        raise ValueError(f"--engine {command}: plain tcp lets anyone take the seat; use remote:NAME with --roster "
                         f"(CURVE), or add --insecure")
    if command.startswith(("tcp://", "ipc://")):
        if command.startswith("tcp://"):
            errors.print(f"[bold red]WARNING: INSECURE: {escape(command)} is plain tcp: anyone can read the games "
                          f"and take the seat; every record says so[/]")
        return EngineConfig(command=None, endpoint=command, name=name, handshake_timeout=300.0)
    command = command.replace("{python}", shlex.quote(sys.executable))  # this Python, with the project's packages
    cpus = getattr(args, "cpus", None) or []
    try:
        pinned = parse_cpus(cpus[index]) if index < len(cpus) else None
    except ValueError as exc:
        raise ValueError(f"--cpus {cpus[index]} (engine {index + 1}): {exc}") from None
    return EngineConfig(command=command, name=name, restart_each_game=restart, cpus=pinned, **_hosting(args))


def _remote_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--roster", help="TOML roster of remote participants (for --engine remote:NAME)")
    p.add_argument("--server-key", help="the referee's CURVE key file (arbiter keygen referee-curve): encrypts and "
                                        "authenticates the --listen endpoint")
    p.add_argument("--listen", default="tcp://0.0.0.0:7340", help="where remote participants connect "
                                                                  "(default tcp://0.0.0.0:7340)")
    p.add_argument("--insecure", action="store_true", help="plain tcp without CURVE: anyone on the network reads "
                                                           "the games and can take a seat (recorded in every record)")
    p.add_argument("--wait", type=float, default=300.0, help="seconds to wait for remote participants before "
                                                             "their games are forfeited 'absent' (default 300)")
    p.add_argument("--grace", type=float, default=30.0, help="seconds a disconnected remote engine may take to "
                                                             "reconnect before it forfeits 'disconnect' (default 30)")
    p.add_argument("--lag-move-ms", type=int, default=LagPolicy.move_ms,
                   help=f"network lag compensated per decision at most (default {LagPolicy.move_ms}; 0: none)")
    p.add_argument("--lag-quota-ms", type=int, default=LagPolicy.quota_ms,
                   help=f"network lag compensated per game at most (default {LagPolicy.quota_ms})")


def _hub_log(text: str) -> None:
    """The hub's words (refusals, reconnections, its INSECURE warning) on stderr, as every warning."""
    errors.print(f"[bold red]{escape(text)}[/]" if text.startswith("WARNING") else escape(text), highlight=False)


def _open_hub(args: argparse.Namespace, configs) -> RemoteHub | None:
    """The listening hub for the remote participants among ``configs`` (None if there are none)."""
    import zmq

    from .hosting.remote import RemoteHub, Roster, listen_problem

    wanted = [c.participant for c in configs if getattr(c, "participant", None)]
    if not wanted:
        return None
    if not args.roster:
        raise ValueError("--engine remote:NAME needs --roster FILE")
    roster = Roster.load(args.roster)
    insecure = args.insecure or roster.insecure
    if not insecure and not args.server_key:
        raise ValueError("remote participants need the referee's CURVE key: --server-key FILE "
                         "(make one with: arbiter keygen referee-curve), or --insecure")
    for name in wanted:
        if roster.find(name) is None:
            raise ValueError(f"--engine remote:{name}: {name!r} is not in the roster {args.roster}")
    if problem := listen_problem(args.listen):
        raise ValueError(f"--listen {args.listen}: {problem}")
    for flag, value in (("--lag-move-ms", args.lag_move_ms), ("--lag-quota-ms", args.lag_quota_ms),
                        ("--wait", args.wait), ("--grace", args.grace)):
        if not value >= 0:  # NaN too
            raise ValueError(f"{flag} must not be negative, got {value:g}")
    try:
        hub = RemoteHub(args.listen, roster, args.server_key, insecure=insecure, deadline=args.wait,
                        grace=args.grace, lag=LagPolicy(move_ms=args.lag_move_ms, quota_ms=args.lag_quota_ms),
                        log=_hub_log)
    except zmq.ZMQError as exc:
        raise ValueError(f"--listen {args.listen}: {exc}") from None
    console.print(f"waiting for {', '.join(wanted)} on {hub.endpoint} (up to {args.wait:g} s)", markup=False)
    return hub


def _hosting(args: argparse.Namespace) -> dict:
    """``--sandbox``, ``--limit KEY=VALUE``, ``--ponder`` as EngineConfig fields; ``ValueError``
    names a bad one."""
    from .hosting import Limits

    limits = {}
    for pair in getattr(args, "limit", None) or []:
        if "=" not in pair:
            raise ValueError(f"--limit {pair!r}: expected KEY=VALUE (e.g. memory_mb=2048)")
        key, value = pair.split("=", 1)
        limits[key.strip()] = value.strip()
    secrets_ = [getattr(args, name, None) for name in ("key", "seed_file", "server_key")]  # engines never read these
    hide = tuple(str(Path(p).resolve()) for p in secrets_ if p and p != "-")
    return dict(sandbox=SandboxMode(getattr(args, "sandbox", None) or "auto"), limits=Limits.from_mapping(limits),
                ponder=bool(getattr(args, "ponder", False)), hide=hide)


def _sandbox_missing(configs) -> str | None:
    """Why engines that require a sandbox cannot have one here (exit 3), or None."""
    if any(getattr(c, "sandbox", None) == SandboxMode.REQUIRED and not c.remote for c in configs) \
            and not sandbox_support().sandbox:
        return f"--sandbox required, but this machine cannot sandbox engines: {sandbox_support().problem}"
    return None


def _guess_name(command: str) -> str:
    """A short display name from an engine command: the module after -m, else the program."""
    parts = command.split()
    if "-m" in parts[:-1]:
        return parts[parts.index("-m") + 1].rsplit(".", 1)[-1]
    programs = [p for p in parts if not p.startswith("-") and "python" not in Path(p).name]
    return Path(programs[0] if programs else parts[0]).name


def game_line(r: GameRecord) -> str:
    """One finished game in a line: who moved first, who won, how it ended."""
    w = r.winner()
    won = r.players[w] if w is not None else "all lost (forfeits)" if r.forfeit_seats else "draw"
    return (f"game {r.game_number}: {' vs '.join(r.players)} → {won} "
            f"[{r.reason}{': ' + r.detail if r.detail else ''}] in {len(r.events)} events")


def match_lines(result, total: int | None = None) -> list[str]:
    """A match's aggregate (whatever its length): score, W/D/L, pace, forfeits by reason."""
    a, b = result.players
    elapsed = max(1e-9, time.monotonic() - result.started)
    played = f"{result.games}" + (f"/{total}" if total else "")
    lo, dr, wi = result.trinomial
    lines = [f"{a} {result.points[0]:g} – {result.points[1]:g} {b} · games {played} · "
             f"{a} W/D/L {wi}/{dr}/{lo}"
             + (f" (+{result.double_forfeits} lost by both)" if result.double_forfeits else "")
             + f" · {(result.games - result.resumed) / elapsed:.1f} games/s"]
    if result.forfeits:
        lines.append("forfeits: " + ", ".join(f"{who} {reason} ×{n}" for (who, reason), n
                                              in sorted(result.forfeits.items())))
    return lines


class MatchBoard:
    """The live display of a match: built when rich redraws (its refresh rate), never per event."""

    def __init__(self, names: list[str], total: int):
        from .formats.match import MatchResult

        self.result = MatchResult("", tuple(names))
        self.total = total
        self.now = None  # (record, event, clocks) of the latest decision

    def __rich__(self) -> Table:
        table = Table.grid(padding=(0, 1))
        for r in tuple(self.result.recent):  # copied at once: the match thread appends to it
            table.add_row(escape(game_line(r)))
        for i, line in enumerate(match_lines(self.result, self.total)):
            table.add_row(f"[bold]{escape(line)}[/]" if i == 0 else escape(line))
        if self.now is not None:
            record, event, clocks = self.now
            names = record.players
            clock_text = "  ".join(
                f"{names[s]} {_fmt_clock(c.remaining_ms() if c.allowance() is not None else None)}"
                for s, c in enumerate(clocks))
            last = f"{'roll' if event.seat < 0 else names[event.seat]}: {event.move}"
            table.add_row(escape(f"game {record.game_number} · ply {event.ply} · {last:<24} · {clock_text}"))
        return table


def _print_summary(result) -> None:
    """The end of a match: its last few games, then the aggregate (never one row per game)."""
    table = Table(title=f"match {result.match_id}" + (f": the last {len(result.recent)} of {result.games} games"
                                                      if result.games > len(result.recent) else ""))
    for col in ("game", "first", "second", "winner", "how it ended", "events", "ms/move"):
        table.add_column(col, overflow="fold")
    for r in result.recent:
        w = r.winner()
        times = [e.measured_ms for e in r.events if e.measured_ms is not None]
        table.add_row(str(r.game_number), escape(r.players[0]), escape(r.players[1]),
                      escape(r.players[w]) if w is not None else "-",
                      escape(r.detail if r.reason == "normal" and r.detail else
                             r.reason + (f": {r.detail}" if r.detail else "")), str(len(r.events)),
                      f"{sum(times) / len(times):.1f}" if times else "-")
    console.print(table)
    for line in match_lines(result):
        console.print(escape(line), highlight=False)
    ended = ", ".join(f"{reason} {n}" for reason, n in result.reasons.most_common())
    console.print(f"ended: {escape(ended)}" if ended else "no game counted", highlight=False)
    a, b = result.players
    verdict = "drawn" if result.winner is None else f"won by {escape(result.players[result.winner])}"
    console.print(f"[bold]{escape(a)} {result.points[0]:g} – {result.points[1]:g} {escape(b)}[/]: match {verdict}")


def cmd_demo(args: argparse.Namespace) -> int:
    """``arbiter match`` with the demo's arguments, parsed by the match parser itself (so the demo
    gets every default a new match option brings)."""
    py = sys.executable
    argv = ["match", "--game", "einstein", "--tc", "180", "--format", "olympiad", "--db", args.db,
            "--engine", f"{py} -m sample_engines.einstein_expectimax", "--name", "expectimax",
            "--engine", f"{py} -m sample_engines.random_engine", "--name", "random"]
    return cmd_match(build_parser().parse_args(argv + (["--quiet"] if args.quiet else [])))


def cmd_show(args: argparse.Namespace) -> int:
    if args.position is not None or (args.game and args.record is None):
        if not args.game:
            errors.print("[red]error:[/] --position needs --game (which game's notation it is in)")
            return EXIT_USAGE
        try:
            game = load_game(args.game or "", **_parse_options(args.option))
            if args.position is None:  # the start position, and its notation: the first line of an openings file
                state = game.new_initial_state()
                console.print(state.render() + f"\nposition: {state.to_text()}", highlight=False, markup=False)
            else:
                console.print(game.from_text(args.position).render(), highlight=False)
        except (OptionError, ValueError) as exc:
            errors.print(f"[red]error:[/] {escape(str(exc))}")
            return EXIT_USAGE
        return EXIT_OK
    if args.record is None:
        errors.print("[red]error:[/] give a record file, or --game (and --position)")
        return EXIT_USAGE
    wanted = args.game_id or args.game_id_arg
    try:  # one game is looked up (by id, MATCH.N or the last), never the whole file loaded
        if args.list:
            console.print(f"{count_records(args.record)} game(s) in {escape(args.record)}:")
            try:
                sys.stdout.writelines(listing_lines(game_lines(args.record)))  # console.print: 28 s for 100,000
                sys.stdout.flush()
            except BrokenPipeError:  # `arbiter show DB --list | head`: the reader left; not an error
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_OK
        if wanted:  # an id, or its unique beginning (``MATCH.3``: game 3 of a match)
            records, count = find_records(args.record, wanted)
            if count > 1:
                errors.print(f"[red]error:[/] {count} games begin with {escape(wanted)!r}; "
                              f"`arbiter show {escape(args.record)} --list` lists them")
                return EXIT_USAGE
        elif args.all:
            records = iter_records(args.record)
        else:
            last = last_record(args.record)
            records = [last] if last is not None else []
        records = iter([*records]) if isinstance(records, list) else records
        first = next(records, None)
    except (OSError, ValueError) as exc:
        errors.print(f"[red]error:[/] {escape(str(exc))}")
        return EXIT_USAGE
    if first is None:
        errors.print(f"[red]error:[/] no such game in {escape(args.record)}"
                      + (f": {escape(wanted)!r} (`--list` lists them)" if wanted else ""))
        return EXIT_USAGE
    records = itertools.chain([first], records)
    for record in records:
        console.print(f"[bold]{escape(record.game_id)}[/] " + escape(
            f"{record.game} {record.options} · " + " vs ".join(f"{n} ({r})" for n, r in zip(record.players, record.seat_roles))
            + f" · tc {record.time_control} · commitment {record.dice_commitment[:16]}…"))
        if record.opening:
            console.print(escape(f"from opening {record.opening.index}: {record.opening.position}"),
                          highlight=False)
        try:
            for events, state in replay(record):
                for e in events:
                    if e.seat < 0:
                        console.print(f"[dim]ply {e.ply:3}[/]  roll → {escape(e.move)}")
                    else:
                        timing = f"{e.measured_ms:.1f} ms" if e.measured_ms is not None else ""
                        if e.reported_ms is not None:
                            timing += f" (engine {e.reported_ms} ms)"
                        info = f"  score {e.info.score}" if e.info and e.info.score is not None else ""
                        console.print(f"[dim]ply {e.ply:3}[/]  {escape(record.players[e.seat])} {e.kind} "
                                      f"[bold]{escape(e.move)}[/]  {timing}{info}")
                    if e.note:
                        console.print(f"          [italic]{escape(e.note)}[/]")
                if events[-1].seat >= 0:
                    console.print(state.render(), highlight=False)
        except ValueError as exc:
            console.print(f"[red]record inconsistent:[/] {escape(str(exc))}")
        utility = game_class(record.game).game_type.utility if record.game in game_names() else None
        if utility is Utility.IDENTICAL and record.returns:
            outcome = f"shared score {record.returns[0]:g}"  # cooperative: one result for everyone
        elif len(record.returns) == 1:
            outcome = f"score {record.returns[0]:g}"
        else:  # an alliance wins together
            outcome = ", ".join(record.players[w] for w in winners(record.returns)) or "no winner"
        console.print(f"result {record.returns} — {outcome} "
                      f"({record.reason}{': ' + record.detail if record.detail else ''})\n", markup=False)
    return EXIT_OK


_UNPRINTABLE = dict.fromkeys([*range(32), *range(127, 160)], "?")


def listing_lines(lines: Iterable[GameLine]) -> Iterator[str]:
    """``arbiter show FILE --list``: one line per game, led by the id ``show FILE ID`` takes
    (control characters shown as ``?``: a name or detail cannot drive the terminal)."""
    for r in lines:
        won = winners(r.returns)  # an alliance's seats together; a solo game only when won
        result = " ".join(f"{x:g}" for x in r.returns) + (f" → {', '.join(r.players[w] for w in won)}" if won else "")
        text = (f"{r.game_id}  {r.game}  {' vs '.join(r.players)}  {result}  "
                f"[{r.reason}{': ' + r.detail if r.detail else ''}]  {r.plies} events")
        yield text.translate(_UNPRINTABLE) + "\n"


def _replay_check(raw: bytes) -> list[str]:
    """``verify`` of one stored record (in a worker process)."""
    from .records import from_json

    return verify(from_json(raw))


def _batches(items, size: int):
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def replay_pool(workers: int):
    """Forked processes that replay records for ``verify``. Stopping is the command's alone: the
    workers ignore Ctrl-C, SIGTERM and a hang-up, which reach them too when sent to the whole
    process group (the terminal, ``kill -- -PGID``, a service manager). Inherited, the command's
    handler made each print a KeyboardInterrupt traceback; killed, a worker idle on the task queue
    took its lock along and the pool's ``terminate`` waited for it for ever. The command ends the
    pool with ``close`` and ``join``: what is queued is one batch, replayed in well under a second.
    The signals are held while the workers are forked: one that came between a fork and the
    worker's initializer ran the command's handler in the new worker (a traceback from
    ``threading._after_fork``); held, it waits in the worker until the initializer ignores it."""
    import multiprocessing

    held = signal.pthread_sigmask(signal.SIG_BLOCK, _WORKER_IGNORES)
    try:
        return multiprocessing.get_context("fork").Pool(workers, initializer=_worker_signals)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)  # one that came meanwhile is the command's now


_WORKER_IGNORES = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}


def _worker_signals() -> None:
    for signum in _WORKER_IGNORES:
        signal.signal(signum, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _WORKER_IGNORES)


def cmd_verify(args: argparse.Namespace) -> int:
    """Replay every record (rules and dice), then check the file as a whole: chains, signatures,
    indexed columns (``arbiter.records.audit``). The file is streamed in batches (memory stays
    flat at 100,000 games); the replays run on every core."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .records.audit import Auditor, open_stored

    try:
        public = load_public_key(args.public_key) if args.public_key else None
        if not Path(args.record).exists():
            raise FileNotFoundError(f"{args.record}: no such file")
        rows, heads, total = open_stored(args.record)
    except (OSError, ValueError, KeyFileError) as exc:
        errors.print(f"[red]error:[/] {escape(str(exc))}")
        return EXIT_USAGE
    auditor, broken = Auditor(public), []
    bad = checked = 0
    workers = min(os.cpu_count() or 1, 8) if total >= 200 and not args.game_id else 1
    pool = replay_pool(workers) if workers > 1 else None
    try:
        with Progress(TextColumn("verifying"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console, transient=True,  # piped, it left only an empty first line
                      disable=not console.is_terminal) as progress:
            task = progress.add_task("verify", total=total)
            for batch in _batches(rows, 256):
                broken += [b for b in batch if isinstance(b, str)]
                stored = [b for b in batch if not isinstance(b, str)]
                for s in stored:
                    auditor.add(s)
                mine = [s for s in stored if not args.game_id or s.record.game_id == args.game_id]
                results = pool.map(_replay_check, [s.raw for s in mine], chunksize=16) if pool else \
                    [verify(s.record) for s in mine]
                for s, problems in zip(mine, results):
                    record = s.record
                    checked += 1
                    if problems:
                        bad += 1
                        progress.console.print(f"[red]INCONSISTENT[/] {escape(record.game_id)}")
                        for p in problems:
                            progress.console.print(f"  - {escape(p)}")
                    elif args.verbose:
                        progress.console.print(f"[green]ok[/] {escape(record.game_id)}: {len(record.rolls)} rolls, "
                                               f"{len(record.events)} events")
                progress.advance(task, len(batch))
    except (OSError, ValueError) as exc:
        errors.print(f"[red]error:[/] {escape(str(exc))}")
        return EXIT_USAGE
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    if broken and not auditor.records:  # not one record in it: the wrong file, not a tampered one
        errors.print(f"[red]error:[/] {escape(broken[0])}")
        return EXIT_USAGE
    console.print(f"{checked - bad} of {checked} records consistent")
    report = auditor.finish(heads)
    for p in broken + report.problems:
        console.print(f"[red]TAMPERED[/] {escape(p)}", highlight=False)
    for note in report.notes:
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    for (kind, ident), (count, last) in sorted(report.chains.items()):
        if kind == "event" or args.verbose:
            console.print(f"{kind} {ident}: {count} record(s), last hash {last}", highlight=False, markup=False)
    tampered = len(broken) + len(report.problems)
    if public is not None and not tampered:
        console.print(f"signatures checked against key {key_id(public)}")
    console.print(f"{len(heads) or len(report.chains)} chain(s), {tampered} tamper problem(s)")
    return EXIT_VERIFY_FAILED if bad or tampered or not checked else EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    """``arbiter export DB --format text|csv [-o FILE]``: every game in commit order (each event's
    chain order, then the games of no event as they were saved), so an import re-chains them as
    they were; read a batch at a time (``records_in_chain_order``)."""
    from .records.textexport import to_csv, to_text

    written = 0

    def counted(records):
        nonlocal written
        for written, record in enumerate(records, 1):
            yield record

    try:
        if args.output and args.output != "-" and (problem := holds_results(args.output)):
            raise ValueError(f"-o {args.output}: {problem}; export writes a text file: name another one")
        signer = load_signer(args.key) if args.key else None
        records = records_in_chain_order(args.record)
        first = next(records, None)  # the file's own problems (not a results file...) before any output
    except (OSError, ValueError, KeyFileError) as exc:
        errors.print(f"[red]error:[/] {escape(str(exc))}")
        return EXIT_USAGE
    chunks = (to_text if args.format == "text" else to_csv)(
        counted(itertools.chain([first] if first is not None else [], records)), signer)
    part = None
    try:
        if args.output and args.output != "-":
            out = Path(args.output)
            out.parent.mkdir(parents=True, exist_ok=True)
            regular = not out.exists() or out.is_file()  # not /dev/stdout, a pipe...: written as it is
            part = Path(f"{out}.part") if regular else None  # a file appears whole or not at all
            with open(part or out, "w", encoding="utf-8", newline="") as f:
                f.writelines(chunks)
            if part is not None:
                os.replace(part, out)
            console.print(f"{written} game(s) written to {escape(args.output)}", highlight=False)
        else:
            sys.stdout.writelines(chunks)
            sys.stdout.flush()
    except BrokenPipeError:  # `arbiter export DB | head`: the reader left; not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError) as exc:  # ValueError: a record that does not decode, met on the way
        if part is not None:
            part.unlink(missing_ok=True)
        message = f"{args.output or 'standard output'}: {exc.strerror or exc}" if isinstance(exc, OSError) else str(exc)
        errors.print(f"[red]error:[/] {escape(message)}")
        return EXIT_USAGE
    except BaseException:  # Ctrl-C, `kill PID`, a hang-up: the half-written FILE.part goes too
        if part is not None:
            part.unlink(missing_ok=True)
        raise
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    """``arbiter import FILE --db NEW.sqlite``: rebuild every game of a text or CSV export by
    replaying it through the rules; a game that does not fit is named with its line (exit 1)."""
    from .records.textexport import TextImportError, import_games, read_games

    try:
        if Path(args.db).exists():
            raise ValueError(f"--db {args.db}: the file exists; import writes a new results database")
        if Path(args.db).suffix != ".jsonl" and Path(args.db).with_suffix(".jsonl").exists():
            raise ValueError(f"--db {args.db}: {Path(args.db).with_suffix('.jsonl')} exists; import writes a new "
                             f"results database and its export beside it")
        signer = load_signer(args.key) if args.key else None
        public = load_public_key(args.public_key) if args.public_key else None
        try:
            text = open(args.file, encoding="utf-8", newline="")  # read as the games are rebuilt
        except OSError as exc:
            raise ValueError(f"{args.file}: {exc.strerror or exc}") from None
    except (ValueError, KeyFileError) as exc:
        errors.print(f"[red]error:[/] {escape(str(exc))}")
        return EXIT_USAGE
    with text:
        try:
            count, notes, problem = import_games(read_games(text, args.file), args.db, signer, public)
        except TextImportError as exc:
            errors.print(f"[red]REFUSED[/] {escape(str(exc))}", highlight=False)
            errors.print("nothing imported")
            return EXIT_VERIFY_FAILED
        except UnicodeDecodeError:
            errors.print(f"[red]error:[/] {escape(args.file)}: not UTF-8 text; nothing imported")
            return EXIT_USAGE
        except ValueError as exc:  # neither a text nor a CSV export
            errors.print(f"[red]error:[/] {escape(str(exc))}")
            return EXIT_USAGE
        except STORAGE_ERRORS as exc:
            errors.print(f"[red]error:[/] {escape(args.db)}: {escape(str(exc))}")
            return EXIT_STORAGE
    if problem:
        errors.print(f"[red]error:[/] {escape(problem)}")
        return EXIT_STORAGE
    for note in notes:
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    console.print(f"{count} game(s) rebuilt from {escape(args.file)} and saved in {escape(args.db)}"
                  + (f", signed with key {signer.key_id}" if signer else ", unsigned"), highlight=False)
    return EXIT_OK


def cmd_check_engine(args: argparse.Namespace) -> int:
    """``arbiter check-engine CMD --game G``: PASS/FAIL per conformance check (``arbiter.conformance``).
    Exit 0 all passed, 1 a check failed (the engine did not verify), 3 it could not even shake hands."""
    from .conformance import check_engine

    try:
        game = load_game(args.game, **_parse_options(args.option))
        tc = parse_time_control(args.tc)
        if args.command_line.startswith(("tcp://", "ipc://")):
            raise ValueError("check-engine starts the engine itself: give its command line")
        config = _engine_config(args.command_line, _guess_name(args.command_line), args)
    except (OptionError, ValueError) as exc:
        errors.print(f"[red]error:[/] {escape(str(exc))}")
        return EXIT_USAGE
    if missing := _sandbox_missing([config]):
        errors.print(f"[red]error:[/] {escape(missing)}")
        return EXIT_ENGINE
    logs = Path(args.logs).resolve()
    console.print(f"checking {escape(args.command_line)} on {game.name} (logs in {logs})")

    def show(check) -> None:
        mark = "[green]PASS[/]" if check.passed else "[red]FAIL[/]"
        console.print(f"{mark} {escape(check.name)}: {escape(check.detail)}", highlight=False)

    checks = check_engine(config, game, tc, logs, on_check=show)
    failed = [c for c in checks if not c.passed]
    console.print(f"{len(checks) - len(failed)} of {len(checks)} checks passed")
    if checks and checks[0].name == "handshake" and not checks[0].passed:
        return EXIT_ENGINE
    return EXIT_VERIFY_FAILED if failed else EXIT_OK


def cmd_engine_info(args: argparse.Namespace) -> int:
    """``arbiter engine-info CMD [--game G]``: how the engine introduces itself and the options it
    declares (for ``--engine-option`` and a tournament's ``options``). Exit 3 if it cannot start."""
    from .hosting import EngineFault, EngineSession

    try:
        if args.game is not None:
            load_game(args.game)
        if args.command_line.startswith(("tcp://", "ipc://", "remote:")):
            raise ValueError("engine-info starts the engine itself: give its command line")
        config = _engine_config(args.command_line, _guess_name(args.command_line), args)
    except (OptionError, ValueError) as exc:
        errors.print(f"[red]error:[/] {escape(str(exc))}")
        return EXIT_USAGE
    if missing := _sandbox_missing([config]):
        errors.print(f"[red]error:[/] {escape(missing)}")
        return EXIT_ENGINE
    session = EngineSession(config, Path(args.logs).resolve())
    Path(args.logs).mkdir(parents=True, exist_ok=True)
    fault = None
    try:
        session.launch()
        session.handshake(args.game)
    except EngineFault as exc:
        fault = exc
    finally:
        hello = session.hello
        session.stop()  # before its last words are read: the log is complete then
    if fault is not None:
        told = session.with_last_words(fault)
        errors.print(f"[red]error:[/] {escape(args.command_line)} cannot start: {escape(str(told))}"
                      + ("" if told is not fault else f" (log: {session.log_path})"))
        return EXIT_ENGINE
    from protocol.codec import printable  # the engine's own words: no terminal escapes, no megabytes

    console.print(escape(hello_text(hello)), highlight=False)
    console.print(f"games: {escape(printable(', '.join(hello.games)) or 'any')}", highlight=False)
    if not hello.options:
        console.print("options: none")
        return EXIT_OK
    table = Table(title="options")
    for col in ("name", "type", "default", "range / choices", "description"):
        table.add_column(col, overflow="fold")
    for o in hello.options:
        span = (f"{'' if o.min is None else o.min} .. {'' if o.max is None else o.max}" if o.type == "spin"
                else " | ".join(o.choices) if o.type == "combo" else "")
        table.add_row(*(escape(printable(text, 300)) for text in (o.name, str(o.type), json.dumps(o.default), span,
                                                                   o.description)))
    console.print(table)
    return EXIT_OK


_KINDS = {Utility.ZERO_SUM: "competitive (zero-sum)", Utility.GENERAL_SUM: "competitive (general-sum)",
          Utility.IDENTICAL: "cooperative (one shared score)", Utility.SOLO: "solo (one seat against the game)"}


def cmd_games(args: argparse.Namespace) -> int:
    """``arbiter games``: one line per game, its name first; ``arbiter games NAME``: the game's kind,
    its options (what ``--option`` and a tournament's ``[game_options]`` take) and its rules."""
    names = game_names()
    if args.name is not None and args.name not in names:
        errors.print(f"[red]error:[/] unknown game {escape(repr(args.name))}; known games: {', '.join(names)}")
        return EXIT_USAGE
    for name in [args.name] if args.name else names:
        kind = game_class(name).game_type
        seats = str(kind.min_seats) if kind.min_seats == kind.max_seats else f"{kind.min_seats}-{kind.max_seats}"
        traits = [t for t, on in (("dice", kind.chance), ("simultaneous decisions", kind.simultaneous),
                                  ("hidden information", kind.hidden_information)) if on]
        fields = msgspec.structs.fields(kind.options)
        if not args.name:
            print(f"{name:<12} {seats} seat(s), {_KINDS[kind.utility]}" + "".join(f", {t}" for t in traits)
                  + (f"; options: {', '.join(f.name for f in fields)}" if fields else ""))
            continue
        print(f"{name}: {seats} seat(s), {_KINDS[kind.utility]}" + "".join(f", {t}" for t in traits))
        doc = Path(__file__).resolve().parent.parent / "docs" / "games" / f"{name}.md"
        if doc.exists():
            print(f"rules and notation: {doc}")
        if not fields:
            print("options: none")
            continue
        print("options (--option KEY=VALUE; a tournament file's [game_options]):")
        width = max(len(f"{f.name} = {json.dumps(f.default)}") for f in fields)
        for f in fields:
            print(f"  {f'{f.name} = {json.dumps(f.default)}':<{width}}  {option_takes(f.type)}")
    return EXIT_OK


def cmd_keygen(args: argparse.Namespace) -> int:
    from protocol import curve

    if args.name is not None and not args.name.strip():  # keygen "$NAME", NAME unset: not the signing key
        errors.print("[red]error:[/] an empty key NAME (leave it out for the referee's signing key)")
        return EXIT_USAGE
    if args.out and Path(args.out).exists() and not Path(args.out).is_dir():
        errors.print(f"[red]error:[/] --out {escape(args.out)}: a file, not a folder for the key files")
        return EXIT_USAGE
    if args.name:  # a CURVE key pair: a remote participant's, or the referee's tcp endpoint's
        try:
            secret, public = curve.keygen(args.name, args.out or ".")
        except (curve.KeyFileError, OSError) as exc:
            errors.print(f"[red]error:[/] {escape(str(exc))}")
            return EXIT_USAGE
        console.print(f"CURVE key {curve.fingerprint(curve.load_public(public).decode())}: secret key {secret} "
                      f"(mode 600: keep it private), public key {public} (give it to the organiser / the engines)",
                      markup=False)
        return EXIT_OK
    try:
        secret, public = keygen(args.out or "keys")
    except (KeyFileError, OSError) as exc:
        errors.print(f"[red]error:[/] {escape(str(exc))}")
        return EXIT_USAGE
    console.print(f"key {load_signer(secret).key_id}: secret key {secret} (mode 600: keep it on the referee machine, "
                  f"readable only by the operator), public key {public} (publish it)", markup=False)
    return EXIT_OK


def _start_web(args: argparse.Namespace, title: str, total: int | None = None, resumed=()):
    """``--web PORT``: the live web view (docs/web.md) in a child process, or None; OSError names the port,
    ValueError a bad ``ARBITER_WEB_NICE``.
    ``resumed``: the matches a resumed run continues, whose stored games the view shows too."""
    if getattr(args, "web", None) is None:
        return None
    from .web.live import LiveView

    view = LiveView(title, args.web, args.web_host, total=total, db=args.db, match_ids=[m for m in resumed if m])
    console.print(f"live web view: {view.url}")
    return view


def _web_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--web", metavar="PORT", type=parse_port, default=None,
                   help="serve the live web view on PORT while the games run (docs/web.md)")
    p.add_argument("--web-host", metavar="ADDR", default="127.0.0.1",
                   help="address the web view listens on (default 127.0.0.1: this machine only)")


def _resume_run(args: argparse.Namespace, command: str) -> tuple[str, dict, DoneGames]:
    """``arbiter coop|solo --resume [ID]``: the run's match id, its stored setup (game, options, time
    control, count, margin, engines, names, engine options are taken from it) and its games so
    far. ValueError when there is nothing to resume, or when the command line gives one of them too."""
    _refuse_stored_settings(args, ("game", "option", "tc", "count", "margin", "engine", "name", "engine_option"),
                            "coop series" if command == "coop" else "solo run")
    match_id, status, setup, done = match_setup(args.db, args.resume or None, command)
    if status == "finished" and command == "coop":
        raise ValueError(f"coop series {match_id} in {args.db} is finished; nothing to resume")
    if missing := [k for k in ("game", "options", "tc", "count", "margin", "engine") if k not in setup]:
        raise ValueError(f"{args.db}: the stored setup of {match_id} lacks {', '.join(missing)}; it cannot be resumed")
    for key in ("game", "tc", "count", "margin", "engine", "name", "engine_option"):
        setattr(args, key, setup.get(key))
    args.engine_option = args.engine_option or []
    args.option = [f"{k}={json.dumps(v)}" for k, v in setup["options"].items()]
    return match_id, setup, done


def _last_game(done: DoneGames) -> GameRecord | None:
    """The last game played (whole, dice included), for checking a master seed; None if none."""
    last = None
    for last in done:
        pass
    return last


def _run_master(args: argparse.Namespace, setup: dict | None, played: GameRecord | None) -> tuple[bytes, str, dict]:
    """The master seed of a coop series or solo run, where it came from, and what its setup keeps
    of it. A new run takes the operator's (``--seed-file``...) or draws one; a drawn one is stored
    with the run (in the results database, as a tournament's seed) so that resuming gives the same
    dice. A resumed run takes the stored one, or needs the operator's again, checked against the
    dice commitment of a game already played (``played``). ValueError says what is wrong."""
    given, source = read_seed(args)
    if setup is None:
        if given is not None:
            return given, source, {}
        drawn = os.urandom(16)
        return drawn, source, {"master_seed": drawn.hex()}
    if stored := setup.get("master_seed"):
        if given is not None:
            raise ValueError("this run's master seed was drawn by the referee and is stored with it; "
                             "resume it without --seed, --seed-file or ARBITER_SEED")
        return bytes.fromhex(stored), "the results database", {"master_seed": stored}
    if given is None:
        raise ValueError("this run was started with a master seed of the operator's; give the same one "
                         "(--seed-file FILE, ARBITER_SEED or --seed) to resume it on the same dice")
    if played is not None and played.dice_stream and \
            commitment(seed_for(given, played.dice_stream)) != played.dice_commitment:
        raise ValueError(f"the seed from {source} is not the master seed this run was started with "
                         f"(game {played.game_number}'s dice commitment differs)")
    return given, source, {}


def cmd_coop(args: argparse.Namespace) -> int:
    """``arbiter coop``: a pair of engines plays ``--games`` games; per-game lines and a summary.
    ``--resume [ID]``: the rest of an interrupted series, from ``--db`` alone."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .formats.coop import run_coop

    resumed, setup, played, done = None, None, None, 0
    try:
        if args.resume is not None:
            resumed, setup, games = _resume_run(args, "coop")
            played, done = _last_game(games), len(games)
        elif not args.game:
            raise ValueError("give --game (arbiter games lists them), or --resume to continue a series")
        game = load_game(args.game, **_parse_options(args.option))
        tc = parse_time_control(args.tc)
        if game.game_type.utility is not Utility.IDENTICAL:
            raise ValueError(f"the coop format is for cooperative games; {game.name} is not one "
                             f"(use 'arbiter match')")
        if len(args.engine) not in (1, 2):
            raise ValueError(f"give one --engine (it plays both seats) or two (a pair), not {len(args.engine)}")
        _check_per_engine(args, processes=2)  # one --engine runs twice: a --cpus per copy
        if args.count < 1:
            raise ValueError(f"--games must be at least 1, not {args.count}")
        master, source, kept = _run_master(args, setup, played)
        names = list(args.name or []) + [None, None]
        if len(args.engine) == 1:
            base = names[0] or _guess_name(args.engine[0])
            configs = [_engine_config(args.engine[0], f"{base}#1", args, index=0),
                       _engine_config(args.engine[0], f"{base}#2", args, index=1)]
        else:
            labels = [names[i] or _guess_name(cmd) for i, cmd in enumerate(args.engine)]
            if labels[0] == labels[1]:
                labels = [f"{labels[0]}#1", f"{labels[1]}#2"]
            configs = [_engine_config(cmd, labels[i], args, index=i) for i, cmd in enumerate(args.engine)]
        options = parse_engine_options(args.engine_option, len(args.engine))
        configs = [dataclasses.replace(c, options={**c.options, **options[min(i, len(options) - 1)]})
                   for i, c in enumerate(configs)]  # one --engine in both seats: its options in both
    except (OptionError, ValueError) as exc:
        errors.print(f"[red]error:[/] {escape(str(exc))}")
        return EXIT_USAGE
    store, code = _prepare(args, configs)
    if store is None:
        return code
    if resumed and not _claimed(store, [resumed]):
        return EXIT_USAGE
    match_id, code = _preflight(game, configs, tc, args, store)
    if match_id is None:
        store.close()
        return code
    match_id = resumed or match_id
    setup = dict(command="coop", game=game.name, options=game.options, tc=tc.text, count=args.count,
                 margin=args.margin, engine=list(args.engine), name=args.name, engine_option=list(args.engine_option),
                 **kept)
    try:
        web = _start_web(args, f"{configs[0].name} + {configs[1].name}", args.count, [resumed])
    except (OSError, ValueError) as exc:
        errors.print(f"[red]error:[/] --web {args.web}: {escape(str(exc))}")
        store.close()
        return EXIT_USAGE
    console.print(f"coop series {match_id}: {game.name} {game.options}, {configs[0].name} + {configs[1].name}, "
                  f"{args.count} games, tc {tc.text}, master seed from {source} (revealed at the end), "
                  f"results → {args.db}" + (f" (resumed after {done} game(s))" if resumed else ""), markup=False)
    try:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("{task.fields[mean]}"), TimeElapsedColumn(), console=console,
                      disable=args.quiet, transient=True) as progress:
            task = progress.add_task("games", total=args.count, mean="")

            def on_game(result: CoopResult, record: GameRecord) -> None:
                g = result.games[-1]
                console.print(coop_game_line(g, args.count), highlight=False, markup=False)
                se = result.stderr
                progress.update(task, advance=1, mean=f"mean {result.mean:.1f}"
                                + (f" ± {se:.1f}" if not math.isnan(se) else ""))

            progress.update(task, advance=done)
            result = run_coop(game, configs, tc, args.count, master_seed=master, store=store, match_id=match_id,
                              run_dir=logs_dir(args.db), margin=args.margin / 1000, setup=setup,
                              done=store.games(match_id) if resumed else (),
                              on_event=web.on_event() if web else None, on_game=web.on_game(on_game) if web else on_game)
    except KeyboardInterrupt:
        errors.print(f"[yellow]interrupted[/]: finished games are saved; continue with "
                      f"`arbiter coop --resume {match_id} --db {escape(str(args.db))}`")
        store.close()
        return storage_exit(store, EXIT_INTERRUPTED)
    finally:
        if web is not None:
            web.close()
    store.close()
    console.print(coop_summary_table(result))
    console.print(coop_distribution_table(result))
    not_started = [g for g in result.games if g.reason == EndReason.NOT_STARTED]
    return storage_exit(store, EXIT_ENGINE if not_started and len(not_started) == result.count else EXIT_OK)


def coop_game_line(g: CoopGame, total: int) -> str:
    """One progress line: who sat where, the score and how the game ended."""
    how = g.reason
    if g.forfeited and g.forfeit_seat is not None:
        how += f" by {g.players[g.forfeit_seat]}"
    detail = f": {g.detail}" if g.detail else ""
    seats = " + ".join(f"{p} ({r})" for p, r in zip(g.players, g.roles))
    return f"game {g.number}/{total}: {seats} → score {g.score:g} [{how}{detail}] in {g.events} events"


def coop_summary_table(result: CoopResult):
    table = Table(title=f"coop series {result.match_id}: {result.game}, master seed {result.master_seed}")
    for col in ("pair", "games", "mean score", "std. error", "95% CI", "median", "min", "max",
                "rule losses", "forfeits", "avg ms/decision"):
        table.add_column(col, justify="left" if col == "pair" else "right", overflow="fold")
    lo, hi = result.ci()
    ms = result.mean_ms()
    rule = ", ".join(f"{n} {why}" for why, n in sorted(result.losses_by_rule.items())) or "0"
    forfeits = ", ".join(f"{n} {why}" for why, n in sorted(result.forfeits.items())) or "0"
    scores = result.scores
    table.add_row(escape(" + ".join(result.players)), str(result.count), f"{result.mean:.2f}",
                  "-" if math.isnan(result.stderr) else f"{result.stderr:.2f}",
                  "-" if math.isnan(lo) else f"{lo:.1f} – {hi:.1f}", f"{result.median():g}",
                  f"{min(scores):g}" if scores else "-", f"{max(scores):g}" if scores else "-",
                  rule, forfeits, f"{ms:.1f}" if ms is not None else "-")
    return table


def coop_distribution_table(result: CoopResult, buckets: int = 8):
    """The score distribution as a small histogram (count per score range)."""
    table = Table(title="score distribution")
    table.add_column("score", overflow="fold")
    table.add_column("games", justify="right", overflow="fold")
    table.add_column("", overflow="fold")
    scores = result.scores
    if not scores:
        return table
    zero = sum(1 for s in scores if s <= 0)
    positive = sorted(s for s in scores if s > 0)
    rows = [("0", zero)]
    if positive:
        lo, hi = positive[0], positive[-1]
        width = max(1.0, (hi - lo + 1) / buckets)
        counts = Counter(min(buckets - 1, int((s - lo) // width)) for s in positive)
        for b in range(buckets):  # bucket b holds lo + b * width <= s < lo + (b + 1) * width
            first, last = math.ceil(lo + b * width), min(hi, math.ceil(lo + (b + 1) * width) - 1)
            if first > hi:
                break
            label = f"{first:g}" if first == last else f"{first:g}–{last:g}"  # whole scores: no two ranges share one
            rows.append((label, counts.get(b, 0)))
    most = max(n for _, n in rows) or 1
    for label, n in rows:
        table.add_row(label, str(n), "█" * round(20 * n / most))
    return table




def _resume_solo(args: argparse.Namespace) -> tuple[dict, list[tuple[str, str | None, int]], GameRecord | None]:
    """``arbiter solo --resume [ID]`` (ID: any suite of the run): the run's setup, its suites in
    engine order as (match id, status, games so far), and a game already played (for the seed
    check). ValueError when the run is finished or not found."""
    _, setup, _ = _resume_run(args, "solo")
    run = setup["run"]
    rows = sorted((r for r in stored_setups(args.db) if setup_command(r[2]) == "solo" and r[2].get("run") == run),
                  key=lambda r: r[2]["index"])
    if all(status == "finished" for _, status, _ in rows):
        raise ValueError(f"solo run {run} in {args.db} is finished; nothing to resume")
    suites, played = [], None
    for mid, status, _ in rows:
        done = done_games(args.db, mid)
        suites.append((mid, status, len(done)))
        played = played or _last_game(done)
    return setup, suites, played


def cmd_solo(args: argparse.Namespace) -> int:
    """``arbiter solo``: each engine plays the same seeded suite; a summary and paired comparisons.
    ``--resume [ID]``: the rest of an interrupted run (every engine's suite), from ``--db`` alone."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .formats.solo import run_suite

    setup, stored, played = None, [], None
    try:
        if args.resume is not None:
            setup, stored, played = _resume_solo(args)
        elif not args.game:
            raise ValueError("give --game (arbiter games lists them), or --resume to continue a run")
        game = load_game(args.game, **_parse_options(args.option))
        tc = parse_time_control(args.tc)
        if not args.engine:
            raise ValueError("give at least one --engine command")
        _check_per_engine(args)
        if args.count < 1:
            raise ValueError(f"--seeds must be at least 1, not {args.count}")
        if game.game_type.utility is not Utility.SOLO:
            raise ValueError(f"the solo format is for one-seat games; {game.name} has {game.num_seats} seats")
        master, source, kept = _run_master(args, setup, played)
        names = list(args.name or [])
        names += [None] * (len(args.engine) - len(names))
        names = [n or _guess_name(cmd) for n, cmd in zip(names, args.engine)]
        names = [f"{n}#{i + 1}" if names.count(n) > 1 else n for i, n in enumerate(names)]
        options = parse_engine_options(args.engine_option, len(args.engine))
        configs = [dataclasses.replace(_engine_config(cmd, names[i], args, index=i), options=options[i])
                   for i, cmd in enumerate(args.engine)]
    except (OptionError, ValueError) as exc:
        errors.print(f"[red]error:[/] {escape(str(exc))}")
        return EXIT_USAGE
    store, code = _prepare(args, configs)
    if store is None:
        return code
    if not _claimed(store, [match_id for match_id, _, _ in stored]):
        return EXIT_USAGE
    match_ids = []  # every engine is checked before the first suite: a broken last one stops the run at once
    for i, config in enumerate(configs):
        if stored and stored[i][1] == "finished":  # a resumed run's finished suite plays no game
            match_ids.append(stored[i][0])
            continue
        match_id, code = _preflight(game, [config], tc, args, store)
        if match_id is None:
            store.close()
            return code
        match_ids.append(stored[i][0] if stored else match_id)
    setups = [dict(command="solo", run=match_ids[0], index=i, game=game.name, options=game.options, tc=tc.text,
                   count=args.count, margin=args.margin, engine=list(args.engine), name=args.name,
                   engine_option=list(args.engine_option), **kept) for i in range(len(configs))]
    try:
        web = _start_web(args, f"solo: {', '.join(c.name for c in configs)}", args.count * len(configs),
                         [match_id for match_id, _, _ in stored])
    except (OSError, ValueError) as exc:
        errors.print(f"[red]error:[/] --web {args.web}: {escape(str(exc))}")
        store.close()
        return EXIT_USAGE
    for config, match_id, suite in zip(configs, match_ids, setups):  # every suite noted now: resuming finds them all
        store.begin_match(match_id, game.name, [config.name], tc.text, f"solo seeds={args.count}", suite)
    console.print(f"solo run {match_ids[0]}: {game.name}, {args.count} seeds, tc {tc.text}, master seed from {source} "
                  f"(revealed at the end), results → {args.db}"
                  + (f" (resumed after {sum(n for _, _, n in stored)} game(s))" if stored else ""), markup=False)
    suites: list[SuiteResult] = []
    try:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[score]}"),
                      TimeElapsedColumn(), console=console, disable=args.quiet) as progress:
            for i, (config, match_id) in enumerate(zip(configs, match_ids)):
                done = list(store.games(match_id)) if stored else []
                wins = [sum(bool(r.returns) and r.returns[0] > 0 for r in done), len(done)]  # a resumed run's too
                task = progress.add_task(escape(config.name), total=args.count, completed=len(done),
                                         score=f"won {wins[0]}/{wins[1]}" if done else "")

                def on_game(k, record, task=task, wins=wins):
                    wins[0] += record.returns and record.returns[0] > 0
                    wins[1] += 1
                    progress.update(task, advance=1, score=f"won {wins[0]}/{wins[1]}")
                    if args.quiet:
                        console.print(f"{record.players[0]} seed {k}: {'won' if record.returns[0] > 0 else 'lost'} "
                                      f"[{record.reason}{': ' + record.detail if record.detail else ''}]",
                                      markup=False, highlight=False)
                suites.append(run_suite(game, config, tc, args.count, master, store=store, match_id=match_id,
                                        run_dir=logs_dir(args.db), margin=args.margin / 1000, setup=setups[i],
                                        done=done,
                                        on_event=web.on_event() if web else None,
                                        on_game=web.on_game(on_game) if web else on_game))
    except KeyboardInterrupt:
        errors.print(f"[yellow]interrupted[/]: finished games are saved; continue with "
                      f"`arbiter solo --resume {match_ids[0]} --db {escape(str(args.db))}`")
        store.close()
        return storage_exit(store, EXIT_INTERRUPTED)
    finally:
        if web is not None:
            web.close()
    store.close()
    console.print(solo_summary_table(suites))
    if len(suites) > 1:
        console.print(solo_comparison_table(suites))
    not_started = [s for s in suites if all(r.reason == EndReason.NOT_STARTED for r in s.results.values())]
    return storage_exit(store, EXIT_ENGINE if not_started else EXIT_OK)


def solo_summary_table(suites: list[SuiteResult]):
    table = Table(title=f"solo suite: {suites[0].game}, master seed {suites[0].master_seed}")
    for col in ("engine", "games", "wins", "win rate", "95% CI (Wilson)", "forfeits", "avg ms/decision"):
        table.add_column(col, justify="left" if col == "engine" else "right", overflow="fold")
    for s in suites:
        lo, hi = s.ci()
        ms = s.mean_ms()
        table.add_row(escape(s.engine), str(s.games), str(s.wins), f"{s.win_rate:.1%}", f"{lo:.1%} – {hi:.1%}",
                      str(s.forfeits), f"{ms:.1f}" if ms is not None else "-")
    return table


def solo_comparison_table(suites: list[SuiteResult]):
    from .formats.solo import compare
    from .stats import MIN_INTERVAL_GAMES

    table = Table(title="paired comparison on common seeds (same dice)")
    for col in ("A", "B", "seeds", "both won", "A only", "B only", "neither", "sign test p",
                "win-rate diff A−B (95% CI)"):
        table.add_column(col, justify="left" if col in ("A", "B") else "right", overflow="fold")
    for i in range(len(suites)):
        for j in range(i + 1, len(suites)):
            c = compare(suites[i], suites[j])
            interval = (f"({c.rate_low:+.1%} … {c.rate_high:+.1%})" if c.n >= MIN_INTERVAL_GAMES  # as reports do
                        else f"(none below {MIN_INTERVAL_GAMES} seeds)")
            table.add_row(escape(suites[i].engine), escape(suites[j].engine), str(c.n), str(c.both), str(c.a_only),
                          str(c.b_only), str(c.neither), f"{c.p_value:.3g}", f"{c.rate_diff:+.1%} {interval}")
    return table


def _hosting_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sandbox", choices=[m.value for m in SandboxMode], default="auto",
                   help="confine each engine (auto: when the machine can, saying so loudly when it cannot; "
                        "required: refuse to start without it, exit 3; none: trust the engines)")
    p.add_argument("--limit", action="append", default=[], metavar="KEY=VALUE",
                   help="an engine limit: memory_mb (4096), processes (256), open_files (1024), log_mb (10), log_total_mb (100), "
                        "info_chars (2000), disk_mb (1024)")
    p.add_argument("--ponder", action="store_true",
                   help="let engines think on the opponent's time (default: stopped while it is not their turn; "
                        "with --ponder the CPU they use off-turn is recorded)")
    p.add_argument("--cpus", action="append", default=[], metavar="LIST",
                   help="pin the engines to CPU cores, one --cpus per --engine in order (e.g. --cpus 0 --cpus 1; "
                        "'0,2-3' for several)")
    p.add_argument("--pin", metavar="LIST",
                   help="run the referee and its engines on these cores (e.g. --pin 0): engines that take turns "
                        "need one core, and on one core no message waits for another CPU to wake up (much faster "
                        "short games on virtual machines); a multi-threaded engine gets no more than LIST, and the "
                        "live display draws on the same core; --cpus still places single engines")


def _pin(args: argparse.Namespace) -> int | None:
    """``--pin LIST``: this process and the engines it starts run on those cores (None: done;
    else the exit code after saying what is wrong)."""
    from .hosting import parse_cpus, pin_process

    try:
        cores = parse_cpus(args.pin)
        if not cores:
            raise ValueError("expected core numbers like 0 or 0,2-3")
        if getattr(args, "ponder", False) and len(cores) < 2:
            raise ValueError("pondering engines think at the same time and would share one core: give a core per "
                             "engine (--pin 0-1), or place them with --cpus")
        pin_process(cores)
    except (ValueError, OSError) as exc:
        errors.print(f"[red]error:[/] --pin {escape(args.pin)}: {escape(str(exc))}")
        return EXIT_USAGE
    return None


def _seed_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed-file", help="file holding the hex master seed (mode 600; '-': read it from stdin); "
                                       f"or set {SEED_ENV}. Default: fresh randomness")
    p.add_argument("--seed", help="hex master seed ON THE COMMAND LINE, visible to every process: for "
                                  "non-competitive runs only")
    p.add_argument("--key", help="the referee's secret key (arbiter keygen): sign every record")


def _milliseconds(text: str) -> int:
    """``--margin``: a whole number of milliseconds, not negative (argparse names the flag)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of milliseconds, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="arbiter", description="Referee matches between game engines.")
    sub = parser.add_subparsers(dest="command", required=True)

    m = sub.add_parser("match", help="play a match between two engines (or a series between 3-5 at an n-seat game)")
    m.add_argument("--game", help="game name (arbiter games lists them)")
    m.add_argument("--engine", action="append", default=[],
                   help="engine command line ({python}: this Python), or remote:NAME for a participant of --roster "
                        "connecting over tcp, or tcp://HOST:PORT with --insecure, or a name in --engines-file "
                        "(give twice: A then B; 3-5 times for a game of that many seats)")
    m.add_argument("--name", action="append", help="engine display name (give twice)")
    m.add_argument("--option", action="append", default=[], help="game option KEY=VALUE (repeatable)")
    m.add_argument("--engine-option", action="append", default=[], metavar="N:NAME=VALUE",
                   help="set option NAME the N-th --engine declares in its hello (N from 1; repeatable); "
                        "arbiter engine-info CMD lists them")
    m.add_argument("--tc", default="180", help="time control, e.g. 180, 180+2, 40/60+0.5, st=1, 60+3x10, inf")
    m.add_argument("--max-plies", type=int, default=0, metavar="N",
                   help="adjudicate a game still going after N decisions (rolls not counted) as the game scores "
                        "an unfinished one: a draw unless its rules say otherwise")
    m.add_argument("--resign-moves", type=int, default=0, metavar="N",
                   help="resign rule: end the game for the side ahead when for N consecutive moves each both "
                        "engines' reported scores agree beyond --resign-score")
    m.add_argument("--resign-score", type=float, default=0.0, metavar="S",
                   help="resign rule: the score (the engines' own scale) the winner reports at least and the "
                        "loser at most minus")
    m.add_argument("--format", default=None,
                   help="olympiad (default) | boN[:ABBA..] | games=N (with --sprt: at most N games; default 10000)")
    m.add_argument("--sprt", metavar="ELO0,ELO1[,ALPHA,BETA]",
                   help="stop when a GSPRT of A against B (trinomial on games, with --openings pentanomial on the "
                        "pairs; logistic Elo) accepts H0 or H1, "
                        "e.g. 0,10,0.05,0.05 (as cutechess and fastchess)")
    m.add_argument("--margin", type=_milliseconds, default=DEFAULT_MARGIN_MS,
                   help="ms an engine may overrun before losing on time")
    _seed_arguments(m)
    _hosting_arguments(m)
    m.add_argument("--restart", action="store_true", help="restart engines for every game")
    _remote_arguments(m)
    m.add_argument("--db", default="runs/results.sqlite",
                   help="SQLite results file (its <stem>.jsonl export and <stem>-logs/ engine logs beside it)")
    m.add_argument("--resume", nargs="?", const="", metavar="MATCH_ID",
                   help="continue an interrupted match from --db (default: its latest unfinished one) with "
                        "the game, options, time control, format and engines it was started with")
    m.add_argument("--quiet", action="store_true", help="no live display")
    _suite_arguments(m)
    _web_arguments(m)
    m.set_defaults(func=cmd_match)

    d = sub.add_parser("demo", help="an EinStein olympiad match between the sample engines")
    d.add_argument("--db", default="runs/results.sqlite",
                   help="SQLite results file (its <stem>.jsonl export and <stem>-logs/ engine logs beside it)")
    d.add_argument("--quiet", action="store_true", help="no live display")
    d.set_defaults(func=cmd_demo)

    for name, func, text in (("show", cmd_show, "print a game move by move with boards"),
                             ("verify", cmd_verify, "recompute every roll and replay every move of records")):
        s = sub.add_parser(name, help=text)
        s.add_argument("record", nargs="?" if name == "show" else None,
                       help="results .sqlite, .jsonl export or .json record")
        s.add_argument("--game-id", help="one game (default: show the last / verify all)")
        if name == "show":
            s.add_argument("game_id_arg", nargs="?", metavar="GAME_ID",
                           help="the game to show: its id or the id's unique beginning (--list lists them)")
            s.add_argument("--list", action="store_true", help="list the games in the file with their ids")
            s.add_argument("--all", action="store_true", help="every game in the file")
            s.add_argument("--game", help="without a record: draw this game's start position (with --option) and "
                                          "give its notation, or the --position given")
            s.add_argument("--position", help="a position in the game's text notation")
            s.add_argument("--option", action="append", default=[], help="game option KEY=VALUE")
        else:
            s.add_argument("-v", "--verbose", action="store_true")
            s.add_argument("--public-key", help="check the records' signatures against this public key")
        s.set_defaults(func=func)

    for name, func, text, count in (
            ("coop", cmd_coop, "a cooperative series: two engines, seats swapped each game", "--games"),
            ("solo", cmd_solo, "a solo suite: each engine plays the same seeded games", "--seeds")):
        c = sub.add_parser(name, help=text)
        c.add_argument("--game", help="the game (arbiter games lists them); not with --resume")
        c.add_argument("--engine", action="append", default=[], help="engine command line (repeatable)")
        c.add_argument("--name", action="append", help="engine display name (repeatable)")
        c.add_argument("--option", action="append", default=[], help="game option KEY=VALUE (repeatable)")
        c.add_argument("--engine-option", action="append", default=[], metavar="N:NAME=VALUE",
                       help="set option NAME the N-th --engine declares in its hello (N from 1; repeatable); "
                            "arbiter engine-info CMD lists them")
        c.add_argument("--tc", default="180", help="time control")
        c.add_argument(count, dest="count", type=int, default=100, help="number of games")
        c.add_argument("--margin", type=_milliseconds, default=DEFAULT_MARGIN_MS,
                       help="ms an engine may overrun before losing on time")
        _seed_arguments(c)
        _hosting_arguments(c)
        c.add_argument("--db", default="runs/results.sqlite",
                       help="SQLite results file (its <stem>.jsonl export and <stem>-logs/ engine logs beside it)")
        c.add_argument("--resume", nargs="?", const="", metavar="MATCH_ID",
                       help=f"continue the interrupted {'series' if name == 'coop' else 'run'} (the latest in --db, "
                            f"or MATCH_ID): its game, engines and settings come from --db; the hosting flags "
                            f"(--sandbox, --limit...) from this command line")
        c.add_argument("--quiet", action="store_true", help="no progress bar")
        _web_arguments(c)
        c.set_defaults(func=func)

    ex = sub.add_parser("export", help="write the games of a results file as compact text (PGN-like) or CSV")
    ex.add_argument("record", help="results .sqlite, .jsonl export or .json record")
    ex.add_argument("--format", choices=TEXT_FORMATS, default="text", help="text (default) or csv")
    ex.add_argument("-o", "--output", help="file to write (default: standard output)")
    ex.add_argument("--key", help="sign each game's digest with this referee key (arbiter keygen)")
    ex.set_defaults(func=cmd_export)

    im = sub.add_parser("import", help="rebuild full records from a text or CSV export into a new database")
    im.add_argument("file", help="a file written by arbiter export")
    im.add_argument("--db", required=True, help="the new SQLite results file (its .jsonl export beside it)")
    im.add_argument("--key", help="sign the rebuilt records with this referee key (arbiter keygen)")
    im.add_argument("--public-key", help="require every game of the file to be signed by this key (export --key)")
    im.set_defaults(func=cmd_import)

    ce = sub.add_parser("check-engine", help="a conformance run for engine authors: PASS/FAIL per check")
    ce.add_argument("command_line", metavar="CMD", help="the engine's command line ({python}: this Python)")
    ce.add_argument("--game", required=True, help="the game to check it on")
    ce.add_argument("--option", action="append", default=[], help="game option KEY=VALUE (repeatable)")
    ce.add_argument("--tc", default="10+0.1", help="time control of its games (default 10+0.1)")
    ce.add_argument("--logs", default="runs/check-engine-logs", help="folder for the engine's logs")
    _hosting_arguments(ce)
    ce.set_defaults(func=cmd_check_engine)

    ei = sub.add_parser("engine-info", help="start an engine, shake hands, print its name and its options, quit it")
    ei.add_argument("command_line", metavar="CMD", help="the engine's command line ({python}: this Python)")
    ei.add_argument("--game", default=None, help="the game to introduce it to (as a match would)")
    ei.add_argument("--logs", default="runs/engine-info-logs", help="folder for the engine's log")
    _hosting_arguments(ei)
    ei.set_defaults(func=cmd_engine_info)

    k = sub.add_parser("keygen", help="without NAME: the referee's Ed25519 key pair for signing records; "
                                      "with NAME: a CURVE key pair NAME.key/NAME.pub for tcp")
    k.add_argument("name", nargs="?", help="make a CURVE key pair (a remote participant's, or 'referee-curve' for the "
                                           "referee's tcp endpoint)")
    k.add_argument("--out", default=None, help="folder for the key files (default: keys for the signing key, "
                                               "the current folder for NAME)")
    k.set_defaults(func=cmd_keygen)

    g = sub.add_parser("games", help="list the games the referee knows; with a name, that game's kind and options")
    g.add_argument("name", nargs="?", help="a game: its seats, kind, options (with defaults) and rules document")
    g.set_defaults(func=cmd_games)
    return parser


def _suite_arguments(m: argparse.ArgumentParser) -> None:
    """``arbiter match``'s openings and engines file (docs/tournaments.md)."""
    m.add_argument("--openings", metavar="FILE",
                   help="start positions, one per line in the game's notation ('#' comments): each is played "
                        "twice, seats swapped, on the same dice (n seats: once per seat rotation)")
    m.add_argument("--openings-order", choices=["sequential", "shuffled"],
                   help="file order (default), or shuffled from the master seed")
    m.add_argument("--engines-file", metavar="FILE",
                   help="a TOML file of [[engines]] tables: --engine NAME takes that engine's command, cwd, "
                        "options and limits")


_STOPPING_GRACE = 10.0
"""Seconds after a first interrupt during which another is absorbed (see ``_sigterm_as_interrupt``)."""
_stopping_since: float | None = None


def _sigterm_as_interrupt(signum, frame):
    """Ctrl-C, ``kill PID`` or a hang-up: a ``KeyboardInterrupt``, once. A repeat within
    ``_STOPPING_GRACE`` seconds (Ctrl-C pressed twice, Ctrl-C then ``kill``) is absorbed: raised in
    the first one's clean-up, it skipped the rest of it (a match was left "playing" in the
    database instead of interrupted). A clean-up that hangs longer still yields to the next one."""
    global _stopping_since
    if signum == getattr(signal, "SIGHUP", None):
        _leave_the_terminal()
    now = time.monotonic()
    if _stopping_since is not None and now - _stopping_since < _STOPPING_GRACE:
        return
    _stopping_since = now
    stop_raised()  # if it is swallowed, the referee raises it again (``raise_a_lost_stop``)
    raise KeyboardInterrupt


def _leave_the_terminal() -> None:
    """After a hang-up (the operator's ssh link dropped, the terminal window closed) writing to
    the terminal fails with EIO, which would break the run's orderly stop; what went to it goes
    to /dev/null from now on (as under ``nohup``). Output redirected to a file or pipe stays."""
    import stat

    null = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        try:
            if stat.S_ISCHR(os.fstat(fd).st_mode):  # a terminal (hung up, so isatty() may say no)
                os.dup2(null, fd)
        except OSError:
            pass
    os.close(null)


@contextlib.contextmanager
def operator_signals():
    """``kill PID`` (SIGTERM) and a hang-up (SIGHUP) stop the command as Ctrl-C does: finished games
    saved, the match or event marked interrupted, exit 130, the ``--resume`` line printed; any of
    them again while it stops is absorbed (``_sigterm_as_interrupt``). Ctrl-Z
    (SIGTSTP), or a background job's write to its terminal under ``stty tostop`` (SIGTTOU), stops it
    until ``fg`` without charging the stop to any engine's clock. A signal
    ignored already (``nohup``) stays ignored. Main thread only (where signals are handled).

    SIGINT, SIGTERM and SIGHUP are held from the command's first line (``arbiter/__init__.py``)
    until here: one that came meanwhile raises ``KeyboardInterrupt`` on entering (the caller says
    "interrupted", exit 130; nothing was started).

    A stop raised where Python cannot pass it on (a ZeroMQ frame's ``__dealloc__``) is raised again
    by the referee (``raise_a_lost_stop``): Python's "Exception ignored" traceback of it is not
    printed (it looked like a crash)."""
    import threading

    from . import release_operator_signals
    from .clock import pause_clocks_when_stopped

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    global _stopping_since
    _stopping_since = None
    stop_raised(False)
    wanted = [signal.SIGTERM]
    if hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) == signal.SIG_DFL:
        wanted.append(signal.SIGHUP)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not when ignored (`cmd &` in a script)
        wanted.append(signal.SIGINT)
    previous = {signum: signal.signal(signum, _sigterm_as_interrupt) for signum in wanted}
    unraisable = sys.unraisablehook
    sys.unraisablehook = lambda report: None if isinstance(report.exc_value, KeyboardInterrupt) else unraisable(report)
    if hasattr(signal, "SIGTSTP"):
        for signum in (signal.SIGTSTP, signal.SIGTTOU, signal.SIGTTIN):
            previous[signum] = signal.getsignal(signum)
        pause_clocks_when_stopped()
    try:
        release_operator_signals()  # one held since the start (during the imports) is handled now: KeyboardInterrupt
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        sys.unraisablehook = unraisable


def out_of_files(exc: Exception) -> bool:
    """Running out of file descriptors anywhere (an OSError, a ZeroMQ error) is one line naming
    the limit, not a traceback."""
    import errno
    import resource

    if getattr(exc, "errno", None) not in (errno.EMFILE, errno.ENFILE):
        return False
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    print(f"error: the referee ran out of file descriptors ({getattr(exc, 'filename', None) or exc.strerror}; limit {soft} open "
          f"files): raise it with ulimit -n", file=sys.stderr)
    return True


def out_of_memory(exc: BaseException) -> bool:
    """The referee's own limits reached otherwise (``ulimit -v`` too low for a thread's stack, which
    is ``ulimit -s``: "can't start new thread" as an engine's connection opened, a traceback before;
    a MemoryError): one line naming the limits (exit 3, as for file descriptors)."""
    import resource

    if not (isinstance(exc, MemoryError) or (isinstance(exc, RuntimeError) and "can't start new thread" in str(exc))):
        return False

    def shown(limit: int, unit: int = 1) -> str:
        return "unlimited" if limit == resource.RLIM_INFINITY else str(limit // unit)

    memory = shown(resource.getrlimit(resource.RLIMIT_AS)[0], 1024)
    stack = shown(resource.getrlimit(resource.RLIMIT_STACK)[0], 1024)  # each thread's stack, where not unlimited
    tasks = shown(resource.getrlimit(resource.RLIMIT_NPROC)[0])
    print(f"error: the referee ran out of memory or threads ({type(exc).__name__}: {exc or 'out of memory'}; limits: "
          f"virtual memory {memory} KiB (ulimit -v), a thread's stack {stack} KiB (ulimit -s), processes {tasks} "
          f"(ulimit -u)): raise the memory limit or lower the stack's, or free memory", file=sys.stderr)
    return True


def threads_refused() -> bool:
    """Whether a thread cannot start here (then said by ``out_of_memory``): checked before any
    engine starts, since ZeroMQ's own threads then end the process with SIGABRT ("Resource
    temporarily unavailable (src/thread.cpp:241)"), which nothing can catch."""
    import threading

    try:
        thread = threading.Thread(target=int, name="can-start")
        thread.start()
    except RuntimeError as exc:
        return out_of_memory(exc)
    thread.join()
    return False


def folder_gone() -> str | None:
    """The error when the current folder was deleted under the shell (``rm -rf`` in another window):
    engines start in it and relative paths resolve from it, so without this every engine "cannot
    start ...: No such file or directory" (its program there all along) and a tournament suggested
    forfeiting them all. ``None`` when the folder is there."""
    try:
        os.getcwd()
    except FileNotFoundError:
        return ("the current folder no longer exists (deleted after the shell went into it); engines start there and "
                "relative paths are read from there: cd to a folder that exists and run the command again")
    return None


def temp_unusable() -> str | None:
    """The error when the temporary folder (``TMPDIR``) cannot hold the engines' sockets: their
    ``ipc://`` addresses are UTF-8, and a folder name that is not (``TMPDIR=$'/var/tmp/x\\xff'``)
    made the first engine's start a UnicodeEncodeError traceback; a name too long for a socket's
    (``_SOCKET_NAME_MAX``) made every engine "cannot start". ``None`` when it can."""
    import tempfile

    folder = tempfile.gettempdir()
    try:
        os.fsencode(folder).decode("utf-8")
    except UnicodeDecodeError:
        return (f"the temporary folder {os.fsencode(folder)!r} (from TMPDIR, TEMP or TMP) is not a valid UTF-8 name, "
                f"and the engines' sockets (ipc://) are named in UTF-8: set TMPDIR to a folder whose name is (e.g. /tmp)")
    socket = os.fsencode(os.path.join(folder, "arb-12345678", "0123456789ab", "s"))  # as protocol.transport names them
    if len(socket) > _SOCKET_NAME_MAX:
        return (f"the temporary folder {folder} (from TMPDIR, TEMP or TMP) is too long a name ({len(os.fsencode(folder))} "
                f"bytes): the engines' sockets in it would be named with {len(socket)} bytes, more than the "
                f"{_SOCKET_NAME_MAX} a socket's name may hold; set TMPDIR to a folder with a shorter name (e.g. /tmp)")
    return None


_SOCKET_NAME_MAX = 107
"""The longest name of a Unix socket (Linux: sockaddr_un.sun_path less its NUL; zmq.IPC_PATH_MAX_LEN).
A TMPDIR too long for it made every engine "cannot start" (exit 3), blamed on the engines."""


_STARTS_ENGINES = {"match", "demo", "coop", "solo", "check-engine", "engine-info"}


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    finally:
        forget_handled_interrupts()  # exit 130 means 130, under `python -m` too


def _main(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in _STARTS_ENGINES and (gone := folder_gone() or temp_unusable()):
        errors.print(f"[red]error:[/] {escape(gone)}")
        return EXIT_USAGE
    if args.command in _STARTS_ENGINES and threads_refused():
        return EXIT_ENGINE
    if getattr(args, "pin", None) is not None and (code := _pin(args)) is not None:
        return code
    try:
        with operator_signals():  # entering it may raise the KeyboardInterrupt of a signal held since the start
            try:
                return args.func(args)
            except KeyboardInterrupt:  # outside a match's own handling (which says what it saved): say so
                print("interrupted", file=sys.stderr)
                return EXIT_INTERRUPTED
            except BrokenPipeError:  # a plain print's reader left (`arbiter games | head`): not an error
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                return EXIT_OK
            except Exception as exc:  # OSError or zmq.ZMQError (zmq is loaded only by commands that play)
                if not out_of_files(exc) and not out_of_memory(exc):
                    raise
                return EXIT_ENGINE
    except KeyboardInterrupt:  # a signal held since the start, handled on entering: nothing was started
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED



# --- openings, n-seat series and engines files for ``arbiter match`` (docs/tournaments.md) ---------

def _match_engines(args: argparse.Namespace) -> tuple:
    """The engines of ``arbiter match``: each ``--engine`` a command line, or with
    ``--engines-file F`` the name of one of its engines. Default names: A:, B:, ... + a short name."""
    engines_file = _load_engines_file(args.engines_file) if getattr(args, "engines_file", None) else None
    names = list(args.name or []) + [None] * len(args.engine)
    configs = []
    for i, cmd in enumerate(args.engine):
        if engines_file is not None and cmd in engines_file.tables:
            configs.append(_file_engine(engines_file, cmd, names[i], args, i))
        elif engines_file is not None and re.fullmatch(r"[\w.-]+", cmd):  # a name, not a command line
            raise ValueError(f"--engine {cmd}: {engines_file.unknown(cmd)}")
        else:
            configs.append(_engine_config(cmd, names[i] or f"{'ABCDE'[i]}:{_guess_name(cmd)}", args, args.restart, i))
    given = [c.name for c in configs]  # one name per engine, or records, standings and pages would merge them
    return tuple(dataclasses.replace(c, name=f"{n}#{i + 1}") if given.count(n) > 1 else c
                 for i, (c, n) in enumerate(zip(configs, given)))


def _load_engines_file(path: str):
    from .enginefile import ConfigError, EnginesFile

    try:
        return EnginesFile.load(path)
    except ConfigError as exc:
        raise ValueError(f"--engines-file {exc}") from None


def _file_engine(engines_file, name: str, display: str | None, args: argparse.Namespace, index: int):
    """``--engine NAME`` of ``--engines-file``: its command, cwd, options and limits (``--restart``
    and ``--cpus`` still apply); ValueError names the file and line of a bad entry."""
    from .hosting import parse_cpus

    from .enginefile import ConfigError

    try:
        spec = engines_file.spec(name)
    except ConfigError as exc:
        raise ValueError(f"--engines-file {exc}") from None
    config = spec.engine_config(hide=_hosting(args)["hide"])
    cpus = getattr(args, "cpus", None) or []
    pinned = config.cpus
    if index < len(cpus):
        try:
            pinned = parse_cpus(cpus[index])
        except ValueError as exc:
            raise ValueError(f"--cpus {cpus[index]} (engine {index + 1}): {exc}") from None
    return dataclasses.replace(config, name=display or name, cpus=pinned,
                               restart_each_game=config.restart_each_game or bool(args.restart))


def _match_openings(args: argparse.Namespace, game, seed: bytes | None) -> list:
    """``--openings FILE`` in the order the games take them (``--openings-order``; shuffled from
    the master seed, or fresh randomness recorded with the match); a resumed match's as stored."""
    from .openings import load_openings, play_order
    from .records import Opening

    played = getattr(args, "openings_played", None)
    if played:
        return [Opening(index=i, position=p) for i, p in played]
    path, order = getattr(args, "openings", None), getattr(args, "openings_order", None) or "sequential"
    if not path:
        if getattr(args, "openings_order", None):
            raise ValueError("--openings-order needs --openings FILE")
        return []
    openings = load_openings(path, game)  # OpeningsError is a ValueError naming the file and line
    return play_order(openings, order, (seed or os.urandom(16)).hex())


def _openings_setup(args: argparse.Namespace, openings: list) -> dict:
    """What a resumed match needs of its openings and engines file (stored with the match)."""
    out = {}
    if openings:
        out["openings"] = [[o.index, o.position] for o in openings]
    if getattr(args, "engines_file", None):
        out["engines_file"] = args.engines_file
    return out


def _check_table_format(game, fmt: MatchFormat, args: argparse.Namespace) -> None:
    """An n-seat series plays ``games=N`` with N a multiple of n (each engine in each seat equally often)."""
    n = game.num_seats
    if n == 2:
        return
    if fmt.first_to is not None or fmt.games % n:
        raise ValueError(f"--format {args.format}: a {n}-seat series plays games=N with N a multiple of {n} "
                         f"(every engine in every seat equally often), e.g. games={2 * n}")
    if getattr(args, "sprt", None):
        raise ValueError(f"--sprt compares two engines; {game.name} here seats {n}")


def _run_table(args, game, tc, fmt, seed, configs, setup, match_id, done, openings, adjudication=None) -> int:
    """An n-seat series (3-5 engines): seats rotated every game, a line per game (none with
    ``--quiet``), a summary."""
    from .formats.match import TableMatch

    store, code = _prepare(args, configs)
    if store is None:
        return code
    if match_id and not _claimed(store, [match_id]):
        return EXIT_USAGE

    def on_game(result, record):
        if args.quiet:
            return
        winners = [record.players[s] for s, r in enumerate(record.returns)
                   if r == max(record.returns) and min(record.returns) < max(record.returns)]
        opening = f" from opening {record.opening.index}" if record.opening else ""
        console.print(escape(f"game {record.game_number}{opening}: {' / '.join(record.players)} → "
                             f"{', '.join(winners) or 'no winner'} [{record.reason}"
                             f"{': ' + record.detail if record.detail else ''}] in {len(record.events)} events"), highlight=False)

    web = getattr(args, "live_view", None)  # --web: the live web view (docs/web.md) wraps the hooks
    on_event = None
    if web is not None:
        on_event, on_game = web.on_event(None), web.on_game(on_game)
    table = TableMatch(game, list(configs), tc, fmt.games, store=store, run_dir=logs_dir(args.db), on_event=on_event,
                       margin=args.margin / 1000, seed=seed, match_id=match_id, on_game=on_game, openings=openings,
                       adjudication=adjudication)
    if failed := _start_all(table.series, store):
        return _not_started(configs, failed, args)
    with _stopped_if_interrupted(table.series, store):
        console.print(escape(f"match {table.match_id}: {game.name} {game.options}, {len(configs)} seats, "
                             f"{' / '.join(c.name for c in configs)}, tc {tc.text}, {fmt.games} games with the seats "
                             f"rotated, results → {args.db}") + (f" (resumed after {len(done)} game(s))" if match_id else ""), highlight=False)
    try:
        result = table.play(setup, done)
    except KeyboardInterrupt:
        errors.print(f"[yellow]interrupted[/]: finished games are saved; continue with "
                      f"`arbiter match --resume {table.match_id} --db {escape(str(args.db))}`")
        store.close()
        return storage_exit(store, EXIT_INTERRUPTED)
    store.close()
    summary = Table(title=f"match {result.match_id}: {len(result.records)} games")
    for col in ("engine", "games", "wins", "total return"):
        summary.add_column(col, justify="left" if col == "engine" else "right", overflow="fold")
    for i, name in enumerate(result.players):
        summary.add_row(escape(name), str(len(result.records)), str(result.wins[i]), f"{result.returns[i]:g}")
    console.print(summary)
    not_started = [r for r in result.records if r.reason == EndReason.NOT_STARTED]
    return storage_exit(store, EXIT_ENGINE if not_started and len(not_started) == len(result.records) else EXIT_OK)


if __name__ == "__main__":
    raise SystemExit(main())
