"""The tournament command line (``arbiter-tournament``, or ``python -m tournaments``).

    arbiter-tournament run FILE.toml [--concurrency N] [--quiet] [--overwrite]
    arbiter-tournament resume FILE.toml|DB.sqlite [--concurrency N] [--quiet]
    arbiter-tournament report DB.sqlite [--json PATH] [--csv DIR] [--plot PATH.png|.svg] [--text PATH]
    arbiter-tournament check FILE.toml

Exit codes: 0 finished (or report written); 1 the tournament failed (a worker error, a changed
schedule); 2 bad usage, a bad tournament file, or a database in the wrong state (already
started, missing, locked by a running process); 3 an engine requires a sandbox this machine cannot
give (the message says what to install or enable), or an engine cannot start (every engine is started
and greeted before the first game; ``check`` does the same; ``on_start_failure = "forfeit"`` plays
anyway); 4 a game could not be saved (disk full, unwritable
database...: the run stops, the unsaved games go to a fallback file named in the message, and
``resume`` plays them again once the storage is fixed); 130 interrupted (every finished game is saved:
``resume`` continues).
"""
from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import time
from pathlib import Path

import zmq

from arbiter.stats import contested
from arbiter.web import parse_port

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_ENGINE, EXIT_STORAGE, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130


def _console(stderr: bool = False):
    """The console of a command's output; with ``stderr``, of its errors, warnings and
    interruptions (stdout stays clean when it is piped or redirected to a file)."""
    from arbiter.cli import ReaderMayLeave  # `run ... | head`: the run goes on, its output dropped

    return ReaderMayLeave(highlight=False, soft_wrap=True, stderr=stderr)  # a long path stays whole (the terminal wraps it)


def _warn(text: str) -> None:
    """One warning line, on stderr, printed as it is (not read as rich markup)."""
    from rich.markup import escape

    _console(stderr=True).print(f"[bold yellow]warning:[/] {escape(text)}")


def _error(text: str) -> None:
    """One error line, on stderr. The text (paths, configuration values, exception messages) is
    printed as it is, not read as rich markup: a folder named ``[final]`` stays in the path."""
    from rich.markup import escape

    _console(stderr=True).print(f"[red]error:[/] {escape(text)}")


def _report_width(console) -> int:
    """The text report's width: the terminal's (rich fits each table into it, wrapping cells), else
    120 at least (a file or a pipe: tables whole on one line each)."""
    return console.width if console.is_terminal else max(120, console.width)


def _fmt_duration(seconds: float) -> str:
    if seconds != seconds or seconds == float("inf"):
        return "?"
    seconds = int(seconds)
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


def live_standings(runner) -> list[tuple[str, int, float, str]]:
    """(engine, games, score, text) per engine from the committed results, best first."""
    cfg = runner.cfg
    n = len(runner.names)
    games, score = [0] * n, [0.0] * n
    for res in runner.results.values():
        r = res.returns
        best = max(r)
        counted = set()  # an engine with its own copy (a cooperative self-pair) counts the game once, as reports do
        for seat, e in enumerate(res.seating):
            e %= n
            if e in counted:
                continue
            counted.add(e)
            games[e] += 1
            if cfg.kind in ("match", "table"):
                # a win counts whole (alone or with its alliance, as the report counts it); all equal: a draw
                if contested(r) and r[seat] == best:
                    score[e] += 0.5 if min(r) == best else 1.0
            else:
                score[e] += r[seat]
    rows = []
    for i in range(n):
        if cfg.kind in ("match", "table"):
            text = f"{score[i]:g}/{games[i]}" + (f"  {100 * score[i] / games[i]:3.0f}%" if games[i] else "      ")
            key = score[i] / games[i] if games[i] else 0.0
        else:
            key = score[i] / games[i] if games[i] else float("-inf")
            text = f"mean {key:.2f} over {games[i]}" if games[i] else "-"
        rows.append((runner.names[i], games[i], key, text))
    rows.sort(key=lambda r: -r[2])
    return rows


