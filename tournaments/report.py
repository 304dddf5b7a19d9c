"""Reports from a tournament database: standings, crosstable, terminations, ratings, tests.

``build_report(db_path)`` returns one plain dictionary (the JSON export); ``render_text``,
``write_csv`` and ``plot`` present it. Everything is computed from the committed games and the
tournament file stored in the database, so a report can be made at any time, during a run too.
"""
from __future__ import annotations

import csv
import io
import json
import math
import sqlite3
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Mapping

import msgspec
import numpy as np

from arbiter.records.store import check_is_file, open_readonly
from arbiter.stats import (MIN_INTERVAL_GAMES, contested, forfeiting_seats, game_points, mean_ci, paired_rows,
                           wilson_interval)

from .config import TournamentConfig, parse_config
from .director import Director, GameResult, ScheduleSpec, stored_rules
from .ratings import Z95, fit_bradley_terry, openskill_history, openskill_ratings, seat_sides
from arbiter.sprt import concluded, pentanomial, sprt, trinomial


_decode = msgspec.json.Decoder().decode


def _meta(conn: sqlite3.Connection, db_path: str | Path) -> tuple[TournamentConfig, dict]:
    try:
        meta = dict(conn.execute("SELECT key, value FROM tournament_meta"))
    except sqlite3.Error as exc:  # not SQLite, or SQLite without the tournament's tables (a match's)
        raise ValueError(f"{db_path} is not a tournament database ({exc}); " + _instead(db_path)) from None
    if "config_text" not in meta:
        raise ValueError(f"{db_path} is not a tournament database")
    return parse_config(meta["config_text"], meta.get("config_source", str(db_path)), check_paths=False), meta


def _instead(path: str | Path) -> str:
    """What to give instead: a tournament file (which `resume` takes, so users try it here too)
    names its database; anything else is likely a match's results."""
    try:
        output = parse_config(Path(path).read_text(), str(path), check_paths=False).output
    except Exception:  # not a readable tournament file: the usual advice
        return "`arbiter show` reads a match's results"
    return f"it is a tournament file: give its database, {output}"


def stored_config(db_path: str | Path) -> TournamentConfig:
    """The configuration a tournament database was started with, read without its games
    (FileNotFoundError, or ValueError: not a tournament database)."""
    check_is_file(db_path)
    conn = open_readonly(db_path)
    try:
        return _meta(conn, db_path)[0]
    finally:
        conn.close()


FORFEIT_SEATS = "CASE WHEN g.forfeit_seat IS NOT NULL THEN json_extract(g.record, '$.forfeit_seats') END"
"""Every forfeiting seat of a game several forfeited is only in its record: read from the records of
forfeited games alone."""


def _load(db_path: str | Path) -> tuple[TournamentConfig, dict, list[dict]]:
    check_is_file(db_path)
    conn = open_readonly(db_path)
    try:
        cfg, meta = _meta(conn, db_path)
        prefix = (len(cfg.tid) + 1, cfg.tid + ":")
        try:
            full = None
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'game_summaries'").fetchone():
                full = conn.execute(
                    "SELECT g.match_id, g.game_number, g.players, g.returns, g.reason, g.forfeit_seat, g.plies,"
                    f" s.dice_stream, s.detail, s.event_seq, g.ended_at, {FORFEIT_SEATS}, s.seats, s.ms FROM games AS g"
                    " LEFT JOIN game_summaries AS s"
                    " USING (game_id) WHERE substr(g.match_id, 1, ?) = ? ORDER BY g.match_id, g.game_number",
                    prefix).fetchall()
                if any(r[13] is None for r in full):  # a game saved before summaries
                    full = None
            if full is not None:  # every game summarised when it was saved: a few numbers per game to read
                rows = [r[:12] for r in full]
                decisions = _agg_summaries(full)
            else:  # games saved before summaries: every decision from the records themselves
                rows = conn.execute(
                    "SELECT match_id, game_number, players, returns, reason, forfeit_seat, plies,"
                    " json_extract(record, '$.dice_stream'), json_extract(record, '$.detail'),"
                    f" json_extract(record, '$.event_seq'), ended_at, {FORFEIT_SEATS} FROM games AS g"
                    " WHERE substr(match_id, 1, ?) = ? ORDER BY match_id, game_number", prefix).fetchall()
                decisions = _agg_decisions(conn.execute(
                    "SELECT json_extract(g.players, '$[' || json_extract(e.value, '$.seat') || ']'), g.match_id,"
                    " g.game_number, json_extract(e.value, '$.seat'), json_extract(e.value, '$.measured_ms'),"
                    " json_extract(e.value, '$.reported_ms'),"
                    " json_extract(e.value, '$.clock_ms'), json_extract(e.value, '$.info.depth'),"
                    " json_extract(e.value, '$.info.nodes')"
                    " FROM games AS g, json_each(g.record, '$.events') AS e"
                    " WHERE substr(g.match_id, 1, ?) = ? AND json_extract(e.value, '$.seat') >= 0"
                    " ORDER BY g.match_id, g.game_number, e.key", prefix))
        except sqlite3.Error as exc:
            raise ValueError(f"{db_path}: cannot read the games ({exc})") from None
    finally:
        conn.close()
    meta["_decisions"] = decisions
    names = [e.name for e in cfg.engines]
    index = {n: i for i, n in enumerate(names)}
    # A tournament has few distinct seatings and outcomes: each text is decoded once and its
    # value shared by every game that has it (read-only from here on).
    seatings: dict[str, tuple[list[str], list[int]]] = {}
    outcomes: dict[str, list] = {}
    games = []
    for mid, num, players_text, returns_text, reason, fseat, plies, stream, detail, seq, ended, fseats in rows:
        seated = seatings.get(players_text)
        if seated is None:
            players = _decode(players_text)
            seated = seatings[players_text] = (players, [index.get(p, -1) for p in players])
        returns = outcomes.get(returns_text)
        if returns is None:
            returns = outcomes[returns_text] = _decode(returns_text)
        games.append({"match_id": mid, "number": num, "players": seated[0], "seating": seated[1],
                      "returns": returns, "reason": reason, "forfeit_seat": fseat, "plies": plies,
                      "forfeit_seats": tuple(forfeiting_seats(fseat, fseats and _decode(fseats))),
                      "stream": stream or f"{mid}|{num}", "detail": detail or "", "seq": seq or 0,
                      "ended_at": ended})
    return cfg, meta, games


def _game_or_none(cfg: TournamentConfig) -> Any:
    """The event's game with its options (which seats side with which), or None if this
    version of the rules cannot make it."""
    from arbiter.games import load_game

    try:
        return load_game(cfg.game, **cfg.game_options)
    except Exception:  # noqa: BLE001 - a report is still worth having without the sides
        return None


