"""SPRT and Bradley–Terry against independent reference computations.

The references here are written from the documented definitions (module docstrings of
``arbiter/sprt.py`` and ``tournaments/ratings.py``) with a general-purpose optimiser and
per-game loops, sharing no code with the implementation: asymmetric error rates, empty result
categories, the Elo interval's variance, the virtual draws, the first-move term (in the fit, in
the virtual games and in the robust residuals) and the covariance in the LOS.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.stats import norm

from tournaments.ratings import fit_bradley_terry
from arbiter.sprt import bounds, elo_estimate, llr_logistic, sprt

# --- SPRT ------------------------------------------------------------------------------------


def reference_llr(elo0: float, elo1: float, counts: list[float]) -> float:
    """GSPRT: N Σ p̂ log(p1/p0), p_k the maximum-likelihood distribution with expected score s_k
    (found by a constrained optimiser); empty categories count as 1e-3."""
    c = np.array([max(1e-3, float(x)) for x in counts])
    n = c.sum()
    phat = c / n
    a = np.linspace(0, 1, len(c))

    def constrained(s: float) -> np.ndarray:
        res = minimize(lambda q: -np.sum(phat * np.log(q)), phat, method="SLSQP",
                       bounds=[(1e-12, 1)] * len(c), options={"ftol": 1e-15, "maxiter": 500},
                       constraints=[{"type": "eq", "fun": lambda q: q.sum() - 1},
                                    {"type": "eq", "fun": lambda q: q @ a - s}])
        assert res.success, res.message
        return res.x

    s0, s1 = (1 / (1 + 10 ** (-e / 400)) for e in (elo0, elo1))
    return float(n * np.sum(phat * np.log(constrained(s1) / constrained(s0))))


@pytest.mark.parametrize("elo0, elo1, counts, expected", [
    (-3, 1, [0, 30, 50], 0.923659780011605),          # an empty category (no losses)
    (-3, 1, [0, 12, 30, 25, 0], 0.5569870680354426),  # pentanomial, both extremes empty
    (0, 5, [10, 0, 14], 0.05508164250489864),         # no draws
])
def test_llr_with_empty_categories(elo0, elo1, counts, expected):
    assert reference_llr(elo0, elo1, counts) == pytest.approx(expected, abs=1e-6)
    assert llr_logistic(elo0, elo1, counts) == pytest.approx(expected, abs=1e-9)


def test_unequal_alpha_and_beta_set_each_bound():
    """alpha (false H1) sets the upper bound, beta (false H0) the lower one (Wald)."""
    alpha, beta = 0.05, 0.10
    lower, upper = bounds(alpha, beta)
    assert lower == pytest.approx(math.log(beta / (1 - alpha))) == pytest.approx(-2.2512917986)
    assert upper == pytest.approx(math.log((1 - beta) / alpha)) == pytest.approx(2.8903717579)
    # An LLR between the right bounds continues; with alpha and beta swapped it would stop.
    results = [100, 50, 180]
    llr = llr_logistic(0, 10, results)
    assert 2.26 < llr < 2.88
    assert sprt(results, 0, 10, alpha=alpha, beta=beta)["state"] == "continue"
    assert sprt(results, 0, 10, alpha=beta, beta=alpha)["state"] == "H1 accepted"
    mirrored = results[::-1]
    assert sprt(mirrored, 0, 10, alpha=alpha, beta=beta)["state"] == "H0 accepted"  # -2.55 < -2.25
    assert sprt(mirrored, 0, 10, alpha=beta, beta=alpha)["state"] == "continue"


@pytest.mark.parametrize("counts, expected", [
    ([10, 20, 30], (0.6666666666666666, 120.41199826559247, 50.64195646300802, 201.16173157794552)),
    ([3, 5, 9, 6, 2], (0.49, -6.94963842776909, -84.3473359547327, 69.7533008913539)),
])
def test_elo_interval_uses_the_variance_of_the_mean(counts, expected):
    """score ± 1.96 sqrt(var / N), var the per-unit variance of the score, N the number of units."""
    k, n = len(counts), sum(counts)
    scores = np.repeat(np.linspace(0, 1, k), counts)
    mu, var = scores.mean(), scores.var()  # var: the population (1/N) variance
    half = 1.959964 * math.sqrt(var / n)
    elo = [-400 * math.log10(1 / s - 1) for s in (mu, mu - half, mu + half)]
    assert (mu, *elo) == pytest.approx(expected, abs=1e-9)
    est = elo_estimate(counts)
    assert (est["score"], est["elo"], est["elo_lo"], est["elo_hi"]) == pytest.approx(expected, abs=1e-9)


# --- Bradley–Terry -----------------------------------------------------------------------------

ELO = 400 / math.log(10)


def sigma(x):
    return 1 / (1 + np.exp(-x))


def reference_fit(first, second, score, n, clusters=None, prior_draws=1.0):
    """Maximum likelihood over individual games (first mover scores σ(r_f - r_s + h)), plus
    ``prior_draws`` virtual draws per engine against r = 0 without the first-move term; ratings
    sum to 0. Covariance: inverse information, or the sandwich with one score vector per cluster
    and one per engine's virtual draws. Everything in per-game loops."""
    games = list(zip(first, second, score))

    def theta_of(u):
        return np.append(np.append(u[: n - 1], -u[: n - 1].sum()), u[n - 1])

    def negll(u):
        t = theta_of(u)
        ll = 0.0
        for f, s, y in games:
            p = sigma(t[f] - t[s] + t[n])
            ll += y * math.log(p) + (1 - y) * math.log(1 - p)
        for i in range(n):
            p = sigma(t[i])
            ll += prior_draws * (0.5 * math.log(p) + 0.5 * math.log(1 - p))
        return -ll

    res = minimize(negll, np.zeros(n), method="BFGS", options={"gtol": 1e-10})
    theta = theta_of(res.x)

    def x_of(f, s):
        x = np.zeros(n + 1)
        x[f], x[s], x[n] = 1.0, -1.0, 1.0
        return x

    info = np.zeros((n + 1, n + 1))
    for f, s, _ in games:
        p = sigma(theta[f] - theta[s] + theta[n])
        x = x_of(f, s)
        info += p * (1 - p) * np.outer(x, x)
    for i in range(n):
        p = sigma(theta[i])
        info[i, i] += prior_draws * p * (1 - p)
    T = np.zeros((n + 1, n))  # theta = T u
    T[: n - 1, : n - 1] = np.eye(n - 1)
    T[n - 1, : n - 1] = -1
    T[n, n - 1] = 1
    bread = np.linalg.inv(T.T @ info @ T)
    if clusters is None:
        cov_u = bread
    else:
        scores: dict = {}
        for (f, s, y), c in zip(games, clusters):
            p = sigma(theta[f] - theta[s] + theta[n])
            scores[c] = scores.get(c, np.zeros(n + 1)) + (y - p) * x_of(f, s)
        for i in range(n):
            g = np.zeros(n + 1)
            g[i] = prior_draws * (0.5 - sigma(theta[i]))
            scores[("virtual", i)] = g
        meat = sum(np.outer(g, g) for g in scores.values())
        cov_u = bread @ (T.T @ meat @ T) @ bread
    cov = T @ cov_u @ T.T
    return theta[:n] * ELO, cov[:n, :n] * ELO**2, theta[n] * ELO, math.sqrt(cov[n, n]) * ELO, -res.fun


