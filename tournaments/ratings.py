"""Ratings and statistics with honest error bars.

Bradley–Terry / Elo (two-seat games)
    P(first mover i scores against j) = σ(r_i - r_j + h): one strength r per engine and one
    first-move advantage h, fitted by maximum likelihood over all games (a draw counts as half a
    win, the usual quasi-likelihood). Games are aggregated per ordered pair, so the fit costs
    O(pairs) per Newton step (100 players / 100,000 games: a few ms). Ratings are in Elo
    (r × 400 / ln 10), centred on mean 0 or shifted to an anchor. Each engine also gets one
    virtual draw against an average engine (``prior_draws``) so that an engine that won or lost
    everything still has a finite rating; with real numbers of games its effect is negligible.
    Covariance: the inverse observed information of the constrained fit, or — when games come
    in duplicate-dice pairs/blocks (``clusters``) — the cluster-robust sandwich
    H⁻¹ (Σ_c g_c g_cᵀ) H⁻¹ with the pair as the unit. Error bars are ±1.96 standard errors;
    the likelihood of superiority is LOS_ij = Φ((r_i - r_j) / sd(r_i - r_j)).

Multiplayer: OpenSkill (Plackett–Luce), μ and σ per engine, games in schedule order.
Means, rates and paired comparisons (solo and cooperative reports) come from ``arbiter.stats``,
the same functions ``arbiter solo`` uses.
"""
from __future__ import annotations

import contextlib
import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from arbiter.stats import contested

ELO = 400 / math.log(10)
Z95 = 1.959963984540054


