"""Head-to-head sequential tests: the generalized SPRT (GSPRT) exactly as fishtest computes it
(``arbiter match --sprt``, a tournament's ``[sprt]``, the reports).

Results are a trinomial ``[L, D, W]`` (games) or a pentanomial ``[LL, LD+DL, LW+DD+WL, DW+WD, WW]``
(pairs of games with seats swapped, or duplicate-dice pairs). The bounds ``elo0 < elo1`` are
*logistic* Elo (the ordinary Elo scale, score = 1 / (1 + 10^(-elo/400))): with them this code
reproduces fishtest's reference values, LLR(-3, 1, [10789, 19328, 33806, 19402, 10543]) = 2.131
and LLR(-3, 1, [6077, 26894, 5975]) = 0.375 (normalized Elo bounds give 0.301 and -0.820, so
the reference values are logistic).

The GSPRT replaces the unknown result distribution under each hypothesis by its maximum
likelihood estimate given the hypothesis' expected score s: p_i = p̂_i / (1 + x (a_i - s)), the
Lagrange multiplier x solving sum p̂_i (a_i - s) / (1 + x (a_i - s)) = 0; then
LLR = N * sum p̂_i log(p1_i / p0_i). Empty categories count as 1e-3, as in fishtest.
"""
from __future__ import annotations

import math

from .stats import MIN_INTERVAL_GAMES

EPS = 1e-3


def logistic_score(elo: float) -> float:
    return 1 / (1 + 10 ** (-elo / 400))


def logistic_elo(score: float) -> float:
    score = min(max(score, 1e-12), 1 - 1e-12)
    return -400 * math.log10(1 / score - 1) + 0.0  # + 0.0: an even score is 0.0, not -0.0 (shown "-0.0")


def results_to_pdf(results: list[float]) -> tuple[float, list[tuple[float, float]]]:
    """(N, [(score a_i, frequency p̂_i)]), scores 0 .. 1 evenly spaced."""
    counts = [max(EPS, float(r)) for r in results]
    n = sum(counts)
    k = len(counts)
    return n, [(i / (k - 1), c / n) for i, c in enumerate(counts)]


def stats(pdf: list[tuple[float, float]]) -> tuple[float, float]:
    mu = sum(a * p for a, p in pdf)
    return mu, sum(p * (a - mu) ** 2 for a, p in pdf)


def _secular(pdf: list[tuple[float, float]]) -> float:
    """The x with sum p_i d_i / (1 + x d_i) = 0, d_i = ``pdf`` values (some < 0 < some)."""
    lo = -1 / max(d for d, _ in pdf)
    hi = -1 / min(d for d, _ in pdf)
    for _ in range(200):
        x = (lo + hi) / 2
        v = sum(p * d / (1 + x * d) for d, p in pdf)
        if v > 0:
            lo = x
        else:
            hi = x
        if hi - lo < 1e-15:
            break
    return (lo + hi) / 2


def mle_expected(pdf: list[tuple[float, float]], s: float) -> list[tuple[float, float]]:
    """The distribution closest (maximum likelihood) to ``pdf`` with expected score ``s``."""
    x = _secular([(a - s, p) for a, p in pdf])
    return [(a, p / (1 + x * (a - s))) for a, p in pdf]


def llr_logistic(elo0: float, elo1: float, results: list[float]) -> float:
    """fishtest's GSPRT log-likelihood ratio of elo1 against elo0 (logistic Elo)."""
    if len(results) not in (3, 5):
        raise ValueError("results must be [L, D, W] or a pentanomial of five counts")
    n, pdf = results_to_pdf(results)
    s0, s1 = logistic_score(elo0), logistic_score(elo1)
    if pdf_degenerate(pdf, s0, s1):
        return 0.0
    p0, p1 = mle_expected(pdf, s0), mle_expected(pdf, s1)
    return n * sum(p * math.log(q1 / q0) for (_, p), (_, q0), (_, q1) in zip(pdf, p0, p1))


def pdf_degenerate(pdf, s0: float, s1: float) -> bool:
    scores = [a for a, _ in pdf]
    return not (min(scores) < min(s0, s1) and max(scores) > max(s0, s1))


