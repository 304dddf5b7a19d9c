"""Checking a results file against tampering: chains, signatures, the indexed columns and summaries.

``replay.verify`` checks that one record is a legal game with honest dice; this module checks that
the *set* of records is the one the referee wrote: no record removed, reordered or edited (each
links to the hash of its predecessor, and the ``matches``/``events`` rows hold each chain's count
and last hash), each signed by the expected key, and every indexed SQLite column and ``game_summaries``
row equal to what the record says (reports, ratings and the web view read those, not the records).
docs/records.md defines the format.
"""
from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from .record import GameRecord, from_json, record_hash, signed_bytes
from .signing import check_signature, key_id
from .store import chain_statement, is_database, open_readonly, summarize

INDEXED = ("game_id", "match_id", "game_number", "game", "players", "returns", "reason", "forfeit_seat", "plies",
           "ended_at")
SUMMARY = ("event_seq", "dice_stream", "detail", "seats", "ms")
"""The ``game_summaries`` columns: a tournament's report takes its times, details and dice streams from them."""


@dataclass
class Stored:
    """One record as found in the file: its exact bytes, the record, its row's indexed columns."""

    raw: bytes
    record: GameRecord
    columns: dict | None = None
    summary: dict | None = None
    """Its ``game_summaries`` row (None: it has none, as a game saved before summaries)."""

    @property
    def label(self) -> str:
        r = self.record
        return f"game {r.game_id} ({r.match_id} game {r.game_number})"


@dataclass
class Head:
    count: int
    head: str
    signature: str | None


@dataclass
class Audit:
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    chains: dict[tuple[str, str], tuple[int, str]] = field(default_factory=dict)
    """Every chain found: (kind, id) -> (records, last hash), for publishing."""


def open_stored(path: str | Path) -> tuple[Iterator["Stored | str"], dict[tuple[str, str], Head], int]:
    """The records of a results file in stored order (database: commit order; JSON Lines: line
    order), one at a time (a row that is not a record comes as a message saying so), the chain
    heads (database only) and how many rows there are. Nothing is held but the heads."""
    path = Path(path)
    heads: dict[tuple[str, str], Head] = {}
    if not is_database(path):
        with open(path, "rb") as f:
            total = sum(1 for line in f if line.strip())
        return _lines(path), heads, total
    db = open_readonly(path)
    try:
        try:
            (total,), = db.execute("SELECT count(*) FROM games")
        except sqlite3.Error as exc:  # truncated, or SQLite without a results table
            raise ValueError(f"{path}: not a results database ({exc})") from None
        try:
            match_cols = {r[1] for r in db.execute("PRAGMA table_info(matches)")}
            if "chain_count" in match_cols:
                for mid, count, last, sig in db.execute(
                        "SELECT match_id, chain_count, chain_head, chain_signature FROM matches WHERE chain_count > 0"):
                    heads[("match", mid)] = Head(count, last or "", sig)
            if db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'events'").fetchone():
                for eid, count, last, sig in db.execute("SELECT event_id, chain_count, chain_head, chain_signature "
                                                        "FROM events"):
                    heads[("event", eid)] = Head(count, last, sig)
        except sqlite3.Error as exc:  # a damaged page (a corrupted or half-overwritten file)
            raise ValueError(f"{path}: cannot read the chain rows ({exc})") from None
    finally:
        db.close()
    return _rows(path), heads, total


def _lines(path: Path) -> Iterator["Stored | str"]:
    with open(path, "rb") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip(b"\r\n")
            if line.strip():
                try:
                    yield Stored(line, from_json(line))
                except Exception as exc:
                    yield f"{path}:{lineno}: not a game record: {exc}"