def phi(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


@dataclass
class RatingFit:
    names: list[str]
    elo: np.ndarray
    se: np.ndarray
    cov: np.ndarray
    """Covariance of the Elo ratings (players × players)."""
    first_move_elo: float
    first_move_se: float
    games: np.ndarray
    """Games per player."""
    covariance: str
    """``model`` or ``cluster-robust``."""
    iterations: int = 0
    loglik: float = 0.0

    @property
    def lo(self) -> np.ndarray:
        return self.elo - Z95 * self.se

    @property
    def hi(self) -> np.ndarray:
        return self.elo + Z95 * self.se

    def los(self) -> np.ndarray:
        """LOS[i, j]: probability that i is stronger than j."""
        n = len(self.names)
        out = np.full((n, n), np.nan)
        d = np.diag(self.cov)
        for i in range(n):
            for j in range(n):
                if i != j:
                    var = d[i] + d[j] - 2 * self.cov[i, j]
                    out[i, j] = phi((self.elo[i] - self.elo[j]) / math.sqrt(var)) if var > 0 else 0.5
        return out

    def table(self) -> list[dict]:
        order = np.argsort(-self.elo, kind="stable")
        return [{"rank": k + 1, "engine": self.names[i], "elo": float(self.elo[i]), "se": float(self.se[i]),
                 "lo": float(self.lo[i]), "hi": float(self.hi[i]), "games": int(self.games[i])}
                for k, i in enumerate(order)]


@functools.lru_cache(maxsize=1)
def _openblas_thread_controls() -> tuple[tuple[Any, Any], ...]:
    """(get, set) of the thread count of every OpenBLAS that numpy loaded (as threadpoolctl finds
    them), looked up once per process: the look-up reads /proc/self/maps and loads each library
    with ctypes, ~2 ms, and a web view's standings fit the ratings ~50 times (the timeline)."""
    controls = []
    try:
        import ctypes
        import re

        with open("/proc/self/maps") as f:
            paths = sorted(set(re.findall(r"(/\S*openblas\S*\.so\S*)", f.read())))
        for path in paths:
            lib = ctypes.CDLL(path)
            for prefix in ("scipy_openblas", "openblas"):
                for suffix in ("64_", ""):
                    get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                    put = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                    if get is not None and put is not None:
                        controls.append((get, put))
                        break
                else:
                    continue
                break
    except Exception:
        pass
    return tuple(controls)


@contextlib.contextmanager
def single_threaded_blas():
    """Run small dense linear algebra on one thread.

    The fit's matrices are ~100 × 100: a multi-threaded OpenBLAS spends far longer waking and
    synchronising its threads than computing, and on a loaded machine a 15 ms fit took 100-400
    ms. This sets the thread count of the OpenBLAS that numpy loaded to one for the duration;
    anything unexpected leaves the settings alone."""
    restore = []
    try:
        for get, put in _openblas_thread_controls():
            before = get()
            put(1)
            restore.append((put, before))
    except Exception:
        pass
    try:
        yield
    finally:
        for put, before in restore:
            try:
                put(before)
            except Exception:
                pass


def _with_single_threaded_blas(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with single_threaded_blas():
            return func(*args, **kwargs)

    return wrapper


@_with_single_threaded_blas
def fit_bradley_terry(first: np.ndarray, second: np.ndarray, score: np.ndarray, n: int, *,
                      names: list[str] | None = None, clusters: np.ndarray | None = None,
                      anchor: tuple[int, float] | None = None, prior_draws: float = 1.0,
                      first_move: bool = True, max_iter: int = 100, tol: float = 1e-10) -> RatingFit:
    """Fit ratings to games: ``first[g]`` moved first against ``second[g]`` and scored ``score[g]``
    (1, ½, 0). ``clusters[g]`` (ints) groups games that share dice; given, the covariance is
    cluster-robust. ``anchor = (player, elo)`` pins one player instead of centring on 0."""
    first = np.asarray(first, dtype=np.int64)
    second = np.asarray(second, dtype=np.int64)
    score = np.asarray(score, dtype=float)
    if first_move and len(score) and ((score == 1).all() or (score == 0).all()):
        # Every first mover won (or every second mover): the likelihood grows without bound as h
        # goes to +∞ (-∞), so there is no maximum. (Towards +∞ the information matrix underflows to
        # singular; towards -∞ it did not, and the fit stopped after max_iter steps at h ≈ -17,581
        # Elo with a standard error of ~10^24, which reports printed.)
        raise np.linalg.LinAlgError("every game was won by the same seat: the first-move advantage has no "
                                    "finite estimate")
    names = names or [str(i) for i in range(n)]
    k = n + 1 if first_move else n  # parameters: ratings, then h
    # Aggregate games per ordered pair: n_pair games, s_pair points of the first mover.
    code = first * n + second
    counts = np.bincount(code, minlength=n * n).astype(float)
    points = np.bincount(code, weights=score, minlength=n * n)
    keep = np.nonzero(counts)[0]
    pf, ps = keep // n, keep % n
    cnt, pts = counts[keep], points[keep]
    # Virtual draws against an average (r = 0) opponent, no first-move term.
    if prior_draws > 0:
        pf = np.concatenate([pf, np.arange(n)])
        ps = np.concatenate([ps, np.full(n, -1)])
        cnt = np.concatenate([cnt, np.full(n, prior_draws)])
        pts = np.concatenate([pts, np.full(n, prior_draws / 2)])
    virtual = ps < 0
    real = (~virtual).astype(float)
    # Each aggregated row is a linear predictor d = sum coef * theta[col] over three slots:
    # +r_first, -r_second (real games only), +h (real games only, with a first-move term).
    cols = [pf, np.where(virtual, 0, ps)]
    coefs = [np.ones(len(pf)), -real]
    if first_move:
        cols.append(np.full(len(pf), n))
        coefs.append(real)
    # Reparametrise so that sum(r) = 0: r = M z, M = [I; -1ᵀ]; theta = (r, h) = T u.
    T = np.zeros((k, k - 1))
    T[: n - 1, : n - 1] = np.eye(n - 1)
    T[n - 1, : n - 1] = -1
    if first_move:
        T[n, n - 1] = 1
    u = np.zeros(k - 1)

    def grad_hess(theta: np.ndarray):
        d = sum(c * theta[col] for col, c in zip(cols, coefs))
        p = 1 / (1 + np.exp(-d))
        resid = pts - cnt * p
        w = cnt * p * (1 - p)
        g = sum(np.bincount(col, weights=c * resid, minlength=k) for col, c in zip(cols, coefs))
        H = np.zeros(k * k)
        for col1, c1 in zip(cols, coefs):
            for col2, c2 in zip(cols, coefs):
                H += np.bincount(col1 * k + col2, weights=c1 * c2 * w, minlength=k * k)
        ll = float(np.sum(pts * np.log(np.maximum(p, 1e-300)) + (cnt - pts) * np.log(np.maximum(1 - p, 1e-300))))
        return g, H.reshape(k, k), ll  # H: the information (minus the Hessian of the log-likelihood)

    it = 0
    ll = -math.inf
    for it in range(1, max_iter + 1):
        theta = T @ u
        g, H, ll = grad_hess(theta)
        gu = T.T @ g
        Hu = T.T @ H @ T
        step = np.linalg.solve(Hu, gu)
        # Damped Newton: halve the step while it would move a rating by more than 3 (700 Elo).
        scale = 1.0
        while np.max(np.abs(T @ (scale * step))) > 3:
            scale /= 2
        u = u + scale * step
        if np.max(np.abs(scale * step)) < tol:
            break
    theta = T @ u
    g, H, ll = grad_hess(theta)
    Hu = T.T @ H @ T
    Hinv = np.linalg.inv(Hu)
    robust = (clusters is not None and len(clusters) > 0
              and np.bincount(np.unique(clusters, return_inverse=True)[1]).max() > 1)
    if robust:
        cov_u = Hinv @ _meat(theta, first, second, score, np.asarray(clusters), n, first_move, T, prior_draws) @ Hinv
    else:
        cov_u = Hinv
    cov = T @ cov_u @ T.T
    r = theta[:n].copy()
    cov_r = cov[:n, :n]
    if anchor is not None:
        a, value = anchor
        A = np.eye(n) - np.outer(np.ones(n), np.eye(n)[a])
        r = r - r[a]
        cov_r = A @ cov_r @ A.T
        r_elo = r * ELO + value
    else:
        r_elo = r * ELO
    games = np.bincount(first, minlength=n) + np.bincount(second, minlength=n)
    return RatingFit(names=list(names), elo=r_elo, se=np.sqrt(np.maximum(np.diag(cov_r), 0)) * ELO,
                     cov=cov_r * ELO * ELO, first_move_elo=float(theta[n] * ELO) if first_move else 0.0,
                     first_move_se=float(math.sqrt(max(cov[n, n], 0)) * ELO) if first_move else 0.0,
                     games=games, covariance="cluster-robust" if robust else "model", iterations=it, loglik=ll)


def _meat(theta, first, second, score, clusters, n, first_move, T, prior_draws: float) -> np.ndarray:
    """Σ_c g_c g_cᵀ in the reduced parameters, g_c the score vector of cluster c. Each engine's
    virtual draws count as one more cluster of its own (as data, the way the bread counts them),
    so that an engine with a perfect score — tiny residuals — does not get a tiny variance."""
    r = theta[:n]
    h = theta[n] if first_move else 0.0
    p = 1 / (1 + np.exp(-(r[first] - r[second] + h)))
    e = score - p
    _, cid = np.unique(clusters, return_inverse=True)
    m = cid.max() + 1
    k = T.shape[0]
    # Sparse cluster-by-parameter sums: (cluster, param) -> value, via a combined code.
    rows = np.concatenate([cid, cid] + ([cid] if first_move else []))
    cols = np.concatenate([first, second] + ([np.full(len(cid), n)] if first_move else []))
    vals = np.concatenate([e, -e] + ([e] if first_move else []))
    if prior_draws > 0:
        rows = np.concatenate([rows, m + np.arange(n)])
        cols = np.concatenate([cols, np.arange(n)])
        vals = np.concatenate([vals, prior_draws * (0.5 - 1 / (1 + np.exp(-r)))])
        m += n
    from scipy.sparse import csr_matrix

    G = csr_matrix((vals, (rows, cols)), shape=(m, k))  # duplicate entries are summed
    meat = (G.T @ G).toarray()
    return T.T @ meat @ T


# --- multiplayer: OpenSkill -------------------------------------------------------------------

def seat_sides(game) -> tuple[int, ...] | None:
    """The side of each seat of ``game`` (a number per seat; allied seats share one), as the
    game's ``forfeit_returns`` groups them: a forfeit loses for the forfeiting seat's whole
    alliance (A&A Chess), else for that seat alone. None without a game (every seat its own side)."""
    if game is None:
        return None
    out: list[int] = []
    for seat in range(game.num_seats):
        lost = game.forfeit_returns(seat)
        allies = [s for s in range(game.num_seats) if lost[s] == lost[seat]]
        out.append(out[allies[0]] if allies[0] < seat else max(out, default=-1) + 1)
    return tuple(out)


def openskill_ratings(games: list[tuple[tuple[int, ...], tuple[float, ...]]], names: list[str],
                      sides: tuple[int, ...] | None = None) -> list[dict]:
    """Plackett–Luce μ, σ per engine from games (seating, returns) in a fixed order. Ranks come
    from returns (higher is better; equal returns share a rank). ``sides`` (``seat_sides``): the
    side of each seat; allied seats are rated as one team of their engines, ranked by the side's
    return (without it, or when a game has another number of seats, every seat is a side)."""
    return next(openskill_history(games, names, [len(games)], sides))


def openskill_history(games: list[tuple[tuple[int, ...], tuple[float, ...]]], names: list[str],
                      marks: list[int], sides: tuple[int, ...] | None = None):
    """``openskill_ratings`` of the first k games for each k in ``marks`` (ascending), in one
    pass: the ratings over time of a long event without refitting every prefix."""
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    ratings = {i: model.rating(name=name) for i, name in enumerate(names)}
    played = [0] * len(names)
    games = list(games)
    pending = list(marks)
    for k in range(len(games) + 1):
        while pending and pending[0] == k:
            pending.pop(0)
            yield _openskill_rows(ratings, played, names)
        if k == len(games):
            break
        seating, returns = games[k]
        if len(set(seating)) != len(seating) or not contested(returns):
            continue  # an engine on two seats cannot be ranked against itself; a game all lost ranks nobody
        side_of = sides if sides is not None and len(sides) == len(seating) else tuple(range(len(seating)))
        teams: dict[int, list[int]] = {}
        for seat, side in enumerate(side_of):
            teams.setdefault(side, []).append(seat)
        seats = list(teams.values())  # each side's seats, sides in order of their first seat
        side_returns = [returns[group[0]] for group in seats]
        order = sorted(set(side_returns), reverse=True)
        ranks = [order.index(r) + 1 for r in side_returns]
        new = model.rate([[ratings[seating[s]] for s in group] for group in seats], ranks=ranks)
        for group, team in zip(seats, new):
            for s, rating in zip(group, team):
                ratings[seating[s]] = rating
                played[seating[s]] += 1


def _openskill_rows(ratings: dict, played: list[int], names: list[str]) -> list[dict]:
    rows = []
    for i, name in enumerate(names):
        mu, sigma = ratings[i].mu, ratings[i].sigma
        rows.append({"engine": name, "mu": mu, "sigma": sigma, "lo": mu - Z95 * sigma, "hi": mu + Z95 * sigma,
                     "ordinal": mu - 3 * sigma, "games": played[i]})
    rows.sort(key=lambda r: -r["ordinal"])
    for k, row in enumerate(rows):
        row["rank"] = k + 1
    return rows
