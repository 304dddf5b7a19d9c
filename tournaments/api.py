"""Starting, resuming and opening tournaments (what the command line does, as functions)."""
from __future__ import annotations

import json
import os
import secrets
import sqlite3
import time
from dataclasses import dataclass, replace
from pathlib import Path

from arbiter.hosting import EngineFault
from arbiter.records.signing import KeyFileError, Signer, load_signer

from .config import ConfigError, TournamentConfig, load_config, parse_config
from .db import Lock, TournamentDB, lock_file
from .director import PLANNING_RULES
from arbiter.records.store import STORAGE_ERRORS, open_readonly

from .runner import Runner, RunSummary

FORMAT_VERSION = "arbiter-tournament/1"


class TournamentStateError(RuntimeError):
    """Starting over an existing tournament, resuming a missing one, a changed file, a lock."""


@dataclass
class Opened:
    cfg: TournamentConfig
    db: TournamentDB
    seed: str
    started: bool = False
    """Made just now (``start``, or a ``resume`` of a file whose database did not exist yet)."""


def is_database(path: str | Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(16).startswith(b"SQLite format 3")
    except OSError:
        return False


def remove_database(path: Path) -> None:
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), TournamentDB.jsonl_path(path)):
        if p.exists():
            p.unlink()


def _signer(cfg: TournamentConfig, workdir: str | None = None) -> Signer | None:
    """The tournament's signing key (``key_file``; relative to where it first started)."""
    if cfg.key_file is None:
        return None
    path = cfg.key_file if cfg.key_file.is_absolute() or not workdir else Path(workdir) / cfg.key_file
    try:
        return load_signer(path)
    except KeyFileError as exc:
        raise ConfigError(f"{cfg.source_path}: key_file: {exc}") from None


def _contents(path: Path) -> tuple[int, bool]:
    """(games, whether it holds a tournament) of an existing database, read without changing it
    (a probe through ``TournamentDB`` added a tournament's tables to a match's database)."""
    conn = open_readonly(path)
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        games = conn.execute("SELECT count(*) FROM games").fetchone()[0] if "games" in tables else 0
        meta = "tournament_meta" in tables and conn.execute("SELECT count(*) FROM tournament_meta").fetchone()[0] > 0
        return games, meta
    finally:
        conn.close()


def _export_lines(path: Path) -> int:
    """Lines (games) in a JSON Lines export; 0 when there is none."""
    try:
        with open(path, "rb") as f:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    except (FileNotFoundError, IsADirectoryError):
        return 0


def claim(cfg: TournamentConfig, *, overwrite: bool = False) -> Lock:
    """The lock of ``cfg``'s output, taken (its folder made if need be) once ``cfg`` is found fit to
    start there: ConfigError if it has settings its format ignores (``TournamentConfig.unused``; a
    resume only warns of them), TournamentLocked if another director holds the output (running
    there, or starting there right now), TournamentStateError if the output holds games. ``run``
    claims before its pre-flight, so a refusal comes before any engine starts, and of two directors
    starting on one output at once the second touches nothing; ``start`` keeps the lock."""
    if cfg.unused:  # a new event: a setting its format ignores is a mistake in the file
        raise ConfigError(cfg.unused[0] + (f" (and {len(cfg.unused) - 1} more such)" if len(cfg.unused) > 1 else ""))
    path = Path(cfg.output)
    path.parent.mkdir(parents=True, exist_ok=True)
    held = lock_file(path, new=True)
    try:
        _refuse_output(path, overwrite)
    except BaseException:
        held.close()
        raise
    return held


def _refuse_output(path: Path, overwrite: bool) -> None:
    if not path.exists():
        export = TournamentDB.jsonl_path(path)
        lines = _export_lines(export)
        if lines and not overwrite:  # starting writes a new export in its place
            raise TournamentStateError(f"{export} holds {lines} game(s) of an earlier run, but there is no database "
                                       f"{path} beside it: starting would discard them; move it away first (or "
                                       f"discard it with `run --overwrite`)")
        return
    has_games, meta = _contents(path)
    if meta and not overwrite:
        raise TournamentStateError(f"{path} already holds a tournament ({has_games} games); "
                                   f"continue it with `resume`, or start over with --overwrite")
    if has_games and not overwrite:  # an `arbiter match`'s database, say: nothing to resume
        raise TournamentStateError(f"{path} holds {has_games} games that are not a tournament's (an "
                                   f"`arbiter match` database?): name another output, or replace "
                                   f"them with --overwrite")


