"""Time controls: the compact text form, and one seat's clock.

Time control syntax
-------------------
A *time* is seconds (``90``, ``2.5``), ``m:ss`` (``3:00``, ``1:30.5``) or a number with the unit
``s``, ``m`` or ``ms`` (``90s``, ``3m``, ``500ms``); resolution 1 ms. A *move* is any decision of
the seat (a move, a set-up, a target choice...). Case and surrounding spaces are ignored.

- ``T`` (``180``, ``3:00``, ``3m``): sudden death, ``T`` for the whole game.
- ``T+I`` (``180+2``): Fischer, ``T`` plus ``I`` added after each move completes.
- ``N/T`` and ``N/T+I`` (``40/60``, ``40/60+0.5``): moves in time, as in cutechess: ``N`` moves
  in ``T``; after every ``N``-th move another ``T`` is added; optional increment ``I``.
- ``st=T`` (``st=5``): fixed time per move; unused time is not carried over.
- ``T+PxB`` (``60+3x10``): byo-yomi, main time ``T`` then ``P`` periods of ``B`` (Japanese): a
  move finished within its period keeps it, a move overrunning a period uses it up, overrunning
  the last one loses. ``0+1x30`` is plain byo-yomi: 30 s for every move.
- ``inf``: unlimited.

Times must be more than 0, except increments and the byo-yomi main time; ``N`` and ``P`` >= 1.
"""
from __future__ import annotations

import math
import os
import re
from decimal import Decimal

import msgspec

from protocol.messages import TimeControl
from protocol.messages import TimeControlKind as Kind

DEFAULT_MARGIN_MS = 50
"""How far (ms) a decision may overrun its allowance before the flag falls, unless configured: the
referee measures from its own send to its own receive, so it forgives the transport's latency and
scheduling jitter (IPC round trips are well under a millisecond; a loaded machine adds tens)."""

_MAX_MS = 2**31 - 1
"""Largest time accepted (ms, about 24.8 days; ``inf`` is no limit): every time on the wire then
fits a signed 32-bit integer, which an engine in any language can hold."""

_NUMBER = r"(?:\d+(?:\.\d+)?|\.\d+)"
_SECONDS = re.compile(rf"({_NUMBER})(ms|s|m)?", re.ASCII)
_MIN_SEC = re.compile(r"(\d+):([0-5]\d(?:\.\d+)?)", re.ASCII)
_COUNT = re.compile(r"\d+", re.ASCII)
_TIME_EXPECTED = ("expected seconds ('90', '2.5'), m:ss ('3:00') "
                  "or a number with s, m or ms ('90s', '3m', '500ms')")
_FORMS = "expected one of 180, 3:00, 3m, 180+2, 40/60, 40/60+0.5, st=5, 60+3x10 or inf"
_UNIT_MS = {"ms": Decimal(1), "s": Decimal(1000), None: Decimal(1000), "m": Decimal(60000)}


def _bad(text: str, why: str) -> ValueError:
    return ValueError(f"bad time control {text!r}: {why}")


def _time_ms(part: str, text: str, what: str, *, zero_ok: bool = False) -> int:
    """Parse one time of ``text`` into whole milliseconds."""
    if m := _SECONDS.fullmatch(part):
        ms = Decimal(m[1]) * _UNIT_MS[m[2]]
    elif m := _MIN_SEC.fullmatch(part):
        ms = (Decimal(m[1]) * 60 + Decimal(m[2])) * 1000  # Decimal: int() refuses over 4300 digits
    else:
        raise _bad(text, f"{what} {part!r} is not a time; {_TIME_EXPECTED}")
    if ms != ms.to_integral_value():
        raise _bad(text, f"{what} {part!r} is finer than a millisecond")
    if ms == 0 and not zero_ok:
        raise _bad(text, f"{what} {part!r} must be more than 0")
    if ms > _MAX_MS:
        raise _bad(text, f"{what} {part!r} is too long (at most {_MAX_MS // 1000} s, about 24 days; "
                         f"'inf' is no limit)")
    return int(ms)


def _count(part: str, text: str, what: str) -> int:
    """Parse a whole number >= 1 (a moves count, a number of periods)."""
    if not _COUNT.fullmatch(part):
        raise _bad(text, f"{what} {part!r} is not a whole number")
    n = int(part) if len(part.lstrip("0")) <= 7 else 10**7  # int() refuses over 4300 digits
    if n < 1:
        raise _bad(text, f"{what} {part!r} must be at least 1")
    if n > 10**6:
        raise _bad(text, f"{what} {part!r} is too large (at most 1000000)")
    return n