def bounds(alpha: float, beta: float) -> tuple[float, float]:
    """(lower, upper) LLR bounds: accept H0 below, H1 above."""
    return math.log(beta / (1 - alpha)), math.log((1 - beta) / alpha)


def sprt(results: list[float], elo0: float, elo1: float, alpha: float = 0.05, beta: float = 0.05) -> dict:
    lower, upper = bounds(alpha, beta)
    llr = llr_logistic(elo0, elo1, results) if sum(results) > 0 else 0.0
    state = "H1 accepted" if llr >= upper else "H0 accepted" if llr <= lower else "continue"
    return {"llr": llr, "lower": lower, "upper": upper, "state": state, "elo0": elo0, "elo1": elo1,
            "results": list(results), **elo_estimate(results)}


def elo_estimate(results: list[float]) -> dict:
    """Logistic Elo of the mean score with a 95% interval: score ± 1.96 sqrt(var / N), var the
    per-unit variance of the score and N the units (games; pairs for a pentanomial, whose unit
    score is the pair's mean), each end mapped to Elo (an end past a score of 0 or 1: -∞ or +∞,
    unbounded). Nothing (nan) without a unit. No interval (nan) below ``MIN_INTERVAL_GAMES``
    units, as for every interval of the reports, nor when every unit had the same result: the
    variance is then 0 and the interval would be the point itself (one game won: "+∞ [+∞, +∞]")."""
    total = sum(results)
    if total <= 0:
        return {"elo": math.nan, "elo_lo": math.nan, "elo_hi": math.nan, "score": math.nan}
    k = len(results)
    pdf = [(i / (k - 1), r / total) for i, r in enumerate(results)]
    mu, var = stats(pdf)

    def elo(score: float) -> float:
        return -math.inf if score <= 0 else math.inf if score >= 1 else logistic_elo(score)

    if total < MIN_INTERVAL_GAMES or sum(1 for r in results if r > 0) < 2:
        return {"score": mu, "elo": elo(mu), "elo_lo": math.nan, "elo_hi": math.nan}
    half = 1.959964 * math.sqrt(var / total)
    return {"score": mu, "elo": elo(mu), "elo_lo": elo(mu - half), "elo_hi": elo(mu + half)}


def trinomial(points: list[float]) -> list[int]:
    """[L, D, W] from game points (0, ½, 1) of one side."""
    out = [0, 0, 0]
    for p in points:
        out[int(round(p * 2))] += 1
    return out


def pentanomial(pair_points: list[float]) -> list[int]:
    """[LL, LD+DL, LW+DD+WL, DW+WD, WW] from the points (0 .. 2) one side scored in each pair."""
    out = [0, 0, 0, 0, 0]
    for p in pair_points:
        out[int(round(p * 2))] += 1
    return out


def concluded(result: dict) -> str | None:
    """Which bound an ``sprt`` result crossed, in words, or None while the test continues."""
    if result["state"] == "H1 accepted":
        return (f"H1 accepted (elo1 = {result['elo1']:g}): LLR {result['llr']:.3f} reached the upper bound "
                f"{result['upper']:.3f}")
    if result["state"] == "H0 accepted":
        return (f"H0 accepted (elo0 = {result['elo0']:g}): LLR {result['llr']:.3f} reached the lower bound "
                f"{result['lower']:.3f}")
    return None


def test_points(points: list[tuple[object, float]], elo0: float, elo1: float, alpha: float, beta: float,
                paired: bool = False) -> dict:
    """The GSPRT of one side from its points per game, given as (unit, points): trinomial on games,
    or with ``paired`` pentanomial on the units holding two games (duplicate-dice pairs)."""
    if not paired:
        return {**sprt(trinomial([p for _, p in points]), elo0, elo1, alpha, beta), "test": "games"}
    units: dict[object, list[float]] = {}
    for unit, p in points:
        units.setdefault(unit, []).append(p)
    pairs = [sum(v) for v in units.values() if len(v) == 2]
    return {**sprt(pentanomial(pairs), elo0, elo1, alpha, beta), "test": "pairs"}