def _rows(path: Path) -> Iterator["Stored | str"]:
    db = open_readonly(path)
    try:
        summaries = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'game_summaries'"
                               ).fetchone() is not None
        columns_sql = ", ".join(f"g.{c}" for c in INDEXED) + ", g.record"
        if summaries:
            columns_sql += ", s.game_id, " + ", ".join(f"s.{c}" for c in SUMMARY)
        rows = db.execute(f"SELECT {columns_sql} FROM games AS g"
                          f"{' LEFT JOIN game_summaries AS s USING (game_id)' if summaries else ''} ORDER BY g.rowid")
        while (row := next(rows, None)) is not None:
            columns = dict(zip(INDEXED, row))
            record_at = len(INDEXED)
            raw = row[record_at].encode() if isinstance(row[record_at], str) else bytes(row[record_at])
            summary = dict(zip(SUMMARY, row[record_at + 2:])) if summaries and row[record_at + 1] is not None \
                else None
            try:
                yield Stored(raw, from_json(raw), columns, summary)
            except Exception as exc:
                yield f"game {columns['game_id']}: the record column is not a game record: {exc}"
    except sqlite3.Error as exc:  # a damaged page met on the way (a corrupted or half-overwritten file)
        raise ValueError(f"{path}: cannot read the games ({exc})") from None
    finally:
        db.close()


def _column_problems(s: Stored) -> list[str]:
    r, cols = s.record, s.columns
    expected = dict(game_id=r.game_id, match_id=r.match_id, game_number=r.game_number, game=r.game,
                    players=r.players, returns=r.returns, reason=str(r.reason), forfeit_seat=r.forfeit_seat,
                    plies=len(r.events), ended_at=r.ended_at)
    out = []
    for name, want in expected.items():
        have = cols[name]
        if name in ("players", "returns"):
            try:
                have = json.loads(have)
            except (TypeError, ValueError):
                pass
        if have != want:
            out.append(f"{s.label}: indexed column {name} says {cols[name]!r}, the record says "
                       f"{json.dumps(want) if name in ('players', 'returns') else repr(want)}")
    return out


def _summary_problems(s: Stored) -> list[str]:
    r, row = s.record, s.summary
    seats, ms = summarize(r)
    out = []
    for name, want in dict(event_seq=r.event_seq, dice_stream=r.dice_stream, detail=r.detail).items():
        if row[name] != want:
            out.append(f"{s.label}: game_summaries column {name} says {row[name]!r}, the record says {want!r}")
    try:
        stored_seats = json.loads(row["seats"])
    except (TypeError, ValueError):
        stored_seats = row["seats"]
    if stored_seats != json.loads(seats):
        out.append(f"{s.label}: game_summaries column seats (per-seat decisions, times, depth, nodes, clock) "
                   f"differs from the record's decisions")
    if row["ms"] != ms:
        out.append(f"{s.label}: game_summaries column ms (every measured time) differs from the record's decisions")
    return out


@dataclass(frozen=True)
class Link:
    """What a chain check keeps of one record (not the record: a 100,000-game file stays small)."""

    seq: int
    prev: str
    hash: bytes
    game_id: str
    match_id: str
    number: int

    @property
    def label(self) -> str:
        return f"game {self.game_id} ({self.match_id} game {self.number})"


def _walk(kind: str, ident: str, members: list[Link], head: Head | None, audit: Audit) -> None:
    """Check one chain: stored order, links, positions, and its count and last hash."""
    name = f"{kind} {ident}"
    for a, b in zip(members, members[1:]):
        if b.seq < a.seq:
            audit.problems.append(f"{name}: {b.label} (chain position {b.seq}) is stored after {a.label} "
                                  f"(position {a.seq}): the records were reordered")
    ordered = sorted(members, key=lambda s: s.seq)
    expect, link, before = 1, "", None
    for s in ordered:
        label = s.label
        if s.seq < expect:
            audit.problems.append(f"{name}: {label} claims chain position {s.seq}, already taken by {before.label}")
            continue
        if s.seq > expect:
            after = f" after {before.label}" if before else " at the start"
            audit.problems.append(f"{name}: {s.seq - expect} record(s) missing{after}, before {label} "
                                  f"(chain positions {expect}–{s.seq - 1})")
        elif s.prev != link:
            audit.problems.append(f"{name}: {before.label} was edited: its hash no longer matches the link in {label}"
                                  if before else f"{name}: {label} is first in the chain but links to a predecessor")
        expect, link, before = s.seq + 1, s.hash.hex(), s
    have = expect - 1
    if head is None:
        audit.chains[(kind, ident)] = (have, link)
        return
    audit.chains[(kind, ident)] = (head.count, head.head)
    row = "matches" if kind == "match" else "events"
    if head.count > have:
        audit.problems.append(f"{name}: the last {head.count - have} record(s) are missing: the {row} row says "
                              f"{head.count} ending with hash {head.head[:16]}…, the file has {have}"
                              + (f" ending with {before.label}" if before else ""))
    elif head.count < have:
        audit.problems.append(f"{name}: the {row} row says {head.count} record(s), the file has {have}")
    elif head.head != link:
        audit.problems.append(f"{name}: {before.label} was edited: its hash differs from the last hash "
                              f"in the {row} row")