def scale_time_control(tc: TimeControl, factor: float) -> TimeControl:
    """``tc`` with every time multiplied by ``factor`` (a cluster worker's speed), each still a
    time the wire carries: at least 1 ms where there was one, at most the largest accepted."""
    def scaled(ms: int) -> int:
        return 0 if ms == 0 else min(_MAX_MS, max(1, round(ms * factor)))

    return msgspec.structs.replace(tc, base_ms=scaled(tc.base_ms), increment_ms=scaled(tc.increment_ms),
                                   period_ms=scaled(tc.period_ms))


def parse_time_control(text: str) -> TimeControl:
    """Parse the compact form (see the module docstring); a bad one raises ``ValueError``."""
    if not isinstance(text, str):
        raise ValueError(f"bad time control {text!r}: expected a string")
    src = text.strip()
    s = src.lower()
    if not s:
        raise _bad(text, f"it is empty; {_FORMS}")
    if s == "inf":
        return TimeControl(text=src, kind=Kind.UNLIMITED)
    if s.startswith("st="):
        move_ms = _time_ms(s[3:], text, "move time")
        return TimeControl(text=src, kind=Kind.FIXED_PER_MOVE, period_ms=move_ms)
    if s.count("+") > 1:
        raise _bad(text, f"more than one '+'; {_FORMS}")
    main, plus, extra = s.partition("+")
    if plus and not extra:
        raise _bad(text, "nothing after '+'; "
                         "expected an increment ('2') or byo-yomi periods ('3x10')")
    if "/" in main:
        moves_part, _, base_part = main.partition("/")
        moves = _count(moves_part, text, "moves count")
        base_ms = _time_ms(base_part, text, "time per moves block")
        if "x" in extra:
            raise _bad(text, "byo-yomi periods cannot follow a moves count; "
                             "expected N/T or N/T+I (e.g. 40/60+0.5)")
        inc_ms = _time_ms(extra, text, "increment", zero_ok=True) if plus else 0
        return TimeControl(text=src, kind=Kind.MOVES_IN_TIME, base_ms=base_ms, increment_ms=inc_ms,
                           moves=moves)
    if "x" in extra:
        periods_part, _, period_part = extra.partition("x")
        base_ms = _time_ms(main, text, "main time", zero_ok=True)
        periods = _count(periods_part, text, "number of byo-yomi periods")
        period_ms = _time_ms(period_part, text, "byo-yomi period")
        return TimeControl(text=src, kind=Kind.BYO_YOMI, base_ms=base_ms, periods=periods,
                           period_ms=period_ms)
    base_ms = _time_ms(main, text, "main time")
    if not plus:
        return TimeControl(text=src, kind=Kind.SUDDEN_DEATH, base_ms=base_ms)
    inc_ms = _time_ms(extra, text, "increment", zero_ok=True)
    return TimeControl(text=src, kind=Kind.FISCHER, base_ms=base_ms, increment_ms=inc_ms)


