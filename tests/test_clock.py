"""Time-control parsing and the per-seat clock bookkeeping of every kind."""
from __future__ import annotations

import math
from fractions import Fraction

import msgspec
import pytest

from arbiter.clock import Clock, parse_time_control
from protocol.messages import TimeControl

# --- parsing ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    # sudden death, every way of writing a time
    ("180", dict(kind="sudden_death", base_ms=180_000)),
    ("3:00", dict(kind="sudden_death", base_ms=180_000)),
    ("3m", dict(kind="sudden_death", base_ms=180_000)),
    ("180s", dict(kind="sudden_death", base_ms=180_000)),
    ("2.5", dict(kind="sudden_death", base_ms=2_500)),
    (".5", dict(kind="sudden_death", base_ms=500)),
    ("1:30.5", dict(kind="sudden_death", base_ms=90_500)),
    ("90:00", dict(kind="sudden_death", base_ms=5_400_000)),
    ("1.5m", dict(kind="sudden_death", base_ms=90_000)),
    ("500ms", dict(kind="sudden_death", base_ms=500)),
    ("0.001", dict(kind="sudden_death", base_ms=1)),
    # Fischer
    ("180+2", dict(kind="fischer", base_ms=180_000, increment_ms=2_000)),
    ("3:00+2", dict(kind="fischer", base_ms=180_000, increment_ms=2_000)),
    ("3m+500ms", dict(kind="fischer", base_ms=180_000, increment_ms=500)),
    ("60+0", dict(kind="fischer", base_ms=60_000, increment_ms=0)),
    # moves in time
    ("40/60", dict(kind="moves_in_time", moves=40, base_ms=60_000)),
    ("40/60+0.5", dict(kind="moves_in_time", moves=40, base_ms=60_000, increment_ms=500)),
    ("40/1:00", dict(kind="moves_in_time", moves=40, base_ms=60_000)),
    ("1/10s", dict(kind="moves_in_time", moves=1, base_ms=10_000)),
    # fixed per move
    ("st=5", dict(kind="fixed_per_move", period_ms=5_000)),
    ("st=0.25", dict(kind="fixed_per_move", period_ms=250)),
    ("st=100ms", dict(kind="fixed_per_move", period_ms=100)),
    # byo-yomi
    ("60+3x10", dict(kind="byo_yomi", base_ms=60_000, periods=3, period_ms=10_000)),
    ("0+1x30", dict(kind="byo_yomi", base_ms=0, periods=1, period_ms=30_000)),
    ("10m+5x30s", dict(kind="byo_yomi", base_ms=600_000, periods=5, period_ms=30_000)),
    # unlimited
    ("inf", dict(kind="unlimited")),
    ("INF", dict(kind="unlimited")),
    ("ST=5", dict(kind="fixed_per_move", period_ms=5_000)),
    ("3M+2S", dict(kind="fischer", base_ms=180_000, increment_ms=2_000)),
])
def test_parse_forms(text, expected):
    tc = parse_time_control(text)
    want = dict(base_ms=0, increment_ms=0, moves=0, periods=0, period_ms=0) | expected
    assert isinstance(tc, TimeControl)
    assert tc.text == text
    assert {k: getattr(tc, k) for k in want} == want


def test_parse_strips_surrounding_whitespace_and_keeps_text():
    tc = parse_time_control("  40/60+0.5 \n")
    assert tc.text == "40/60+0.5"
    assert tc.kind == "moves_in_time"


def test_parsed_time_control_round_trips_on_the_wire():
    tc = parse_time_control("60+3x10")
    assert msgspec.msgpack.decode(msgspec.msgpack.encode(tc), type=TimeControl) == tc


