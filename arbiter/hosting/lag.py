"""Network lag not charged to a remote engine's clock (SPEC.md, 'Remote engines'): the policy
and one session's account of it. A module of its own, without ZeroMQ, so that the command line
can show the policy's defaults without loading the remote hosting."""
from __future__ import annotations

import collections
from dataclasses import dataclass


@dataclass
class LagPolicy:
    """How much network lag is not charged to a remote engine's clock (SPEC.md, 'Remote engines').

    For each decision, lag = the referee's measured time − the engine's reported ``time_ms``,
    never counted above ``rtt_factor`` × the connection's ping round trip + ``rtt_slack_ms``;
    compensation = min(lag, ``move_ms``, what is left of ``quota_ms`` for the game)."""

    move_ms: int = 250
    quota_ms: int = 5000
    rtt_factor: float = 2.0
    rtt_slack_ms: int = 10


class LagAccount:
    """One remote session's lag bookkeeping for the current game."""

    def __init__(self, policy: LagPolicy):
        self.policy = policy
        self.quota_left = policy.quota_ms
        self.rtts: collections.deque = collections.deque(maxlen=8)

    def new_game(self) -> None:
        self.quota_left = self.policy.quota_ms

    def bound_ms(self) -> float:
        """The most lag one decision may have compensated now. The samples are read once: the hub's
        I/O thread adds one (an in-game ping's pong) whenever it comes."""
        rtts = sorted(self.rtts)
        half = len(rtts) // 2  # the median: of an even number, the mean of the middle two (not the upper)
        rtt = (rtts[half] if len(rtts) % 2 else (rtts[half - 1] + rtts[half]) / 2) if rtts else None
        bound = self.policy.move_ms if rtt is None else rtt * self.policy.rtt_factor + self.policy.rtt_slack_ms
        return max(0.0, min(bound, self.policy.move_ms, self.quota_left))

    def compensate(self, measured_ms: float, reported_ms: int | None) -> tuple[float, float]:
        """(lag, compensation) for one decision, in ms; spends the quota."""
        lag = max(0.0, measured_ms - (reported_ms if reported_ms is not None else measured_ms))
        comp = round(min(lag, self.bound_ms()), 3)
        self.quota_left -= comp
        return round(lag, 3), comp
