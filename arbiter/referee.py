"""The referee loop: play one game between engines, enforcing rules and clocks, rolling the dice.

The referee owns every source of truth: the state (rules), the clocks (measured here with a
monotonic clock from sending a request to receiving its reply), and the dice. Engines only ever
answer requests. Any engine fault ends the game as a forfeit with a precise reason; the referee
itself never fails because of an engine.
"""
from __future__ import annotations

import array
import os
import time
import uuid
from typing import Callable, Iterator

from protocol.codec import clip, printable
from protocol.messages import EndReason, GameOver, Info, NewGame, Reply, Request, TimeControl

from . import raise_a_lost_stop
from .adjudication import Adjudication, Judge
from .clock import DEFAULT_MARGIN_MS, Clock, note_alive, paused_between
from .dice import Dice
from .games.base import CHANCE, IllegalMove, Game, State
from .hosting.session import EngineFault, ParticipantFault, Session, wait_any
from .records import Event, GameRecord, Opening

DEFAULT_MARGIN = DEFAULT_MARGIN_MS / 1000
"""Seconds an engine may overrun its allowance before it forfeits on time (IPC jitter)."""
UNLIMITED_STALL = 3600.0
"""Without a time limit, an engine silent this long (seconds) forfeits with reason ``stall``."""
SEQ_STEP_BITS = 20
"""A game's message numbers grow by a random step of 1 to 2**SEQ_STEP_BITS (``Referee._next_seq``)."""


def _random_steps() -> Iterator[int]:
    """512 steps for ``Referee._next_seq`` from the operating system's randomness, drawn at once (a
    draw per message cost ~3 us a decision)."""
    words = array.array("I", os.urandom(4 * 512))
    return iter([1 + (w >> (8 * words.itemsize - SEQ_STEP_BITS)) for w in words])

Deferred = Callable[[], bool]
"""Work a hook leaves for the referee to do while the engines think (see ``EventHook``): it
returns True when done, False to be called again at the next idle moment."""
EventHook = Callable[[GameRecord, State, Event, list[Clock]], Deferred | None]
"""Called for every event, in order, once the next requests are out (off the path between a reply
and the next request: its few microseconds cost more there, with caches cold after an engine's
search), or when the game ends; so the state it is given may be later than its event (the chance
events up to the next decision applied). It must be quick all the same; anything slower (the live
feed draws the board) it returns as ``Deferred`` work, which the referee runs next, and again at
each wake-up of its wait while the engines think, until done. The position does not change
meanwhile, so the deferred work sees the newest one; it is dropped when the game ends first."""


def cap_info(info: Info | None, limit: int) -> tuple[Info | None, bool]:
    """``info`` with ``pv`` and ``comment`` cut to ``limit`` characters each (so an engine cannot
    bloat the records), and whether anything was cut."""
    if info is None:
        return None, False
    cut = False
    if info.comment is not None and len(info.comment) > limit:
        info.comment, cut = info.comment[:limit], True
    if info.pv is not None:
        kept, used = [], 0
        for move in info.pv:
            used += len(move) + 1
            if used > limit:
                cut = True
                break
            kept.append(move)
        info.pv = kept
    return info, cut


class _Forfeit(Exception):
    """Seat ``seat`` loses with ``reason``; ``others``: further seats that forfeit with it (engines
    that could not start or begin the same game), each losing too: no seat wins by an opponent's
    fault while failing itself."""

    def __init__(self, seat: int, reason: EndReason, detail: str, others: tuple[int, ...] = ()):
        detail = printable(detail)  # it may quote the engine's move (a rule's message): shown on terminals
        super().__init__(f"seat {seat}: {reason}: {detail}")
        self.seat, self.reason, self.detail = seat, reason, detail
        self.seats = (seat, *others)

    @classmethod
    def of(cls, faults: dict[int, tuple[EndReason, str]], players: list[str]) -> "_Forfeit":
        """One forfeit for every seat in ``faults`` (seat -> reason, detail): the lowest seat's
        reason; the detail names each seat's own when there are several."""
        seats = sorted(faults)
        if len(seats) == 1:
            return cls(seats[0], *faults[seats[0]])
        detail = "; ".join(f"seat {s} ({players[s]}): {faults[s][0]}: {faults[s][1]}" for s in seats)
        return cls(seats[0], faults[seats[0]][0], detail, tuple(seats[1:]))