def build_report(db_path: str | Path, with_timeline: bool = True) -> dict[str, Any]:
    """The report of the event in ``db_path``. ``with_timeline=False``: without the ratings after every
    stretch of games (``rating_timeline``: ~50 rating fits, a quarter of the live view's CPU, for a
    chart only the exported report draws)."""
    cfg, meta, games = _load(db_path)
    names = [e.name for e in cfg.engines]
    n = len(names)
    director = Director(ScheduleSpec.from_config(cfg, meta.get("seed", ""), stored_rules(meta)))
    results = {}
    for g in games:
        seating = list(g["seating"])
        if cfg.kind == "team" and len(set(seating)) < len(seating):  # a self-pair: engine and its copy
            seating = [seating[0], seating[1] + n] if seating[0] == seating[1] else seating
        results[(g["match_id"], g["number"])] = GameResult(tuple(seating), tuple(g["returns"]), g["reason"],
                                                           g["forfeit_seat"])
    plan = director.plan(results)
    stop = None
    if cfg.sprt.stop:
        from .runner import sprt_decision

        stop = sprt_decision(cfg, results)
        stop["verdict"] = concluded(stop)
    over = plan.finished or bool(stop and stop["verdict"])  # once the SPRT decided, no game is started
    pairing_of = {s.pairing.match_id: s for s in plan.pairings}
    for g in games:
        st = pairing_of.get(g["match_id"])
        g["round"] = st.pairing.round if st else 0
        g["pairing"] = st.pairing.key if st else g["match_id"]
    report: dict[str, Any] = {
        "tournament": {
            "name": cfg.name, "game": cfg.game, "game_options": cfg.game_options, "kind": cfg.kind,
            "format": cfg.format, "match": cfg.match_text if cfg.kind == "match" else None,
            "games_per_pairing": cfg.games if cfg.kind != "match" else None, "rounds": plan.rounds,
            "time_control": cfg.time_control.text, "seed": meta.get("seed"), "duplicate_dice": cfg.duplicate_dice,
            "engines": names, "games_played": len(games), "games_max_remaining": 0 if over else plan.max_remaining,
            "finished": over, "round": plan.round, "notes": plan.notes,
            "sprt_configured": cfg.sprt_given,
            "sprt_stop": stop,
        },
        "terminations": terminations(games, names, _game_or_none(cfg)),
        "engine_stats": engine_stats(games, names, meta.pop("_decisions", [])),
    }
    timeline = rating_timeline(cfg, names, games) if with_timeline else None
    if timeline is not None:
        report["rating_timeline"] = timeline
    if cfg.kind == "match":
        report.update(match_sections(cfg, games, names, plan, director))
    elif cfg.kind == "table":
        report.update(table_sections(cfg, games, names,
                                     {st.pairing.match_id: i for i, st in enumerate(plan.pairings)}))
    elif cfg.kind == "team":
        report.update(team_sections(cfg, games, names))
    else:
        report.update(solo_sections(cfg, games, names))
    return report


# --- ratings over time ------------------------------------------------------------------------

def commit_order(games: list[dict]) -> list[dict]:
    """The games in the order they were committed: the event chain's positions (records written
    before chaining: their end times)."""
    return sorted(games, key=lambda g: (g.get("seq") or math.inf, g.get("ended_at") or 0.0))


def quick_ratings(cfg: TournamentConfig, names: list[str], games: list[dict]) -> tuple[str, dict] | None:
    """(measure, {engine: (rating, lo, hi)}) from ``games`` (dicts with ``seating`` and ``returns``,
    in commit order): logistic Elo for two-seat matches (the report's model; duplicate-dice
    clusters when the games carry their ``stream``), OpenSkill μ ± 1.96σ for tables; None for
    other kinds or no games. An empty table: no estimate yet (the fit is singular on these games)."""
    if not games:
        return None
    if cfg.kind == "match":
        return "Elo", _elo(cfg, names, *_elo_arrays(cfg, games))
    if cfg.kind == "table":
        rows = openskill_ratings([(tuple(g["seating"]), tuple(g["returns"])) for g in games], names,
                                 seat_sides(_game_or_none(cfg)))
        return "OpenSkill μ", {r["engine"]: (r["mu"], r["mu"] - Z95 * r["sigma"], r["mu"] + Z95 * r["sigma"])
                               for r in rows}
    return None


def _elo_arrays(cfg: TournamentConfig, games: list[dict]) -> tuple:
    """(first movers, second movers, first movers' points, duplicate-dice clusters or None), of
    the contested games (a double forfeit is nobody's win: ``arbiter.stats.contested``)."""
    games = [g for g in games if contested(g["returns"])]
    first = np.array([g["seating"][0] for g in games])
    second = np.array([g["seating"][1] for g in games])
    score = np.array([game_points(g["returns"], 0, 1)[0] for g in games])
    clusters = None
    if cfg.duplicate_dice and all("stream" in g for g in games):
        ids: dict[str, int] = {}
        clusters = np.array([ids.setdefault(f"{g['match_id']}|{g['stream']}", len(ids)) for g in games])
    return first, second, score, clusters


def _elo(cfg: TournamentConfig, names: list[str], first, second, score, clusters) -> dict:
    try:
        fit = fit_bradley_terry(first, second, score, len(names), names=names, clusters=clusters, anchor=cfg.anchor)
    except np.linalg.LinAlgError:  # too few games to pin the first-move term (one seat won every game)
        return {}
    return {r["engine"]: (r["elo"], r["lo"], r["hi"]) for r in fit.table()}


def no_ratings(score) -> str:
    """Why a two-seat report has no ratings although games were played (JSON
    ``ratings_unavailable``), from the first movers' points: the fit found no finite optimum."""
    why = ("no game was contested so far (each was lost by both: double forfeits)" if not len(score)
           else "every first mover has won so far" if (score == 1).all()
           else "every second mover has won so far" if (score == 0).all()
           else "the games so far do not pin the model down")
    return f"{why}, so the first-move advantage (and with it every rating) has no finite estimate"


TIMELINE_POINTS = 100
"""At most this many points per engine in the ratings-over-time series (each is a fit)."""


