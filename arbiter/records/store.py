"""Durable results: a SQLite database (WAL) plus a JSON Lines export, written as each game ends.

SQLite is the embedded default: nothing to install, crash-safe with WAL, one file to copy.
By default each game is committed in its own transaction before the match moves on. With a
``group_window`` (``arbiter match``) a committer thread commits the games that finished within
that window together: one transaction (one fsync) and one export append (one fsync) per batch,
while the next game is already being played. Either way a game *counts* only once committed:
``on_commit`` announces committed records, and that is what standings, SPRT and displays count;
a crash loses at most the games of the open window, which a resumed match plays again.
``<stem>.jsonl`` beside it (``results.jsonl`` for ``results.sqlite``: each database its own
export) holds the same records in the documented open format (docs/records.md), one JSON object
per line; ``repair_export`` mends it from its tail after a crash.
"""
from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
from array import array
import sqlite3
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import msgspec

from .record import GameRecord, from_json, record_hash, to_json, winner
from .signing import Signer

SCHEMA = """
CREATE TABLE IF NOT EXISTS matches (
    match_id   TEXT PRIMARY KEY,
    game       TEXT NOT NULL,
    players    TEXT NOT NULL,          -- JSON list, player A first
    time_control TEXT NOT NULL,
    format     TEXT NOT NULL,
    started_at REAL NOT NULL,
    ended_at   REAL,
    points     TEXT,                   -- JSON list, player A first
    chain_count INTEGER,               -- records in the match's chain
    chain_head TEXT,                   -- hash of its last record
    chain_signature TEXT,              -- signature of chain_statement('match', ...)
    status     TEXT,                   -- 'finished' | 'interrupted' (NULL: playing, or a tournament's)
    setup      TEXT                    -- JSON: what `arbiter match --resume` needs (engines, options...)
);
CREATE TABLE IF NOT EXISTS games (
    game_id     TEXT PRIMARY KEY,
    match_id    TEXT NOT NULL,
    game_number INTEGER NOT NULL,
    game        TEXT NOT NULL,
    players     TEXT NOT NULL,         -- JSON list by seat
    returns     TEXT NOT NULL,         -- JSON list by seat
    reason      TEXT NOT NULL,
    forfeit_seat INTEGER,
    plies       INTEGER NOT NULL,
    ended_at    REAL NOT NULL,
    record      TEXT NOT NULL          -- the whole GameRecord as JSON
);
CREATE INDEX IF NOT EXISTS games_by_match ON games(match_id, game_number);
CREATE TABLE IF NOT EXISTS game_summaries (
    game_id     TEXT PRIMARY KEY,      -- what reports need of a game without parsing its record
    event_seq   INTEGER NOT NULL,
    dice_stream TEXT NOT NULL,
    detail      TEXT NOT NULL,
    seats       TEXT NOT NULL,         -- JSON list by seat: summarize()'s SEAT_FIELDS
    ms          BLOB NOT NULL          -- float64 measured ms of every decision, seat by seat
);
CREATE TABLE IF NOT EXISTS export_state (
    id          INTEGER PRIMARY KEY CHECK (id = 0),
    bytes       INTEGER NOT NULL       -- what the export's size is once every committed game is in it
);
CREATE TABLE IF NOT EXISTS events (
    event_id    TEXT PRIMARY KEY,      -- a tournament's chain over all its games
    chain_count INTEGER NOT NULL,
    chain_head  TEXT NOT NULL,
    chain_signature TEXT
);
"""


CHAIN_FORMAT = "arbiter-chain/1"


def chain_statement(kind: str, ident: str, count: int, head: str) -> bytes:
    """What a chain row's signature covers: the chain (``match`` or ``event``), its id, how many
    records it holds and the hash of the last one."""
    return f"{CHAIN_FORMAT}|{kind}|{ident}|{count}|{head}".encode()


STORAGE_ERRORS = (sqlite3.Error, OSError)

SEAT_FIELDS = ("decisions", "ms_n", "ms_sum", "ms_max", "lat_n", "lat_sum", "lat_max", "depth_n", "depth_sum",
               "nodes_n", "nodes_sum", "timed_nodes", "timed_ms", "clock_ply", "clock_ms")


def summarize(record: GameRecord) -> tuple[str, bytes]:
    """Per seat, what a report computes from the decisions (``SEAT_FIELDS``; ``clock_ms`` is the
    seat's clock after its last timed decision, at ply ``clock_ply``), and every measured time:
    saved with the game so that a 100,000-game report reads a few numbers per game."""
    seats, times = seat_sums(record)
    return json.dumps(seats), array("d", [t for seat in times for t in seat]).tobytes()


def seat_sums(record: GameRecord) -> tuple[list[list], list[list[float]]]:
    """``summarize``'s figures per seat (``SEAT_FIELDS``) and measured times, as Python lists."""
    seats = [[0, 0, 0.0, None, 0, 0.0, None, 0, 0.0, 0, 0.0, 0.0, 0.0, None, None] for _ in record.players]
    times: list[list[float]] = [[] for _ in record.players]
    for e in record.events:
        if not 0 <= e.seat < len(seats):
            continue
        row, ms = seats[e.seat], e.measured_ms
        row[0] += 1
        if ms is not None:
            times[e.seat].append(ms)
            row[1] += 1
            row[2] += ms
            row[3] = ms if row[3] is None else max(row[3], ms)
            if e.reported_ms is not None:
                lat = ms - e.reported_ms
                row[4] += 1
                row[5] += lat
                row[6] = lat if row[6] is None else max(row[6], lat)
        info = e.info
        if info is not None and info.depth is not None:
            row[7] += 1
            row[8] += info.depth
        if info is not None and info.nodes is not None:
            row[9] += 1
            row[10] += info.nodes
            if ms is not None:
                row[11] += info.nodes
                row[12] += ms
        if e.clock_ms is not None:
            row[13], row[14] = e.ply, e.clock_ms
    return seats, times


class _Chain(msgspec.Struct):
    """A record's tamper-evidence fields: the last fields of ``GameRecord``, in its order, so that
    a record's JSON is chained by replacing its tail (``_splice``) without decoding the rest."""

    match_seq: int = 0
    prev_hash: str = ""
    event_id: str = ""
    event_seq: int = 0
    event_prev_hash: str = ""
    key_id: str = ""
    signature: str = ""


CHAIN_FIELDS = _Chain.__struct_fields__
_chain_encoder = msgspec.json.Encoder()
_NO_CHAIN = msgspec.structs.asdict(_Chain())
_UNCHAINED = b"," + _chain_encoder.encode(_Chain())[1:]
"""How the JSON of a record not chained yet ends."""


