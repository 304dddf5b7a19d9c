"""The tournament database: the arbiter's SQLite results store plus the tournament's own tables.

One SQLite file (WAL, ``synchronous=FULL``) holds

* ``games``, ``matches`` and ``events`` — exactly the tables of ``arbiter.records.store.ResultsStore``
  (so ``arbiter show`` / ``arbiter verify`` work on a tournament database); a game's tournament key
  is its ``(match_id, game_number)``, made unique by an index; every game is chained into its
  match and into the tournament's event chain (``events`` row: the tournament id), and signed
  when the tournament names a ``key_file``;
* ``tournament_meta`` — the tournament file's text, its fingerprint, the seed, timestamps;
* ``tournament_pairings`` — every pairing as the director released it (an audit trail: a
  resumed tournament re-derives its pairings and checks they are the same).

A game counts once its row is committed (by the parent process only; the games that arrived
together share one transaction); resume
reads the committed keys and plays the rest. ``<db>.jsonl`` beside it is the JSON Lines export,
repaired on open (a torn last line is cut, committed games missing from it are appended in
commit order).
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from pathlib import Path
from typing import Any, Iterator

from arbiter.records import GameRecord
from arbiter.records.store import ResultsStore

from .director import GameResult, PairingState

SCHEMA = """
CREATE TABLE IF NOT EXISTS tournament_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tournament_pairings (
    pairing     TEXT PRIMARY KEY,
    match_id    TEXT NOT NULL,
    round       INTEGER NOT NULL,
    kind        TEXT NOT NULL,
    engines     TEXT NOT NULL,          -- JSON list of engine indices (A first for matches)
    released_at REAL NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS games_by_tournament_key ON games(match_id, game_number);
"""


class TournamentLocked(RuntimeError):
    pass


class Lock:
    """A database's lock: an flock on the database file itself (its inode, whatever name reaches
    it: a hard link is another name for the same file) and one on ``<resolved path>.lock``, which
    also holds the holder's pid for the refusal. ``fds``: what a forked worker must close, or the
    lock would outlive the tournament process."""

    def __init__(self, fds: tuple[int, ...], new_database: str | None = None):
        self.fds = fds
        self.new_database = new_database
        """``lock_file(new=True)``: the database about to be made, whose ``.lock`` ``close`` removes
        if it was not made after all."""

    def close(self) -> None:
        if self.fds and self.new_database is not None and not os.path.exists(self.new_database):
            try:  # still held: whoever opened it meanwhile finds it unlinked once theirs (lock_file)
                os.unlink(self.new_database + ".lock")
            except OSError:
                pass
        for fd in self.fds:
            os.close(fd)
        self.fds = ()

    def add_file(self, path: Path) -> None:
        """Take the flock of the database file just made at ``path`` as well (``lock_file(new=True)``
        held only its ``.lock``); TournamentLocked if a process that opened it meanwhile holds it."""
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        if not _flock(fd):
            os.close(fd)
            raise TournamentLocked(f"{path} is in use by another tournament process")
        self.fds = (*self.fds, fd)


def _flock(fd: int) -> bool:
    """Take ``fd``'s flock without waiting: False when another open file holds it. A file system
    that cannot flock (some network ones) counts as taken by us: the ``.lock`` file still guards."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError as exc:
        if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EBADF, errno.EINVAL):
            raise
    return True


def _still_named(fd: int, path: str) -> bool:
    """Whether ``path`` still names the file open as ``fd``: a director whose start failed removes
    its ``.lock`` (``Lock.close``), and a lock taken on the removed file guards nothing."""
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def lock_file(path: Path, new: bool = False) -> Lock:
    """``path``'s lock, taken (TournamentLocked when another process holds it); held until the
    returned ``Lock`` is closed or the process dies (kill -9 too). It follows the database file:
    a symbolic or hard link to a running tournament's database finds it taken. The flock on the
    database's own inode is independent of SQLite's POSIX record locks (Linux).

    ``new``: for a tournament about to start, whose database may not exist yet: the ``.lock``
    file's flock first (then the file's, if there is one), so that of two directors starting on
    one output only one goes on to replace it (``Lock.add_file`` once the new file is in place)."""
    resolved = str(Path(path).resolve())
    fds: list[int] = []
    try:
        if new:
            fds.append(os.open(resolved + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644))
            taken = _flock(fds[0]) and _still_named(fds[0], resolved + ".lock")
            if taken and os.path.exists(resolved):
                fds.append(os.open(resolved, os.O_RDONLY | os.O_CLOEXEC))
                taken = _flock(fds[1])
            marker = fds[0]
        else:
            fds.append(os.open(resolved, os.O_RDONLY | os.O_CLOEXEC))
            taken = _flock(fds[0])
            if taken:
                fds.append(os.open(resolved + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644))
                taken = _flock(fds[1])
            marker = fds[-1]
        if taken:
            os.ftruncate(marker, 0)
            os.pwrite(marker, f"pid {os.getpid()}\n".encode(), 0)
            lock, fds = Lock(tuple(fds), resolved if new else None), []
            return lock
        try:  # the holder's pid, when it reached the database by this name (a hard link's is unknown)
            with open(resolved + ".lock") as f:
                holder = f.read().strip()
        except OSError:
            holder = ""
    finally:
        for fd in fds:
            os.close(fd)
    raise TournamentLocked(f"{path} is in use by another tournament process ({holder or 'unknown pid'})")