def rating_timeline(cfg: TournamentConfig, names: list[str], games: list[dict], every: int | None = None) -> dict | None:
    """Each engine's rating after every ``every`` games in commit order (and after the last):
    ``every`` defaults to the file's ``rating_interval``, else about 50 points, and grows so that
    there are at most ``TIMELINE_POINTS``."""
    ordered = commit_order(games)
    total = len(ordered)
    if not total or cfg.kind not in ("match", "table"):
        return None
    every = every or cfg.rating_interval or max(1, math.ceil(total / 50))
    every = max(every, math.ceil(total / TIMELINE_POINTS))
    marks = list(range(every, total + 1, every))
    if not marks or marks[-1] != total:
        marks.append(total)
    series: dict[str, list] = {name: [] for name in names}
    if cfg.kind == "table":
        measure = "OpenSkill μ"
        history = openskill_history([(tuple(g["seating"]), tuple(g["returns"])) for g in ordered], names, marks,
                                    seat_sides(_game_or_none(cfg)))
        for rows in history:
            mu = {r["engine"]: r["mu"] for r in rows}
            for name in names:
                series[name].append(mu[name])
    else:
        measure = "Elo"
        first, second, score, _ = _elo_arrays(cfg, ordered)  # clusters change intervals, not ratings
        rated = np.cumsum([contested(g["returns"]) for g in ordered])  # of the first k games
        for k in marks:
            m = int(rated[k - 1])
            table = _elo(cfg, names, first[:m], second[:m], score[:m], None)
            for name in names:
                series[name].append(table[name][0] if name in table else None)
    return {"every": every, "measure": measure, "games": marks, "ratings": series}


# --- sections common to all kinds -------------------------------------------------------------

def _outcome(r: tuple | list, seat: int) -> str:
    """W, D or L of the engine in ``seat`` (returns ``r``): the best return = W (alone, or with its
    alliance: as the table standings count wins), all returns equal = D (but L for every seat of a
    game all lost: a double forfeit), else L."""
    best = max(r)
    if r[seat] < best or not contested(r):
        return "L"
    return "D" if min(r) == best else "W"


def terminations(games: list[dict], names: list[str], game: Any = None) -> list[dict]:
    """Per engine and end reason: games won, drawn and lost (forfeits name who forfeited: the
    engine itself in any of its seats, a partner — a cooperative team mate, an ally of the
    same alliance, as the game's ``forfeit_returns`` groups the seats — or an opponent). An
    engine paired with its own copy (cooperative self-pairs) counts the game once."""
    table: dict[tuple[str, str], dict] = {}
    kinds = Counter((tuple(g["seating"]), tuple(g["returns"]), g["reason"], g["forfeit_seats"]) for g in games)
    sides: dict[int, list[float]] = {}

    def partner(seat: int, forfeiter: int) -> bool:
        if game is None:
            return False
        if forfeiter not in sides:
            sides[forfeiter] = game.forfeit_returns(forfeiter)
        side = sides[forfeiter]
        return 0 <= seat < len(side) and 0 <= forfeiter < len(side) and side[seat] == side[forfeiter]

    for (seating, returns, game_reason, forfeiters), count in kinds.items():
        counted: set[int] = set()
        for seat, e in enumerate(seating):
            if e < 0 or e in counted:
                continue
            counted.add(e)
            reason = game_reason
            if forfeiters:
                mine = [s for s, other in enumerate(seating) if other == e]
                who = ("own" if any(s in forfeiters for s in mine)
                       else "partner" if any(partner(seat, f) for f in forfeiters) else "opponent")
                reason = f"{reason} ({who})"
            row = table.setdefault((names[e], reason), {"engine": names[e], "reason": reason, "W": 0, "D": 0, "L": 0})
            row[_outcome(returns, seat) if len(returns) > 1 else ("W" if returns[0] > 0 else "L")] += count
    return sorted(table.values(), key=lambda r: (names.index(r["engine"]), r["reason"] != "normal", r["reason"]))


def _engine_agg() -> dict:
    return {"ms": [], "lat_n": 0, "lat_sum": 0.0, "lat_max": None, "depth_n": 0, "depth_sum": 0.0, "nodes_n": 0,
            "nodes_sum": 0.0, "timed_nodes": 0.0, "timed_ms": 0.0, "clock": {}}


def _agg_summaries(rows) -> dict[str, dict]:
    """Per engine (by name), the decision statistics of its games' stored summaries."""
    per: dict[str, dict] = defaultdict(_engine_agg)
    times: dict[str, list[bytes]] = defaultdict(list)
    seatings: dict[str, list[str]] = {}
    for mid, number, players_text, *_, seats, ms in rows:
        players = seatings.get(players_text)
        if players is None:
            players = seatings[players_text] = _decode(players_text)
        start = 0
        for index, (name, seat) in enumerate(zip(players, _decode(seats))):
            _, ms_n, _, _, lat_n, lat_sum, lat_max, depth_n, depth_sum, nodes_n, nodes_sum, tn, tms, cply, clock = seat
            d = per[name]
            times[name].append(ms[start:start + 8 * ms_n])
            start += 8 * ms_n
            if lat_n:
                d["lat_n"] += lat_n
                d["lat_sum"] += lat_sum
                d["lat_max"] = lat_max if d["lat_max"] is None else max(d["lat_max"], lat_max)
            if depth_n:
                d["depth_n"] += depth_n
                d["depth_sum"] += depth_sum
            if nodes_n:
                d["nodes_n"] += nodes_n
                d["nodes_sum"] += nodes_sum
                d["timed_nodes"] += tn
                d["timed_ms"] += tms
            if clock is not None:  # per seat: an engine paired with its copy has a clock in each
                d["clock"][(mid, number, index)] = (cply, clock)
    for name, chunks in times.items():
        per[name]["ms"] = [np.frombuffer(b"".join(chunks), dtype=np.float64)]
    return per


def _agg_decisions(decisions) -> dict[str, dict]:
    """The same from every decision (engine, match, number, seat, measured, reported, clock, depth, nodes)."""
    per: dict[str, dict] = defaultdict(_engine_agg)
    for k, (engine, mid, number, seat, measured, reported, clock, depth, nodes) in enumerate(decisions):
        d = per[engine]
        if measured is not None:
            d["ms"].append(np.array([measured], dtype=np.float64))
        if measured is not None and reported is not None:
            lat = measured - reported
            d["lat_n"] += 1
            d["lat_sum"] += lat
            d["lat_max"] = lat if d["lat_max"] is None else max(d["lat_max"], lat)
        if measured is not None and nodes is not None:
            d["timed_nodes"] += nodes
            d["timed_ms"] += measured
        if depth is not None:
            d["depth_n"] += 1
            d["depth_sum"] += depth
        if nodes is not None:
            d["nodes_n"] += 1
            d["nodes_sum"] += nodes
        if clock is not None:
            d["clock"][(mid, number, seat)] = (k, clock)
    return per