def _splice(data: bytes, chain: _Chain) -> bytes:
    """``data`` (an unchained record's JSON) with ``chain``'s fields: exactly ``to_json`` of the
    chained record."""
    if not data.endswith(_UNCHAINED):
        raise ValueError("not the JSON of an unchained game record")
    return data[:-len(_UNCHAINED)] + b"," + _chain_encoder.encode(chain)[1:]


class PackedGame(_Chain, kw_only=True):
    """A finished game as the store can save it without decoding it: the record's JSON, not
    chained yet, and the columns the store indexes, computed where the game was played
    (``pack``; a tournament's workers do it, so its director only copies bytes). The store sets
    the chain fields when it saves it, as it does on a ``GameRecord``."""

    data: bytes
    game_id: str
    match_id: str
    game_number: int
    game: str
    players: list[str]
    returns: list[float]
    reason: str
    forfeit_seat: int | None
    plies: int
    started_at: float
    ended_at: float
    time_control: str
    dice_stream: str
    detail: str
    seats: str
    """``summarize``'s per-seat figures (JSON) and every measured time (float64 bytes)."""
    ms: bytes
    # the chain fields (``_Chain``): set by the store when it saves the game

    def record(self) -> GameRecord:
        """The whole record (decoded: for whoever needs more than the indexed columns)."""
        return msgspec.structs.replace(from_json(self.data), **{f: getattr(self, f) for f in CHAIN_FIELDS})

    def winner(self) -> int | None:
        return winner(self.returns)


def pack(record: GameRecord) -> PackedGame:
    """``record`` as the store takes it: its JSON with the chain fields empty, and its columns."""
    chained = any(getattr(record, f) != default for f, default in _NO_CHAIN.items())
    unchained = msgspec.structs.replace(record, **_NO_CHAIN) if chained else record
    seats, ms = summarize(record)
    return PackedGame(data=to_json(unchained), game_id=record.game_id, match_id=record.match_id,
                      game_number=record.game_number, game=record.game, players=list(record.players),
                      returns=list(record.returns), reason=str(record.reason), forfeit_seat=record.forfeit_seat,
                      plies=len(record.events), started_at=record.started_at, ended_at=record.ended_at,
                      time_control=record.time_control, dice_stream=record.dice_stream, detail=record.detail,
                      seats=seats, ms=ms)


_json_lists: dict[tuple, str] = {}


def _json_list(values: list) -> str:
    """``json.dumps(values)``, remembered: a tournament's games repeat a few player lists and
    returns (the columns keep ``json.dumps``'s spacing)."""
    key = (tuple(values), tuple(map(type, values)))  # 1 == 1.0, but they are written differently
    text = _json_lists.get(key)
    if text is None:
        text = json.dumps(values)
        if len(_json_lists) < 10_000:
            _json_lists[key] = text
    return text


