"""Durable results: a SQLite database (WAL) plus a JSON Lines export, written as each game ends.

SQLite is the embedded default: nothing to install, crash-safe with WAL, one file to copy.
Each game is committed in its own transaction before the match moves on, so a crash loses at
most the game in progress. ``games.jsonl`` beside it holds the same records in the documented
open format (docs/records.md), one JSON object per line, flushed and fsynced per game.
"""
from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any, Iterator

from .record import GameRecord, from_json, to_json

SCHEMA = """
CREATE TABLE IF NOT EXISTS matches (
    match_id   TEXT PRIMARY KEY,
    game       TEXT NOT NULL,
    players    TEXT NOT NULL,          -- JSON list, player A first
    time_control TEXT NOT NULL,
    format     TEXT NOT NULL,
    started_at REAL NOT NULL,
    ended_at   REAL,
    points     TEXT                    -- JSON list, player A first
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
"""


class ResultsStore:
    def __init__(self, path: str | Path, export_jsonl: str | Path | None = None):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(SCHEMA)
        self.export_path = Path(export_jsonl) if export_jsonl else self.path.with_name("games.jsonl")

    def begin_match(self, match_id: str, game: str, players: list[str], time_control: str, fmt: Any) -> None:
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO matches(match_id, game, players, time_control, format, started_at)"
                            " VALUES (?, ?, ?, ?, ?, ?)",
                            (match_id, game, json.dumps(players), time_control, repr(fmt), time.time()))

    def end_match(self, match_id: str, points: list[float]) -> None:
        with self.db:
            self.db.execute("UPDATE matches SET ended_at = ?, points = ? WHERE match_id = ?",
                            (time.time(), json.dumps(points), match_id))

    def save_game(self, record: GameRecord) -> None:
        data = to_json(record)
        with self.db:
            self.db.execute(
                "INSERT OR REPLACE INTO games(game_id, match_id, game_number, game, players, returns, reason,"
                " forfeit_seat, plies, ended_at, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (record.game_id, record.match_id, record.game_number, record.game, json.dumps(record.players),
                 json.dumps(record.returns), record.reason, record.forfeit_seat, len(record.events),
                 record.ended_at, data.decode()))
        with open(self.export_path, "ab") as f:
            f.write(data + b"\n")
            f.flush()
            os.fsync(f.fileno())

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
        self.db.close()


def load_records(path: str | Path, game_id: str | None = None) -> list[GameRecord]:
    """Records from a SQLite results file, a .jsonl export or a single-record .json file."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    with open(path, "rb") as f:
        head = f.read(16)
    if head.startswith(b"SQLite format 3"):
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)  # reading must never change the file
        try:
            sql = "SELECT record FROM games" + (" WHERE game_id = ?" if game_id else "")
            rows = db.execute(sql + " ORDER BY ended_at, game_number", (game_id,) if game_id else ()).fetchall()
        finally:
            db.close()
        return [from_json(data) for (data,) in rows]
    records = []
    with open(path, "rb") as f:
        for lineno, line in enumerate(f, 1):
            if line.strip():
                try:
                    records.append(from_json(line))
                except Exception as exc:
                    raise ValueError(f"{path}:{lineno}: not a game record: {exc}") from None
    if game_id:
        records = [r for r in records if r.game_id == game_id]
    return records