@pytest.fixture(scope="module")
def games():
    """Five engines, 120 games in 60 seat-swapped pairs, a clear first-move advantage."""
    rng = np.random.default_rng(20261201)
    strength = np.array([150.0, 60.0, 0.0, -40.0, -170.0]) / ELO
    h = 120 / ELO
    first, second, score, clusters = [], [], [], []
    for pair in range(60):
        a, b = rng.choice(5, size=2, replace=False)
        for f, s in ((a, b), (b, a)):
            p = sigma(strength[f] - strength[s] + h)
            u = rng.random()
            first.append(int(f))
            second.append(int(s))
            score.append(0.5 if abs(u - p) < 0.08 else float(u < p))
            clusters.append(pair)
    return np.array(first), np.array(second), np.array(score), np.array(clusters)


@pytest.mark.parametrize("robust", [False, True])
def test_fit_matches_the_reference(games, robust):
    first, second, score, clusters = games
    fit = fit_bradley_terry(first, second, score, 5, clusters=clusters if robust else None)
    elo, cov, h_elo, h_se, loglik = reference_fit(first, second, score, 5, clusters if robust else None)
    assert fit.covariance == ("cluster-robust" if robust else "model")
    assert fit.elo == pytest.approx(elo, abs=1e-3)
    assert fit.first_move_elo == pytest.approx(h_elo, abs=1e-3)
    assert h_elo > 50  # the data really has a first-move term, so dropping it anywhere shows
    assert fit.cov == pytest.approx(cov, rel=1e-5, abs=1e-6)
    assert fit.se == pytest.approx(np.sqrt(np.diag(cov)), rel=1e-5)
    assert fit.first_move_se == pytest.approx(h_se, rel=1e-5)
    assert fit.loglik == pytest.approx(loglik, abs=1e-7)  # virtual draws count as draws in it too


