"""The statistics of the arbiter and of tournament reports, chosen once: match points, rates
with honest intervals, means with intervals, and paired comparisons of two engines on common
seeds. ``arbiter solo``/``coop`` and a tournament report use these functions, so the same data
gives the same numbers everywhere. (Rating models — Bradley–Terry, OpenSkill, SPRT — live with
the tournaments, the only place that fits them.)

Why these methods:

- **Proportions (win rates): the Wilson score interval.** It stays inside [0, 1] and keeps its
  coverage near 0 % and 100 % and for small n, where the normal ("Wald") interval collapses to a
  point or spills past the bounds. With no successes the lower end is exactly 0, with all
  successes the upper end exactly 1.
- **Means (scores, returns, per-seed differences): Student's t interval** with n - 1 degrees of
  freedom, not the normal z. Suites, team pairings and seats often hold 5-30 games; there the
  standard error is itself uncertain and z under-covers (n = 5: a nominal 95 % z interval covers
  about 88 %). For large n the two agree. With fewer than two values the interval is undefined
  (nan); with no spread at all it is the point itself.
- **Paired comparison: the exact two-sided sign test on the discordant seeds.** Two engines that
  played the same seeds (same dice) are compared seed by seed, which cancels the luck of the dice.
  A seed is discordant when one engine did better than the other on it; ties carry no information
  about who is better and are dropped; under "equally strong" each discordant seed goes either way
  with probability ½, so the count is Binomial(discordant, ½). When results are win/loss, the
  discordant seeds are exactly those that only one engine won, and this test *is* the exact
  McNemar test (McNemar's exact test is the binomial sign test on the discordant pairs). It needs
  no distributional assumption about scores; the size of the difference is reported beside it as
  the mean per-seed difference with its t interval, and the win-rate difference (a win is a result
  above a threshold) with the t interval of the per-seed difference of win indicators, cut to
  [-1, 1] where it reaches past (a difference of two rates cannot).
- **Match points**: 1 for a win, ½ for a draw, 0 for a loss, from the two seats' returns; a game
  both seats lost (a double forfeit: neither engine could start) gives 0 to each and is left out
  of ratings and SPRTs (``contested``), which assume that one side's points are the other's loss.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence


def game_points(returns: Sequence[float], seat_a: int, seat_b: int) -> tuple[float, float]:
    """Points of the players in ``seat_a`` and ``seat_b`` in one game: 1 win, ½ draw, 0 loss (0
    each when both lost: a double forfeit)."""
    ra, rb = returns[seat_a], returns[seat_b]
    if ra == rb:
        return (0.5, 0.5) if contested(returns) else (0.0, 0.0)
    return (1.0, 0.0) if ra > rb else (0.0, 1.0)


def contested(returns: Sequence[float]) -> bool:
    """False for a game every seat lost alike (a double forfeit: engines on every side could not
    start it; a table where both alliances had one): it says nothing about who is stronger, so
    ratings, SPRTs and head-to-head tests leave it out, and nobody draws it. (In play some seat
    always does better, or all draw at 0; teammates losing together are contested.)"""
    return len(returns) < 2 or not max(returns) == min(returns) < 0


def forfeiting_seats(forfeit_seat: int | None, forfeit_seats: Sequence[int] | None) -> list[int]:
    """Every seat that forfeited a game, from its record's ``forfeit_seat`` (the lowest) and
    ``forfeit_seats`` (all of them, when several did): the returns cannot tell (a table where both
    alliances forfeited, a cooperative pair both of whose engines failed), so each is counted."""
    return list(forfeit_seats) if forfeit_seats else [] if forfeit_seat is None else [forfeit_seat]


MIN_INTERVAL_GAMES = 5
"""Fewer games than this get no interval (shown '-', null in JSON): a t interval from two or three
scores, or from a few equal ones (width 0), says more than the games do."""


def wilson_interval(successes: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion (a draw may count as half a success); (0, 1) when n is 0."""
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence}")
    if n == 0:
        return 0.0, 1.0
    from scipy import stats as _stats  # here: importing scipy costs ~0.3 s that match play never needs

    z = _stats.norm.ppf(0.5 + confidence / 2)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, float(centre - half))
    high = 1.0 if successes == n else min(1.0, float(centre + half))
    return low, high


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    """Mean and its standard error (sample standard deviation / sqrt(n)); se is nan for n < 2 and
    exactly 0 when every value is the same (no rounding noise from the mean)."""
    n = len(values)
    if n == 0:
        raise ValueError("mean of no values")
    if all(v == values[0] for v in values):
        return float(values[0]), (0.0 if n > 1 else float("nan"))
    mean = sum(values) / n
    if n < 2:
        return mean, float("nan")
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var / n)