LIVE_REFRESH = 0.25
"""Seconds between redraws of the live display: a redraw reads every committed result and costs
milliseconds, and a fast event commits many games a second (redrawn per game, a 100,000-game event
would spend hours of the director's CPU on its screen)."""


class Display:
    """Live progress on a terminal (rich), one line per game otherwise, or nothing (quiet)."""

    def __init__(self, console, mode: str, rating_interval: int | None = None):
        self.console, self.mode = console, mode
        self.rating_interval = rating_interval
        """Overrides the file's ``rating_interval`` (``--rating-interval``)."""
        self.live = None
        self.started = time.monotonic()
        self.first_done = None
        self._drawn = float("-inf")
        self._undrawn = None
        """The runner whose latest state the screen does not show yet (drawn at the latest on exit)."""

    def __enter__(self):
        if self.mode == "live":
            from rich.live import Live

            self.live = Live(console=self.console, auto_refresh=False, transient=False)
            self.live.__enter__()
        return self

    def __exit__(self, *exc):
        if self.live is not None:
            if self._undrawn is not None:
                self.live.update(self.render(self._undrawn), refresh=True)
            self.live.__exit__(*exc)

    def render(self, runner):
        from rich.console import Group
        from rich.markup import escape
        from rich.table import Table

        plan = runner.plan
        done = runner.played
        session = runner.summary.committed
        elapsed = time.monotonic() - self.started
        rate = session / elapsed if elapsed > 0 and session else 0.0
        eta = plan.max_remaining / rate if rate else float("nan")
        cfg = runner.cfg
        head = (f"[bold]{escape(cfg.name)}[/] · {cfg.game} · {cfg.format}"
                + (f" {cfg.match_text}" if cfg.kind == "match" else "")
                + f" · tc {cfg.time_control.text} · {runner.concurrency} in parallel")
        line = (f"ETA ≤ {_fmt_duration(eta)} · elapsed {_fmt_duration(elapsed)} · games {done} done, "
                f"≤ {max(0, plan.max_remaining - (done - plan.played))} to go · round {plan.round}/{plan.rounds} · "
                f"{rate:.2f} games/s")  # a narrow terminal crops the line: what matters most first
        table = Table(box=None, padding=(0, 2), show_header=True, header_style="bold")
        for col in ("#", "engine", "score"):
            table.add_column(col, overflow="fold")
        for k, (name, _, _, text) in enumerate(live_standings(runner)[:12], 1):
            table.add_row(str(k), escape(name), text)
        playing = [escape(f"  {spec.pairing} game {spec.number}: " + " vs ".join(runner.names[e % len(runner.names)]
                                                                                 for e in spec.seating))
                   for spec in runner.in_flight.values()]
        per_worker = getattr(runner.active_backend, "per_worker", None) or {}
        workers = [f"  {host}: {n} games, {n / elapsed:.2f}/s" for host, n in sorted(per_worker.items())]
        return Group(head, line, table, *(["[dim]playing:[/]"] + playing[:8] if playing else []),
                     *(["[dim]per worker:[/]"] + workers[:8] if workers else []))

    def progress(self, runner) -> None:
        """Redraw, at most every ``LIVE_REFRESH`` seconds (the runner calls again within that)."""
        if self.live is None:
            return
        now = time.monotonic()
        if now - self._drawn < LIVE_REFRESH:
            self._undrawn = runner
            return
        self._drawn, self._undrawn = now, None
        self.live.update(self.render(runner), refresh=True)

    def rate_and_eta(self, runner) -> str:
        plan = runner.plan
        elapsed = time.monotonic() - self.started
        session = runner.summary.committed
        rate = session / elapsed if elapsed > 0 and session else 0.0
        eta = plan.max_remaining / rate if rate else float("nan")
        return (f"{runner.played} of ≤ {plan.played + plan.max_remaining} games · {rate:.2f} games/s · "
                f"elapsed {_fmt_duration(elapsed)} · ETA ≤ {_fmt_duration(eta)}")

    def ratings_block(self, runner) -> str:
        """Standings with ratings (the report's models) from the committed games, rate and ETA:
        printed every ``rating_interval`` games (fastchess's ``-ratinginterval``)."""
        from rich.markup import escape

        from .report import quick_ratings

        games = [{"seating": list(r.seating), "returns": list(r.returns)} for r in runner.results.values()]
        rated = quick_ratings(runner.cfg, runner.names, games)
        lines = [f"── {self.rate_and_eta(runner)} ──"]
        width = max(len(n) for n in runner.names)
        rows = live_standings(runner)
        if rated is not None:  # equal scores in the order of the report's ranking (Elo; OpenSkill μ - 3σ)
            place = {name: k for k, name in enumerate(rated[1])}
            rows.sort(key=lambda r: (-r[2], place.get(r[0], len(place))))
        for k, (name, _, _, text) in enumerate(rows, 1):
            line = f"{k:3d}. {escape(name):<{width}}  {text:>16}"
            if rated is not None and name in rated[1]:
                value, lo, hi = rated[1][name]
                line += f"   {rated[0]} {value:+8.1f} ± {(hi - lo) / 2:.1f}"
            lines.append(line)
        return "\n".join(lines)

    def game(self, runner, spec, record) -> None:
        if self.mode == "lines":
            from arbiter.records.record import winners

            won = winners(record.returns)  # an alliance's seats together; a solo game only when won
            who = ", ".join(record.players[w] for w in won) if won else "no winner"
            self.console.print(f"[{runner.played}/{runner.plan.played + runner.plan.max_remaining}] "
                               f"{spec.pairing} game {spec.number}: {' vs '.join(record.players)} -> {who} "
                               f"({record.reason}) {record.returns}", markup=False)
        every = self.rating_interval if self.rating_interval is not None else runner.cfg.rating_interval
        if self.mode != "quiet" and every and runner.played % every == 0:
            self.console.print(self.ratings_block(runner))
        self.progress(runner)