def output_warning(cfg: TournamentConfig) -> str | None:
    """What ``check`` says of an output that ``run`` would refuse (a tournament, finished or not,
    games of another kind, an orphaned export), with what ``run`` and ``resume`` would do; None if
    ``run`` may start there. Read without writing or locking anything."""
    path = Path(cfg.output)
    try:
        _refuse_output(path, overwrite=False)
        return None
    except TournamentStateError as exc:
        refused = str(exc)
    except (OSError, sqlite3.Error) as exc:
        return f"output {path}: cannot be read ({exc}): `run` would fail there"
    try:
        games, meta = _contents(path)
    except (OSError, sqlite3.Error):
        games, meta = 0, False
    if not meta:
        return f"output {refused}; `run` refuses it (exit 2)"
    conn = open_readonly(path)
    try:
        stored = dict(conn.execute("SELECT key, value FROM tournament_meta").fetchall())
    finally:
        conn.close()
    state = "finished" if stored.get("finished_at") else "not finished"
    try:  # would `resume FILE` take it?
        old = parse_config(stored["config_text"], stored.get("config_source", str(path)), check_paths=False,
                           included=json.loads(stored.get("included_files") or "{}"))
        differs = changed(old, cfg, stored.get("seed", "")) if stored.get("format") == FORMAT_VERSION else "format"
    except (ConfigError, KeyError, ValueError) as exc:
        differs = f"the stored file ({exc})"
    what = (f"`resume {cfg.source_path}` would refuse it ({differs} changed)" if differs else
            "`resume` would play nothing" if stored.get("finished_at") else "`resume` would continue it")
    return (f"output {path} already holds a tournament, {state} ({games} games): `run` refuses it "
            f"(exit 2; `run --overwrite` discards it), {what}")


def start(cfg: TournamentConfig, *, overwrite: bool = False, held: Lock | None = None) -> Opened:
    """Create the tournament database for ``cfg`` (refusing to start over an existing one unless
    ``overwrite``); the seed is the file's, or a fresh random one stored with the tournament.
    ``held``: the output's lock, from ``claim`` (called here if not given); the opened database
    keeps it (closed here on failure).

    The database appears atomically, complete with its metadata: it is built under a temporary
    name and renamed into place, so a crash during the start leaves no half-made tournament."""
    path = Path(cfg.output)
    signer = _signer(cfg)
    held = held if held is not None else claim(cfg, overwrite=overwrite)
    try:
        return _start_locked(cfg, path, signer, held, overwrite)
    except BaseException:
        held.close()
        raise