def test_virtual_draws_are_part_of_the_fit(games):
    """Without virtual draws the reference moves away from the fit; with 5 per engine it follows."""
    first, second, score, clusters = games
    with_prior = reference_fit(first, second, score, 5)[0]
    without = reference_fit(first, second, score, 5, prior_draws=0.0)[0]
    assert np.max(np.abs(with_prior - without)) > 1.0  # the draws matter at this size
    assert fit_bradley_terry(first, second, score, 5).elo == pytest.approx(with_prior, abs=1e-3)
    assert fit_bradley_terry(first, second, score, 5, prior_draws=0.0).elo == pytest.approx(without, abs=1e-3)
    for c in (None, clusters):  # the weight of the virtual draws in the fit, the bread and the meat
        five = fit_bradley_terry(first, second, score, 5, clusters=c, prior_draws=5.0)
        elo, cov, _, _, loglik = reference_fit(first, second, score, 5, c, prior_draws=5.0)
        assert five.elo == pytest.approx(elo, abs=1e-3)
        assert five.cov == pytest.approx(cov, rel=1e-5, abs=1e-6)
        assert five.loglik == pytest.approx(loglik, abs=1e-7)


def test_a_perfect_score_is_finite_and_matches_the_reference():
    first = np.array([0, 1, 0, 2, 1, 2, 0, 1])
    second = np.array([1, 0, 2, 0, 2, 1, 1, 2])
    score = np.array([1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.5])  # engine 0 wins everything
    clusters = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    for c in (None, clusters):
        fit = fit_bradley_terry(first, second, score, 3, clusters=c)
        elo, cov, _, _, _ = reference_fit(first, second, score, 3, c)
        assert np.all(np.isfinite(fit.elo)) and fit.elo[0] == max(fit.elo)
        assert fit.elo == pytest.approx(elo, abs=1e-3)
        assert fit.cov == pytest.approx(cov, rel=1e-4, abs=1e-6)


def test_los_uses_the_covariance_of_the_difference(games):
    first, second, score, clusters = games
    fit = fit_bradley_terry(first, second, score, 5, clusters=clusters)
    los = fit.los()
    for i in range(5):
        for j in range(5):
            if i != j:
                var = fit.cov[i, i] + fit.cov[j, j] - 2 * fit.cov[i, j]
                assert los[i, j] == pytest.approx(norm.cdf((fit.elo[i] - fit.elo[j]) / math.sqrt(var)), abs=1e-12)
    # Ratings centred on 0 are negatively correlated: ignoring the covariance would matter.
    assert fit.cov[0, 1] < -0.05 * math.sqrt(fit.cov[0, 0] * fit.cov[1, 1])