def _check_output(output: Path, source: str) -> None:
    """The results database's folder must exist or be creatable, and be writable (else ConfigError)."""
    from .config import ConfigError

    folder = Path(output).parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{source}: output: {output}: cannot create {folder}: {exc.strerror or exc}") from None
    if not os.access(folder, os.W_OK | os.X_OK) or (Path(output).exists() and not os.access(output, os.W_OK)):
        raise ConfigError(f"{source}: output: {output}: not writable")
    _check_logs(output, f"{source}: output: {output}")


def _check_logs(db_path: Path, where: str) -> None:
    """The engines' logs folder beside the database must be a folder: else every engine 'cannot
    start' (and with on_start_failure = "forfeit" every game would be lost for the referee's fault)."""
    from .config import ConfigError
    from .runner import logs_dir

    logs = logs_dir(db_path)
    if logs.exists() and not logs.is_dir():
        raise ConfigError(f"{where}: the engines' logs go in the folder {logs}, and that is a file: move it away")


def _preflight(console, cfg, db_path, show: bool = False) -> int:
    """Start and greet every engine once; name each that cannot start: the exit code (0 all
    started; 3 one cannot start; 2 an engine's ``options`` do not fit what its hello declares,
    checked under ``on_start_failure = "forfeit"`` too). ``show``: print how each introduced itself."""
    from rich.markup import escape

    from arbiter.hosting import OptionFault

    from .api import preflight

    forfeit = cfg.on_start_failure == "forfeit" and not show
    hellos: dict[str, str] = {}
    failures = preflight(cfg, db_path, hellos)
    bad_options = [(name, fault) for name, fault in failures if isinstance(fault, OptionFault)]
    if forfeit:  # played anyway, but said once here: else only each game's line says not_started
        if not bad_options:
            for name, fault in failures:
                _warn(f"engine {name} cannot start: {fault}; its games are lost as not_started "
                      f"(on_start_failure = \"forfeit\")")
        failures = bad_options
    if show:
        for name, text in hellos.items():
            console.print(f"  {escape(name)}: {escape(text)}")
    given_at = {e.name: e.options_at for e in cfg.engines}
    for name, fault in failures:
        if isinstance(fault, OptionFault):
            at = given_at.get(name, {}).get(fault.option)
            _console(stderr=True).print(f"[red]error:[/] {escape(at) + ': ' if at else ''}engine {escape(name)}: "
                                        f"options: {escape(fault.detail)}")
        else:
            _console(stderr=True).print(f"[red]error:[/] engine {escape(name)} cannot start: {escape(str(fault))}")
    if failures and not bad_options and cfg.on_start_failure == "forfeit":  # `check` of such a file
        _console(stderr=True).print("(on_start_failure = \"forfeit\": a run plays anyway, these engines' games "
                                    "lost as not_started)")
    elif failures and not bad_options:
        _console(stderr=True).print("(no game was played; set on_start_failure = \"forfeit\" to play anyway, "
                      "its games lost as not_started)")
    elif failures:
        console.print("(no game was played; `arbiter engine-info CMD` lists the options an engine declares)")
    return EXIT_USAGE if bad_options else EXIT_ENGINE if failures else EXIT_OK


