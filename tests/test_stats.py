"""The one statistics module (``arbiter.stats``), pinned to values computed independently of it:
published Wilson intervals, Student-t quantiles from the tables, sign-test p-values counted by
hand; and the tournament report using exactly these numbers (not a z interval of its own)."""
from __future__ import annotations

import math

import pytest

from arbiter.stats import contested, forfeiting_seats, game_points, mean_ci, mean_se, paired_comparison, sign_test, wilson_interval


@pytest.mark.parametrize("successes, n, low, high", [
    # Newcombe (1998), "Two-sided confidence intervals for the single proportion", Table I, method 3.
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0, 0.1611),
    (1, 29, 0.0061, 0.1718),
])
def test_wilson_interval_matches_published_values(successes, n, low, high):
    lo, hi = wilson_interval(successes, n)
    assert lo == pytest.approx(low, abs=5e-5) and hi == pytest.approx(high, abs=5e-5)


def test_wilson_bounds_are_exact_at_the_extremes_and_half_successes_count():
    assert wilson_interval(0, 7)[0] == 0.0 and wilson_interval(7, 7)[1] == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)
    lo, hi = wilson_interval(2.5, 5)  # draws as half wins: symmetric around ½
    assert lo == pytest.approx(1 - hi)
    with pytest.raises(ValueError):
        wilson_interval(6, 5)


def test_mean_interval_is_student_t_not_normal():
    # [1..5]: mean 3, s = sqrt(2.5), se = sqrt(0.5); t(0.975, 4 df) = 2.776445 (tables), z would be 1.959964.
    mean, lo, hi = mean_ci([1.0, 2.0, 3.0, 4.0, 5.0])
    half = 2.776445 * math.sqrt(0.5)
    assert mean == 3.0 and lo == pytest.approx(3 - half, abs=1e-5) and hi == pytest.approx(3 + half, abs=1e-5)
    # 99 %: t(0.995, 4) = 4.604095.
    _, lo99, hi99 = mean_ci([1.0, 2.0, 3.0, 4.0, 5.0], 0.99)
    assert hi99 - 3 == pytest.approx(4.604095 * math.sqrt(0.5), abs=1e-5)


def test_mean_interval_edge_cases():
    assert mean_se([0.1, 0.1, 0.1]) == (0.1, 0.0)  # no spread: exactly no error, not rounding noise
    assert mean_ci([0.1, 0.1, 0.1]) == (0.1, 0.1, 0.1)
    mean, lo, hi = mean_ci([4.0])
    assert mean == 4.0 and math.isnan(lo) and math.isnan(hi)  # one value: no interval
    with pytest.raises(ValueError):
        mean_ci([])


def test_sign_test_p_values_counted_by_hand():
    # 8 against 2: 2 * P(X <= 2), X ~ Binomial(10, ½) = 2 * (1 + 10 + 45) / 1024.
    assert sign_test(8, 2) == pytest.approx(112 / 1024, rel=1e-12)
    assert sign_test(2, 8) == pytest.approx(112 / 1024, rel=1e-12)
    assert sign_test(6, 0) == pytest.approx(2 / 64, rel=1e-12)
    assert sign_test(5, 5) == 1.0 and sign_test(0, 0) == 1.0


def test_paired_comparison_is_the_sign_test_on_discordant_seeds_and_mcnemar_for_win_loss():
    # Win/loss results: the seeds where one engine did better are those only one of them won,
    # so the sign test is McNemar's exact test on the (a_only, b_only) cells.
    a = {s: 1.0 for s in range(12)}
    b = {s: (1.0 if s < 2 else -1.0) for s in range(12)}
    for s in (10, 11):
        a[s] = -1.0  # a lost seeds 10 and 11, which b also lost: concordant
    b[0] = 1.0
    a[0] = -1.0  # only b won seed 0
    c = paired_comparison(a, b)
    assert (c.both, c.a_only, c.b_only, c.neither) == (1, 8, 1, 2)
    assert (c.a_better, c.ties, c.b_better) == (c.a_only, c.both + c.neither, c.b_only)
    assert c.p_value == pytest.approx(2 * (1 + 9) / 512, rel=1e-12)  # 8 against 1 of 9
    diffs = [a[s] - b[s] for s in range(12)]
    assert (c.mean_diff, c.ci_low, c.ci_high) == pytest.approx(mean_ci(diffs))


def test_paired_comparison_on_scores_uses_the_score_difference():
    # Scores, all positive ("won" by both): the win indicators are all concordant, but a scored
    # more on every one of 25 seeds, which the sign test sees: p = 2 / 2**25.
    a = {f"s{i}": float(i % 3) + 1 for i in range(30)}
    b = {f"s{i}": float(i % 3) + 0.5 for i in range(25)}  # five seeds only a played
    c = paired_comparison(a, b)
    assert c.n == 25 and c.a_better == 25 and c.b_better == 0 and (c.a_only, c.b_only) == (0, 0)
    assert c.p_value == pytest.approx(2 / 2 ** 25) and c.mean_diff == 0.5 and c.ci_low == c.ci_high == 0.5