class Auditor:
    """Checks records one at a time (``add``), then the chains as a whole (``finish``)."""

    def __init__(self, public_key: Ed25519PublicKey | None = None):
        self.out = Audit()
        self.public_key = public_key
        self.kid = key_id(public_key) if public_key is not None else None
        self.signed_by: set[str] = set()
        self.unsigned = self.unchained = self.records = self.with_columns = 0
        self.chains: dict[tuple[str, str], list[Link]] = {}

    def add(self, s: Stored) -> None:
        r, out, kid = s.record, self.out, self.kid
        self.records += 1
        if s.columns is not None:
            self.with_columns += 1
            out.problems += _column_problems(s)
        if s.summary is not None:
            out.problems += _summary_problems(s)
        if r.signature:
            self.signed_by.add(r.key_id)
            if kid is not None:
                if r.key_id != kid:
                    out.problems.append(f"{s.label}: signed with key {r.key_id or '(none)'}, not with {kid}")
                elif not check_signature(self.public_key, signed_bytes(r), r.signature):
                    out.problems.append(f"{s.label}: the signature does not match: the record was edited")
        else:
            self.unsigned += 1
            if kid is not None:
                out.problems.append(f"{s.label}: not signed")
        digest = bytes.fromhex(record_hash(s.raw))
        if r.match_seq:
            self.chains.setdefault(("match", r.match_id), []).append(
                Link(r.match_seq, r.prev_hash, digest, r.game_id, r.match_id, r.game_number))
        else:
            self.unchained += 1
        if r.event_seq:
            self.chains.setdefault(("event", r.event_id), []).append(
                Link(r.event_seq, r.event_prev_hash, digest, r.game_id, r.match_id, r.game_number))

    def finish(self, heads: dict[tuple[str, str], Head]) -> Audit:
        out, kid = self.out, self.kid
        for key in sorted(set(self.chains) | set(heads)):
            _walk(key[0], key[1], self.chains.get(key, []), heads.get(key), out)
            h = heads.get(key)
            if h is not None and kid is not None:
                if not h.signature or not check_signature(self.public_key,
                                                          chain_statement(key[0], key[1], h.count, h.head),
                                                          h.signature):
                    out.problems.append(f"{key[0]} {key[1]}: the chain row's count and last hash are not signed "
                                        f"by {kid}")
        if self.unchained:
            out.notes.append(f"{self.unchained} record(s) carry no chain (written before chaining): missing or "
                             f"reordered games cannot be detected among them")
        if kid is None:
            if self.signed_by:
                out.notes.append(f"signatures not checked (signed by key {', '.join(sorted(self.signed_by))}): "
                                 f"give --public-key to check them")
            if self.unsigned:
                out.notes.append(f"{self.unsigned} record(s) are hash-chained but unsigned: anyone able to write "
                                 f"the file could rewrite a whole chain")
        if self.records and not self.with_columns:
            out.notes.append("no chain rows (a JSON Lines file): missing games at the end of a chain cannot be "
                             "detected here; compare the counts and last hashes below with the published ones")
        return out


def audit(stored: list[Stored], heads: dict[tuple[str, str], Head],
          public_key: Ed25519PublicKey | None = None) -> Audit:
    """Check a whole list of records (``Auditor`` for a stream)."""
    auditor = Auditor(public_key)
    for s in stored:
        auditor.add(s)
    return auditor.finish(heads)