def cmd_run(args, resume: bool) -> int:
    from . import api
    from .config import ConfigError
    from .db import TournamentLocked

    console = _console()
    cfg = None
    held = None
    try:
        if resume:
            opened = api.resume(args.target)
        else:
            from .config import load_config

            cfg = load_config(args.file)
            _check_output(cfg.output, cfg.source_path)
            held = api.claim(cfg, overwrite=args.overwrite)  # locked or already started: refused before any engine starts
            if code := _preflight(console, cfg, cfg.output):
                return code  # before the database exists: fix the command and `run` again
            opened, held = api.start(cfg, overwrite=args.overwrite, held=held), None
    except ConfigError as exc:
        _error(str(exc))
        return EXIT_USAGE
    except (api.TournamentStateError, TournamentLocked) as exc:
        _error(str(exc))
        return EXIT_USAGE
    except (OSError, sqlite3.Error) as exc:  # an output that cannot be created or written
        where = getattr(exc, "filename", None) or (args.target if resume else cfg.output if cfg else args.file)
        _error(f"output {where}: {(exc.strerror or exc) if isinstance(exc, OSError) else exc}")
        return EXIT_USAGE
    finally:
        if held is not None:  # refused, or the pre-flight failed: the output is free again
            held.close()
    cfg = opened.cfg
    for text in cfg.notices:
        _warn(text)
    if resume:
        for text in cfg.unused:  # started before such settings were refused: they change none of its games
            _warn(f"{text}; ignored (this event was started before such settings were refused)")
        try:
            _check_logs(opened.db.path, str(opened.db.path))
        except ConfigError as exc:
            _error(str(exc))
            opened.db.close()
            return EXIT_USAGE
    from arbiter.hosting import SandboxMode
    from arbiter.hosting.sandbox import support

    strict = [e.name for e in cfg.engines if e.sandbox == SandboxMode.REQUIRED]
    if strict and not support().sandbox:
        _error(f"engine(s) {', '.join(strict)} require a sandbox, and this machine cannot "
                      f"sandbox engines: {support().problem}")
        opened.db.close()
        return EXIT_ENGINE
    if resume and (code := _preflight(console, cfg, opened.db.path)):
        opened.db.close()
        return code
    web = None
    if args.web is not None:  # the live web view (docs/web.md), in a child process of the director
        from arbiter.web.process import ServerProcess  # not tournaments.web: the server's imports (numpy among
                                                       # them) made the workers forked later slower (bench/web.md)
        try:  # the child serves the database, and the feed beside it
            web = ServerProcess("tournaments.web", ["--db", os.path.abspath(opened.db.path)], args.web_host, args.web)
        except (OSError, ValueError) as exc:
            _error(f"--web {args.web}: {exc}")
            opened.db.close()
            return EXIT_USAGE
        console.print(f"live web view: {web.url}")
    try:
        return _run_with_display(console, args, opened, resume)
    finally:
        if web is not None:
            web.close()