class Clock:
    """One seat's clock: pure bookkeeping in float seconds.

    The clock never reads the time itself: the referee measures each decision (with
    ``time.monotonic``) and passes the elapsed seconds to ``charge``, so the same clock serves
    live games, replays and tests alike.

    A decision over its allowance by at most ``margin`` (transport latency the referee forgives)
    stands. Where the time is the game's (sudden death, Fischer, moves in time) the overrun is
    owed all the same: the clock shows 0, the next decisions get only what is left of the margin,
    and an increment or a refill pays it back first; so an empty clock is not ``margin`` more on
    every move. Where the time is each move's (a fixed time per move, byo-yomi periods) every
    decision has the whole margin and an overrun within it costs just the allowance. Beyond the
    margin the flag falls, and a fallen flag is final.
    """

    def __init__(self, tc: TimeControl) -> None:
        if tc.kind not in set(Kind):
            raise ValueError(f"unknown time control kind {tc.kind!r}; "
                             f"expected one of {', '.join(Kind)}")
        if tc.kind == Kind.MOVES_IN_TIME and tc.moves < 1:
            raise ValueError(f"moves-in-time control {tc.text!r} needs moves >= 1, not {tc.moves}")
        self.tc = tc
        self._base = tc.base_ms / 1000
        self._increment = tc.increment_ms / 1000
        self._period = tc.period_ms / 1000
        self._remaining = math.inf if tc.kind == Kind.UNLIMITED else self._base
        self._periods_left = tc.periods if tc.kind == Kind.BYO_YOMI else 0
        self._moves_made = 0
        self._flagged = False
        self._kind = Kind(tc.kind)
        """``tc.kind``, kept here: the referee reads its clocks several times per decision."""

    @property
    def remaining(self) -> float:
        """Main time left in seconds: byo-yomi periods excluded, ``inf`` when unlimited, and the
        (constant) move time for a fixed time per move."""
        if self.tc.kind == Kind.FIXED_PER_MOVE:
            return self._period
        return max(0.0, self._remaining)  # an overrun within the margin is owed, never shown

    @property
    def periods_left(self) -> int:
        """Byo-yomi periods not yet used up (0 for every other kind)."""
        return self._periods_left

    @property
    def moves_made(self) -> int:
        """Decisions charged so far (the one that flagged is not counted)."""
        return self._moves_made

    @property
    def flagged(self) -> bool:
        """True once a decision exceeded its allowance plus margin."""
        return self._flagged

    @property
    def moves_to_go(self) -> int | None:
        """For moves in time, the moves left before the next refill (``movestogo``); else None."""
        if self.tc.kind != Kind.MOVES_IN_TIME:
            return None
        return self.tc.moves - self._moves_made % self.tc.moves

    def allowance(self) -> float | None:
        """Seconds the next decision may take before the flag falls; None when unlimited.

        For byo-yomi that is the main time plus every period left: overrunning a period
        only uses it up, so the flag falls only past the last one.
        """
        kind = self._kind
        if kind is Kind.SUDDEN_DEATH or kind is Kind.FISCHER or kind is Kind.MOVES_IN_TIME:
            return 0.0 if self._flagged else max(0.0, self._remaining)  # the common kinds first
        if kind == Kind.UNLIMITED:
            return None
        if self._flagged:
            return 0.0
        if kind == Kind.FIXED_PER_MOVE:
            return self._period
        if kind == Kind.BYO_YOMI:
            return self._remaining + self._periods_left * self._period
        return self._remaining

    def limit(self, margin: float = 0.0) -> float | None:
        """Seconds the next decision may take before the flag falls, ``margin`` included: the
        allowance plus what the clock has not used of the margin yet; None when unlimited."""
        allowance = self.allowance()
        if allowance is None:
            return None
        kind = self._kind
        if kind is Kind.SUDDEN_DEATH or kind is Kind.FISCHER or kind is Kind.MOVES_IN_TIME:
            return allowance + margin + min(0.0, self._remaining)  # less what it owes
        return allowance + margin

    def charge(self, elapsed: float, margin: float = 0.0) -> bool:
        """Account a finished decision that took ``elapsed`` seconds.

        Returns False when the flag fell (``elapsed > allowance + margin``); otherwise the move
        stands and the increment, byo-yomi periods and moves-in-time refill are applied.
        """
        if not (elapsed >= 0 and margin >= 0):  # also false for NaN
            raise ValueError(f"elapsed ({elapsed}) and margin ({margin}) must be >= 0")
        if self._flagged:
            raise RuntimeError("the flag has already fallen on this clock")
        allowance = self.allowance()
        if allowance is None:
            self._moves_made += 1
            return True
        if elapsed > self.limit(margin):
            self._flagged = True
            self._remaining = 0.0
            self._periods_left = 0
            return False
        self._moves_made += 1
        kind = self._kind
        if kind is Kind.BYO_YOMI or kind is Kind.FIXED_PER_MOVE:
            elapsed = min(elapsed, allowance)  # the time is the move's: an overrun within the margin costs just that
        if kind is Kind.BYO_YOMI and elapsed > self._remaining:
            self._use_periods(elapsed - self._remaining)
            self._remaining = 0.0
        elif kind is not Kind.FIXED_PER_MOVE:  # a fixed move time is never carried over
            self._remaining -= elapsed  # below 0 (by at most the margin): owed, paid back by what is added
        if kind is Kind.FISCHER or kind is Kind.MOVES_IN_TIME:
            self._remaining += self._increment
        if kind is Kind.MOVES_IN_TIME and self._moves_made % self.tc.moves == 0:
            self._remaining += self._base
        return True

    def _use_periods(self, overrun: float) -> None:
        """Japanese byo-yomi: ``overrun`` seconds past the main time use up every period they
        fill completely; the period the decision finishes in is kept."""
        # The 1e-9 absorbs float error: an overrun of 10.000000000000002 s is within a 10 s period.
        used = math.ceil(overrun / self._period - 1e-9) - 1
        # elapsed <= allowance, so at most periods_left - 1 are used up (the last one is kept).
        self._periods_left -= min(max(used, 0), self._periods_left - 1)

    def remaining_ms(self) -> int:
        """``remaining`` in whole ms for the wire (rounded down; 0 when unlimited)."""
        remaining = self._period if self._kind is Kind.FIXED_PER_MOVE else self._remaining
        if remaining == math.inf:
            return 0
        return max(0, math.floor(remaining * 1000 + 1e-6))  # as _floor_ms; an overrun owed shows as 0

    def allowance_ms(self) -> int:
        """``allowance`` in whole ms for the wire, 0 meaning unlimited. Rounded down, but never
        below 1 ms for a limited clock, so an empty clock is not mistaken for an unlimited one."""
        allowance = self.allowance()
        if allowance is None:
            return 0
        return max(1, _floor_ms(allowance))

    def __repr__(self) -> str:
        return (f"Clock({self.tc.text!r}, remaining={self.remaining:.3f}, "
                f"periods_left={self._periods_left}, moves_made={self._moves_made}, "
                f"flagged={self._flagged})")