def engine_stats(games: list[dict], names: list[str], decisions: dict[str, dict]) -> list[dict]:
    """Per engine, from every decision it made: time per move (referee-measured: mean, median,
    max), its clock left at the end of its games (mean, min; 0 in a game it lost on time, whose
    last decision has no event), depth and nodes (mean, from its
    ``info``), nodes per second (its nodes over the measured time of those decisions: an engine's
own times are whole milliseconds, often 0), latency (measured minus
    reported, mean and max: IPC and scheduling), and its forfeits by reason. ``decisions``: per
    engine name, ``_agg_summaries`` / ``_agg_decisions``."""
    forfeits: dict[str, dict[str, int]] = {n: defaultdict(int) for n in names}
    flagged: dict[str, list[tuple]] = defaultdict(list)
    """Per engine, the (match, game, seat) whose clock ran out: it ended at 0."""
    for g in games:
        if g["reason"] != "normal":  # an engine with its own copy (a self-pair) forfeits the game once
            for name in {g["players"][seat] for seat in g["forfeit_seats"]}:
                forfeits.setdefault(name, defaultdict(int))[g["reason"]] += 1
        if g["reason"] == "time":
            for seat in g["forfeit_seats"]:
                flagged[g["players"][seat]].append((g["match_id"], g["number"], seat))

    rows = []
    for n in names:
        d = decisions.get(n) or _engine_agg()
        ms = np.concatenate(d["ms"]) if d["ms"] else np.empty(0)
        ends = {**d["clock"], **{key: (None, 0) for key in flagged.get(n, ())}}
        clocks = [c for _, c in ends.values()]
        rows.append({"engine": n, "decisions": int(ms.size), "ms_mean": float(ms.mean()) if ms.size else None,
                     "ms_median": float(np.median(ms)) if ms.size else None,
                     "ms_max": float(ms.max()) if ms.size else None,
                     "clock_left_mean_ms": float(np.mean(clocks)) if clocks else None,
                     "clock_left_min_ms": min(clocks) if clocks else None,
                     "depth_mean": d["depth_sum"] / d["depth_n"] if d["depth_n"] else None,
                     "nodes_mean": d["nodes_sum"] / d["nodes_n"] if d["nodes_n"] else None,
                     "nps": 1000 * d["timed_nodes"] / d["timed_ms"] if d["timed_ms"] > 0 else None,
                     "latency_mean_ms": d["lat_sum"] / d["lat_n"] if d["lat_n"] else None,
                     "latency_max_ms": d["lat_max"],
                     "forfeits": dict(sorted(forfeits.get(n, {}).items()))})
    return rows


# --- two-seat competitive ---------------------------------------------------------------------

def match_sections(cfg: TournamentConfig, games: list[dict], names: list[str], plan, director: Director) -> dict:
    n = len(names)
    stats = [{"engine": names[i], "games": 0, "W": 0, "D": 0, "L": 0, "points": 0.0, "first_games": 0,
              "first_points": 0.0, "matches": 0, "match_W": 0, "match_D": 0, "match_L": 0, "match_points": 0.0,
              "byes": 0} for i in range(n)]
    cross_points = np.zeros((n, n))
    cross_games = np.zeros((n, n), dtype=int)
    # Few distinct (seating, returns) pairs: each is counted once, with its number of games.
    for (seating, returns), count in Counter((tuple(g["seating"]), tuple(g["returns"])) for g in games).items():
        a, b = seating
        pa, pb = game_points(returns, 0, 1)
        for e, p, seat in ((a, pa, 0), (b, pb, 1)):
            s = stats[e]
            s["games"] += count
            s["points"] += p * count
            s["W" if p == 1 else "D" if p == 0.5 else "L"] += count
            if seat == 0:
                s["first_games"] += count
                s["first_points"] += p * count
        cross_points[a, b] += pa * count
        cross_points[b, a] += pb * count
        cross_games[a, b] += count
        cross_games[b, a] += count
    first, second, score, clusters = _elo_arrays(cfg, games)
    # Each match's score from its committed games: the plan counts whole release blocks only (a
    # games=N match is one block), so a match not played to its end would read 0-0.
    scored: dict[str, tuple[dict, dict]] = defaultdict(lambda: (defaultdict(float), defaultdict(float)))
    played_out: set[str] = set()  # matches with a game that was not lost by both
    for (mid, tiebreak, seating, returns), count in Counter(
            (g["match_id"], g["number"] > cfg.match.games, tuple(g["seating"]), tuple(g["returns"]))
            for g in games).items():
        for e, p in zip(seating, game_points(returns, 0, 1)):
            scored[mid][tiebreak][e] += p * count
        if contested(returns):
            played_out.add(mid)
    matches = []
    for st in plan.pairings:
        p = st.pairing
        if p.kind == "bye":
            stats[p.engines[0]]["byes"] += 1
            if cfg.format == "swiss":
                stats[p.engines[0]]["match_points"] += cfg.bye_points
            matches.append({"round": p.round, "pairing": p.key, "A": names[p.engines[0]], "B": None, "bye": True,
                            "done": True, "winner": names[p.engines[0]], "decided_by": "bye"})
            continue
        a, b = p.engines
        main, tiebreak = scored[p.match_id]
        row = {"round": p.round, "pairing": p.key, "A": names[a], "B": names[b], "points": [main[a], main[b]],
               "tiebreak_points": [tiebreak[a], tiebreak[b]] if tiebreak else None, "games": st.played, "done": st.done,
               "winner": names[st.winner] if st.winner is not None else None, "decided_by": st.decided_by}
        matches.append(row)
        if st.done and st.winner is None and p.match_id not in played_out and cfg.format != "swiss":
            # every game lost by both (neither engine could start): a loss for each, as its games
            # are, not a drawn match (Swiss pairs on the plan's match points, which draw it)
            row["decided_by"] = "lost by both"
            for e in (a, b):
                stats[e]["matches"] += 1
                stats[e]["match_L"] += 1
        elif st.done:
            for e in (a, b):
                stats[e]["matches"] += 1
            if st.winner is None:
                for e in (a, b):
                    stats[e]["match_D"] += 1
                    stats[e]["match_points"] += 0.5
            else:
                loser = b if st.winner == a else a
                stats[st.winner]["match_W"] += 1
                stats[st.winner]["match_points"] += 1
                stats[loser]["match_L"] += 1
    fit = None
    if games:
        try:
            fit = fit_bradley_terry(first, second, score, n, names=names, clusters=clusters, anchor=cfg.anchor)
        except np.linalg.LinAlgError:  # one seat won every game: no finite first-move term, so no ratings yet
            pass
    for row in fit.table() if fit is not None else ():
        s = stats[names.index(row["engine"])]
        s.update(elo=row["elo"], elo_lo=row["lo"], elo_hi=row["hi"], elo_se=row["se"])
    for s in stats:
        s["score"] = s["points"] / s["games"] if s["games"] else None
        s.setdefault("elo", None)
    order = _standings_order(cfg, stats, plan, director)
    standings = []
    for rank, i in enumerate(order, 1):
        standings.append({"rank": rank, **stats[i]})
    out: dict[str, Any] = {
        "standings": standings,
        "crosstable": {"engines": [names[i] for i in order],
                       "points": [[float(cross_points[i, j]) if cross_games[i, j] else None for j in order]
                                  for i in order],
                       "games": [[int(cross_games[i, j]) for j in order] for i in order]},
        "matches": matches,
    }
    if games and fit is None:
        out["ratings_unavailable"] = no_ratings(score)
    if fit is not None:
        los = fit.los()
        out["ratings"] = {
            "model": "Bradley-Terry (logistic Elo) with a first-move term, maximum likelihood",
            "covariance": fit.covariance + (" (duplicate-dice units)" if fit.covariance == "cluster-robust" else ""),
            "anchor": None if cfg.anchor is None else {"engine": names[cfg.anchor[0]], "elo": cfg.anchor[1]},
            "first_move_elo": fit.first_move_elo, "first_move_lo": fit.first_move_elo - Z95 * fit.first_move_se,
            "first_move_hi": fit.first_move_elo + Z95 * fit.first_move_se,
            "table": fit.table(),
            "los": {"engines": names, "matrix": [[None if math.isnan(x) else float(x) for x in row] for row in los]},
        }
    out["sprt"] = head_to_head(cfg, games, names)
    if cfg.format == "swiss":
        ranked = director.swiss_standings([s for s in plan.pairings if s.done])
        buchholz = {p.index: sum(q.score for q in ranked if q.index in p.opponents) for p in ranked}
        for row in standings:
            row["buchholz"] = buchholz[names.index(row["engine"])]
    if cfg.format == "knockout":
        out["bracket"] = [m for m in matches]
        final = [st for st in plan.pairings if st.pairing.round == plan.rounds and st.done]
        out["champion"] = names[final[0].winner] if plan.finished and final and final[0].winner is not None else None
    return out