@pytest.mark.parametrize("text, message", [
    ("", "it is empty"),
    ("   ", "it is empty"),
    ("abc", "main time 'abc' is not a time"),
    ("-5", "main time '-5' is not a time"),
    ("1e3", "main time '1e3' is not a time"),
    ("3:75", "main time '3:75' is not a time"),
    ("3:5", "main time '3:5' is not a time"),
    ("1:00:00", "main time '1:00:00' is not a time"),
    ("3h", "main time '3h' is not a time"),
    ("5.", "main time '5.' is not a time"),
    ("3 m", "main time '3 m' is not a time"),
    ("0", "main time '0' must be more than 0"),
    ("0:00", "main time '0:00' must be more than 0"),
    ("0.0001", "main time '0.0001' is finer than a millisecond"),
    ("1.5ms", "main time '1.5ms' is finer than a millisecond"),
    ("99999999999999999999", "main time '99999999999999999999' is too long"),
    ("180+", "nothing after '+'"),
    ("180+2+3", "more than one '+'"),
    ("180+-2", "increment '-2' is not a time"),
    ("180+abc", "increment 'abc' is not a time"),
    ("0+2", "main time '0' must be more than 0"),
    ("+2", "main time '' is not a time"),
    ("0/60", "moves count '0' must be at least 1"),
    ("-1/60", "moves count '-1' is not a whole number"),
    ("40.5/60", "moves count '40.5' is not a whole number"),
    ("/60", "moves count '' is not a whole number"),
    ("40/", "time per moves block '' is not a time"),
    ("40/0", "time per moves block '0' must be more than 0"),
    ("40/60/2", "time per moves block '60/2' is not a time"),
    ("40/60+x", "byo-yomi periods cannot follow a moves count"),
    ("40/60+3x10", "byo-yomi periods cannot follow a moves count"),
    ("st=0", "move time '0' must be more than 0"),
    ("st=", "move time '' is not a time"),
    ("st=-1", "move time '-1' is not a time"),
    ("st=5+1", "move time '5+1' is not a time"),
    ("60+0x10", "number of byo-yomi periods '0' must be at least 1"),
    ("60+x10", "number of byo-yomi periods '' is not a whole number"),
    ("60+1.5x10", "number of byo-yomi periods '1.5' is not a whole number"),
    ("60+3x0", "byo-yomi period '0' must be more than 0"),
    ("60+3x", "byo-yomi period '' is not a time"),
    ("60+3x10x2", "byo-yomi period '10x2' is not a time"),
    ("-1+3x10", "main time '-1' is not a time"),
    ("infinite", "main time 'infinite' is not a time"),
])
def test_parse_rejects_with_a_precise_message(text, message):
    with pytest.raises(ValueError) as info:
        parse_time_control(text)
    text_msg = str(info.value)
    assert text_msg.startswith(f"bad time control {text!r}: ")
    assert message in text_msg


@pytest.mark.parametrize("text, message", [
    ("1" * 5000 + "/60", "moves count '111"),
    ("60+" + "1" * 5000 + "x10", "number of byo-yomi periods '111"),
    ("1" * 5000 + ":00", "main time '111"),
])
def test_parse_rejects_thousands_of_digits_naming_the_part(text, message):
    """Python refuses to convert an int of more than 4300 digits: the message still names the part."""
    with pytest.raises(ValueError) as info:
        parse_time_control(text)
    assert str(info.value).startswith(f"bad time control '{text[:10]}") and message in str(info.value)
    assert "too large" in str(info.value) or "too long" in str(info.value), str(info.value)[-200:]


def test_parse_error_says_what_was_expected():
    with pytest.raises(ValueError, match=r"expected seconds .*m:ss .*s, m or ms"):
        parse_time_control("3h")
    with pytest.raises(ValueError, match=r"expected one of 180, .*st=5, 60\+3x10 or inf"):
        parse_time_control("")


def test_parse_rejects_non_strings():
    with pytest.raises(ValueError, match="expected a string"):
        parse_time_control(180)  # type: ignore[arg-type]


# --- bookkeeping -----------------------------------------------------------------------------


def clock(text: str) -> Clock:
    return Clock(parse_time_control(text))


def test_sudden_death():
    c = clock("10")
    assert c.allowance() == 10.0 and c.remaining == 10.0 and c.moves_made == 0
    assert c.charge(3.0)
    assert c.remaining == pytest.approx(7.0)
    assert c.allowance() == pytest.approx(7.0)
    assert c.moves_made == 1 and c.periods_left == 0 and c.moves_to_go is None
    assert c.charge(7.0)  # exactly the allowance: still in time
    assert c.remaining == 0.0 and not c.flagged


def test_sudden_death_flag_falls():
    c = clock("10")
    assert not c.charge(10.001)
    assert c.flagged and c.remaining == 0.0 and c.moves_made == 0
    assert c.allowance() == 0.0


def test_fischer_increment_after_each_move():
    c = clock("10+2")
    assert c.allowance() == 10.0  # no increment before the first move
    assert c.charge(3.0)
    assert c.remaining == pytest.approx(9.0)
    assert c.charge(0.0)
    assert c.remaining == pytest.approx(11.0)  # time accumulates


def test_fischer_increment_cannot_save_a_flag():
    c = clock("10+2")
    assert not c.charge(11.0)  # the increment comes only after a move completed in time
    assert c.flagged and c.remaining == 0.0