def _floor_ms(seconds: float) -> int:
    # The epsilon absorbs float error (1.001 * 1000 == 1000.9999999999999).
    return math.floor(seconds * 1000 + 1e-6)


# --- the referee's own stops --------------------------------------------------------------------

_pauses: list[tuple[float, float]] = []
"""(stopped, resumed) monotonic times of the referee's stops (Ctrl-Z, ``kill -STOP``), the latest
noted last. They can overlap (see ``_note_pause``); ``paused_between`` counts their union."""


def paused_between(start: float, end: float) -> float:
    """Seconds of ``start``..``end`` (monotonic) during which the referee itself was stopped (Ctrl-Z
    until ``fg``): time charged to no engine. An engine cannot cause it (it cannot signal the
    referee); before, a reply read after the operator's ``fg`` was charged the whole stop and
    the engine lost on time. Stops noted twice count once: never more than ``end - start``."""
    if not _pauses:
        return 0.0
    parts = sorted((max(start, stopped), min(end, resumed)) for stopped, resumed in _pauses
                   if resumed > start and stopped < end)
    total, reached = 0.0, start
    for begin, finish in parts:
        if finish > reached:
            total += finish - max(begin, reached)
            reached = finish
    return total


def _note_pause(stopped: float, resumed: float) -> None:
    """Note a stop. Stops can be noted inside one another: a handler runs again within itself
    when a background job's other thread, writing to the terminal, raises SIGTTOU again once the
    first stop is over, and a SIGCONT's guess may overlap a stop noted already. Summed twice, such
    a stop made a reply's time negative and ended the match with a ValueError; each is appended
    whole (one step, which a handler run meanwhile cannot undo) and ``paused_between`` counts
    their union."""
    if resumed > stopped:
        _pauses.append((stopped, resumed))
        del _pauses[:-64]  # decisions in progress span only the latest few


_alive_at: float | None = None
"""When the referee's main thread last showed it was running (monotonic): its wait for replies
notes it at every wake-up, at least every 50 ms (``note_alive``)."""
_stopping_itself = 0
"""How many ``_stop_here`` calls are under way (one can run within another): the stop and its
SIGCONT are noted there."""
NOT_RUNNING = 0.15
"""A gap (s) since the last sign of life longer than this, ended by SIGCONT, was a stop: the wait
wakes at least every 50 ms, so a running referee never leaves one this long (starved for that
long on a loaded machine, it saw no SIGCONT unless someone sent one)."""


_alive_before: float | None = None
"""The sign of life before ``_alive_at``."""


def note_alive(now: float) -> None:
    """The referee's main thread runs at ``now`` (monotonic): where a stop by ``kill -STOP`` began
    at the latest, should a SIGCONT come."""
    global _alive_at, _alive_before
    _alive_at, _alive_before = now, _alive_at