def _standings_order(cfg: TournamentConfig, stats: list[dict], plan, director: Director) -> list[int]:
    n = len(stats)
    if cfg.format == "swiss":
        done = [s for s in plan.pairings if s.done]
        return [p.index for p in director.swiss_standings(done)]
    if cfg.format == "knockout":
        reached = defaultdict(int)
        won_final = None
        for st in plan.pairings:
            for e in st.pairing.engines:
                reached[e] = max(reached[e], st.pairing.round)
            if st.done and st.pairing.round == plan.rounds and st.winner is not None:
                won_final = st.winner
        seed = {e: r for r, e in enumerate(director.engine_seed_order())}
        key = lambda i: (-(reached[i] + (1 if i == won_final else 0)), -stats[i]["points"], seed[i])
        return sorted(range(n), key=key)
    return sorted(range(n), key=lambda i: (-stats[i]["match_points"], -stats[i]["points"],
                                           -(stats[i]["elo"] or 0), i))


def head_to_head(cfg: TournamentConfig, games: list[dict], names: list[str]) -> list[dict]:
    """GSPRT per pair of engines: trinomial on games; pentanomial on duplicate-dice pairs."""
    s = cfg.sprt
    by_pair: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for g in games:
        a, b = g["seating"]
        by_pair[(min(a, b), max(a, b))].append(g)
    out = []
    for (x, y), gs in sorted(by_pair.items()):
        gs = [g for g in gs if contested(g["returns"])]
        pts = [game_points(g["returns"], 0, 1)[g["seating"].index(x)] for g in gs]
        tri = trinomial(pts)
        row = {"A": names[x], "B": names[y], "games": len(gs), "trinomial": tri,
               "sprt_games": sprt(tri, s.elo0, s.elo1, s.alpha, s.beta)}
        units: dict[str, list[float]] = defaultdict(list)
        if cfg.duplicate_dice:  # a duplicate-dice pair is two games of one stream
            for g, px in zip(gs, pts):
                units[f"{g['match_id']}|{g['stream']}"].append(px)
        pairs = [sum(v) for v in units.values() if len(v) == 2]
        if pairs:
            penta = pentanomial(pairs)
            row["pentanomial"] = penta
            row["sprt_pairs"] = sprt(penta, s.elo0, s.elo1, s.alpha, s.beta)
        out.append(row)
    return out


# --- multi-seat, cooperative, solo ------------------------------------------------------------

def table_sections(cfg: TournamentConfig, games: list[dict], names: list[str],
                   schedule: Mapping[str, int] | None = None) -> dict:
    """``schedule``: each match id's place in the plan. OpenSkill depends on the order of the games,
    and they are taken in schedule order (their keys as text are not: ``c1-0-1-10`` < ``c1-0-1-2``)."""
    n, k = len(names), cfg.num_seats
    stats = [{"engine": names[i], "games": 0, "wins": 0, "draws": 0, "rank_sum": 0.0, "return_sum": 0.0}
             for i in range(n)]
    seat_returns = [[] for _ in range(k)]
    seat_wins = [0] * k
    place = schedule or {}
    ordered = sorted(games, key=lambda g: (place.get(g.get("match_id"), len(place)), g["round"], g["pairing"],
                                           g["number"]))
    for g in ordered:
        r = g["returns"]
        distinct = sorted(set(r), reverse=True)
        best = distinct[0]
        for seat, e in enumerate(g["seating"]):
            st = stats[e]
            st["games"] += 1
            st["return_sum"] += r[seat]
            # average rank over ties: 1 = best; a game every seat lost (forfeits in both alliances):
            # last place and a loss for each, not a draw (``contested``)
            above = sum(1 for x in r if x > r[seat])
            tied = r.count(r[seat])
            st["rank_sum"] += above + (tied + 1) / 2 if contested(r) else len(r)
            if not contested(r):
                pass
            elif len(distinct) == 1:  # everyone alike: a draw
                st["draws"] += 1
            elif r[seat] == best:  # alone or with its alliance: a win, whole (not 1/3 of one)
                st["wins"] += 1
                seat_wins[seat] += 1
            seat_returns[seat].append(r[seat])
    ratings = openskill_ratings([(tuple(g["seating"]), tuple(g["returns"])) for g in ordered], names,
                                seat_sides(_game_or_none(cfg)))
    standings = []
    for row in ratings:
        st = stats[names.index(row["engine"])]
        gcount = st["games"] or 1
        standings.append({"rank": row["rank"], "engine": row["engine"], "games": st["games"],
                          "wins": st["wins"], "draws": st["draws"], "win_rate": st["wins"] / gcount, "mean_rank": st["rank_sum"] / gcount,
                          "mean_return": st["return_sum"] / gcount, "mu": row["mu"], "sigma": row["sigma"],
                          "ordinal": row["ordinal"]})
    seats = []
    for s in range(k):
        mean, lo, hi = _mean_ci(seat_returns[s])
        seats.append({"seat": s, "games": len(seat_returns[s]), "return_mean": mean, "return_lo": lo,
                      "return_hi": hi,
                      "win_share": seat_wins[s] / len(seat_returns[s]) if seat_returns[s] else None})
    return {"standings": standings, "ratings": {"model": "OpenSkill Plackett-Luce", "table": ratings},
            "seats": seats}


