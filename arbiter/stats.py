"""Small statistics for solo and cooperative evaluation: rates with honest intervals, and paired
comparisons of two engines on common seeds.

Why these: a win rate from n games needs an interval that behaves near 0 % and 100 % (Wilson,
not the normal approximation); two engines that played the *same* seeds (same dice) are best
compared pair by pair, which cancels the luck of the dice: an exact sign test (McNemar) on the
seeds where exactly one of them won, and a t interval on the per-seed difference of results.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from scipy import stats as _stats


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion; (0.0, 1.0) when n is 0."""
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence}")
    if n == 0:
        return 0.0, 1.0
    z = _stats.norm.ppf(0.5 + confidence / 2)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, float(centre - half))
    high = 1.0 if successes == n else min(1.0, float(centre + half))
    return low, high


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    """Mean and its standard error (sample standard deviation / sqrt(n)); se is nan for n < 2."""
    n = len(values)
    if n == 0:
        raise ValueError("mean of no values")
    mean = sum(values) / n
    if n < 2:
        return mean, float("nan")
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var / n)


def mean_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean with a Student-t confidence interval: (mean, low, high)."""
    mean, se = mean_se(values)
    if math.isnan(se):
        return mean, float("nan"), float("nan")
    t = _stats.t.ppf(0.5 + confidence / 2, len(values) - 1)
    return mean, mean - t * se, mean + t * se


@dataclass(frozen=True)
class PairedComparison:
    """Two engines on their common seeds. 'Win' means a result above ``threshold``."""

    n: int
    """Common seeds."""
    both: int
    a_only: int
    b_only: int
    neither: int
    p_value: float
    """Exact two-sided sign test (McNemar) on the discordant seeds; 1.0 when there are none."""
    mean_diff: float
    """Mean of result(a) - result(b) per seed, with its t interval (ci_low, ci_high)."""
    ci_low: float
    ci_high: float
    rate_diff: float
    """Win rate of a minus win rate of b on the common seeds, with its t interval on the per-seed
    difference of win indicators (rate_low, rate_high)."""
    rate_low: float
    rate_high: float

    @property
    def discordant(self) -> int:
        return self.a_only + self.b_only


def paired_comparison(a: Mapping[object, float], b: Mapping[object, float], *, threshold: float = 0.0,
                      confidence: float = 0.95) -> PairedComparison:
    """Compare results keyed by seed on the seeds both have (others are ignored)."""
    common = sorted(set(a) & set(b), key=str)
    if not common:
        raise ValueError("the two result sets have no seed in common")
    both = a_only = b_only = neither = 0
    diffs = []
    for seed in common:
        wa, wb = a[seed] > threshold, b[seed] > threshold
        both += wa and wb
        a_only += wa and not wb
        b_only += wb and not wa
        neither += not wa and not wb
        diffs.append(a[seed] - b[seed])
    discordant = a_only + b_only
    p = _stats.binomtest(a_only, discordant, 0.5).pvalue if discordant else 1.0
    wins = [float(a[s] > threshold) - float(b[s] > threshold) for s in common]
    return PairedComparison(len(common), both, a_only, b_only, neither, float(p),
                            *_mean_interval(diffs, confidence), *_mean_interval(wins, confidence))


def _mean_interval(values: list[float], confidence: float) -> tuple[float, float, float]:
    if all(v == values[0] for v in values):  # no spread: the interval is the point
        return values[0], values[0], values[0]
    return mean_ci(values, confidence)
