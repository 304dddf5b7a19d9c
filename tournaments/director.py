"""The director: which games a tournament plays, as a pure function of its spec and its results.

``Director.plan(results)`` looks at the committed results (a mapping from a game's key
``(match_id, game_number)`` to its ``GameResult``) and returns the games that may be played now,
whether the tournament is over, and the state of every pairing. Nothing else goes in: no clock,
no process ids, no order of arrival. Swiss pairings and knockout brackets depend on earlier
results, early-stopping matches on earlier games, and all of it on the tournament seed, so a
resumed tournament (same spec, same committed results) asks for exactly the games an
uninterrupted one would have asked for, with the same dice streams and seats.

Keys and streams (all derived from the tournament id ``tid`` and the pairing key):

* match id ``{tid}:{pairing}``, e.g. ``olympiad:r3-0-5`` (round 3, engine 0 "A" vs engine 5 "B");
* game number: 1, 2, ... within the pairing (tie-break games continue the numbering);
* dice stream: ``{match_id}|{number}`` (the arbiter default), or for duplicate dice one stream
  per pair / block (``{match_id}|pair2``), or for solo and cooperative games the common suite
  ``{tid}|suite|{g}`` shared by every entrant;
* statistical unit: the games that share a dice stream within a pairing (a duplicate pair).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from math import comb
from typing import Collection, Iterator, Mapping

from arbiter.formats.match import MatchFormat
from arbiter.openings import play_order
from arbiter.stats import game_points

from .schedule import (SwissPlayer, knockout_rounds, knockout_slots, rotation, round_robin_rounds,
                       seeded_order, swiss_pairings)


PLANNING_RULES = 3
"""The planning rules of events started now (``ScheduleSpec.rules``)."""


def stored_rules(meta: Mapping[str, str]) -> int:
    """The planning rules of the event whose database metadata is ``meta``."""
    return int(meta.get("planning_rules", "1"))


@dataclass(frozen=True)
class GameSpec:
    match_id: str
    number: int
    seating: tuple[int, ...]
    """Engine index per seat (``n + i`` is a second copy of engine ``i``, for self-pairs)."""
    stream: str
    unit: str
    pairing: str
    round: int
    tiebreak: bool = False
    opening: int | None = None
    """Index into the openings file's positions (file order) of the game's start position."""

    @property
    def key(self) -> tuple[str, int]:
        return (self.match_id, self.number)


@dataclass(frozen=True)
class GameResult:
    seating: tuple[int, ...]
    returns: tuple[float, ...]
    reason: str = "normal"
    forfeit_seat: int | None = None


@dataclass(frozen=True)
class Pairing:
    key: str
    round: int
    engines: tuple[int, ...]
    kind: str
    """``match`` (A, B), ``table``, ``team``, ``solo`` or ``bye``."""
    match_id: str
    cycle: int = 0
    """Which meeting of its engines this is (0-based cycle; Swiss and knockout: round − 1): openings go on from there."""


@dataclass
class PairingState:
    pairing: Pairing
    ready: list[GameSpec] = field(default_factory=list)
    done: bool = False
    played: int = 0
    remaining_max: int = 0
    points: list[float] = field(default_factory=list)
    """Matches: game points of A and B (main games only)."""
    tiebreak_points: list[float] = field(default_factory=list)
    winner: int | None = None
    """Matches: the engine index that won (knockout: advanced), None for a drawn match."""
    decided_by: str = ""
    """``games``, ``tiebreak``, ``seed`` (knockout tie-break games all drawn) or ``bye``."""


@dataclass
class Plan:
    pairings: list[PairingState]
    finished: bool
    max_remaining: int
    played: int
    round: int
    rounds: int
    notes: list[str] = field(default_factory=list)

    def iter_ready(self) -> Iterator[GameSpec]:
        """The games that may be played now, in schedule order (lazily: a big event has many)."""
        for state in self.pairings:
            yield from state.ready

    @property
    def ready(self) -> list[GameSpec]:
        return list(self.iter_ready())


@dataclass
class ScheduleSpec:
    tid: str
    n: int
    kind: str
    num_seats: int
    format: str
    match: MatchFormat | None = None
    games: int = 2
    rounds: int = 1
    duplicate: bool = False
    seed: str = ""
    seeding: str = "order"
    candidates: tuple[int, ...] = (0,)
    tiebreak_games: int = 2
    tiebreak_blocks: int = 3
    self_pairs: bool = False
    bye_points: float = 1.0
    openings: tuple[int, ...] = ()
    """The openings file's positions (indices in file order) in the order games take them; a
    pairing's j-th pair (block of seat rotations) of its c-th meeting takes entry ``c * stride + j``
    (wrapping around). Openings imply duplicate dice (``TournamentConfig.duplicate_dice``)."""
    rules: int = PLANNING_RULES
    """The planning rules the event was started under (``PLANNING_RULES`` for a new event, kept in
    its database as ``planning_rules``; 1 for an event started before the database kept them).
    1: a Swiss round is paired without looking ahead at the rounds after it, and every knockout
    tie-break block starts with the higher seed moving first; 2: a Swiss round is paired so that
    the later ones can still be paired without a repeat, and each tie-break block starts with the
    engine that has moved first less often in the match so far; 3: within a Swiss score group
    the engine due the other colour is sought in the bottom half first (``swiss_pairings``'s
    ``halves``), and a gauntlet's A alternates over each candidate's opponents as well as by cycle.
    A resumed event goes on with the rules it was started under, so the rounds it paired before
    are paired again the same way."""

    @classmethod
    def from_config(cls, cfg, seed: str, rules: int = PLANNING_RULES) -> "ScheduleSpec":
        order = play_order(cfg.openings, cfg.openings_order, seed) if cfg.openings else []
        return cls(tid=cfg.tid, n=len(cfg.engines), kind=cfg.kind, num_seats=cfg.num_seats, format=cfg.format,
                   match=cfg.match, games=cfg.games, rounds=cfg.rounds, duplicate=cfg.duplicate_dice,
                   seed=seed, seeding=cfg.seeding, candidates=tuple(cfg.candidates or (0,)),
                   tiebreak_games=cfg.tiebreak_games, tiebreak_blocks=cfg.tiebreak_blocks, self_pairs=cfg.self_pairs,
                   bye_points=cfg.bye_points, openings=tuple(o.index - 1 for o in order), rules=rules)

    def most_games(self) -> tuple[int, int, int]:
        """(games per meeting, meetings per cycle, cycles) at most, counted the way ``Director``
        pairs (without planning: ``rounds = 9223372036854775807`` would plan until memory ran
        out); their product is never below the games the event can play."""
        s, n = self, self.n
        if s.kind == "match":
            per = s.match.games
            if s.format == "knockout":  # n - 1 matches, each with every tie-break block
                return per + s.tiebreak_games * s.tiebreak_blocks, n - 1, 1
            if s.format == "swiss":
                return per, n // 2, s.rounds
            if s.format == "gauntlet":
                return per, len(s.candidates) * (n - len(s.candidates)), s.rounds
            return per, n * (n - 1) // 2, s.rounds * (2 if s.format == "double_round_robin" else 1)
        if s.kind == "solo":
            return s.games, n, s.rounds
        k = s.num_seats
        if s.format == "gauntlet":
            groups = len(s.candidates) * comb(n - len(s.candidates), k - 1)
        else:
            groups = comb(n, k) + (n if s.kind == "team" and s.self_pairs and k == 2 else 0)
        return s.games, groups, s.rounds


class Director:
    def __init__(self, spec: ScheduleSpec):
        self.spec = spec
        self._static: list[Pairing] | None = None
        self._done: dict[str, PairingState] = {}
        self._swiss: dict[int, list[Pairing]] = {}
        self._ko: dict[int, list[Pairing]] = {}
        self._cursor: dict[str, tuple] = {}
        self._pending: dict[str, tuple[int, dict]] = {}
        """Per pairing: (block index, {game key: spec}) of its current block's uncommitted games."""
        self._live: dict[str, PairingState] = {}
        """Static formats: the last state of every pairing, reused when a commit is elsewhere."""
        self._by_match: dict[str, int] = {}
        self._fresh: set | None = None
        self._seed_order: list[int] | None = None
        self.notes: list[str] = []
        if spec.kind == "match":
            self._blocks = self._main_blocks(spec.match, spec.duplicate)

    # --- public -------------------------------------------------------------------------------

    def plan(self, results: Mapping[tuple[str, int], GameResult],
             changed: Collection[tuple[str, int]] | None = None) -> Plan:
        """``changed``: the games committed since the previous call (a runner's replan after a
        batch), so only their pairings are looked at again (planning stays linear in the number
        of games); None looks at everything."""
        self._fresh = None if changed is None else set(changed)
        try:
            if self.spec.format in ("swiss", "knockout"):
                return self._plan_rounds(results)
            return self._plan_static(results, self._fresh)
        finally:
            self._fresh = None

    def _plan_static(self, results: Mapping, changed: Collection[tuple[str, int]] | None) -> Plan:
        pairings = self._static_pairings()
        if not self._by_match:
            self._by_match = {p.match_id: i for i, p in enumerate(pairings)}
        indices = None if changed is None else {self._by_match.get(key[0]) for key in changed}
        if indices is not None and None not in indices and len(self._live) == len(pairings):
            for index in indices:
                p = pairings[index]
                self._live[p.key] = self._state(p, results)
        else:
            self._live = {p.key: self._state(p, results) for p in pairings}
        states = list(self._live.values())
        rounds = max((s.pairing.round for s in states), default=0)
        current = min((s.pairing.round for s in states if not s.done), default=rounds)
        return self._collect(states, rounds, current, extra_max=0, finished_rounds=True)

    def engine_seed_order(self) -> list[int]:
        """Initial ranking (swiss) or seeding (knockout): file order or a seeded shuffle."""
        if self._seed_order is None:
            self._seed_order = (seeded_order(self.spec.n, self.spec.seed, "seeding") if self.spec.seeding == "random"
                                else list(range(self.spec.n)))
        return list(self._seed_order)

    # --- helpers ------------------------------------------------------------------------------

    def _mid(self, key: str) -> str:
        return f"{self.spec.tid}:{key}"

    def _collect(self, states: list[PairingState], rounds: int, current: int, extra_max: int,
                 finished_rounds: bool) -> Plan:
        finished = finished_rounds and all(s.done for s in states)
        return Plan(pairings=states, finished=finished,
                    max_remaining=sum(s.remaining_max for s in states) + extra_max,
                    played=sum(s.played for s in states), round=current, rounds=rounds, notes=list(self.notes))

    def _static_pairings(self) -> list[Pairing]:
        if self._static is not None:
            return self._static
        s, out = self.spec, []
        n, kind = s.n, s.kind
        if kind == "match":
            base = round_robin_rounds(n) if s.format in ("round_robin", "double_round_robin") else None
            cycles = s.rounds * (2 if s.format == "double_round_robin" else 1)
            for c in range(cycles):
                if base is not None:
                    for r, pairs in enumerate(base):
                        rnd = c * len(base) + r + 1
                        for a, b in pairs:
                            a, b = (a, b) if c % 2 == 0 else (b, a)
                            out.append(Pairing(f"r{rnd}-{a}-{b}", rnd, (a, b), "match", self._mid(f"r{rnd}-{a}-{b}"),
                                               c))
                else:  # gauntlet: A alternates by cycle and (rules 3) over each candidate's opponents
                    for i, x in enumerate(s.candidates):
                        others = [o for o in range(n) if o not in s.candidates]
                        for j, o in enumerate(others):
                            turn = c + (i + j if s.rules >= 3 else 0)
                            a, b = (x, o) if turn % 2 == 0 else (o, x)
                            key = f"g{c + 1}-{a}-{b}"
                            out.append(Pairing(key, c + 1, (a, b), "match", self._mid(key), c))
        elif kind in ("table", "team"):
            k = s.num_seats
            if s.format == "gauntlet":
                others = [i for i in range(n) if i not in s.candidates]
                groups = [(x,) + rest for x in s.candidates for rest in combinations(others, k - 1)]
            else:
                groups = list(combinations(range(n), k))
                if kind == "team" and s.self_pairs and k == 2:
                    groups = sorted(groups + [(i, n + i) for i in range(n)], key=lambda g: (g[0], g[1] % n))
            for c in range(s.rounds):
                for t, members in enumerate(groups):
                    key = f"c{c + 1}-" + "-".join(str(m) for m in members)
                    out.append(Pairing(key, c + 1, members, kind, self._mid(key), c))
        else:  # solo
            for c in range(s.rounds):
                for i in range(n):
                    key = f"c{c + 1}-solo-{i}"
                    out.append(Pairing(key, c + 1, (i,), "solo", self._mid(key), c))
        self._static = out
        return out

    def _state(self, p: Pairing, results: Mapping, seed_rank: dict[int, int] | None = None) -> PairingState:
        cached = self._done.get(p.key)
        if cached is not None:
            return cached
        if p.kind == "bye":
            state = PairingState(p, done=True, winner=p.engines[0], decided_by="bye")
        elif p.kind == "match":
            state = self._match_state(p, results, seed_rank)
        else:
            state = self._group_state(p, results)
        if state.done:
            self._done[p.key] = state
        return state

    # --- matches (two-seat competitive) -------------------------------------------------------

    @staticmethod
    def _main_blocks(fmt: MatchFormat, duplicate: bool) -> list[list[tuple[int, str, str, int]]]:
        """The main games in release blocks: (number, letter, stream suffix, pair index) per game.
        A block is released when every earlier block is committed; early stopping is checked
        between blocks. The pair index (0-based; games 2j+1 and 2j+2) picks the opening."""
        letters = list(fmt.schedule)
        games = [(i + 1, letters[i], str(i + 1), i // 2) for i in range(fmt.games)]
        if duplicate:
            for j in range(0, fmt.games - 1, 2):  # pair j: the same stream, seats swapped
                second = "B" if letters[j] == "A" else "A"
                games[j] = (j + 1, letters[j], f"pair{j // 2 + 1}", j // 2)
                games[j + 1] = (j + 2, second, f"pair{j // 2 + 1}", j // 2)
        if fmt.first_to is None:
            return [games]
        step = 2 if duplicate else 1
        return [games[i:i + step] for i in range(0, len(games), step)]

    def _spec_for(self, p: Pairing, number: int, letter: str, suffix: str, pair: int, tiebreak: bool = False) -> GameSpec:
        a, b = p.engines
        seating = (a, b) if letter == "A" else (b, a)
        stream = f"{p.match_id}|{suffix}"
        return GameSpec(p.match_id, number, seating, stream, stream, p.key, p.round, tiebreak,
                        self._opening(p, pair, self._max_match_games()))

    def _opening(self, p: Pairing, block: int, games: int) -> int | None:
        """The opening of ``p``'s ``block``-th pair of games (or block of seat rotations), when a
        meeting has ``games`` games: the play order goes on from one meeting to the next."""
        order = self.spec.openings
        if not order:
            return None
        stride = self._match_pairs() if p.kind == "match" else -(-games // len(p.engines))
        return order[(p.cycle * stride + block) % len(order)]

    def _match_pairs(self) -> int:
        """The pairs of games a match has at most (a pair's games share an opening), knockout
        tie-breaks included: each tie-break block has its own pairs (a block of one game is one)."""
        s = self.spec
        tiebreaks = s.tiebreak_blocks * -(-s.tiebreak_games // 2) if s.format == "knockout" else 0
        return -(-s.match.games // 2) + tiebreaks

    def _match_state(self, p: Pairing, results: Mapping, seed_rank: dict[int, int] | None) -> PairingState:
        s, fmt = self.spec, self.spec.match
        a, b = p.engines
        knockout = s.format == "knockout"
        tb_max = s.tiebreak_games * s.tiebreak_blocks if knockout else 0
        # Progress through fully committed blocks is cached: results only ever grow.
        bi, points, played = self._cursor.get(p.key, (0, (0.0, 0.0), 0))
        points = list(points)
        while bi < len(self._blocks):
            if fmt.first_to is not None and max(points) >= fmt.first_to:
                break
            block = self._blocks[bi]
            cached = self._pending.get(p.key)
            if cached is not None and cached[0] == bi and self._fresh is not None:
                pending = cached[1]  # only the fresh commit can have changed it
                for key in self._fresh:
                    pending.pop(key, None)
            else:  # specs only for the games not committed (a finished block needs none)
                mid = p.match_id
                pending = {(mid, game[0]): self._spec_for(p, *game) for game in block if (mid, game[0]) not in results}
                self._pending[p.key] = (bi, pending)
            if pending:
                self._cursor[p.key] = (bi, tuple(points), played)
                later = sum(len(bl) for bl in self._blocks[bi + 1:])
                return PairingState(p, ready=list(pending.values()), played=played + len(block) - len(pending),
                                    remaining_max=len(pending) + later + tb_max, points=points)
            for game in block:
                r = results[(p.match_id, game[0])]
                pa, pb = game_points(r.returns, r.seating.index(a), r.seating.index(b))
                points[0] += pa
                points[1] += pb
            played += len(block)
            bi += 1
        self._cursor[p.key] = (len(self._blocks), tuple(points), played)
        state = PairingState(p, done=True, played=played, points=points)
        if points[0] != points[1]:
            state.winner, state.decided_by = (a if points[0] > points[1] else b), "games"
            return state
        if not knockout:
            state.decided_by = "games"
            return state
        # Knockout: tie-break blocks until one block is won, then the higher seed.
        number = fmt.games
        tbp = [0.0, 0.0]
        # Who moves first (rules 2): each block starts with the engine that has moved first less
        # often in the match so far (the higher seed, A, on a tie), then alternates. Rules 1: every
        # block started with A, so with an odd tiebreak_games A moved first more often, in every
        # game with blocks of one.
        firsts = [0, 0]
        for g in range(1, fmt.games + 1):
            r = results.get((p.match_id, g))
            if r is not None:
                firsts[0 if r.seating[0] == a else 1] += 1
        for t in range(s.tiebreak_blocks):
            specs = []
            lead = 0 if s.rules < 2 or firsts[0] <= firsts[1] else 1
            for j in range(s.tiebreak_games):
                number += 1
                letter = "AB"[(lead + j) % 2]
                suffix = (f"tb{t + 1}pair{j // 2 + 1}" if s.duplicate and (j // 2) * 2 + 1 < s.tiebreak_games
                          else str(number))
                pair = -(-fmt.games // 2) + t * -(-s.tiebreak_games // 2) + j // 2
                specs.append(self._spec_for(p, number, letter, suffix, pair, tiebreak=True))
            missing = [g for g in specs if g.key not in results]
            if missing:
                left = (s.tiebreak_blocks - t - 1) * s.tiebreak_games
                return PairingState(p, ready=missing, played=played + len(specs) - len(missing),
                                    remaining_max=len(missing) + left, points=points, tiebreak_points=tbp)
            block = [0.0, 0.0]
            for g in specs:
                r = results[g.key]
                pa, pb = game_points(r.returns, r.seating.index(a), r.seating.index(b))
                block[0] += pa
                block[1] += pb
            tbp = [tbp[0] + block[0], tbp[1] + block[1]]
            played += len(specs)
            for g in specs:
                firsts[0 if g.seating[0] == a else 1] += 1
            if block[0] != block[1]:
                return PairingState(p, done=True, played=played, points=points, tiebreak_points=tbp,
                                    winner=a if block[0] > block[1] else b, decided_by="tiebreak")
        rank = seed_rank or {}
        winner = a if rank.get(a, a) <= rank.get(b, b) else b
        return PairingState(p, done=True, played=played, points=points, tiebreak_points=tbp, winner=winner,
                            decided_by="seed")

    # --- tables, teams, solo ------------------------------------------------------------------

    def _group_state(self, p: Pairing, results: Mapping) -> PairingState:
        s = self.spec
        specs = []
        k = len(p.engines)
        for g in range(s.games):
            seating = rotation(p.engines, g) if k > 1 else p.engines
            if p.kind == "table":
                suffix = f"block{g // k + 1}" if s.duplicate else str(g + 1)
                stream = unit = f"{p.match_id}|{suffix}"
            else:  # team and solo: the common suite, shared by every entrant
                cycle = f"c{p.round}|" if s.rounds > 1 else ""
                if p.kind == "team" and s.duplicate:
                    stream = f"{s.tid}|suite|{cycle}block{g // k + 1}"
                    unit = f"{p.match_id}|block{g // k + 1}"
                else:
                    stream = f"{s.tid}|suite|{cycle}{g + 1}"
                    unit = f"{p.match_id}|{g + 1}"
            specs.append(GameSpec(p.match_id, g + 1, seating, stream, unit, p.key, p.round,
                                  opening=self._opening(p, g // k, s.games)))
        missing = [g for g in specs if g.key not in results]
        return PairingState(p, ready=missing, done=not missing, played=len(specs) - len(missing),
                            remaining_max=len(missing))

    # --- swiss and knockout -------------------------------------------------------------------

    def _plan_rounds(self, results: Mapping) -> Plan:
        s = self.spec
        swiss = s.format == "swiss"
        total_rounds = s.rounds if swiss else knockout_rounds(s.n)
        per_match = self._max_match_games()
        seed_rank = {e: i for i, e in enumerate(self.engine_seed_order())}
        states_all: list[PairingState] = []
        for r in range(1, total_rounds + 1):
            pairings = self._swiss_round(r, states_all) if swiss else self._ko_round(r, states_all)
            states = [self._state(p, results, seed_rank) for p in pairings]
            states_all += states
            if not all(st.done for st in states):
                if swiss:
                    future = (total_rounds - r) * (s.n // 2) * per_match
                else:  # every match knocks one engine out: n - 1 in all, byes or not
                    planned = sum(1 for st in states_all if st.pairing.kind == "match")
                    future = (s.n - 1 - planned) * per_match
                return self._collect(states_all, total_rounds, r, future, finished_rounds=False)
        return self._collect(states_all, total_rounds, total_rounds, 0, finished_rounds=True)

    def _max_match_games(self) -> int:
        s = self.spec
        return s.match.games + (s.tiebreak_games * s.tiebreak_blocks if s.format == "knockout" else 0)

    def swiss_standings(self, states: list[PairingState]) -> list[SwissPlayer]:
        """Players with their match points, colours, opponents and byes, in standings order
        (match points, then Buchholz, then game points, then initial rank)."""
        s = self.spec
        players = {i: SwissPlayer(i) for i in range(s.n)}
        points_in_games = {i: 0.0 for i in range(s.n)}
        for st in states:
            p = st.pairing
            if p.kind == "bye":
                players[p.engines[0]].score += s.bye_points
                players[p.engines[0]].had_bye = True
                continue
            a, b = p.engines
            pa, pb = players[a], players[b]
            pa.opponents.add(b)
            pb.opponents.add(a)
            pa.colour_diff += 1
            pb.colour_diff -= 1
            pa.last_colour, pb.last_colour = "A", "B"
            if st.winner is None:
                pa.score += 0.5
                pb.score += 0.5
            else:
                players[st.winner].score += 1
            points_in_games[a] += st.points[0]
            points_in_games[b] += st.points[1]
        initial = {e: i for i, e in enumerate(self.engine_seed_order())}
        buchholz = {i: sum(players[o].score for o in players[i].opponents) for i in players}
        return sorted(players.values(), key=lambda p: (-p.score, -buchholz[p.index], -points_in_games[p.index],
                                                       initial[p.index]))

    def _swiss_round(self, r: int, earlier: list[PairingState]) -> list[Pairing]:
        if r in self._swiss:
            return self._swiss[r]
        ranked = self.swiss_standings(earlier)
        coin = seeded_order(2, self.spec.seed, "swiss-colour")[0]
        later = self.spec.rounds - r if self.spec.rules >= 2 else 0
        rnd = swiss_pairings(ranked, r, coin, later_rounds=later, halves=self.spec.rules >= 3)
        if rnd.relaxed:
            rules = "rules" if " and " in rnd.relaxed else "rule"
            self.notes.append(f"round {r}: the {rnd.relaxed} {rules} had to be relaxed to pair every engine")
        out = [Pairing(f"s{r}-{a}-{b}", r, (a, b), "match", self._mid(f"s{r}-{a}-{b}"), r - 1) for a, b in rnd.pairs]
        if rnd.bye is not None:
            out.append(Pairing(f"s{r}-bye-{rnd.bye}", r, (rnd.bye,), "bye", self._mid(f"s{r}-bye-{rnd.bye}")))
        self._swiss[r] = out
        return out

    def _ko_round(self, r: int, earlier: list[PairingState]) -> list[Pairing]:
        if r in self._ko:
            return self._ko[r]
        seeds = self.engine_seed_order()
        rank = {e: i for i, e in enumerate(seeds)}
        if r == 1:
            slots = [seeds[x] if x is not None else None for x in knockout_slots(self.spec.n)]
        else:
            slots = [st.winner for st in earlier if st.pairing.round == r - 1]
        out = []
        for j in range(0, len(slots), 2):
            x, y = slots[j], slots[j + 1]
            if x is None or y is None:
                e = x if y is None else y
                out.append(Pairing(f"k{r}-bye-{e}", r, (e,), "bye", self._mid(f"k{r}-bye-{e}")))
                continue
            a, b = (x, y) if rank[x] <= rank[y] else (y, x)  # the higher seed is A
            out.append(Pairing(f"k{r}-{a}-{b}", r, (a, b), "match", self._mid(f"k{r}-{a}-{b}"), r - 1))
        self._ko[r] = out
        return out