def team_sections(cfg: TournamentConfig, games: list[dict], names: list[str]) -> dict:
    n = len(names)
    team_scores: dict[tuple, list[float]] = defaultdict(list)
    engine_scores: dict[int, list[float]] = defaultdict(list)
    by_seed: dict[tuple, dict[str, float]] = defaultdict(dict)
    for g in games:
        team = tuple(sorted(g["seating"]))
        score = float(np.mean(g["returns"]))  # cooperative: every seat has the team's score
        team_scores[team].append(score)
        for e in set(g["seating"]):
            engine_scores[e].append(score)
        by_seed[team][g["stream"]] = score
    teams = []
    for team, vals in team_scores.items():
        mean, lo, hi = _mean_ci(vals)
        teams.append({"team": " + ".join(names[e] for e in team), "games": len(vals), "mean": mean,
                      "lo": lo, "hi": hi, "best": max(vals), "worst": min(vals)})
    teams.sort(key=lambda t: -t["mean"])
    engines = []
    for e in range(n):
        vals = engine_scores.get(e, [])
        mean, lo, hi = _mean_ci(vals)
        engines.append({"engine": names[e], "games": len(vals), "mean": mean, "lo": lo, "hi": hi})
    engines.sort(key=lambda r: -(r["mean"] if not math.isnan(r["mean"]) else -math.inf))
    for k, r in enumerate(engines):
        r["rank"] = k + 1
    return {"teams": teams, "standings": engines}


def _mean_ci(values: list[float]) -> tuple[float, float, float]:
    """Mean and its t interval (``arbiter.stats.mean_ci``); nan for a seat or engine without games
    yet, and nan bounds below ``MIN_INTERVAL_GAMES``."""
    if not values:
        return math.nan, math.nan, math.nan
    mean, lo, hi = mean_ci(values)
    return (mean, lo, hi) if len(values) >= MIN_INTERVAL_GAMES else (mean, math.nan, math.nan)


def solo_sections(cfg: TournamentConfig, games: list[dict], names: list[str]) -> dict:
    n = len(names)
    scores: dict[int, dict[str, float]] = defaultdict(dict)
    for g in games:
        scores[g["seating"][0]][g["stream"]] = g["returns"][0]
    board = []
    for e in range(n):
        vals = list(scores[e].values())
        mean, lo, hi = _mean_ci(vals)
        wins = sum(1 for v in vals if v > 0)
        win_lo, win_hi = wilson_interval(wins, len(vals))
        board.append({"engine": names[e], "games": len(vals), "mean": mean, "lo": lo, "hi": hi,
                      "wins": wins, "win_rate": wins / len(vals) if vals else None, "win_lo": win_lo, "win_hi": win_hi})
    board.sort(key=lambda r: (-(r["win_rate"] or 0), -(r["mean"] if not math.isnan(r["mean"]) else -math.inf)))
    for k, r in enumerate(board):
        r["rank"] = k + 1
    return {"standings": board, "paired": paired_rows({names[e]: scores[e] for e in range(n)})}


# --- presentation -----------------------------------------------------------------------------