def _run_with_display(console, args, opened, resume: bool) -> int:
    from rich.markup import escape

    from . import api
    from .runner import TournamentError

    cfg = opened.cfg
    mode = "quiet" if args.quiet else ("live" if console.is_terminal else "lines")
    fresh = resume and opened.started  # the file's output does not exist (yet, or from this folder)
    console.print(f"{'resuming' if resume and not fresh else 'starting'} tournament [bold]{escape(cfg.name)}[/] → "
                  f"{escape(str(opened.db.path))} (seed {'from ' + str(cfg.seed_file) if cfg.seed_file else opened.seed})"
                  + (f"; there was no database at {escape(str(Path(opened.db.path).resolve()))}" if fresh else ""))
    if (moved := opened.db.store.moved_export) is not None:
        _console(stderr=True).print(f"[bold yellow]warning:[/] the export lacked committed games before others it "
                                    f"held: it is written anew in commit order, the old one kept as "
                                    f"{escape(str(moved))}")
    display = Display(console, mode, args.rating_interval)
    try:
        with display:
            runner, summary = api.play(opened, concurrency=args.concurrency, cluster=args.cluster,
                                       on_progress=display.progress, on_game=display.game,
                                       log=lambda text: console.print(escape(text)))
    except TournamentError as exc:
        _console(stderr=True).print(f"[red]tournament failed:[/] {escape(str(exc))}")
        opened.db.close()
        return EXIT_FAILED
    db_path = opened.db.path
    opened.db.close()
    problem = opened.db.store.problem or summary.storage_error
    if problem:
        _console(stderr=True).print(f"[bold red]error: results not saved:[/] {escape(str(problem))}; the tournament stopped "
                      f"(fix the storage, then `arbiter-tournament resume {escape(str(db_path))}` replays unsaved games)")
        return EXIT_STORAGE
    if summary.killed_leftovers:
        console.print(f"killed {len(summary.killed_leftovers)} engine process(es) left behind by an earlier run")
    if summary.interrupted and not summary.finished:
        _console(stderr=True).print(f"[yellow]interrupted[/]: {summary.played_total} games saved; continue with "
                      f"`arbiter-tournament resume {escape(str(db_path))}`")
        return EXIT_INTERRUPTED
    if summary.sprt is not None:
        from arbiter.cli import sprt_line

        console.print(sprt_line(summary.sprt, summary.played_total).replace("the match stopped", "the run stopped"))
    console.print(f"{summary.committed} games played in this run ({summary.played_total} in all) in "
                  f"{_fmt_duration(summary.elapsed)}; referee CPU share {100 * summary.referee_cpu_share:.0f}%")
    if not args.no_report:
        from .report import build_report, render_text

        print(render_text(build_report(db_path), width=_report_width(console)), end="")
    return EXIT_OK


def cmd_report(args) -> int:
    from arbiter.records.store import holds_results

    from .config import ConfigError
    from .report import (build_report, plot, plot_problem, plot_timeline, render_text, timeline_problem, to_json,
                         write_csv)

    console = _console()
    for option in ("json", "text", "plot", "plot_timeline"):
        target = getattr(args, option)
        if target and target != "-" and (problem := holds_results(target)):
            _error(f"--{option.replace('_', '-')} {target}: {problem}; name another file")
            return EXIT_USAGE
        if target and option.startswith("plot") and Path(target).suffix.lower() not in (".png", ".svg"):
            _error(f"--{option.replace('_', '-')} {target}: a plot is written as .png or .svg")
            return EXIT_USAGE
    if args.csv and Path(args.csv).exists() and not Path(args.csv).is_dir():
        _error(f"--csv {args.csv}: not a folder (the CSV files are written into one); name a folder")
        return EXIT_USAGE
    try:
        report = build_report(args.db)
    except (OSError, ValueError, ConfigError) as exc:
        _error(str(exc))
        return EXIT_USAGE
    for option, target, problem in (("--plot", args.plot, plot_problem), ("--plot-timeline", args.plot_timeline,
                                                                          timeline_problem)):
        if target and (why := problem(report)):  # refused before any output is written, not after some
            _error(f"{option}: {why}; nothing written")
            return EXIT_USAGE
    wrote = []
    text = render_text(report, width=_report_width(console))
    option = ""
    try:  # an output that cannot be written (a folder, a missing or read-only place): its option named
        if args.json:
            option = "--json"
            if args.json == "-":
                print(to_json(report))
            else:
                Path(args.json).write_text(to_json(report) + "\n")
                wrote.append(args.json)
        if args.csv:
            option = "--csv"
            wrote += [str(p) for p in write_csv(report, args.csv)]
        for option, target, draw in (("--plot", args.plot, plot), ("--plot-timeline", args.plot_timeline, plot_timeline)):
            if target:
                try:
                    wrote.append(str(draw(report, target)))
                except ValueError as exc:  # nothing to draw yet: said, not a traceback
                    _error(f"{option}: {exc}")
                    return EXIT_USAGE
        if args.text:
            option = "--text"
            Path(args.text).write_text(text)
            wrote.append(args.text)
    except BrokenPipeError:
        raise  # `report --json - | head`: main's quiet exit
    except OSError as exc:
        target = getattr(args, option[2:].replace("-", "_"))
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(target) else ""
        _error(f"{option} {target}: cannot write: {exc.strerror or exc}{where}")
        return EXIT_USAGE
    if not (args.json == "-" or args.quiet):
        print(text, end="")
    notes = _console(stderr=True) if args.json == "-" else console  # stdout carries the JSON alone
    for w in wrote:
        notes.print(f"wrote {w}", style="dim", markup=False)
    return EXIT_OK