def open_private(path: Path):
    """Open ``path`` for appending, creating it readable and writable by its owner only (SQLite
    gives the database's -wal and -shm files the database file's mode)."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab")


class MatchInUse(RuntimeError):
    """Another process is playing the match now (``ResultsStore.claim``)."""


class ResultsStore:
    """The results database and its export. Saving never raises: a game that cannot be saved is
    kept (``pending``) and retried with the next save and at ``close``; what is still unsaved then
    goes to a fallback JSON Lines file and ``problem`` says so (the CLI exits with
    ``EXIT_STORAGE``). An engine must not be able to stop a match by filling the disk.

    Every saved record is chained (``prev_hash``: the previous record of its match; with
    ``event_id`` also the event's previous record) and, with a ``signer``, signed. The chain heads
    live in ``matches`` and ``events`` (count, last hash, signature of both), read inside the
    saving transaction, so a resumed run continues each chain where it stopped.
    """

    def __init__(self, path: str | Path, export_jsonl: str | Path | None = None, *, signer: Signer | None = None,
                 event_id: str = "", retries: int = 3, retry_delay: float = 0.1, group_window: float = 0.0,
                 on_commit: Callable[[list[GameRecord]], None] | None = None):
        """``group_window`` > 0: commit in batches from a committer thread (see the module's
        docstring); ``on_commit(records)`` is then called from that thread."""
        self.path = Path(path)
        if self.path.is_dir():  # SQLite would only say "unable to open database file"
            raise IsADirectoryError(f"{self.path} is a folder: name the results file (e.g. "
                                    f"{self.path / 'results.sqlite'})")
        export = Path(export_jsonl) if export_jsonl else self.path.with_suffix(".jsonl")
        if os.path.abspath(export) == os.path.abspath(self.path):  # its export lines would go into the database
            raise OSError(f"{self.path}: a results database named .jsonl would be its own export "
                          f"(written beside it as .jsonl); name it e.g. {self.path.with_suffix('.sqlite')}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists() and (names := os.stat(self.path).st_nlink) > 1:
            raise OSError(f"{self.path} has {names} names (hard links): SQLite keeps its latest commits in a -wal "
                          f"file beside the name that wrote them, which another name does not see, and a match is "
                          f"locked by name (a resume under another name would play its games again); remove the "
                          f"other names (or copy the database) first")
        if not self.path.exists():  # results (and a tournament's seed) readable by the operator only
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600))
        self.db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        opened = os.stat(self.path)
        self._identity = (opened.st_dev, opened.st_ino)
        """The file opened (``_still_there``)."""
        self._export_identity: tuple[int, int] | None = None
        """The export file last appended to (``_export_gone``)."""
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(SCHEMA)
        have = {row[1] for row in self.db.execute("PRAGMA table_info(matches)")}
        for column, kind in (("chain_count", "INTEGER"), ("chain_head", "TEXT"), ("chain_signature", "TEXT"),
                             ("status", "TEXT"), ("setup", "TEXT")):
            if column not in have:  # a database made before chaining, or before match resumption
                self.db.execute(f"ALTER TABLE matches ADD COLUMN {column} {kind}")
        # A database made before export_state, with games in it, gets its row from a full repair.
        self.db.execute("INSERT OR IGNORE INTO export_state(id, bytes) SELECT 0, 0 WHERE NOT EXISTS"
                        " (SELECT 1 FROM games)")
        self.db.commit()
        self.export_path = export
        self.signer, self.event_id = signer, event_id
        self.retries, self.retry_delay = retries, retry_delay
        self.pending: list[GameRecord | PackedGame] = []
        """Finished games not committed to the database yet (oldest first)."""
        self.unexported: list[bytes] = []
        """Committed games not appended to the export yet."""
        self.error: str | None = None
        """The last storage error: which file, what went wrong."""
        self.export_error: str | None = None
        """The export's last error (``problem`` names it for the games missing from the export)."""
        self.fallback: Path | None = None
        self.moved_export: Path | None = None
        self._flush_broken = False  # a flush was stopped midway (``flush``)
        """Set when a repair found the export out of order and wrote it anew: the old file."""
        self.fallback_count = 0
        self._heads: dict[tuple[str, str], tuple[int, str]] = {}  # (kind, id) -> last committed (count, hash)
        self.on_commit = on_commit
        self.group_window = group_window
        self._lock = threading.RLock()  # the connection, pending and unexported
        self._inbox: list[GameRecord] = []  # finished games handed to the committer thread
        self._wake = threading.Condition()
        self._idle = True  # the committer holds no game (guarded by _wake)
        self._hurry = self._closing = False
        self._committer: threading.Thread | None = None
        self._claims: dict[str, int] = {}  # match id -> its byte in the lock file (``claim``)
        self._claim_fd: int | None = None
        if group_window > 0:
            self._committer = threading.Thread(target=self._commit_loop, name="results-committer", daemon=True)
            self._committer.start()

    def claim(self, match_id: str) -> None:
        """Hold ``match_id``'s lock while this process plays it (until ``end_match``, ``close`` or
        the process's death, kill -9 included), so that a second process resuming the same match
        (two resumes at once, or a resume while the match still runs in another terminal) is
        refused with ``MatchInUse`` instead of playing its games a second time. A match is one byte
        of ``<db>.matches.lock`` (a POSIX record lock: the kernel drops it with the process). Where
        the file system cannot lock, nothing is held."""
        if match_id in self._claims:
            return
        offset = int.from_bytes(hashlib.sha256(match_id.encode()).digest()[:7], "big")
        try:
            if self._claim_fd is None:
                self._claim_fd = os.open(f"{self.path}.matches.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            fcntl.lockf(self._claim_fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EAGAIN):
                raise MatchInUse(f"match {match_id} in {self.path} is being played by another process right now: "
                                 f"let it finish, or stop it, before resuming it") from None
            return
        self._claims[match_id] = offset

    def begin_match(self, match_id: str, game: str, players: list[str], time_control: str, fmt: Any,
                    setup: dict | None = None) -> None:
        """Note a match (again, when resumed: its start time is kept); ``setup`` is what resuming
        needs. The match is claimed first (``claim``: MatchInUse if another process plays it)."""
        self.claim(match_id)
        self._try(self.path, lambda: self._write(
            "INSERT INTO matches(match_id, game, players, time_control, format, started_at, setup)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT(match_id) DO UPDATE SET game = excluded.game, players = excluded.players,"
            " time_control = excluded.time_control, format = excluded.format, status = NULL,"
            " setup = coalesce(excluded.setup, setup)",
            (match_id, game, json.dumps(players), time_control, repr(fmt), time.time(),
             json.dumps(setup) if setup is not None else None)))

    def end_match(self, match_id: str, points: list[float], status: str = "finished") -> None:
        """``status``: ``finished``, or ``interrupted`` (``arbiter match --resume`` continues it)."""
        self._try(self.path, lambda: self._write(
            "UPDATE matches SET ended_at = ?, points = ?, status = ? WHERE match_id = ?",
            (time.time(), json.dumps(points), status, match_id)))
        if (offset := self._claims.pop(match_id, None)) is not None:
            fcntl.lockf(self._claim_fd, fcntl.LOCK_UN, 1, offset)


    def _write(self, sql: str, args: tuple) -> None:
        with self._lock, self.db:
            self.db.execute(sql, args)

    def _try(self, where: Path, action) -> bool:
        for attempt in range(self.retries):
            try:
                action()
                return True
            except STORAGE_ERRORS as exc:
                self.error = f"{where}: {exc}"
                if where == self.export_path:  # kept apart: a later database error must not stand for it
                    self.export_error = self.error
                if attempt + 1 < self.retries:
                    time.sleep(self.retry_delay * (attempt + 1))
        return False

    def save_game(self, record: GameRecord) -> bool:
        """Commit ``record`` (after any earlier unsaved ones) and export it; False if something
        is still unsaved after the retries (it stays in ``pending`` / ``unexported``). With a
        ``group_window`` the record is handed to the committer thread (True: accepted)."""
        return self.save_games([record])

    def save_games(self, records: list[GameRecord | PackedGame]) -> bool:
        """``save_game`` for several records at once: one transaction and one export append (one
        fsync each) for all of them (a tournament director commits what arrived together). A
        ``PackedGame`` is saved without being decoded."""
        if self._committer is not None:
            with self._wake:
                self._inbox.extend(records)
                self._idle = False
                self._wake.notify_all()
            return True
        with self._lock:
            self.pending.extend(records)
            return self.flush()

    def sync(self) -> bool:
        """Commit every game handed over so far, now, and wait for it; False if some could not
        be saved (see ``problem``). Call before acting on results (a match that may stop)."""
        if self._committer is None:
            with self._lock:
                return self.flush()
        with self._wake:
            self._hurry = True
            self._wake.notify_all()
            while not self._idle and self._committer.is_alive():
                self._wake.wait(0.5)
            self._hurry = False
        with self._lock:
            return not self.pending and not self.unexported

    def _commit_loop(self) -> None:
        """The committer thread: wait for a first game, let the window fill, commit the batch."""
        while True:
            with self._wake:
                while not self._inbox and not self._closing:
                    self._idle = not self._inbox
                    self._wake.notify_all()
                    self._wake.wait()
                if not self._inbox:
                    self._idle = True
                    self._wake.notify_all()
                    return
                deadline = time.monotonic() + self.group_window
                while not (self._hurry or self._closing) and (left := deadline - time.monotonic()) > 0:
                    self._wake.wait(left)
                batch, self._inbox = self._inbox, []
            with self._lock:
                self.pending.extend(batch)
                self.flush()
            with self._wake:
                self._idle = not self._inbox
                self._wake.notify_all()

    def flush(self) -> bool:
        """Commit ``pending`` in one transaction, then append ``unexported`` to the export with
        one write and one fsync (callers hold ``_lock``). A flush stopped midway by an exception
        that is not a storage error (Ctrl-C, or SIGTERM made one, between the commit and forgetting
        the games, or during the export's write) is mended by the next one (``close`` flushes):
        games already committed are not committed again, and the export is mended from the
        database (``repair_export``) rather than given its lines a second time."""
        if self._flush_broken:
            self._mend_broken_flush()
        self._flush_broken = True
        ok = self._flush()
        self._flush_broken = False
        return ok

    def _mend_broken_flush(self) -> None:
        if self.pending:
            ids = [item.game_id for item in self.pending]
            done = set()
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                done.update(gid for (gid,) in self.db.execute(
                    f"SELECT game_id FROM games WHERE game_id IN ({','.join('?' * len(chunk))})", chunk))
            self.pending = [item for item in self.pending if item.game_id not in done]
        self.unexported = []
        self._flush_broken = False
        try:
            self.repair_export()  # every committed game in the export once, whatever was written
        except STORAGE_ERRORS as exc:  # left to the next open or resume, which mends it too
            self.error = self.export_error = f"{self.export_path}: {exc}"

    def _flush(self) -> bool:
        if self.pending:
            batch = list(self.pending)
            if not self._try(self.path, lambda: self._commit_batch(batch)):
                return False
            del self.pending[:len(batch)]
            if self.on_commit is not None:
                self.on_commit(batch)
        if self.unexported and self._export_gone():
            if not self._try(self.export_path, self.repair_export):
                return False
            self.unexported = []  # committed, so the repair wrote them (with every game before)
        if self.unexported:
            lines = list(self.unexported)
            if not self._try(self.export_path, lambda: self._export(b"".join(line + b"\n" for line in lines))):
                return False
            del self.unexported[:len(lines)]
        return True

    def _chain(self, item: GameRecord | PackedGame, match_head: tuple[int, str],
               event_head: tuple[int, str]) -> tuple[PackedGame, bytes]:
        """Link ``item`` after the given chain heads (its chain fields are set), sign it, and
        return it packed with its stored JSON."""
        packed = item if isinstance(item, PackedGame) else pack(item)
        chain = _Chain(match_seq=match_head[0] + 1, prev_hash=match_head[1])
        if self.event_id:
            chain.event_id, chain.event_seq, chain.event_prev_hash = self.event_id, event_head[0] + 1, event_head[1]
        if self.signer:  # the signature covers the JSON with the signature empty
            chain.key_id = self.signer.key_id
            chain.signature = self.signer.sign(_splice(packed.data, chain))
        for target in (packed,) if item is packed else (packed, item):
            target.match_seq, target.prev_hash, target.event_id = chain.match_seq, chain.prev_hash, chain.event_id
            target.event_seq, target.event_prev_hash = chain.event_seq, chain.event_prev_hash
            target.key_id, target.signature = chain.key_id, chain.signature
        return packed, _splice(packed.data, chain)

    def _sign_head(self, kind: str, ident: str, count: int, head: str) -> str | None:
        return self.signer.sign(chain_statement(kind, ident, count, head)) if self.signer else None

    def _commit_batch(self, items: list[GameRecord | PackedGame]) -> None:
        """One transaction for ``items``, chained in order; nothing of it stays on failure. The
        chain heads are read once per match, the rows written with one statement per table."""
        self._still_there()
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            matches: dict[str, list] = {}  # match id -> [count, head, stored, first game]
            event = None
            games, summaries, out = [], [], []
            for item in items:
                m = matches.get(item.match_id)
                if m is None:
                    row = db.execute("SELECT chain_count, chain_head FROM matches WHERE match_id = ?",
                                     (item.match_id,)).fetchone()
                    m = matches[item.match_id] = [row[0] or 0, row[1] or "", True, None] if row else [0, "", False, None]
                if event is None and self.event_id:
                    erow = db.execute("SELECT chain_count, chain_head FROM events WHERE event_id = ?",
                                      (self.event_id,)).fetchone()
                    event = tuple(erow) if erow else (0, "")
                p, data = self._chain(item, (m[0], m[1]), event or (0, ""))
                digest = record_hash(data)
                m[0], m[1], m[3] = p.match_seq, digest, m[3] or p
                if self.event_id:
                    event = (p.event_seq, digest)
                games.append((p.game_id, p.match_id, p.game_number, p.game, _json_list(p.players),
                              _json_list(p.returns), p.reason, p.forfeit_seat, p.plies, p.ended_at, data.decode()))
                summaries.append((p.game_id, p.event_seq, p.dice_stream, p.detail, p.seats, p.ms))
                out.append((p, data, digest))
            db.executemany("INSERT OR REPLACE INTO games(game_id, match_id, game_number, game, players, returns,"
                           " reason, forfeit_seat, plies, ended_at, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           games)
            db.executemany("INSERT OR REPLACE INTO game_summaries(game_id, event_seq, dice_stream, detail, seats, ms)"
                           " VALUES (?, ?, ?, ?, ?, ?)", summaries)
            for match_id, (count, head, stored, first) in matches.items():
                msig = self._sign_head("match", match_id, count, head)
                if stored:
                    db.execute("UPDATE matches SET chain_count = ?, chain_head = ?, chain_signature = ?"
                               " WHERE match_id = ?", (count, head, msig, match_id))
                else:  # games saved without begin_match (a tournament, a lone Series)
                    db.execute("INSERT INTO matches(match_id, game, players, time_control, format, started_at,"
                               " chain_count, chain_head, chain_signature) VALUES (?, ?, ?, ?, '', ?, ?, ?, ?)",
                               (match_id, first.game, json.dumps(first.players), first.time_control,
                                first.started_at, count, head, msig))
            if self.event_id and event is not None:
                db.execute("INSERT INTO events(event_id, chain_count, chain_head, chain_signature) VALUES (?, ?, ?, ?)"
                           " ON CONFLICT(event_id) DO UPDATE SET chain_count = excluded.chain_count,"
                           " chain_head = excluded.chain_head, chain_signature = excluded.chain_signature",
                           (self.event_id, *event, self._sign_head("event", self.event_id, *event)))
            db.execute("UPDATE export_state SET bytes = bytes + ? WHERE id = 0",
                       (sum(len(data) + 1 for _, data, _ in out),))
            db.commit()
        except BaseException:
            try:
                db.rollback()
            except sqlite3.Error:
                pass
            raise
        for p, data, digest in out:
            self._heads[("match", p.match_id)] = (p.match_seq, digest)
            if self.event_id:
                self._heads[("event", self.event_id)] = (p.event_seq, digest)
            self.unexported.append(data)

    def _still_there(self) -> None:
        """``OSError`` unless the database's path still names the file opened. SQLite goes on
        committing into a file deleted (or replaced) under it, still open: the games then vanish
        with the run's end while it reports success. A storage error instead keeps them pending,
        and at the end in the fallback file, and the command exits 4."""
        try:
            now = os.stat(self.path)
            gone = (now.st_dev, now.st_ino) != self._identity
        except FileNotFoundError:
            gone = True
        if gone:
            raise OSError("deleted, moved or replaced while this run was writing to it (its games until then "
                          "are in the export)")

    def _export_gone(self) -> bool:
        """Whether the export this store last appended to was deleted or replaced since (``rm
        results.jsonl`` mid-run): appending would start a new file holding only the games from
        then on, so ``_flush`` writes it again from the database instead. Another process
        appending to the same file (two matches on one ``--db``) changes nothing here."""
        if self._export_identity is None:
            return False
        try:
            now = os.stat(self.export_path)
        except FileNotFoundError:
            return True
        return (now.st_dev, now.st_ino) != self._export_identity

    def _export(self, data: bytes) -> None:
        """Append whole lines; on failure cut the file back so a retry does not leave a torn line."""
        with open_private(self.export_path) as f:
            size = f.tell()
            try:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
                written = os.fstat(f.fileno())
                self._export_identity = (written.st_dev, written.st_ino)
            except OSError:
                try:
                    f.truncate(size)
                except OSError:
                    pass
                raise

    def repair_export(self) -> tuple[bool, int]:
        """Mend the export after a crash, from its tail: cut a torn last line, append the committed
        games missing after its last line. ``export_state`` (the size the export has once complete)
        says how many bytes are missing; only when that does not fit the file's tail (a gap left by
        an export that failed earlier, a file edited or replaced) is the whole file read. Returns
        (cut, appended)."""
        with self._lock:
            path = self.export_path
            cut = False
            size = path.stat().st_size if path.exists() else 0
            end = _last_newline_end(path, size)
            if end != size:
                with open(path, "r+b") as f:
                    f.truncate(end)
                size, cut = end, True
            row = self.db.execute("SELECT bytes FROM export_state WHERE id = 0").fetchone()
            if row is not None and size == row[0]:
                return cut, 0
            if row is not None and size < row[0]:
                missing = self._missing_tail(path, size, row[0] - size)
                if missing is not None:
                    self._export(b"".join(missing))
                    return cut, len(missing)
            return cut, self._repair_full(path)

    def _missing_tail(self, path: Path, size: int, want: int) -> list[bytes] | None:
        """The last committed records, ``want`` bytes of lines together, if the record committed
        just before them is the file's last line; else None."""
        last_id = _line_game_id(_last_line(path, size)) if size else None
        tail: list[bytes] = []
        total = 0
        for gid, rec in self.db.execute("SELECT game_id, record FROM games ORDER BY rowid DESC"):
            if total == want:
                return tail[::-1] if gid == last_id else None
            if total > want:
                return None
            data = rec.encode()
            tail.append(data + b"\n")
            total += len(data) + 1
        return tail[::-1] if total == want and last_id is None else None

    def _repair_full(self, path: Path) -> int:
        """Read every line's game id, append every committed game not among them (commit order).
        When a missing game was committed before one the file holds (the export was deleted or
        cut while a run was appending to it), appended games would stand out of chain order and
        `arbiter verify` of the export would call them reordered: the file is then moved aside
        (``moved_export``: nothing in it is lost) and written anew, every committed game in
        commit order."""
        ids: set[str] = set()
        if path.exists():
            with open(path, "rb") as f:
                for line in f:
                    if (gid := _line_game_id(line)) is not None:
                        ids.add(gid)
        if ids:
            seen_missing = False
            for (gid,) in self.db.execute("SELECT game_id FROM games ORDER BY rowid"):
                if gid not in ids:
                    seen_missing = True
                elif seen_missing:  # a game the file holds after one it lacks: rewrite it in order
                    aside = path.with_name(path.name + ".before-repair")
                    n = 1
                    while aside.exists():
                        n += 1
                        aside = path.with_name(f"{path.name}.before-repair-{n}")
                    os.replace(path, aside)
                    self.moved_export = aside
                    ids = set()
                    break
        appended, chunk = 0, []
        for gid, rec in self.db.execute("SELECT game_id, record FROM games ORDER BY rowid"):
            if gid not in ids:
                chunk.append(rec.encode() + b"\n")
                appended += 1
                if len(chunk) >= 1000:
                    self._export(b"".join(chunk))
                    chunk = []
        if chunk:
            self._export(b"".join(chunk))
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO export_state(id, bytes) VALUES (0, ?)",
                            (path.stat().st_size if path.exists() else 0,))
        return appended

    def _write_fallback(self) -> None:
        """Chain the unsaved records after the last committed ones and write them, one JSON per
        line, beside the database (else in the temporary directory)."""
        lines = []
        for record in self.pending:
            mkey = ("match", record.match_id)
            ekey = ("event", self.event_id)
            match_head = self._heads.get(mkey, (record.match_seq - 1, record.prev_hash) if record.match_seq else (0, ""))
            event_head = self._heads.get(ekey, (0, ""))
            _, data = self._chain(record, match_head, event_head)
            self._heads[mkey] = (record.match_seq, record_hash(data))
            if self.event_id:
                self._heads[ekey] = (record.event_seq, record_hash(data))
            lines.append(data + b"\n")
        name = f"{self.path.name}.unsaved-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.jsonl"
        for folder in (self.path.parent, Path(tempfile.gettempdir())):
            try:
                with open_private(folder / name) as f:
                    f.write(b"".join(lines))
                    f.flush()
                    os.fsync(f.fileno())
                self.fallback, self.fallback_count = folder / name, len(lines)
                return
            except OSError:  # a full disk, say: no empty or cut file left to mislead, try the next folder
                try:
                    (folder / name).unlink(missing_ok=True)
                except OSError:
                    pass

    @property
    def problem(self) -> str | None:
        """One message for the operator if games are unsaved (after ``close``), else None."""
        if not self.pending and not self.unexported and not self.fallback:
            return None
        parts = []
        if self.fallback or self.pending:
            n = self.fallback_count or len(self.pending)
            where = f"they were written to {self.fallback}" if self.fallback else "they could not be written anywhere"
            parts.append(f"{n} game(s) could not be saved ({self.error}); {where}")
        if self.unexported:
            parts.append(f"{len(self.unexported)} committed game(s) are missing from the export "
                         f"({self.export_error or self.error}); "
                         f"the database has them")
        return "; ".join(parts)

    def games(self, match_id: str | None = None) -> Iterator[GameRecord]:
        sql = "SELECT record FROM games"
        args: tuple = ()
        if match_id:
            sql += " WHERE match_id = ?"
            args = (match_id,)
        for (data,) in self.db.execute(sql + " ORDER BY ended_at, game_number", args):
            yield from_json(data)

    def game(self, game_id: str) -> GameRecord | None:
        row = self.db.execute("SELECT record FROM games WHERE game_id = ?", (game_id,)).fetchone()
        return from_json(row[0]) if row else None

    def close(self) -> None:
        """Commit what was handed over, retry what is unsaved, write the rest to the fallback
        file, close the database."""
        if self._committer is not None:
            with self._wake:
                self._closing = True
                self._wake.notify_all()
            self._committer.join()
            self._committer = None
        with self._lock:
            if self.pending or self.unexported or self._flush_broken:
                self.flush()
            if self.pending:
                self._write_fallback()
                self.pending = []
            try:
                self.db.close()
            except sqlite3.Error:
                pass
            if self._claim_fd is not None:
                os.close(self._claim_fd)  # every claim this store still held goes with it
                self._claim_fd, self._claims = None, {}


def _last_newline_end(path: Path, size: int, chunk: int = 1 << 16) -> int:
    """The offset just after the file's last newline (0 if none): where a torn line begins."""
    if not size:
        return 0
    with open(path, "rb") as f:
        pos = size
        while pos > 0:
            start = max(0, pos - chunk)
            f.seek(start)
            data = f.read(pos - start)
            k = data.rfind(b"\n")
            if k >= 0:
                return start + k + 1
            pos = start
    return 0


def _last_line(path: Path, size: int) -> bytes:
    """The last complete line of a file that ends with a newline."""
    start = _last_newline_end(path, size - 1)
    with open(path, "rb") as f:
        f.seek(start)
        return f.read(size - start)


def _line_game_id(line: bytes) -> str | None:
    try:
        return json.loads(line).get("game_id")
    except (ValueError, AttributeError):
        return None


def open_readonly(path: str | Path) -> sqlite3.Connection:
    """A read-only connection that never creates or changes the file. The URI is built by
    pathlib, which percent-encodes ``#``, ``?`` and ``%`` (pasted into ``file:...`` they would end
    the path and open, or create, another file)."""
    return sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True)


def holds_results(path: str | Path) -> str | None:
    """Why a file about to be written over holds results no output may replace (a results
    database, game records), if it does: ``arbiter export results.sqlite -o results.sqlite``
    replaced the database with its own text."""
    try:
        with open(path, "rb") as f:
            head = f.read(32)
    except OSError:  # not there (or not readable: the write will say so)
        return None
    if head.startswith(b"SQLite format 3\0"):
        return "that is a SQLite database"
    if head.startswith(b'{"format":"arbiter-game/'):
        return "that file holds game records (a results export)"
    return None


def check_is_file(path: str | Path) -> None:
    """FileNotFoundError (no such file) or IsADirectoryError (a folder where a results file was
    meant), each a message naming ``path``, unless it is a file."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder, not a results file")
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")


def refuse_non_records(path: str | Path, head: bytes) -> None:
    """ValueError when ``head`` (a file's first bytes, not empty) begins neither a results database
    nor game records, given where records are read: a text or CSV export (``arbiter export``) said
    as such, with how to rebuild its records; anything else (a log, a compressed or damaged file)
    said to be neither, not as JSON its first line is not."""
    if head.startswith((b"[Event ", b"Event,Match,")):
        raise ValueError(f"{path}: a {'text' if head.startswith(b'[') else 'CSV'} export (arbiter export), not game "
                         f"records: `arbiter import {path} --db NEW.sqlite` rebuilds them")
    if not head.startswith(b"SQLite format 3") and head.strip() and not head.lstrip().startswith(b"{"):
        raise ValueError(f"{path}: neither a results database (SQLite) nor game records (JSON Lines): "
                         f"it begins {head.lstrip()[:12]!r}")


def is_database(path: str | Path) -> bool:
    """True for a results database (SQLite), False for game records (JSON Lines), where records
    are read; a file that is neither (or missing, empty, a folder) gets an error naming it."""
    path = Path(path)
    check_is_file(path)
    with open(path, "rb") as f:
        head = f.read(16)
    if not head:
        raise ValueError(f"{path}: empty file, not a results database or export")
    refuse_non_records(path, head)
    return head.startswith(b"SQLite format 3")


def _rows(path: Path, where: str = "", args: tuple = (), order: str = "rowid") -> Iterator[str]:
    """The stored JSON of the matching rows, one at a time."""
    db = open_readonly(path)
    try:
        try:
            cursor = db.execute(f"SELECT record FROM games {where} ORDER BY {order}", args)
        except sqlite3.Error as exc:  # truncated, or SQLite without a results table
            raise ValueError(f"{path}: not a results database ({exc})") from None
        for (data,) in cursor:
            yield data
    finally:
        db.close()


def _lines(path: Path, needle: bytes = b"") -> Iterator[tuple[int, bytes]]:
    """(line number, line) of a JSON Lines file, streamed; with ``needle`` only lines holding it
    (found by searching 1 MB blocks, not line by line; the line number is then 0)."""
    with open(path, "rb") as f:
        if not needle:
            for lineno, line in enumerate(f, 1):
                if line.strip():
                    yield lineno, line
            return
        carry = b""
        while block := f.read(1 << 20):
            data = carry + block
            cut = data.rfind(b"\n") + 1  # whole lines only; the rest waits for the next block
            data, carry = data[:cut], data[cut:]
            at = data.find(needle)
            while at >= 0:
                start = data.rfind(b"\n", 0, at) + 1
                end = data.find(b"\n", at) + 1
                yield 0, data[start:end]
                at = data.find(needle, end)
        if carry.strip() and needle in carry:
            yield 0, carry


def _decode(path: Path, lineno: int, line: bytes) -> GameRecord:
    try:
        return from_json(line)
    except Exception as exc:
        raise ValueError(f"{path}{f':{lineno}' if lineno else ''}: not a game record: {exc}") from None


def iter_records(path: str | Path, game_id: str | None = None) -> Iterator[GameRecord]:
    """Records from a SQLite results file (commit order), a .jsonl export or a single-record
    .json file (line order), one at a time: memory stays constant however many there are."""
    path = Path(path)
    if is_database(path):
        where, args = ("WHERE game_id = ?", (game_id,)) if game_id else ("", ())
        for data in _rows(path, where, args):
            yield from_json(data)
        return
    for lineno, line in _lines(path, game_id.encode() if game_id else b""):
        record = _decode(path, lineno, line)
        if not game_id or record.game_id == game_id:
            yield record


class GameLine(msgspec.Struct):
    """A finished game without its decisions: the indexed columns and, per seat, ``summarize``'s
    sums (``SEAT_FIELDS``). What standings and an engine's page need of each game, so that a web
    view of a 100,000-game event holds a few numbers per game, never every record."""

    game_id: str
    match_id: str
    game_number: int
    game: str
    players: list[str]
    returns: list[float]
    reason: str
    detail: str
    forfeit_seat: int | None
    plies: int
    ended_at: float
    dice_stream: str
    seats: list[list]
    started_at: float | None = None
    """When the game started: inside the stored record, so ``game_lines`` leaves it None (``recent_lines``,
    for the page's finished games and their mean duration, reads it)."""
    forfeit_seats: list[int] | None = None
    """The record's ``forfeit_seats`` (every seat, when several forfeited): read from forfeited games' records."""

    @classmethod
    def of(cls, record: GameRecord) -> "GameLine":
        return cls(record.game_id, record.match_id, record.game_number, record.game, list(record.players),
                   list(record.returns), str(record.reason), record.detail, record.forfeit_seat, len(record.events),
                   record.ended_at, record.dice_stream, seat_sums(record)[0], record.started_at,
                   record.forfeit_seats or None)


_LINE_COLUMNS = ("g.game_id, g.match_id, g.game_number, g.game, g.players, g.returns, g.reason, s.detail,"
                 " g.forfeit_seat, g.plies, g.ended_at, s.dice_stream, s.seats,"
                 " CASE WHEN g.forfeit_seat IS NOT NULL THEN json_extract(g.record, '$.forfeit_seats') END")


def _line_rows(path: Path, sql: str, args: tuple) -> Iterator[GameLine]:
    decode = msgspec.json.decode
    db = open_readonly(path)
    try:
        try:
            cursor = db.execute(sql, args)
        except sqlite3.Error as exc:
            raise ValueError(f"{path}: not a results database ({exc})") from None
        for gid, mid, number, game, players, returns, reason, detail, fseat, plies, ended, stream, seats, fseats, *rest \
                in cursor:
            if seats is None:  # a game saved before summaries were: summarised from its record now
                (data,), = db.execute("SELECT record FROM games WHERE game_id = ?", (gid,))
                yield GameLine.of(from_json(data))
                continue
            yield GameLine(gid, mid, number, game, decode(players), decode(returns), reason, detail, fseat, plies,
                           ended, stream, decode(seats), rest[0] if rest else None, fseats and decode(fseats))
    finally:
        db.close()


def game_lines(path: str | Path, player: str | None = None, match_id: str | None = None) -> Iterator[GameLine]:
    """The games of a results file as ``GameLine``s, streamed; from a SQLite file's columns and
    summaries (no record is parsed): every game in commit order, or those of ``match_id`` in game
    order; with ``player``, only games in which it may have sat (the caller checks the seats). A
    JSON Lines export's records are parsed, in line order."""
    if not is_database(path):
        return (GameLine.of(r) for r in iter_records(path)
                if (player is None or player in r.players) and match_id in (None, r.match_id))
    where, args, order = [], [], "g.rowid"
    if player is not None:  # a cheap first cut on the JSON text
        where.append("instr(g.players, ?) > 0")
        args.append(json.dumps(player))
    if match_id is not None:
        where.append("g.match_id = ?")
        args.append(match_id)
        order = "g.game_number"
    return _line_rows(Path(path), f"SELECT {_LINE_COLUMNS} FROM games AS g LEFT JOIN game_summaries AS s"
                                  f" USING (game_id) {'WHERE ' + ' AND '.join(where) if where else ''}"
                                  f" ORDER BY {order}", tuple(args))


def recent_lines(path: str | Path, count: int) -> list[GameLine]:
    """The last ``count`` games committed, newest first, with when each started."""
    return list(_line_rows(Path(path), f"SELECT {_LINE_COLUMNS}, json_extract(g.record, '$.started_at') FROM games"
                                       f" AS g LEFT JOIN game_summaries AS s USING (game_id)"
                                       f" ORDER BY g.rowid DESC LIMIT ?", (count,)))


def records_in_chain_order(path: str | Path) -> Iterator[GameRecord]:
    """Every record in the order an import re-chains them (``arbiter export``): each event's
    games by their place in its chain, then the games of no event in the order they were saved.
    A SQLite file is sorted on its keys alone and read a batch of records at a time (memory
    stays constant however many there are); a JSON Lines export is read whole, then sorted."""
    path = Path(path)
    if not is_database(path):
        yield from sorted(iter_records(path), key=lambda r: (r.event_seq == 0, r.event_id, r.event_seq))
        return
    db = open_readonly(path)
    try:
        try:
            rowids = [rowid for (rowid,) in db.execute(
                "SELECT rowid FROM games ORDER BY coalesce(json_extract(record, '$.event_seq'), 0) = 0,"
                " coalesce(json_extract(record, '$.event_id'), ''), coalesce(json_extract(record, '$.event_seq'), 0),"
                " rowid")]
        except sqlite3.Error as exc:
            if "JSON" not in str(exc):
                raise ValueError(f"{path}: not a results database ({exc})") from None
            raise ValueError(f"{path}: a stored record is damaged ({exc}); `arbiter verify {path}` names it") from None
        for start in range(0, len(rowids), 256):
            batch = rowids[start:start + 256]
            rows = dict(db.execute(f"SELECT rowid, record FROM games WHERE rowid IN ({','.join('?' * len(batch))})",
                                   batch))
            for rowid in batch:
                yield _decode(path, 0, rows[rowid])
    finally:
        db.close()


def count_records(path: str | Path) -> int:
    """How many records a results file holds (a JSON Lines file: its non-empty lines)."""
    path = Path(path)
    if is_database(path):
        db = open_readonly(path)
        try:
            return db.execute("SELECT count(*) FROM games").fetchone()[0]
        except sqlite3.Error as exc:
            raise ValueError(f"{path}: not a results database ({exc})") from None
        finally:
            db.close()
    return sum(1 for _ in _lines(path))


def load_records(path: str | Path, game_id: str | None = None) -> list[GameRecord]:
    """Every record of a results file (see ``iter_records``), as a list."""
    return list(iter_records(path, game_id))


def last_record(path: str | Path) -> GameRecord | None:
    """The last record saved (database) or written (export): read from the end, not the whole file."""
    path = Path(path)
    if is_database(path):
        for data in _rows(path, order="rowid DESC LIMIT 1"):
            return from_json(data)
        return None
    size = path.stat().st_size
    end = _last_newline_end(path, size)
    if end < size:  # a single-record file without a final newline, or a torn last line
        with open(path, "rb") as f:
            f.seek(end)
            tail = f.read()
        if tail.strip():
            try:
                return from_json(tail)
            except Exception:
                pass
    while end > 0:
        line = _last_line(path, end)
        if line.strip():
            return _decode(path, 0, line)
        end -= len(line)
    return None


def find_records(path: str | Path, wanted: str) -> tuple[list[GameRecord], int]:
    """The games ``wanted`` names: its exact id, else ``MATCH.N`` (game N of a match: ids are
    ``MATCH.N.xxxxxx``), else the ids it begins. Returns (at most two of them, how many)."""
    path = Path(path)
    steps = (("=", wanted), ("^", wanted + "."), ("^", wanted))
    if is_database(path):
        for op, key in steps:
            if op == "=":
                where, args = "WHERE game_id = ?", (key,)
            else:  # a prefix as a range of the primary key: an index search, not a scan
                where, args = "WHERE game_id >= ? AND game_id < ?", (key, key[:-1] + chr(ord(key[-1]) + 1))
            found = [from_json(d) for d in _rows(path, where, args, order="game_id LIMIT 2")]
            if found:
                if len(found) < 2:
                    return found, 1
                db = open_readonly(path)
                try:
                    (n,), = db.execute(f"SELECT count(*) FROM games {where}", args)
                finally:
                    db.close()
                return found, n
        return [], 0
    hits = [_decode(path, n, line) for n, line in _lines(path, wanted.encode())]
    for op, key in steps:
        found = [r for r in hits if (r.game_id == key if op == "=" else r.game_id.startswith(key))]
        if found:
            return found[:2], len(found)
    return [], 0


def stored_setups(path: str | Path) -> list[tuple[str, str | None, dict]]:
    """(match id, status, setup) of every match started by ``arbiter match``, ``coop`` or ``solo``
    (those store what resuming needs), newest first. ValueError names a missing or foreign file."""
    try:
        check_is_file(path)
    except OSError as exc:
        raise ValueError(str(exc)) from None
    db = open_readonly(path)
    try:
        rows = db.execute("SELECT match_id, status, setup FROM matches WHERE setup IS NOT NULL"
                          " ORDER BY started_at DESC").fetchall()
    except sqlite3.Error as exc:
        raise ValueError(f"{path}: not a results database of arbiter ({exc})") from None
    finally:
        db.close()
    return [(mid, status, json.loads(setup)) for mid, status, setup in rows]


def setup_command(setup: dict) -> str:
    """The command that started a match: ``match`` (setups before the key existed), ``coop``, ``solo``."""
    return setup.get("command", "match")


def match_setup(path: str | Path, match_id: str | None = None,
                command: str = "match") -> tuple[str, str | None, dict, "DoneGames"]:
    """For ``arbiter COMMAND --resume``: (match id, status, setup, its games so far) of
    ``match_id``, or of the latest match ``command`` started that is not marked finished.
    ValueError says why there is none (a match of another command: which one continues it)."""
    rows = stored_setups(path)
    noun = {"coop": "coop series", "solo": "solo run"}.get(command, command)
    if match_id:
        row = next((r for r in rows if r[0] == match_id), None)
        if row is None:
            raise ValueError(f"{path}: no {noun} {match_id!r} started by `arbiter {command}`")
        if (other := setup_command(row[2])) != command:
            raise ValueError(f"{path}: {match_id} was started by `arbiter {other}`; continue it with "
                             f"`arbiter {other} --resume {match_id} --db {path}`")
    else:
        row = next((r for r in rows if r[1] != "finished" and setup_command(r[2]) == command), None)
        if row is None:
            latest = next((r for r in rows if setup_command(r[2]) == command), None)
            if latest is not None:  # say so: a run killed in its last moments may have finished
                run = latest[2].get("run")  # a solo run: one match per engine
                ids = [r[0] for r in rows if r[2].get("run") == run] if run else [latest[0]]
                games = sum(len(done_games(path, mid)) for mid in ids)
                raise ValueError(f"{path}: no unfinished {noun} to resume: the latest, {run or latest[0]}, is "
                                 f"finished ({games} games; `arbiter show {path} --list` lists them)")
            raise ValueError(f"{path}: no unfinished {noun} to resume (none was started by `arbiter {command}`)")
    return row[0], row[1], row[2], done_games(path, row[0])


def done_games(path: str | Path, match_id: str) -> "DoneGames":
    """The games of ``match_id`` committed so far (counted now, read when iterated)."""
    db = open_readonly(path)
    try:
        (count,), = db.execute("SELECT count(*) FROM games WHERE match_id = ?", (match_id,))
    finally:
        db.close()
    return DoneGames(Path(path), match_id, count)


RECENT_WHOLE = 10


class DoneGames:
    """The committed games of a match, in game order, read one at a time when iterated (a
    resumed 100,000-game match does not hold them all)."""

    def __init__(self, path: Path, match_id: str, count: int):
        self.path, self.match_id, self.count = path, match_id, count

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[GameRecord]:
        """Whole records for the last ``RECENT_WHOLE`` games (displays show them); for the others
        only what counting needs (number, players, returns, reason, forfeit), from the indexed
        columns: no record is parsed."""
        db = open_readonly(self.path)
        try:
            rows = db.execute(
                "SELECT game_id, game_number, game, players, returns, reason, forfeit_seat, ended_at,"
                " CASE WHEN game_number > ? THEN record END FROM games WHERE match_id = ? ORDER BY game_number",
                (self.count - RECENT_WHOLE, self.match_id))
            for gid, number, game, players, returns, reason, fseat, ended, data in rows:
                if data is not None:
                    yield from_json(data)
                    continue
                players = json.loads(players)
                yield GameRecord(game_id=gid, match_id=self.match_id, game_number=number, game=game, options={},
                                 players=players, seat_roles=[], time_control="", margin_ms=0, started_at=ended,
                                 ended_at=ended, returns=json.loads(returns), reason=reason, forfeit_seat=fseat)
        finally:
            db.close()