def test_fischer_margin_then_increment():
    c = clock("10+2")
    assert c.charge(10.05, margin=0.1)
    assert c.remaining == pytest.approx(1.95)  # the overrun is owed: the increment pays it back
    assert c.limit(0.1) == pytest.approx(2.05)  # and the margin is whole again


def test_an_empty_clock_forgives_the_margin_once():
    """An overrun within the margin stands, but it is owed: the next decisions get what is left of
    the margin, not the whole margin every move (an empty sudden-death clock would never flag)."""
    c = clock("10")
    assert c.charge(10.03, margin=0.05)
    assert c.remaining == 0.0 and c.remaining_ms() == 0 and c.allowance() == 0.0 and c.allowance_ms() == 1
    assert c.limit(0.05) == pytest.approx(0.02)
    assert c.charge(0.015, margin=0.05)
    assert c.limit(0.05) == pytest.approx(0.005)
    assert not c.charge(0.01, margin=0.05)
    assert c.flagged


@pytest.mark.parametrize("text", ["st=5", "0+1x5"])
def test_a_time_per_move_has_the_whole_margin_every_move(text):
    c = clock(text)
    for _ in range(10):
        assert c.charge(5.04, margin=0.05)
        assert c.limit(0.05) == pytest.approx(5.05)


def test_moves_in_time_refill_after_every_nth_move():
    c = clock("3/10")
    assert c.moves_to_go == 3
    assert c.charge(2.0) and c.charge(2.0)
    assert c.remaining == pytest.approx(6.0) and c.moves_to_go == 1
    assert c.charge(5.0)  # the 3rd move: 1 s left, then 10 s more
    assert c.remaining == pytest.approx(11.0) and c.moves_to_go == 3
    for _ in range(2):
        assert c.charge(1.0)
    assert c.remaining == pytest.approx(9.0)
    assert c.charge(1.0)  # the 6th move: refill again
    assert c.remaining == pytest.approx(18.0)
    assert c.moves_made == 6


def test_moves_in_time_forty_moves():
    c = clock("40/60")
    for _ in range(39):
        assert c.charge(1.5)
    assert c.remaining == pytest.approx(1.5)
    assert c.allowance() == pytest.approx(1.5)  # no refill before the 40th move completes
    assert c.charge(1.5)
    assert c.remaining == pytest.approx(60.0)


def test_moves_in_time_flag_before_refill():
    c = clock("2/10")
    assert c.charge(9.0)
    assert not c.charge(1.5)  # the refill after move 2 comes too late
    assert c.flagged


def test_moves_in_time_with_increment():
    c = clock("2/10+0.5")
    assert c.charge(1.0)
    assert c.remaining == pytest.approx(9.5)
    assert c.charge(1.0)
    assert c.remaining == pytest.approx(19.0)  # 8.5 + 0.5 increment + 10 refill


def test_fixed_per_move_does_not_carry_over():
    c = clock("st=5")
    assert c.allowance() == 5.0 and c.remaining == 5.0
    assert c.charge(0.1)
    assert c.allowance() == 5.0  # 4.9 s unused is lost
    assert c.charge(5.0)
    assert c.allowance() == 5.0
    assert not c.charge(5.2)
    assert c.flagged and c.moves_made == 2


def test_fixed_per_move_margin():
    c = clock("st=5")
    assert c.charge(5.2, margin=0.5)
    assert c.allowance() == 5.0


def test_byo_yomi_main_time_then_periods():
    c = clock("60+3x10")
    assert c.allowance() == pytest.approx(90.0)  # main + every period
    assert c.charge(50.0)
    assert c.remaining == pytest.approx(10.0) and c.periods_left == 3
    assert c.charge(15.0)  # 10 s of main time, then 5 s into the first period: kept
    assert c.remaining == 0.0 and c.periods_left == 3
    assert c.allowance() == pytest.approx(30.0)


def test_byo_yomi_period_kept_within_and_at_its_end():
    c = clock("0+3x10")
    for elapsed in (9.9, 10.0, 0.0):
        assert c.charge(elapsed)
        assert c.periods_left == 3


def test_byo_yomi_overrun_uses_up_periods():
    c = clock("0+3x10")
    assert c.charge(10.5)  # overran the first period: used up, finished in the second
    assert c.periods_left == 2
    assert c.allowance() == pytest.approx(20.0)
    assert c.charge(15.0)
    assert c.periods_left == 1
    assert c.charge(10.0)
    assert c.periods_left == 1


def test_byo_yomi_several_periods_in_one_decision():
    c = clock("5+5x10")
    assert c.charge(5.0 + 35.0)  # main time, periods 1-3 overrun, finished in period 4
    assert c.remaining == 0.0 and c.periods_left == 2