def cmd_check(args) -> int:
    from .config import ConfigError, load_config
    from .director import Director, ScheduleSpec

    console = _console()
    try:
        cfg = load_config(args.file)
    except ConfigError as exc:
        _error(str(exc))
        return EXIT_USAGE
    if cfg.unused:  # `run` refuses them (a resume of an event started before that only warns)
        for text in cfg.unused:
            _error(text)
        return EXIT_USAGE
    for text in cfg.notices:
        _warn(text)
    plan = Director(ScheduleSpec.from_config(cfg, cfg.seed or "(random)")).plan({})
    names = [e.name for e in cfg.engines]
    console.print(f"{args.file}: {cfg.name}: {cfg.game}, {cfg.kind} games, format {cfg.format}, "
                  f"{len(names)} engines, at most {plan.max_remaining} games, concurrency {cfg.concurrency}, "
                  f"results → {cfg.output}"
                  + (f"; adjudication: {cfg.adjudication.describe()}" if cfg.adjudication else ""), markup=False)
    if cfg.openings:
        per_meeting = {"match": cfg.match.games if cfg.match else 0, "team": cfg.games}.get(cfg.kind, 0)
        twice = "each played twice with the seats swapped" + (
            f", the last game's once ({per_meeting} games per {cfg.kind})"
            if per_meeting % 2 else "")  # as the warning above says
        how = {"solo": "one per game of the suite, the same for every engine",
               "table": f"each played by a block of {cfg.num_seats} games, every engine in every seat once"}
        console.print(f"  openings: {len(cfg.openings)} positions, {cfg.openings_order}, {how.get(cfg.kind, twice)}")
    shown = [s for s in plan.pairings][:40]
    for st in shown:
        p = st.pairing
        if p.kind == "bye":
            who = f"{names[p.engines[0]]} (bye)"
        else:
            who = " vs ".join(names[e % len(names)] for e in p.engines)
        console.print(f"  round {p.round}: {who}", markup=False)
    if len(plan.pairings) > len(shown):
        console.print(f"  … {len(plan.pairings) - len(shown)} more pairings")
    if cfg.format in ("swiss", "knockout"):
        console.print("  (later rounds are paired from results)")
        decided = (["the seeding" if cfg.format == "knockout" else "the initial ranking"] if cfg.seeding == "random"
                   else []) + (["who is A on each board"] if cfg.format == "swiss" else [])
        if cfg.seed is None and decided:
            console.print(f"  (no seed in the file: run draws one, which decides {' and '.join(decided)}; the first "
                          f"round shown is an example)")
    console.print("engines (started once and greeted, as before a run):")
    if code := _preflight(console, cfg, cfg.output, show=True):
        return code
    from .api import output_warning

    if warning := output_warning(cfg):  # the file is fine, but `run` of it would be refused
        _warn(warning)
    console.print(f"{args.file}: ok — every engine started and said hello ({', '.join(names)})"
                  + ("; but see the warning about its output" if warning else ""), markup=False)
    return EXIT_OK