def _start_locked(cfg: TournamentConfig, path: Path, signer: Signer | None, held: Lock, overwrite: bool) -> Opened:
    if path.exists():
        remove_database(path)
    seed = cfg.seed if cfg.seed is not None else secrets.token_hex(16)  # 128 bits: not to be found from revealed game seeds
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    staged = (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm"), TournamentDB.jsonl_path(tmp), Path(f"{tmp}.lock"))
    remove_database(tmp)
    try:
        staging = TournamentDB(tmp)
        try:
            staging.set_meta(format=FORMAT_VERSION, config_text=cfg.source_text, config_source=cfg.source_path,
                             fingerprint=cfg.fingerprint(), seed=seed, tid=cfg.tid, created_at=str(time.time()),
                             workdir=os.getcwd(), name=cfg.name, included_files=json.dumps(cfg.included),
                             planning_rules=str(PLANNING_RULES))
            staging.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # everything into the main file before the rename
        finally:
            staging.close()
        remove_database(path)
        os.replace(tmp, path)
    except BaseException:  # a full disk, say: no hidden half-made file left to fill it further
        for p in staged:
            p.unlink(missing_ok=True)
        raise
    for leftover in staged[1:]:
        leftover.unlink(missing_ok=True)
    held.add_file(path)
    db = TournamentDB(path, held)
    db.sign_with(signer, cfg.tid)
    return Opened(cfg, db, seed, started=True)


def config_from_db(db: TournamentDB, check_paths: bool = True) -> tuple[TournamentConfig, dict]:
    meta = db.meta()
    if meta.get("format") != FORMAT_VERSION:
        raise TournamentStateError(f"{db.path} is not a tournament database (no {FORMAT_VERSION} metadata)")
    cfg = parse_config(meta["config_text"], meta.get("config_source", str(db.path)), check_paths=check_paths,
                       included=json.loads(meta.get("included_files") or "{}"))
    return cfg, meta


def refuse_foreign(path: Path, named: str = "") -> None:
    """TournamentStateError unless ``path`` is a tournament's database: looked at read-only before
    anything writes to it (opening a match's database as a tournament's adds tables to it)."""
    if not is_database(path):
        raise TournamentStateError(f"{named}{path} is not a tournament database (not SQLite)")
    probe = open_readonly(path)
    try:
        probe.execute("SELECT value FROM tournament_meta WHERE key = 'format'").fetchone()
    except sqlite3.Error as exc:  # truncated, damaged, or another kind of database
        raise TournamentStateError(f"{named}{path} is not a tournament database ({exc})") from None
    finally:
        probe.close()


def open_locked(path: Path, named: str = "") -> TournamentDB:
    """The tournament database at ``path``, its lock taken before SQLite opens it: opened under a
    second name (a hard link) of a running tournament's database, SQLite would make that name's own
    ``-wal`` and ``-shm`` and read the file without the running process's latest commits."""
    if not is_database(path):
        refuse_foreign(path, named)
    held = lock_file(path)
    try:
        refuse_foreign(path, named)
        if (names := os.stat(path).st_nlink) > 1:  # even with nobody running: A's -wal is not LINK's
            raise TournamentStateError(f"{named}{path} has {names} names (hard links): SQLite keeps its latest "
                                       f"commits in a -wal file beside the name that wrote them, which another "
                                       f"name does not see; remove the other names (or copy the database) first")
        return TournamentDB(path, held)
    except BaseException:
        held.close()
        raise


FINGERPRINT_NAMES = {"tc": "time_control", "margin": "margin_ms", "duplicate": "duplicate_dice", "tid": "name",
                     "tiebreak": "tiebreak_games/tiebreak_blocks", "bye": "bye_points", "sprt_stop": "sprt",
                     "engines": "engines (names or order)"}


def changed(stored: TournamentConfig, cfg: TournamentConfig, seed: str) -> str:
    """The keys of the file that differ from the stored tournament's, as the file names them."""
    before, now = stored.fingerprinted(), cfg.fingerprinted()
    keys = []
    for k in sorted(before.keys() | now.keys()):
        if before.get(k) == now.get(k):
            continue
        if k.startswith("engine "):  # ``engine NAME``: its options, args, restart or ponder
            keys += [f"engine {k[7:]!r} {what}" for what in _play_changes(before.get(k, {}), now.get(k, {}))]
        else:
            keys.append(FINGERPRINT_NAMES.get(k, k))
    if cfg.seed is not None and cfg.seed != seed:
        keys.append("seed")
    return ", ".join(keys)


def _play_changes(before: dict, now: dict) -> list[str]:
    """The keys of an engine's ``engine_play`` that differ: ``options.depth``, ``args.hash``, ``restart``."""
    out = []
    for key in sorted(before.keys() | now.keys()):
        old, new = before.get(key, {}), now.get(key, {})
        if isinstance(old, dict) and isinstance(new, dict):
            out += [f"{key}.{k}" for k in sorted(old.keys() | new.keys()) if old.get(k, ...) != new.get(k, ...)]
        elif old != new:
            out.append(key)
    return out


def resume(target: str | Path, *, check_paths: bool = True) -> Opened:
    """Open an existing tournament from its file (whose ``output`` names the database) or from
    the database itself, take its lock and check the file has not changed the schedule. A file
    whose database does not exist yet is started."""
    target = Path(target)
    if not target.exists():
        raise TournamentStateError(f"{target}: no such file")
    if target.is_dir():
        raise TournamentStateError(f"{target} is a folder: name the tournament's file or database")
    if target.is_file() and target.stat().st_size == 0:
        raise TournamentStateError(f"{target}: empty file, not a tournament file or database")
    if target.suffix in (".sqlite", ".sqlite3", ".db") and not is_database(target):  # not read as a TOML file
        with open(target, "rb") as f:
            head = f.read(12)
        raise TournamentStateError(f"{target}: not a database (it begins {head!r}): name the tournament's file "
                                   f"or database")
    if is_database(target):
        target = target.resolve() if target.is_symlink() else target  # its export and logs are beside it
        db = open_locked(target)
        try:
            cfg, meta = config_from_db(db, check_paths=check_paths)
        except BaseException:
            db.close()
            raise
        cfg.output = target
    else:
        cfg = load_config(target, check_paths=check_paths)
        if not Path(cfg.output).exists():  # never started (or killed before its database existed)
            return start(cfg)
        db = open_locked(Path(cfg.output), f"{target}: output ")
        try:
            stored, meta = config_from_db(db, check_paths=False)
        except BaseException:
            db.close()
            raise
        if stored.fingerprint() != cfg.fingerprint() or (cfg.seed is not None and cfg.seed != meta["seed"]):
            db.close()
            raise TournamentStateError(f"{target} does not describe the tournament stored in {cfg.output}: "
                                       f"{changed(stored, cfg, meta['seed'])} changed")
    workdir = meta.get("workdir")
    if workdir and Path(workdir).is_dir():
        for e in cfg.engines:  # engines start where they started the first time
            if e.cwd is None:
                e.cwd = workdir
            elif not Path(e.cwd).is_absolute():
                e.cwd = str(Path(workdir) / e.cwd)
    try:
        db.sign_with(_signer(cfg, workdir), cfg.tid)
    except BaseException:
        db.close()
        raise
    db.repair_export()
    return Opened(cfg, db, meta["seed"])


def preflight(cfg: TournamentConfig, db_path: str | Path,
              hellos: dict[str, str] | None = None) -> list[tuple[str, EngineFault]]:
    """Start every engine and shake hands with it, as the games will, then stop it: (engine name,
    fault) for each that cannot start (an ``OptionFault``: its ``options`` do not fit its hello). An event that would otherwise hand wins to the opponents
    of a broken command stops before its first game instead (``on_start_failure = "stop"``).
    ``hellos`` receives how each started engine introduced itself."""
    from arbiter.cli import hello_text
    from arbiter.formats.match import Series
    from arbiter.games import load_game
    from protocol.transport import remove_ipc_dir

    from .pool import db_marker
    from .runner import hidden_paths, logs_dir
    from .worker import DB_ENV

    hide = hidden_paths(cfg, db_path)
    local = [e for e in cfg.engines if not e.remote]  # remote participants connect when the event runs
    if not local:
        return []
    mark = {DB_ENV: db_marker(Path(db_path))}  # killed as left behind by the next run if we are killed now
    configs = [replace(c, env={**c.env, **mark}) for c in (e.engine_config(hide=hide) for e in local)]
    series = Series(load_game(cfg.game, **cfg.game_options), configs,
                    cfg.time_control, run_dir=logs_dir(db_path), match_id="preflight")
    try:
        failures = series.start_all()
        if hellos is not None:
            for spec, engine in zip(local, series.engines):
                if engine is not None:
                    hellos[spec.name] = hello_text(engine.hello)
    finally:
        series.close()
        remove_ipc_dir(if_empty=True)  # the engines' sockets are gone: their folder need not last the event
    return [(local[i].name, fault) for i, fault in failures]


def play(opened: Opened, *, concurrency: int | None = None, on_progress=None,
         on_game=None, cluster: str | None = None, log=None) -> tuple[Runner, RunSummary]:
    """Play every game the database does not hold yet; record the run in the metadata.
    ``cluster`` (or the file's ``cluster``): play on Dask (``tournaments.cluster``); then, without
    ``concurrency``, as many games at a time as the cluster has worker threads."""
    cluster = cluster or opened.cfg.cluster
    extra = {}
    if cluster:
        from .cluster import backend_for

        extra["backend"] = backend_for(cluster, log=log)
        concurrency = concurrency or 1 << 20
    runner = Runner(opened.cfg, opened.db, opened.seed, concurrency=concurrency, on_progress=on_progress,
                    on_game=on_game, **extra)
    started = time.time()
    summary = runner.run()
    runs = json.loads(opened.db.meta().get("runs", "[]"))
    runs.append({"started_at": started, "ended_at": time.time(), "committed": summary.committed,
                 "finished": summary.finished, "interrupted": summary.interrupted,
                 "concurrency": runner.concurrency, **({"cluster": cluster} if cluster else {})})
    extra = {"finished_at": str(time.time())} if summary.finished else {}
    try:
        opened.db.set_meta(runs=runs, **extra)
    except STORAGE_ERRORS as exc:  # the storage failure is reported with the unsaved games
        summary.storage_error = summary.storage_error or f"{opened.db.path}: {exc}"
    return runner, summary


__all__ = ["ConfigError", "Opened", "TournamentStateError", "start", "resume", "play", "preflight", "config_from_db", "is_database"]