def test_byo_yomi_flag_when_last_period_overrun():
    c = clock("0+2x10")
    assert c.charge(15.0)
    assert c.periods_left == 1
    assert not c.charge(10.01)
    assert c.flagged and c.periods_left == 0


def test_byo_yomi_flag_across_all_periods_at_once():
    assert not clock("60+3x10").charge(90.01)
    assert clock("60+3x10").charge(90.0)


def test_byo_yomi_margin_keeps_the_last_period():
    c = clock("0+2x10")
    assert c.charge(20.05, margin=0.1)  # forgiven: as if it ended exactly at the allowance
    assert c.periods_left == 1 and c.moves_made == 1
    assert c.allowance() == pytest.approx(10.0)


def test_byo_yomi_float_boundary_stays_in_the_period():
    c = clock("0.3+1x10")
    assert c.charge(10.3)  # 10.3 - 0.3 == 10.000000000000002 in floats
    assert c.periods_left == 1


def test_plain_byo_yomi():
    c = clock("0+1x30")
    for _ in range(100):
        assert c.charge(29.9)
    assert c.periods_left == 1 and c.remaining == 0.0
    assert not c.charge(30.5)


def test_margin_within_goes_to_exactly_zero():
    c = clock("10")
    assert c.charge(10.2, margin=0.25)
    assert c.remaining == 0.0 and not c.flagged and c.moves_made == 1
    assert c.allowance() == 0.0


def test_margin_exceeded_flags():
    c = clock("10")
    assert not c.charge(10.3, margin=0.25)
    assert c.flagged


def test_margin_not_charged_when_in_time():
    c = clock("10")
    assert c.charge(4.0, margin=1.0)
    assert c.remaining == pytest.approx(6.0)


def test_unlimited():
    c = clock("inf")
    assert c.allowance() is None and c.allowance_ms() == 0
    assert math.isinf(c.remaining) and c.remaining_ms() == 0
    assert c.charge(1e9)
    assert c.moves_made == 1 and not c.flagged


def test_a_fallen_flag_is_final():
    c = clock("1")
    assert not c.charge(2.0)
    with pytest.raises(RuntimeError, match="already fallen"):
        c.charge(0.0)


@pytest.mark.parametrize("elapsed, margin", [(-0.1, 0.0), (1.0, -0.1), (math.nan, 0.0)])
def test_charge_rejects_bad_arguments(elapsed, margin):
    with pytest.raises(ValueError):
        clock("10").charge(elapsed, margin)


def test_rejects_unknown_kind_and_bad_moves_count():
    with pytest.raises(ValueError, match="unknown time control kind 'hourglass'"):
        Clock(TimeControl(text="?", kind="hourglass"))
    with pytest.raises(ValueError, match="moves >= 1"):
        Clock(TimeControl(text="0/60", kind="moves_in_time", base_ms=60_000))


# --- wire conveniences -----------------------------------------------------------------------


def test_ms_conveniences():
    c = clock("1:30.5+3x10")
    assert c.remaining_ms() == 90_500
    assert c.allowance_ms() == 120_500
    assert clock("st=5").remaining_ms() == 5000 and clock("st=5").allowance_ms() == 5000


def test_ms_rounds_down_without_float_noise():
    c = clock("2")
    assert c.charge(0.999)
    assert c.remaining_ms() == 1001  # 1.001 * 1000 == 1000.9999999999999
    assert c.charge(0.0005)
    assert c.remaining_ms() == 1000  # 1.0005 s: round down, never report time not there


def test_allowance_ms_of_an_empty_limited_clock_is_not_unlimited():
    c = clock("10")
    assert c.charge(10.1, margin=0.5)
    assert c.remaining_ms() == 0
    assert c.allowance_ms() == 1