class TournamentDB:
    def __init__(self, path: str | Path, held: Lock | None = None):
        """``held``: the database's lock, taken before opening it (``api.open_locked``), released by ``close``."""
        self.path = Path(path)
        self.store = ResultsStore(self.path, export_jsonl=self.jsonl_path(self.path))
        self.db = self.store.db
        self.db.executescript(SCHEMA)
        self._lock_file = held

    @staticmethod
    def jsonl_path(path: Path) -> Path:
        return Path(path).with_suffix(".jsonl")

    # --- meta ---------------------------------------------------------------------------------

    def meta(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT key, value FROM tournament_meta"))

    def set_meta(self, **values: Any) -> None:
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO tournament_meta(key, value) VALUES (?, ?)",
                                [(k, v if isinstance(v, str) else json.dumps(v)) for k, v in values.items()])

    # --- games --------------------------------------------------------------------------------

    def game_rows(self, prefix: str = "") -> Iterator[tuple[str, int, list[str], list[float], str, int | None]]:
        sql = "SELECT match_id, game_number, players, returns, reason, forfeit_seat FROM games"
        args: tuple = ()
        if prefix:
            sql += " WHERE substr(match_id, 1, ?) = ?"
            args = (len(prefix), prefix)
        for mid, num, players, returns, reason, fseat in self.db.execute(sql + " ORDER BY match_id, game_number", args):
            yield mid, num, json.loads(players), json.loads(returns), reason, fseat

    def results(self, tid: str, names: list[str]) -> dict[tuple[str, int], GameResult]:
        """Every committed game of tournament ``tid`` as the director sees it."""
        index = {name: i for i, name in enumerate(names)}
        out = {}
        for mid, num, players, returns, reason, fseat in self.game_rows(f"{tid}:"):
            seating = _seating(players, index)
            out[(mid, num)] = GameResult(seating, tuple(returns), reason, fseat)
        return out

    def sign_with(self, signer, event_id: str) -> None:
        """Chain every game committed from now on into the event ``event_id`` (besides its
        match) and sign it with ``signer`` (None: unsigned)."""
        self.store.signer, self.store.event_id = signer, event_id

    def commit(self, records: list[GameRecord]) -> bool:
        """Save finished games (one transaction for all: the records, their matches' and the
        event's chain rows), then append them to the JSON Lines export (one write, one fsync).
        False: not saved (the store keeps them and says why in ``store.problem``)."""
        return self.store.save_games(records)

    def record(self, match_id: str, number: int) -> GameRecord | None:
        from arbiter.records import from_json

        row = self.db.execute("SELECT record FROM games WHERE match_id = ? AND game_number = ?",
                              (match_id, number)).fetchone()
        return from_json(row[0]) if row else None

    # --- pairings and matches -----------------------------------------------------------------

    def pairings(self) -> dict[str, tuple[str, int, str, list[int]]]:
        return {p: (mid, rnd, kind, json.loads(engines)) for p, mid, rnd, kind, engines in
                self.db.execute("SELECT pairing, match_id, round, kind, engines FROM tournament_pairings")}

    def ended_matches(self) -> set[str]:
        return {mid for (mid,) in self.db.execute("SELECT match_id FROM matches WHERE ended_at IS NOT NULL")}

    def sync_pairings(self, states: list[PairingState], known: dict, ended_ids: set[str], game: str,
                      names: list[str], tc: str, fmt_text: str) -> list[str]:
        """Store newly released pairings (and a ``matches`` row each); close finished matches.
        Returns the keys of pairings that differ from what was stored before (should be none)."""
        now = time.time()
        mismatched = []
        new_rows, match_rows, ended = [], [], []
        for st in states:
            p = st.pairing
            row = (p.match_id, p.round, p.kind, list(p.engines))
            old = known.get(p.key)
            if old is None:
                known[p.key] = row
                new_rows.append((p.key, p.match_id, p.round, p.kind, json.dumps(list(p.engines)), now))
                if p.kind != "bye":
                    players = [names[e % len(names)] for e in p.engines]
                    match_rows.append((p.match_id, game, json.dumps(players), tc, fmt_text, now))
            elif tuple(old[:3]) != row[:3] or list(old[3]) != row[3]:
                mismatched.append(p.key)
            if st.done and p.kind != "bye" and p.match_id not in ended_ids:
                points = st.points if p.kind == "match" else []
                ended.append((now, json.dumps(points), p.match_id))
                ended_ids.add(p.match_id)
        if new_rows or ended:
            with self.db:
                self.db.executemany("INSERT OR IGNORE INTO tournament_pairings VALUES (?, ?, ?, ?, ?, ?)", new_rows)
                self.db.executemany("INSERT OR IGNORE INTO matches(match_id, game, players, time_control, format,"
                                    " started_at) VALUES (?, ?, ?, ?, ?, ?)", match_rows)
                self.db.executemany("UPDATE matches SET ended_at = ?, points = ?"
                                    " WHERE match_id = ? AND ended_at IS NULL", ended)
        return mismatched

    # --- the JSON Lines export ----------------------------------------------------------------

    def repair_export(self) -> tuple[bool, int]:
        """Cut a torn last line (a crash mid-append) and append committed games missing from the
        export (``ResultsStore.repair_export``: from the tail). Returns (cut, appended)."""
        return self.store.repair_export()

    def close(self) -> None:
        self.store.close()
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None


def _seating(players: list[str], index: dict[str, int]) -> tuple[int, ...]:
    """Engine indices by seat; a name seen twice (a self-pair) is the engine and its copy."""
    seen: set[int] = set()
    out = []
    n = len(index)
    for name in players:
        i = index.get(name, -1)
        if i in seen:
            i += n
        seen.add(i)
        out.append(i)
    return tuple(out)