def mean_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean with a Student-t confidence interval: (mean, low, high); low/high nan for n < 2."""
    mean, se = mean_se(values)
    if math.isnan(se):
        return mean, float("nan"), float("nan")
    from scipy import stats as _stats

    t = _stats.t.ppf(0.5 + confidence / 2, len(values) - 1)
    return mean, float(mean - t * se), float(mean + t * se)


def sign_test(a_better: int, b_better: int) -> float:
    """Exact two-sided sign test (= exact McNemar) p-value of the discordant counts; 1.0 with none."""
    from scipy import stats as _stats

    n = a_better + b_better
    return float(_stats.binomtest(a_better, n, 0.5).pvalue) if n else 1.0


@dataclass(frozen=True)
class PairedComparison:
    """Two engines on their common seeds."""

    n: int
    """Common seeds."""
    a_better: int
    """Seeds where a's result was higher than b's (the discordant seeds are a_better + b_better)."""
    ties: int
    b_better: int
    p_value: float
    """Exact two-sided sign test on the discordant seeds (the exact McNemar test for win/loss)."""
    mean_diff: float
    """Mean of result(a) - result(b) per seed, with its t interval (ci_low, ci_high)."""
    ci_low: float
    ci_high: float
    both: int
    """Seeds both won ('win': a result above the threshold); a_only, b_only, neither likewise."""
    a_only: int
    b_only: int
    neither: int
    rate_diff: float
    """Win rate of a minus win rate of b on the common seeds, with its t interval on the per-seed
    difference of win indicators (rate_low, rate_high), cut to [-1, 1]."""
    rate_low: float
    rate_high: float

    @property
    def discordant(self) -> int:
        return self.a_better + self.b_better


def paired_comparison(a: Mapping[object, float], b: Mapping[object, float], *, threshold: float = 0.0,
                      confidence: float = 0.95) -> PairedComparison:
    """Compare results keyed by seed on the seeds both have (others are ignored)."""
    common = sorted(set(a) & set(b), key=str)
    if not common:
        raise ValueError("the two result sets have no seed in common")
    diffs = [a[s] - b[s] for s in common]
    a_better, b_better = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    won_a = [a[s] > threshold for s in common]
    won_b = [b[s] > threshold for s in common]
    pairs = list(zip(won_a, won_b))
    wins = [float(wa) - float(wb) for wa, wb in pairs]
    rate, rate_low, rate_high = mean_ci(wins, confidence)
    # A difference of win rates lies in [-1, 1]: an end of the t interval past it is cut there
    # (the true difference is never beyond, so the coverage stays). nan (one seed) stays nan.
    rate_low, rate_high = (rate_low, rate_high) if math.isnan(rate_low) else (max(-1.0, rate_low),
                                                                              min(1.0, rate_high))
    return PairedComparison(len(common), a_better, len(common) - a_better - b_better, b_better,
                            sign_test(a_better, b_better), *mean_ci(diffs, confidence),
                            pairs.count((True, True)), pairs.count((True, False)), pairs.count((False, True)),
                            pairs.count((False, False)), rate, rate_low, rate_high)


def paired_rows(scores: Mapping[str, Mapping[object, float]]) -> list[dict]:
    """Every pair of engines (A before B in ``scores``' order) compared on the seeds both have
    played, A − B: what a solo event's report and its web page show. NaN where nothing is paired
    yet (no common seed), and interval bounds NaN below ``MIN_INTERVAL_GAMES`` common seeds (as
    for every other interval of a report)."""
    names, rows = list(scores), []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            row = {"A": a, "B": b, "seeds": 0, "mean_diff": math.nan, "lo": math.nan, "hi": math.nan,
                   "A_better": 0, "ties": 0, "B_better": 0, "p_value": 1.0}
            if set(scores[a]) & set(scores[b]):
                c = paired_comparison(scores[a], scores[b])
                interval = c.n >= MIN_INTERVAL_GAMES
                row.update(seeds=c.n, mean_diff=c.mean_diff, lo=c.ci_low if interval else math.nan,
                           hi=c.ci_high if interval else math.nan, A_better=c.a_better,
                           ties=c.ties, B_better=c.b_better, p_value=c.p_value)
            rows.append(row)
    return rows