def _whole_number(text: str, minimum: int, what: str) -> int:
    """An integer flag value of at least ``minimum`` (argparse names the flag); ``what`` says the bound."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"{what}, got {value}")
    return value


def _count(text: str) -> int:
    """``--rating-interval N``: 0 or more."""
    return _whole_number(text, 0, "must be 0 (never) or more")


def _positive(text: str) -> int:
    """``-j N``: at least 1."""
    return _whole_number(text, 1, "must be at least 1")


def _cluster(text: str) -> str:
    from .cluster import parse_cluster

    try:
        return parse_cluster(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_serve(args) -> int:
    from .web import web_server

    from arbiter.web import PortError

    console = _console()
    try:
        server = web_server(args.db, args.host, args.port)
    except PortError as exc:
        _error(f"--port {args.port}: {exc}")
        return EXIT_USAGE
    except (OSError, ValueError) as exc:
        _error(str(exc))
        return EXIT_USAGE
    console.print(f"serving {args.db} on {server.url} (read-only; Ctrl-C stops)", markup=False)
    server.run()
    return EXIT_OK


def cmd_cluster_certs(args: argparse.Namespace) -> int:
    from .cluster import write_certificates
    from .runner import TournamentError

    try:
        certificate, key = write_certificates(Path(args.folder))
    except (OSError, TournamentError) as exc:
        _error(str(exc))
        return EXIT_USAGE
    console = _console()
    console.print(f"cluster TLS: certificate {certificate}, private key {key} (mode 600). Copy both to every machine "
                  f"of the cluster, then:", markup=False)
    tls = f"--tls-ca-file {certificate} --tls-cert {certificate} --tls-key {key}"
    console.print(f"  dask scheduler --protocol tls {tls}\n  dask worker tls://SCHEDULER:8786 {tls}\n"
                  f"  DASK_DISTRIBUTED__COMM__TLS__CA_FILE={certificate} DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT="
                  f"{certificate} DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY={key} "
                  f"arbiter-tournament run EVENT.toml --cluster tls://SCHEDULER:8786", markup=False, soft_wrap=True)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="arbiter-tournament",
                                     description="Run tournaments between game engines, durably; report ratings.")
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="start the tournament a TOML file describes")
    r.add_argument("file", help="tournament file (TOML)")
    r.add_argument("--overwrite", action="store_true", help="discard an existing database at the output path")
    s = sub.add_parser("resume", help="continue a tournament from its file or its database")
    s.add_argument("target", help="tournament file (TOML) or its results database (.sqlite)")
    for p in (r, s):
        p.add_argument("--concurrency", "-j", type=_positive, default=None,
                       help="games in parallel (default: the file's)")
        p.add_argument("--cluster", metavar="ADDRESS", type=_cluster, default=None,
                       help="play on a Dask cluster: its scheduler (tcp://host:8786) or local:N (N worker processes "
                            "here); default: the file's 'cluster', else local worker processes")
        p.add_argument("--quiet", "-q", action="store_true", help="no progress display")
        p.add_argument("--no-report", action="store_true", help="do not print the report at the end")
        p.add_argument("--rating-interval", type=_count, default=None, metavar="N",
                       help="print standings, ratings, rate and ETA every N games (0: never; default: the "
                            "file's rating_interval)")
        p.add_argument("--web", metavar="PORT", type=parse_port, default=None,
                       help="serve the live web view on PORT while the event runs (docs/web.md)")
        p.add_argument("--web-host", metavar="ADDR", default="127.0.0.1",
                       help="address the web view listens on (default 127.0.0.1: this machine only)")
    p = sub.add_parser("report", help="standings, crosstable, ratings and tests from a tournament database")
    p.add_argument("db", help="tournament database (.sqlite)")
    p.add_argument("--json", metavar="PATH", help="write the report as JSON ('-' for stdout)")
    p.add_argument("--csv", metavar="DIR", help="write one CSV file per table into DIR")
    p.add_argument("--plot", metavar="PATH", help="plot the ratings with error bars (.png or .svg)")
    p.add_argument("--plot-timeline", metavar="PATH",
                   help="plot each engine's rating after every K games in commit order (.png or .svg; "
                        "K: rating_interval, else about 50 points)")
    p.add_argument("--text", metavar="PATH", help="write the text report to PATH")
    p.add_argument("--quiet", "-q", action="store_true", help="do not print the text report")
    x = sub.add_parser("export", help="the games as compact text (PGN-like) or CSV: arbiter export")
    x.add_argument("record", metavar="db", help="tournament database (.sqlite)")
    x.add_argument("--format", choices=("text", "csv"), default="text", help="text (default) or csv")
    x.add_argument("-o", "--output", help="file to write (default: standard output)")
    x.add_argument("--key", help="sign each game's digest with this referee key")
    w = sub.add_parser("serve", help="a live, read-only web view of a tournament database (docs/web.md)")
    w.add_argument("db", help="tournament database (.sqlite)")
    w.add_argument("--port", type=parse_port, default=8080, help="port to listen on (default 8080)")
    w.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    k = sub.add_parser("cluster-certs", help="TLS credentials for a Dask cluster (--cluster tls://...): "
                                             "docs/tournaments.md")
    k.add_argument("folder", help="where to write cluster-ca.pem and cluster-key.pem (mode 600)")
    c = sub.add_parser("check", help="validate a tournament file and show its first pairings")
    c.add_argument("file")
    return parser


def main(argv: list[str] | None = None) -> int:
    from arbiter import forget_handled_interrupts

    try:
        return _main(argv)
    finally:
        forget_handled_interrupts()  # exit 130 means 130, under `python -m` too


def _main(argv: list[str] | None) -> int:
    import contextlib

    from arbiter import release_operator_signals
    from arbiter.cli import operator_signals

    args = build_parser().parse_args(argv)
    if args.command in ("run", "resume", "check"):
        from arbiter.cli import folder_gone, temp_unusable, threads_refused

        if gone := folder_gone() or temp_unusable():
            _error(gone)
            return EXIT_USAGE
        if threads_refused():
            return EXIT_ENGINE
    playing = args.command in ("run", "resume")  # `kill PID` or a hang-up: stop like Ctrl-C (games saved)
    if not playing:
        release_operator_signals()  # held since the start (arbiter/__init__.py): the default handling from now on
    try:
        with operator_signals() if playing else contextlib.nullcontext():  # may raise a held signal's interrupt
            return _command(args)
    except KeyboardInterrupt:  # a signal held since the start, handled on entering: nothing was started
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _command(args: argparse.Namespace) -> int:
    try:
        if args.command == "run":
            return cmd_run(args, resume=False)
        if args.command == "resume":
            return cmd_run(args, resume=True)
        if args.command == "report":
            return cmd_report(args)
        if args.command == "export":
            from arbiter.cli import cmd_export

            return cmd_export(args)
        if args.command == "cluster-certs":
            return cmd_cluster_certs(args)
        if args.command == "serve":
            return cmd_serve(args)
        return cmd_check(args)
    except KeyboardInterrupt:  # before the games or after them (the run's own message covers those between)
        resume = f"; `arbiter-tournament resume {args.target if args.command == 'resume' else args.file}` " \
                 f"continues" if args.command in ("run", "resume") else ""
        print(f"interrupted: every game finished before is saved{resume}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `report ... | head`: the reader left; not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except (OSError, zmq.ZMQError) as exc:
        from arbiter.cli import out_of_files

        if not out_of_files(exc):
            raise
        return EXIT_ENGINE
    except (MemoryError, RuntimeError) as exc:  # ulimit -v too low for a thread: one line, not a traceback
        from arbiter.cli import out_of_memory

        if not out_of_memory(exc):
            raise
        return EXIT_ENGINE


if __name__ == "__main__":
    sys.exit(main())