def test_win_rate_difference_interval_stays_within_plus_minus_one():
    """A difference of two win rates lies in [-1, 1]; its t interval did not: a won 12 of 12 seeds,
    b 3 of them, and `arbiter solo` printed "+75.0% (+46.3% … +103.7%)". The end past 100% is
    cut at 100% (which keeps the coverage: the true difference is never beyond it)."""
    a = {s: 1.0 for s in range(12)}
    b = {s: (1.0 if s < 3 else -1.0) for s in range(12)}
    c = paired_comparison(a, b)
    # per-seed differences: 9 ones and 3 zeros; mean 0.75, s = sqrt(2.25 / 11), t(0.975, 11) = 2.200985 (tables)
    half = 2.200985 * math.sqrt(2.25 / 11 / 12)
    assert c.rate_diff == 0.75 and c.rate_low == pytest.approx(0.75 - half, abs=1e-5) and c.rate_high == 1.0
    r = paired_comparison(b, a)
    assert r.rate_diff == -0.75 and r.rate_low == -1.0 and r.rate_high == pytest.approx(half - 0.75, abs=1e-5)
    # the score difference is not bounded: its interval is the plain t interval
    assert (c.mean_diff, c.ci_low, c.ci_high) == pytest.approx(mean_ci([a[s] - b[s] for s in range(12)]))


def test_game_points():
    assert game_points([1.0, -1.0], 0, 1) == (1.0, 0.0)
    assert game_points([1.0, -1.0], 1, 0) == (0.0, 1.0)
    assert game_points([0.0, 0.0, 3.0], 0, 1) == (0.5, 0.5)
    assert game_points([-1.0, -1.0], 0, 1) == (0.0, 0.0)  # a double forfeit: nobody's draw
    assert game_points([-1.0, -1.0, 1.0], 0, 1) == (0.5, 0.5)  # teammates of a table lose together


def test_a_double_forfeit_is_not_contested():
    assert not contested([-1.0, -1.0]) and forfeiting_seats(0, [0, 1]) == [0, 1]
    assert forfeiting_seats(2, None) == [2] and forfeiting_seats(None, None) == []
    assert contested([0.0, 0.0]) and contested([-1.0, 1.0]) and contested([-1.0, -1.0, 1.0])
    assert not contested([-1.0, -1.0, -1.0]) and contested([-1.0]) and contested([0.0, 0.0, 0.0])
    assert game_points([2.0, 0.0, 3.0], 0, 2) == (0.0, 1.0)


def test_tournament_solo_and_team_reports_use_these_numbers():
    """The report's solo and cooperative sections give exactly the intervals ``arbiter solo`` gives."""
    from tournaments.report import solo_sections, team_sections

    results = {0: [1.0, -1.0, 1.0, 1.0, -1.0, 1.0], 1: [-1.0, -1.0, 1.0, -1.0, -1.0, 1.0]}
    games = [{"seating": [e], "stream": f"suite|{k}", "returns": [r]}
             for e, rs in results.items() for k, r in enumerate(rs)]
    out = solo_sections(None, games, ["a", "b"])
    row = next(r for r in out["standings"] if r["engine"] == "a")
    assert (row["mean"], row["lo"], row["hi"]) == pytest.approx(mean_ci(results[0]))
    assert (row["win_lo"], row["win_hi"]) == pytest.approx(wilson_interval(4, 6))
    (pair,) = out["paired"]
    c = paired_comparison(dict(enumerate(results[0])), dict(enumerate(results[1])))
    assert (pair["seeds"], pair["A_better"], pair["ties"], pair["B_better"]) == (6, 2, 4, 0)
    assert (pair["lo"], pair["hi"], pair["p_value"]) == pytest.approx((c.ci_low, c.ci_high, 0.5))
    scores = [3.0, 5.0, 4.0, 2.0, 6.0]  # reports give intervals from 5 games (arbiter.stats.MIN_INTERVAL_GAMES)
    team_games = [{"seating": [0, 1], "stream": f"s{k}", "returns": [v, v]} for k, v in enumerate(scores)]
    teams = team_sections(None, team_games, ["a", "b"])
    assert (teams["teams"][0]["lo"], teams["teams"][0]["hi"]) == pytest.approx(mean_ci(scores)[1:])
    assert teams["teams"][0]["hi"] - 4.0 == pytest.approx(2.776445 * math.sqrt(2.5 / 5))  # t(0.975, 4 df)