def _continued(signum, frame) -> None:
    """SIGCONT: the referee was stopped by a signal it cannot see (``kill -STOP``, a debugger, a
    freezer) and is continued. The stop began no earlier than the last sign of life; the time from
    then is charged to no one (before, the engine on move lost on time for it). A SIGCONT without a
    stop finds a recent sign of life, and nothing is noted; the stops the referee takes itself
    (Ctrl-Z) are noted by ``_stop_here``."""
    import time

    now = time.monotonic()
    if _stopping_itself or _alive_at is None:
        return
    if now - _alive_at > NOT_RUNNING:
        began, ended = _alive_at, now
    elif _alive_before is not None and _alive_at - _alive_before > NOT_RUNNING:
        began, ended = _alive_before, _alive_at  # this handler ran only after the first sign of life since
    else:
        return
    _note_pause(began, ended)  # overlapping a stop noted already: counted once


def _stop_here(signum, frame) -> None:
    """SIGTSTP (or SIGTTOU, SIGTTIN): note when, stop as the default action would (the shell sees a stopped job), and note
    when continued. Runs in the main thread, between the referee's steps (never inside a
    measurement's own arithmetic); every thread of the process stops and continues together."""
    import os
    import signal
    import time

    global _stopping_itself
    if signum != signal.SIGTSTP and _in_the_foreground():
        return  # the shell's fg came before this handler ran: the write or read goes through now
    stopped = time.monotonic()
    _stopping_itself += 1
    try:
        if signum == signal.SIGTSTP or not _stop_while_in_the_background():
            signal.signal(signum, signal.SIG_DFL)
            try:
                os.kill(os.getpid(), signum)  # returns once continued (SIGCONT: fg or bg)
            finally:
                signal.signal(signum, _stop_here)
    finally:
        _note_pause(stopped, time.monotonic())
        _stopping_itself -= 1


def _stop_while_in_the_background() -> bool:
    """Stop the referee as its write to the terminal would (SIGTTOU's default action), leaving to
    the kernel whether it is still in the background: a terminal-settings change under the default
    SIGTTOU stops a background job and nothing else, and goes on once it is continued in the
    foreground. Before, the handler stopped itself with ``kill`` after checking; another thread's
    write, retried at once, could stop the job between the two, and the ``kill`` then came after
    the shell's ``fg`` and SIGCONT: stopped in the foreground for good (2 runs in 16 of the
    background-job test). False without a controlling terminal (the signal was sent on purpose)."""
    import signal
    import termios

    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return False
    previous = signal.signal(signal.SIGTTOU, signal.SIG_DFL)
    try:
        termios.tcsetattr(fd, termios.TCSANOW, termios.tcgetattr(fd))  # the same settings: only the check matters
    except (OSError, termios.error):
        pass  # EIO: an orphaned group, which the kernel does not stop
    finally:
        signal.signal(signal.SIGTTOU, previous)
        os.close(fd)
    return True


def _in_the_foreground() -> bool:
    """Whether the process's group is its terminal's foreground group. A background job's write to
    the terminal raises SIGTTOU at once, but the handler runs later, in the main thread: if the
    operator's ``fg`` came between, stopping then would stop the job in the foreground, for good
    (nobody sends SIGCONT again: seen as a match that hung after ``fg`` on a loaded machine)."""
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:  # no controlling terminal (any more): the signal was sent on purpose
        return False
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(fd)


def pause_clocks_when_stopped() -> None:
    """Have Ctrl-Z (SIGTSTP) stop the referee without charging the stop to any engine (main thread
    only; a signal ignored already stays ignored). So too the stop of a background job that writes
    to (SIGTTOU, under ``stty tostop``) or reads from (SIGTTIN) its terminal until ``fg``: before,
    that stop was charged to the engine on move (a time forfeit at st=0.2 after a 1 s stop).
    ``kill -STOP`` cannot be seen, but the SIGCONT that ends it can: the stop is taken to have
    begun at the referee's last sign of life (``_continued``), and is charged to no one either."""
    import signal

    for name in ("SIGTSTP", "SIGTTOU", "SIGTTIN"):
        signum = getattr(signal, name, None)
        if signum is not None and signal.getsignal(signum) == signal.SIG_DFL:
            signal.signal(signum, _stop_here)
    if hasattr(signal, "SIGCONT") and signal.getsignal(signal.SIGCONT) == signal.SIG_DFL:
        signal.signal(signal.SIGCONT, _continued)  # the process continues all the same (the kernel's doing)
