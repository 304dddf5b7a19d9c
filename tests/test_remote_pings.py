"""Pings during a game feed the fair-lag estimate: a remote engine not on move (another seat
thinks) is pinged now and then with the game's id; the round trip joins the link's RTT samples,
so the lag bound follows a link that slows down mid-game. Real hub, real engines, a real delay
proxy on 127.0.0.1."""
from __future__ import annotations

import subprocess
import threading

import pytest

from arbiter.clock import parse_time_control
from arbiter.formats.match import Series
from arbiter.games import load_game
from arbiter.hosting import EngineConfig
from arbiter.hosting import remote as remote_module
from test_remote import PY, ROOT, STEADY, DelayProxy, hub_for, keys, remote, stop  # noqa: F401  (fixture)

PACED = ROOT / "tests" / "engines" / "paced.py"


LONG_GAME = bytes([7]) + bytes(31)  # dice (and so both engines' moves) for a game of 15 decisions by alice


def slowed_game(tmp_path, keys, seed: bytes = LONG_GAME):
    """alice (thinks until 5 ms before her allowance) at st=0.3 against a local engine taking
    100 ms a move; 1.5 s into the game her link goes from 0 to 40 ms each way. A margin of 1 s:
    nobody loses on time, the records show what was compensated. The dice are fixed and both
    engines' moves follow from them, so the game is long enough whatever the machine's speed."""
    folder, roster = keys
    hub = hub_for(folder, roster)
    proxy = DelayProxy(int(hub.endpoint.rsplit(":", 1)[1]), 0.0)
    engine = subprocess.Popen([PY, str(STEADY), "--connect", f"tcp://127.0.0.1:{proxy.port}", "--server-key",
                               str(folder / "referee.pub"), "--key", str(folder / "alice.key")],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    series = Series(load_game("einstein"), [remote(hub, "alice"),
                                            EngineConfig(f"{PY} {PACED} --think 100", name="local", cwd=str(ROOT))],
                    parse_time_control("st=0.3"), run_dir=tmp_path, margin=1.0, seed=seed,
                    match_id="pings")
    slow = threading.Timer(1.5, lambda: setattr(proxy, "delay", 0.040))
    try:
        slow.start()
        record = series.play_game(1, [0, 1])
        return record, series.engines[0]
    finally:
        slow.cancel()
        series.close()
        stop(engine)
        proxy.close()
        hub.close()


def slowed_decisions(decisions: list) -> list:
    """alice's decisions from the first one made wholly over the slowed link (2 x 40 ms: at least
    70 ms of lag) on; when the slow-down lands in the game depends on the machine's speed."""
    first = next((i for i, e in enumerate(decisions) if e.lag_ms >= 70), len(decisions))
    return decisions[first:]


@pytest.mark.serial
def test_in_game_pings_let_the_lag_bound_follow_a_link_that_slows_down(tmp_path, keys):
    record, alice = slowed_game(tmp_path, keys)
    decisions = [e for e in record.events if e.seat == 0]
    seen = [(round(e.measured_ms), e.reported_ms, e.lag_ms, e.compensated_ms) for e in decisions]
    assert record.reason == "normal" and len(decisions) >= 8, (record.detail, seen)
    assert alice.game_pings >= 2, alice.game_pings
    assert max(alice.lag.rtts) >= 70, list(alice.lag.rtts)  # the slowed link's 2 x 40 ms, measured in game
    assert decisions[0].compensated_ms <= 30, seen  # at first the link is fast: little to compensate
    slowed = slowed_decisions(decisions)
    assert len(slowed) >= 2, seen
    assert all(e.compensated_ms >= 60 for e in slowed[-2:]), seen  # then it follows
    assert record.dropped_messages == 0  # the pongs are not stale answers


@pytest.mark.serial
def test_without_in_game_pings_the_bound_stays_where_the_handshake_left_it(tmp_path, keys, monkeypatch):
    monkeypatch.setattr(remote_module, "GAME_PING_EVERY", float("inf"))
    record, alice = slowed_game(tmp_path, keys)
    decisions = [e for e in record.events if e.seat == 0]
    seen = [(round(e.measured_ms), e.reported_ms, e.lag_ms, e.compensated_ms) for e in decisions]
    assert alice.game_pings == 0
    slowed = slowed_decisions(decisions)
    assert len(slowed) >= 2, seen
    rtts = sorted(alice.lag.rtts)  # the handshake's ping(s) only
    half = len(rtts) // 2
    bound = 2 * (rtts[half] if len(rtts) % 2 else (rtts[half - 1] + rtts[half]) / 2) + 10
    assert all(e.compensated_ms <= bound + 0.01 for e in slowed), (bound, seen)  # did not follow
    assert all(e.compensated_ms <= e.lag_ms - 10 for e in slowed), (bound, seen)  # the link's lag