def _f(x: Any, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if isinstance(x, float):
        if math.isinf(x):
            return "∞" if x > 0 else "-∞"
        return f"{x:.{digits}f}"
    return str(x)


def options_text(options: dict) -> str:
    """`` (max_turns 20, variant ryof)``: game options as a reader writes them, unset ones (None)
    left out; '' when none is set (the header showed a Python dict: ``{'map_file': None}``)."""
    shown = [f"{k} {str(v).lower() if isinstance(v, bool) else v}" for k, v in (options or {}).items() if v is not None]
    return f" ({', '.join(shown)})" if shown else ""


def render_text(report: dict, width: int = 120) -> str:
    from rich.console import Console
    from rich.table import Table

    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=False, color_system=None, highlight=False,
                      markup=False)  # names and values as they are: an engine "Bot [beta]" keeps its "[beta]"
    t = report["tournament"]
    status = "finished" if t["finished"] else f"in progress (≤ {t['games_max_remaining']} games to go)"
    stop = t.get("sprt_stop")
    if stop and stop.get("verdict"):
        status = f"stopped by the SPRT ({stop['test']}): {stop['verdict']}"
    elif stop:
        status += f"; SPRT ({stop['test']}) LLR {stop['llr']:.3f} in [{stop['lower']:.3f}, {stop['upper']:.3f}]"
    fmt = t["format"] + (f", match {t['match']}" if t["match"] else f", {t['games_per_pairing']} games per pairing")
    console.print(f"{t['name']}: {t['game']}{options_text(t['game_options'])}, {fmt}, tc {t['time_control']}, "
                  f"seed {t['seed']}{', duplicate dice' if t['duplicate_dice'] else ''}")
    console.print(f"{t['games_played']} games played, {status}")
    for note in t["notes"]:
        console.print(f"note: {note}")
    kind = t["kind"]

    narrow = width < 120  # a narrow terminal: no borders, cells wrapped whole rather than cut with "…"
    if narrow:
        from rich import box

    def table(title: str, cols: list[str], rows: list[list[str]]) -> None:
        tb = (Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                    collapse_padding=True) if narrow else Table(title=title, title_justify="left"))
        widest = [max([len(r[k]) for r in rows if k < len(r)] + [1]) for k in range(len(cols))]
        whole = narrow and sum(widest) + 2 * (len(cols) - 1) <= width  # the values whole, the headings wrapped
        for k, c in enumerate(cols):
            tb.add_column(c, justify="left" if c in ("engine", "team", "A", "B", "reason", "round", "decided by",
                                                      "winner", "test") else "right",
                          **(dict(overflow="fold", min_width=widest[k] if whole else None) if narrow else {}))
        for r in rows:
            tb.add_row(*r)
        console.print(tb)

    if kind == "match":
        sw = t["format"] == "swiss"
        cols = ["#", "engine", "games", "W-D-L", "points", "score%", "matches W-D-L", "match pts"]
        cols += ["buchholz"] if sw else []
        cols += ["Elo", "95% interval"]
        rows = []
        for s in report["standings"]:
            r = [str(s["rank"]), s["engine"], str(s["games"]), f"{s['W']}-{s['D']}-{s['L']}", _f(s["points"]),
                 _f(100 * s["score"]) if s["score"] is not None else "-",
                 f"{s['match_W']}-{s['match_D']}-{s['match_L']}" + (f" +{s['byes']} bye" if s["byes"] else ""),
                 _f(s["match_points"])]
            r += [_f(s.get("buchholz"))] if sw else []
            r += [_f(s["elo"]), f"[{_f(s.get('elo_lo'))}, {_f(s.get('elo_hi'))}]" if s["elo"] is not None else "-"]
            rows.append(r)
        table("Standings", cols, rows)
        ct = report["crosstable"]
        short = [f"{i + 1}" for i in range(len(ct["engines"]))]
        rows = []
        for i, name in enumerate(ct["engines"]):
            cells = []
            for j in range(len(ct["engines"])):
                if i == j:
                    cells.append("·")
                elif ct["games"][i][j]:
                    cells.append(f"{_f(ct['points'][i][j])}/{ct['games'][i][j]}")
                else:
                    cells.append("")
            rows.append([f"{i + 1}", name] + cells)
        table("Crosstable (points/games of the row engine)", ["#", "engine"] + short, rows)
        if "ratings_unavailable" in report:
            console.print(f"Ratings: none yet: {report['ratings_unavailable']}")
        if "ratings" in report:
            rt = report["ratings"]
            table(f"Ratings: {rt['model']}; covariance {rt['covariance']}",
                  ["#", "engine", "Elo", "±se", "95% interval", "games"],
                  [[str(r["rank"]), r["engine"], _f(r["elo"]), _f(r["se"]), f"[{_f(r['lo'])}, {_f(r['hi'])}]",
                    str(r["games"])] for r in rt["table"]])
            console.print(f"first-move advantage: {_f(rt['first_move_elo'])} Elo "
                          f"[{_f(rt['first_move_lo'])}, {_f(rt['first_move_hi'])}]")
            los = rt["los"]
            order = [r["engine"] for r in rt["table"]]
            idx = [los["engines"].index(e) for e in order]
            if len(order) <= 16:
                table("Likelihood of superiority (row stronger than column), %", ["engine"] + [str(k + 1) for k in
                                                                                                range(len(order))],
                      [[f"{k + 1} {order[k]}"] + ["·" if i == j else _f(100 * los["matrix"][i][j], 0) for j in idx]
                       for k, i in enumerate(idx)])
        if report.get("sprt") and (len(t["engines"]) <= 4 or t["sprt_configured"]):
            rows = []
            for r in report["sprt"]:
                for label, key, res in (("games", "sprt_games", "trinomial"), ("pairs", "sprt_pairs", "pentanomial")):
                    if key in r:
                        sp = r[key]
                        rows.append([r["A"], r["B"], label, str(r[res]), _f(sp["llr"], 3),
                                     f"[{_f(sp['lower'], 2)}, {_f(sp['upper'], 2)}]", sp["state"],
                                     f"{_f(sp['elo'])} [{_f(sp['elo_lo'])}, {_f(sp['elo_hi'])}]"])
            sp0 = report["sprt"][0]["sprt_games"]
            table(f"Head-to-head GSPRT (elo0={_f(sp0['elo0'])}, elo1={_f(sp0['elo1'])}, logistic Elo; A's view)",
                  ["A", "B", "test", "results", "LLR", "bounds", "state", "Elo of A [95%]"], rows)
        if t["format"] in ("knockout", "swiss") or len(report["matches"]) <= 40:
            rows = []
            for m in report["matches"]:
                if m.get("bye"):
                    rows.append([str(m["round"]), m["A"], "(bye)", "", "", "bye"])
                    continue
                tbp = m.get("tiebreak_points")
                tb = f" +tb {_f(tbp[0])}-{_f(tbp[1])}" if tbp else ""
                unplayed = "stopped by the SPRT" if t["finished"] else "playing"  # no game starts after the verdict
                rows.append([str(m["round"]), m["A"], m["B"], f"{_f(m['points'][0])}-{_f(m['points'][1])}{tb}",
                             m["winner"] or ("none" if m["decided_by"] == "lost by both"
                                             else "draw" if m["done"] else "…" if not t["finished"] else "none"),
                             m["decided_by"] if m["done"] else unplayed])
            table("Matches", ["round", "A", "B", "score", "winner", "decided by"], rows)
        if report.get("champion"):
            console.print(f"champion: {report['champion']}")
    elif kind == "table":
        table("Standings (OpenSkill Plackett-Luce)",
              ["#", "engine", "games", "wins", "draws", "win%", "mean rank", "mean return", "μ", "σ", "μ-3σ"],
              [[str(s["rank"]), s["engine"], str(s["games"]), str(s["wins"]), str(s["draws"]), _f(100 * s["win_rate"]),
                _f(s["mean_rank"], 2), _f(s["mean_return"], 2), _f(s["mu"], 2), _f(s["sigma"], 2),
                _f(s["ordinal"], 2)] for s in report["standings"]])
        table("Seats", ["seat", "games", "mean return", "95% interval", "win share"],
              [[str(s["seat"]), str(s["games"]), _f(s.get("return_mean"), 2),
                f"[{_f(s.get('return_lo'), 2)}, {_f(s.get('return_hi'), 2)}]", _f(s["win_share"], 3)]
               for s in report["seats"]])
    elif kind == "team":
        table("Teams (mean shared score)", ["team", "games", "mean", "95% interval", "best", "worst"],
              [[r["team"], str(r["games"]), _f(r["mean"], 2), f"[{_f(r['lo'], 2)}, {_f(r['hi'], 2)}]", _f(r["best"], 2),
                _f(r["worst"], 2)] for r in report["teams"]])
        table("Engines (mean score of their teams)", ["#", "engine", "games", "mean", "95% interval"],
              [[str(r["rank"]), r["engine"], str(r["games"]), _f(r["mean"], 2), f"[{_f(r['lo'], 2)}, {_f(r['hi'], 2)}]"]
               for r in report["standings"]])
    else:
        table("Leaderboard (common seed suite)", ["#", "engine", "games", "wins", "win%", "95% interval",
                                                   "mean score", "95% interval"],
              [[str(r["rank"]), r["engine"], str(r["games"]), str(r["wins"]), _f(100 * (r["win_rate"] or 0)),
                f"[{_f(100 * r['win_lo'])}, {_f(100 * r['win_hi'])}]", _f(r["mean"], 2),
                f"[{_f(r['lo'], 2)}, {_f(r['hi'], 2)}]"] for r in report["standings"]])
        table("Paired comparisons on common seeds (A - B)", ["A", "B", "seeds", "mean diff", "95% interval",
                                                              "A better", "ties", "B better", "sign test p"],
              [[r["A"], r["B"], str(r["seeds"]), _f(r["mean_diff"], 2), f"[{_f(r['lo'], 2)}, {_f(r['hi'], 2)}]",
                str(r["A_better"]), str(r["ties"]), str(r["B_better"]), _f(r["p_value"], 4)] for r in report["paired"]])
    table("Results by end reason", ["engine", "reason", "W", "D", "L"],
          [[r["engine"], r["reason"], str(r["W"]), str(r["D"]), str(r["L"])] for r in report["terminations"]])
    if report.get("engine_stats"):
        table("Engines: time and search (ms per decision as the referee measured it; latency = measured − "
              "the engine's own time)",
              ["engine", "decisions", "ms mean", "median", "max", "clock left mean", "min", "depth", "nodes",
               "nps", "latency mean", "max", "forfeits"],
              [[r["engine"], str(r["decisions"]), _f(r["ms_mean"]), _f(r["ms_median"]), _f(r["ms_max"]),
                _f(r["clock_left_mean_ms"], 0), _f(r["clock_left_min_ms"], 0), _f(r["depth_mean"]),
                _f(r["nodes_mean"], 0), _f(r["nps"], 0), _f(r["latency_mean_ms"], 2), _f(r["latency_max_ms"], 2),
                ", ".join(f"{k} {v}" for k, v in r["forfeits"].items()) or "0"]
               for r in report["engine_stats"]])
    return buf.getvalue()