def byo_yomi_model(main: Fraction, periods: int, period: Fraction, decisions: list[Fraction]):
    """Japanese byo-yomi written out in exact arithmetic, independently of ``Clock``: after each
    decision, (allowance, periods left) or None once the flag fell. A decision that ends exactly
    at the end of a period finishes *in* that period and keeps it."""
    out = []
    for elapsed in decisions:
        allowance = main + periods * period
        if elapsed > allowance:
            out.append(None)
            break
        if elapsed > main:
            overrun = elapsed - main
            finishing_in = -(-overrun // period)  # ceil: the period (1-based) the decision ends in
            periods -= finishing_in - 1
            main = Fraction(0)
        else:
            main -= elapsed
        out.append((main + periods * period, periods))
    return out


@pytest.mark.parametrize("tc, decisions", [
    ("0+3x10", ["10", "20", "10", "10"]),        # exactly one, then two periods
    ("0+3x10", ["30"]),                            # exactly the whole allowance at once
    ("0+3x10", ["20", "20", "10"]),               # ends exactly at the last period's end, twice
    ("0+3x10", ["20", "20", "10.001"]),            # ... and a hair past it
    ("60+3x10", ["60", "10", "70"]),               # main time used exactly, then a boundary
    ("60+3x10", ["50", "30", "20", "20.25"]),      # main time left over, then boundaries
    ("5+5x10", ["45", "20", "20", "10"]),
    ("1.5+2x0.25", ["1.75", "0.25", "0.5"]),       # binary fractions: exact in floats too
    ("0+1x30", ["30", "30", "30.5"]),
])
def test_byo_yomi_allowance_at_period_boundaries(tc, decisions):
    c = clock(tc)
    t = c.tc
    model = byo_yomi_model(Fraction(t.base_ms, 1000), t.periods, Fraction(t.period_ms, 1000),
                           [Fraction(d) for d in decisions])
    for elapsed, want in zip(decisions, model):
        ok = c.charge(float(elapsed))
        if want is None:
            assert not ok and c.flagged
            break
        allowance, periods = want
        assert ok, (elapsed, c)
        assert (c.allowance(), c.periods_left) == (float(allowance), periods), (elapsed, c)
        assert c.allowance_ms() == int(allowance * 1000)


def test_byo_yomi_allowance_is_what_the_referee_waits_for():
    """The allowance sent to the engine is the whole time it may take: a decision of exactly that
    length stands, and keeps the last period."""
    c = clock("2+3x10")
    assert c.allowance() == 32.0 and c.allowance_ms() == 32_000
    assert c.charge(32.0)
    assert (c.remaining, c.periods_left, c.allowance()) == (0.0, 1, 10.0)
    assert c.charge(10.0) and c.periods_left == 1
    assert not c.charge(10.0 + 1e-6)


def test_a_scaled_time_control_keeps_every_time_positive_and_on_the_wire():
    """A cluster worker's time control is scaled by its speed (0.25-4x): before, a 1 ms time
    per move became 0 ms, and a time near the largest one the wire carries went past it."""
    from arbiter.clock import scale_time_control

    assert scale_time_control(parse_time_control("st=0.001"), 0.25).period_ms == 1
    assert scale_time_control(parse_time_control("0+3x0.001"), 0.25).period_ms == 1
    assert scale_time_control(parse_time_control("0+3x0.001"), 0.25).base_ms == 0  # none stays none
    huge = scale_time_control(parse_time_control("2000000+1000000"), 4)
    assert (huge.base_ms, huge.increment_ms) == (2**31 - 1, 2**31 - 1)
    assert scale_time_control(parse_time_control("60+1"), 2) == \
        msgspec.structs.replace(parse_time_control("60+1"), base_ms=120_000, increment_ms=2_000)


def test_stops_noted_inside_one_another_are_counted_once(monkeypatch):
    """A background job's writer thread raises SIGTTOU again once the first stop is over, and the
    handler runs within itself: the inner stop was noted, then the outer one around it, and the
    time between summed both. A reply's time came out negative (-0.8 s) and the match ended with
    a ValueError from the clock."""
    from arbiter import clock

    monkeypatch.setattr(clock, "_pauses", [])
    clock._note_pause(11.0, 12.0)  # the inner stop, noted first
    clock._note_pause(10.0, 13.0)  # the outer one, noted when its handler ends
    assert clock.paused_between(9.0, 14.0) == 3.0 and clock.paused_between(10.5, 11.5) == 1.0
    clock._note_pause(12.5, 13.5)  # a SIGCONT's guess overlapping the end of it
    clock._note_pause(20.0, 21.0)
    clock._note_pause(15.0, 15.0)  # nothing
    assert len(clock._pauses) == 4
    for start, end in ((9.0, 25.0), (12.0, 20.5), (10.2, 10.4), (13.2, 13.4), (16.0, 17.0)):
        assert 0 <= clock.paused_between(start, end) <= end - start
    assert clock.paused_between(9.0, 25.0) == 4.5 and clock.paused_between(12.0, 20.5) == 2.0
    assert clock.paused_between(16.0, 17.0) == 0.0 and clock.paused_between(10.2, 10.4) == pytest.approx(0.2)
    for i in range(100):  # only the latest stops are kept
        clock._note_pause(30.0 + 2 * i, 31.0 + 2 * i)
    assert len(clock._pauses) == 64 and clock._pauses[-1] == (228.0, 229.0)