class Referee:
    """Plays one game between sessions (one per seat). Make one per game; ``play`` returns the
    finished record."""

    def __init__(self, game: Game, engines: list[Session | None], time_control: TimeControl, dice: Dice, *,
                 match_id: str, game_number: int, players: list[str] | None = None,
                 margin: float = DEFAULT_MARGIN, on_event: EventHook | None = None,
                 replace_engine: Callable[[int], Session | None] | None = None,
                 adjudication: Adjudication | None = None, opening: Opening | None = None):
        if len(engines) != game.num_seats:
            raise ValueError(f"{game.name} needs {game.num_seats} engines, got {len(engines)}")
        self.game = game
        self.engines = engines
        self.tc = time_control
        self.dice = dice
        self.margin = margin
        self.on_event = on_event
        self.replace_engine = replace_engine
        """Called with a seat whose engine failed its ``new_game``: a fresh session for that seat
        (the host replaces an engine it reused from an earlier game, once), or None to forfeit."""
        self.clocks = [Clock(time_control) for _ in engines]
        self.game_id = f"{match_id}.{game_number}.{uuid.uuid4().hex[:6]}"
        self.seq = 0
        self._steps: Iterator[int] = iter(())
        self.state = game.from_text(opening.position) if opening is not None else game.new_initial_state()
        self.seen_events = [0] * len(engines)
        self._dropped_before = {id(e): e.dropped for e in engines if e is not None}
        """Each engine's count of dropped messages before this game (a reused engine's earlier games'
        are not this game's; an engine replaced during the start counts from 0)."""
        self._unrested: list[int] = []
        """Seats that answered the last step and are not frozen yet (see ``_rest_earlier_deciders``)."""
        self._deferred: list[Deferred] = []
        """The hooks' work for the engines' thinking time (see ``EventHook``)."""
        self._unannounced: list[Event] = []
        """Events the hook has not been called for yet (see ``EventHook``)."""
        self.record = GameRecord(
            game_id=self.game_id, match_id=match_id, game_number=game_number, game=game.name,
            options=dict(game.options), players=players or [e.name for e in engines],
            seat_roles=list(game.seat_roles), time_control=time_control.text, margin_ms=int(margin * 1000),
            started_at=time.time(), dice_stream=dice.stream, dice_commitment=dice.commitment)
        if opening is not None:
            self.record.opening = opening
        if any(getattr(e, "insecure", False) for e in engines):
            self.record.insecure = True
        if any(options := [getattr(e, "options", None) or {} for e in engines]):
            self.record.engine_options = options
        self.judge = Judge(adjudication, game) if adjudication else None
        """Ends the game early by the event's adjudication rules (checked after each decision step)."""
        if adjudication:
            self.record.adjudication = adjudication

    def _next_seq(self) -> int:
        """The number of this game's next message: larger than the last by a random step of 1 to
        2^20 (protocol/SPEC.md), so no engine can know a request's number before it has the request:
        a set-up sent with ``ready``, once for each number the request could have, was taken as
        the answer, charged 0 ms. (A nonce, not a decision of the game: not recorded.)"""
        step = next(self._steps, None)
        if step is None:
            self._steps = _random_steps()
            step = next(self._steps)
        self.seq += step
        return self.seq

    # --- the game ---------------------------------------------------------------------------

    def forfeit_unstarted(self, failures: list[tuple[int, EngineFault]]) -> GameRecord:
        """The record of a game lost before it began because the engines of these seats could
        not be started or refused the handshake (each of them loses: see ``_Forfeit``)."""
        faults = {seat: (fault.reason, fault.detail) if isinstance(fault, ParticipantFault)
                  else (EndReason.NOT_STARTED, f"{fault.reason}: {fault.detail}") for seat, fault in failures}
        return self._finish(_Forfeit.of(faults, self.record.players))

    def play(self) -> GameRecord:
        try:
            self._start_engines()
            while not self.state.is_terminal():
                raise_a_lost_stop()
                if self.state.current_player() == CHANCE:
                    self._roll()
                else:
                    self._decide(self.state.acting_seats())
                    if self.judge and (verdict := self.judge.see(self.record.events, self.state)):
                        return self._finish(None, verdict)
        except _Forfeit as f:
            return self._finish(f)
        return self._finish(None)

    def _finish(self, forfeit: _Forfeit | None, verdict: tuple[list[float], str] | None = None) -> GameRecord:
        self._announce_events()
        if verdict is not None:
            self.record.returns, self.record.detail = verdict
            self.record.reason = EndReason.ADJUDICATED
        elif forfeit is None:
            self.record.returns = list(self.state.returns())
            self.record.reason = EndReason.NORMAL
            self.record.detail = self.state.end_detail()
        else:
            self.record.returns = self.game.forfeits_returns(forfeit.seats)
            self.record.reason, self.record.detail = forfeit.reason, forfeit.detail
            self.record.forfeit_seat = forfeit.seat
            if len(forfeit.seats) > 1:
                self.record.forfeit_seats = list(forfeit.seats)
        self.record.ended_at = time.time()
        self.record.final_position = self.state.to_text()
        self.record.rolls = list(self.dice.rolls)
        self.record.dice_seed = self.dice.seed.hex()
        self.record.dropped_messages = sum(e.dropped - self._dropped_before.get(id(e), 0)
                                           for e in self.engines if e is not None)
        self._unrested, self._deferred = [], []
        for engine in self.engines:  # between games too an engine that may not ponder must be idle
            if engine is not None:
                engine.rest(watch=True)
        self._announce_result()
        return self.record

    def _start_engines(self) -> None:
        """Tell every seat at once, then wait for each ``ready``; a seat that fails gets one fresh
        engine where the host allows (``replace_engine``), else forfeits (the lowest such seat)."""
        names = self.record.players
        messages = []
        for seat, engine in enumerate(self.engines):
            info = self.game.game_info() if engine.hello and engine.hello.wants_game_info else None
            messages.append(NewGame(game_id=self.game_id, seq=self._next_seq(), game=self.game.name,
                                    options=self.record.options, seat=seat, seats=names,
                                    seat_roles=self.record.seat_roles, time_control=self.tc,
                                    dice_commitment=self.dice.commitment, match_id=self.record.match_id,
                                    game_number=self.record.game_number, dice_stream=self.dice.stream,
                                    game_info=info, engine_options=getattr(engine, "options", {})))
        faults: dict[int, EngineFault] = {}
        for seat, engine in enumerate(self.engines):
            try:
                engine.start_game(messages[seat])
            except EngineFault as fault:
                faults[seat] = fault
        for seat, engine in enumerate(self.engines):
            if seat not in faults:
                try:
                    engine.new_game(messages[seat])
                except EngineFault as fault:
                    faults[seat] = fault
        lost: dict[int, tuple[EndReason, str]] = {}
        for seat, fault in sorted(faults.items()):
            fresh = self.replace_engine(seat) if self.replace_engine else None
            if fresh is None:
                lost[seat] = (fault.reason, fault.detail)
                continue
            self.engines[seat] = fresh  # new_game doubles as the check that a reused engine still works
            try:
                fresh.new_game(messages[seat])
            except EngineFault as again:
                lost[seat] = (again.reason, again.detail)
        if lost:
            raise _Forfeit.of(lost, names)

    def _roll(self) -> None:
        outcomes = self.state.chance_outcomes()
        index = self.dice.roll(len(outcomes))
        outcome = outcomes[index]
        self.state.apply_chance(outcome)
        self._add(Event(ply=len(self.record.events), seat=-1, kind="chance", move=str(outcome),
                        roll=len(self.dice.rolls) - 1))

    def _request_for(self, seat: int) -> Request:
        state, hello, events, clocks = self.state, self.engines[seat].hello, self.record.events, self.clocks
        legal = state.legal_moves(seat) if hello and hello.wants_legal_moves else None
        data = state.observation_data(seat) if hello and hello.wants_state else None
        last = [e.move for e in events[self.seen_events[seat]:] if e.seat >= 0]
        self.seen_events[seat] = ply = len(events)
        return Request(game_id=self.game_id, seq=self._next_seq(), kind=state.decision_kind(seat), seat=seat,
                       position=state.observation(seat), state=data, ply=ply,
                       clocks_ms=[c.remaining_ms() for c in clocks],
                       time_left_ms=clocks[seat].allowance_ms(), legal_moves=legal, last_moves=last)

    def _decide(self, seats: list[int]) -> None:
        """Ask every acting seat at once, wait for all answers, then apply them."""
        sent: dict[int, float] = {}
        requests: dict[int, Request] = {}
        for seat in seats:
            requests[seat] = request = self._request_for(seat)
            try:
                sent[seat] = self.engines[seat].ask(request)
            except EngineFault as fault:
                raise _Forfeit(seat, fault.reason, fault.detail) from None
        busy_since = time.monotonic() if self._unrested or self._deferred or self._unannounced else None
        self._announce_events()
        self._rest_earlier_deciders(keep=seats)
        self.dice.prefetch()  # while the engines think: the next roll is then quick
        self._run_deferred()
        replies = self._collect(sent, busy_since)
        self._unrested = list(seats)
        moves: dict[int, str] = {}
        lags: dict[int, tuple[float, float]] = {}
        faults: dict[int, tuple[EndReason, str]] = {}
        for seat in seats:
            reply, elapsed = replies[seat]
            kind = requests[seat].kind
            try:
                self.state.check_move(reply.move, seat)
            except IllegalMove as exc:
                faults[seat] = (EndReason.ILLEGAL_MOVE, clip(f"{kind} {reply.move!r}: {exc}"))
                continue
            allowed_ms = requests[seat].time_left_ms  # the clock's allowance, unchanged since the request
            lag = getattr(self.engines[seat], "lag", None)  # a remote engine: network lag not charged
            if lag is not None:
                lags[seat] = lag.compensate(elapsed * 1000, reply.info.time_ms if reply.info else None)
                elapsed = max(0.0, elapsed - lags[seat][1] / 1000)
            margin = self._margin_left(seat) if allowed_ms and elapsed * 1000 > allowed_ms else ""  # before the charge
            if not self.clocks[seat].charge(elapsed, self.margin):  # the watchdog's twin, for races
                faults[seat] = (EndReason.TIME, f"took {elapsed * 1000:.0f} ms; allowed {allowed_ms} ms + {margin}")
                continue
            moves[seat] = reply.move
        if faults:  # every seat at fault forfeits (a simultaneous decision): none wins while failing itself
            raise _Forfeit.of(faults, self.record.players)
        if len(seats) == 1:
            self.state.apply(moves[seats[0]])
        else:
            self.state.apply_joint(moves)
        for seat in seats:
            reply, elapsed = replies[seat]
            engine = self.engines[seat]
            info, truncated = cap_info(reply.info, engine.limits.info_chars)
            self._add(Event(ply=len(self.record.events), seat=seat, kind=requests[seat].kind, move=reply.move,
                            measured_ms=round(elapsed * 1000, 3),
                            reported_ms=info.time_ms if info else None,
                            clock_ms=self.clocks[seat].remaining_ms(), info=info, info_truncated=truncated,
                            offturn_cpu_ms=engine.offturn_cpu_ms,
                            lag_ms=lags[seat][0] if seat in lags else None,
                            compensated_ms=lags[seat][1] if seat in lags else None))

    def _margin_left(self, seat: int) -> str:
        """The margin the seat's decision has, for a forfeit's detail: all of it, unless its clock
        owes an earlier overrun."""
        clock = self.clocks[seat]
        limit = clock.limit(self.margin)
        if limit is None or limit - clock.allowance() >= self.margin - 1e-9:
            return f"{self.margin * 1000:.0f} ms margin"
        return f"{(limit - clock.allowance()) * 1000:.0f} ms left of the {self.margin * 1000:.0f} ms margin"

    def _run_deferred(self) -> None:
        if self._deferred:
            self._deferred = [work for work in self._deferred if not work()]

    def _rest_earlier_deciders(self, keep: list[int] = ()) -> None:
        """Rest the engines that answered the previous step, except those asked again (see
        ``Session.rest``). Done only once the next requests are out, so freezing is off the path
        between a reply and the next request (the engine runs a few microseconds longer)."""
        for seat in self._unrested:
            if seat not in keep:
                self.engines[seat].rest(watch=True)
        self._unrested = []

    def _collect(self, sent: dict[int, float], busy_since: float | None = None) -> dict[int, tuple[Reply, float]]:
        """Wait for every seat's reply; forfeit the first seat that overruns or misbehaves.
        ``busy_since``: the referee was busy with other work (freezing, deferred work) from then
        until now; a reply found waiting at the first look is taken to have come then (never
        charge the referee's own time to an engine). So is one found after the referee read other
        seats' messages (a simultaneous decision); but a reply behind other messages of its own
        seat is dated when it is reached (an engine's junk costs its own clock, never another's)."""
        deadlines, lag_said = {}, {}
        for seat, t0 in sent.items():
            limit = self.clocks[seat].limit(self.margin)  # allowance + margin, less what the clock owes
            slack = self.engines[seat].slack() if hasattr(self.engines[seat], "slack") else 0.0  # lag allowance
            deadlines[seat] = t0 + (UNLIMITED_STALL if limit is None else limit + slack)
            lag_said[seat] = f" + {slack * 1000:.0f} ms for network lag" if slack else ""  # the wait, all of it said
        replies: dict[int, tuple[Reply, float]] = {}
        waiting = sorted(sent)
        behind: dict[int, float] = {}
        """Seats whose messages were read without their reply among them -> when that reading ended:
        their reply came behind them, so it is not dated earlier (their own messages cost them)."""
        while waiting:
            engines = [self.engines[s] for s in waiting]
            ready: set[int] = set()
            if busy_since is not None:  # first a look: were replies there already while we were busy?
                ready, arrived, busy_since = wait_any(engines, 0), busy_since, None
            now = time.monotonic()
            note_alive(now)  # a kill -STOP from here on is charged to no one (clock._continued)
            late: dict[int, tuple[EndReason, str]] = {}
            for i, seat in enumerate(waiting):  # judge: what waits now counts from when it can have come
                came = max(self._arrival(seat, arrived), behind.get(seat, arrived)) if i in ready else now
                if came - paused_between(sent[seat], came) >= deadlines[seat]:  # the referee's own stops are no one's
                    reason = EndReason.STALL if self.clocks[seat].allowance() is None else EndReason.TIME
                    late[seat] = (reason, f"no reply within {(deadlines[seat] - sent[seat]) * 1000:.0f} "
                                          f"ms (allowance + {self._margin_left(seat)}{lag_said[seat]})"
                                          f"{self.engines[seat].stray_note()}")  # a reply with a wrong seq, say
            if late:  # every seat out of time forfeits: none wins by another's fault while failing itself
                raise _Forfeit.of(late, self.record.players)
            if not ready:  # then wait (a reply from now on is timed when it comes)
                due = min([deadlines[s] + paused_between(sent[s], now) for s in waiting])
                timeout_ms = max(0, min(50, int((due - now) * 1000) + 1))
                ready = wait_any(engines, timeout_ms)
                arrived = time.monotonic()  # the replies were there; reading them and freezing is the referee's time
                note_alive(arrived)
                if not ready and timeout_ms:  # a long think: are the others idle, as they should be?
                    for other, engine in enumerate(self.engines):
                        if other not in waiting and engine is not None:  # seats that answered included
                            engine.watch()
                    if self._deferred:  # a reply that comes meanwhile is taken to have come now
                        idle_since = time.monotonic()
                        self._run_deferred()
                        busy_since = idle_since
                        continue
            for i, seat in enumerate(list(waiting)):
                engine = engines[i]
                try:
                    if i in ready:
                        reply = engine.poll_reply()
                        if reply is not None:  # there at the wake-up, unless found behind others of its messages
                            came = arrived if engine.read_at is None else engine.read_at
                            came = max(came, behind.get(seat, came))
                            replies[seat] = (reply, came - sent[seat] - paused_between(sent[seat], came))
                            waiting.remove(seat)
                            if waiting:  # a simultaneous decision: it rests while the others think
                                engine.rest(watch=True)
                        else:
                            behind[seat] = time.monotonic()
                    elif not ready:
                        engine.check_alive()
                except EngineFault as fault:
                    raise _Forfeit(seat, fault.reason, fault.detail) from None
            if ready and waiting:  # reading took the referee's time: a reply that came meanwhile is dated to the wake-up
                busy_since = arrived
        return replies

    def _arrival(self, seat: int, woke: float) -> float:
        """When what waits from ``seat`` came: when the referee woke to it, or, for a remote engine,
        when the hub stamped it, if earlier (the referee's thread may have been busy elsewhere)."""
        arrival = getattr(self.engines[seat], "arrival", None)
        stamp = arrival() if arrival is not None else None
        return woke if stamp is None else min(woke, stamp)

    def _add(self, event: Event) -> None:
        note = self.state.event_note()
        if note:
            event.note = note
        self.record.events.append(event)
        if self.on_event is not None:
            self._unannounced.append(event)

    def _announce_events(self) -> None:
        """The hook for each event since the last call (see ``EventHook``)."""
        if self._unannounced:
            events, self._unannounced = self._unannounced, []
            for event in events:
                work = self.on_event(self.record, self.state, event, self.clocks)
                if work is not None and work not in self._deferred:
                    self._deferred.append(work)

    def _announce_result(self) -> None:
        for engine in self.engines:
            if engine is not None:  # a dead engine cannot be told; the record says why
                engine.tell(GameOver(game_id=self.game_id, seq=self._next_seq(), returns=self.record.returns,
                                     reason=self.record.reason, detail=self.record.detail,
                                     dice_seed=self.record.dice_seed))