def to_json(report: dict) -> str:
    def clean(x):
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items() if not k.startswith("_")}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
            return None
        if isinstance(x, np.generic):
            return clean(x.item())
        return x

    return json.dumps(clean(report), indent=2, ensure_ascii=False)


def _csv_cell(v: Any) -> Any:
    """As in the JSON export: lists and tables as JSON; nan and ±inf (no interval yet, an engine
    that won or lost every game) as an empty cell, where JSON has null."""
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return ""
    return v


def write_csv(report: dict, directory: str | Path) -> list[Path]:
    """One CSV file per table: standings, crosstable, ratings, los, terminations, matches, ..."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    written = []

    def dump(name: str, rows: list[dict]) -> None:
        if not rows:
            return
        cols: list[str] = []
        for r in rows:
            for k in r:
                if k not in cols and not k.startswith("_"):
                    cols.append(k)
        path = d / f"{name}.csv"
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
            w.writeheader()
            for r in rows:
                w.writerow({k: _csv_cell(v) for k, v in r.items()})
        written.append(path)

    dump("standings", report.get("standings", []))
    dump("terminations", report.get("terminations", []))
    dump("engine_stats", report.get("engine_stats", []))
    if "crosstable" in report:
        ct = report["crosstable"]
        dump("crosstable", [{"engine": e, **{o: (None if ct["games"][i][j] == 0 else ct["points"][i][j])
                                             for j, o in enumerate(ct["engines"])}}
                            for i, e in enumerate(ct["engines"])])
    if "ratings" in report:
        dump("ratings", report["ratings"]["table"])
        if "los" in report["ratings"]:
            los = report["ratings"]["los"]
            dump("los", [{"engine": e, **dict(zip(los["engines"], row))}
                         for e, row in zip(los["engines"], los["matrix"])])
    for name in ("matches", "teams", "paired", "seats"):
        dump(name, report.get(name, []))
    if report.get("sprt"):
        rows = []
        for r in report["sprt"]:
            for test, key, res in (("games", "sprt_games", "trinomial"), ("pairs", "sprt_pairs", "pentanomial")):
                if key in r:
                    rows.append({"A": r["A"], "B": r["B"], "test": test, "results": r[res], **r[key]})
        dump("sprt", rows)
    if "rating_timeline" in report:
        tl = report["rating_timeline"]
        dump("rating_timeline", [{"games": k, **{e: v[i] for e, v in tl["ratings"].items()}}
                                 for i, k in enumerate(tl["games"])])
    return written


def plot_problem(report: dict) -> str | None:
    """Why ``plot`` has nothing to draw, if so (asked before any output is written)."""
    if report["tournament"]["kind"] == "match" and "ratings" not in report:  # no mean score to plot instead
        return "no ratings to plot: " + report.get("ratings_unavailable", "the tournament has no games yet")
    return None


def timeline_problem(report: dict) -> str | None:
    """Why ``plot_timeline`` has nothing to draw, if so (asked before any output is written)."""
    if report.get("rating_timeline") is None:
        return ("no ratings over time: the tournament has no games yet, or its games are cooperative or solo "
                "(scores, not ratings)")
    return None


def plot(report: dict, path: str | Path) -> Path:
    """Ratings with 95% error bars, best at the top (PNG or SVG by the file name)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = report["tournament"]
    kind = t["kind"]
    if problem := plot_problem(report):
        raise ValueError(problem)
    if kind == "match":
        rows = report["ratings"]["table"]
        vals = [(r["engine"], r["elo"], r["lo"], r["hi"]) for r in rows]
        xlabel = "Elo (logistic, " + ("anchored" if report["ratings"].get("anchor") else "mean 0") + "), 95% interval"
    elif kind == "table":
        vals = [(r["engine"], r["mu"], r["lo"], r["hi"]) for r in report["ratings"]["table"]]
        xlabel = "OpenSkill μ ± 1.96σ"
    else:
        vals = [(r["engine"], r["mean"], r["lo"], r["hi"]) for r in report["standings"] if r["games"]]
        xlabel = "mean score, 95% interval"
    vals = [v for v in vals if v[1] is not None and not math.isnan(v[1])]
    vals.sort(key=lambda v: v[1])
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(vals) + 1.5))
    ys = list(range(len(vals)))
    centre = [v[1] for v in vals]
    lo = [max(0.0, v[1] - v[2]) if math.isfinite(v[2]) else 0.0 for v in vals]
    hi = [max(0.0, v[3] - v[1]) if math.isfinite(v[3]) else 0.0 for v in vals]
    ax.errorbar(centre, ys, xerr=[lo, hi], fmt="o", capsize=4)
    ax.set_yticks(ys)
    ax.set_yticklabels([v[0] for v in vals])
    ax.set_xlabel(xlabel)
    ax.set_title(f"{t['name']}: {t['games_played']} games" + ("" if t["finished"] else " (in progress)"))
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_timeline(report: dict, path: str | Path) -> Path:
    """Each engine's rating after every K games in commit order (PNG or SVG by the file name)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    t, tl = report["tournament"], report.get("rating_timeline")
    if problem := timeline_problem(report):
        raise ValueError(problem)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    final = {e: v[-1] for e, v in tl["ratings"].items()}
    for engine in sorted(tl["ratings"], key=lambda e: -(final[e] if final[e] is not None else -math.inf)):
        ax.plot(tl["games"], [math.nan if v is None else v for v in tl["ratings"][engine]],
                marker="o" if len(tl["games"]) <= 30 else None, markersize=3, label=engine)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(f"games committed (a point every {tl['every']})")
    ax.set_ylabel(tl["measure"])
    ax.set_title(f"{t['name']}: {tl['measure']} over {t['games_played']} games"
                 + ("" if t["finished"] else " (in progress)"))
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="best", ncol=1 if len(final) <= 12 else 2)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
