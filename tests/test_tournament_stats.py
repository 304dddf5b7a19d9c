"""Statistics: fishtest's GSPRT reference values, Bradley–Terry fits against synthetic players
(95% interval coverage), first-move advantage, LOS, OpenSkill (means, rates and paired comparisons:
test_stats.py)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tournaments.ratings import fit_bradley_terry, openskill_ratings
from arbiter.sprt import bounds, elo_estimate, llr_logistic, pentanomial, sprt, trinomial


# --- SPRT -------------------------------------------------------------------------------------

def test_fishtest_reference_values():
    assert llr_logistic(-3, 1, [10789, 19328, 33806, 19402, 10543]) == pytest.approx(2.131, abs=5e-4)
    assert llr_logistic(-3, 1, [6077, 26894, 5975]) == pytest.approx(0.375, abs=5e-4)


def test_sprt_decisions_and_bounds():
    lower, upper = bounds(0.05, 0.05)
    assert lower == pytest.approx(-2.944, abs=1e-3) and upper == pytest.approx(2.944, abs=1e-3)
    strong = sprt([100, 0, 300], 0, 10)
    assert strong["state"] == "H1 accepted" and strong["elo"] > 100
    weak = sprt([300, 0, 100], 0, 10)
    assert weak["state"] == "H0 accepted"
    assert sprt([0, 0, 0], 0, 10)["state"] == "continue"
    # Symmetry: swapping the sides mirrors the LLR of mirrored bounds.
    r = [120, 80, 200, 95, 110]
    assert llr_logistic(-5, 5, r) == pytest.approx(-llr_logistic(-5, 5, r[::-1]), rel=1e-9)


def test_pentanomial_and_trinomial_counts():
    assert trinomial([1, 0.5, 0, 1]) == [1, 1, 2]
    assert pentanomial([0, 0.5, 1, 1, 1.5, 2, 2]) == [1, 1, 2, 1, 2]
    est = elo_estimate([0, 0, 10, 0, 10])
    assert est["score"] == pytest.approx(0.75) and est["elo_lo"] < est["elo"] < est["elo_hi"]


@pytest.mark.parametrize("results, elo", [
    ([0, 0, 1], math.inf),           # one game won: Elo +∞, but no interval from one game
    ([1, 0, 0], -math.inf),
    ([0, 1, 0], 0.0),                # one draw
    ([0, 0, 100], math.inf),         # every game won: no spread, so no normal interval (not [+∞, +∞])
    ([0, 40, 0], 0.0),               # every game drawn: not [0, 0]
    ([0, 0, 0, 0, 7], math.inf),     # every pair won
    ([0, 3, 0, 0, 0], -190.84850188786498),  # 3 pairs, all LD: not [-190.8, -190.8]
    ([1, 1, 1], 0.0),                # 3 games: fewer than MIN_INTERVAL_GAMES
])
def test_elo_interval_needs_five_units_and_some_spread(results, elo):
    """The Elo of A is score ± 1.96 sqrt(var / N) mapped to Elo: with one game (or every unit alike)
    the variance is 0 and that interval is the point itself (`arbiter match --sprt` printed
    "Elo of A -inf [-inf, -inf]" after one lost game). As every other interval of the reports:
    none below MIN_INTERVAL_GAMES units, and none without spread."""
    est = elo_estimate(results)
    assert est["elo"] == elo and math.copysign(1, est["elo"]) == math.copysign(1, elo)  # 0.0, not -0.0 ("-0.0")
    assert math.isnan(est["elo_lo"]) and math.isnan(est["elo_hi"])


def test_elo_estimate_of_no_games_is_none():
    est = elo_estimate([0, 0, 0, 0, 0])
    assert all(math.isnan(est[k]) for k in ("elo", "elo_lo", "elo_hi"))


@pytest.mark.parametrize("results, games, shown", [
    ([1, 0, 0], 1, "Elo of A -∞ [-, -]"),
    ([0, 1, 0], 1, "Elo of A +0.0 [-, -]"),
    ([0, 0, 0, 0, 0], 1, "Elo of A - [-, -]"),   # --openings: the first game of a pair, no pair yet
    ([1, 0, 9], 10, "Elo of A +381.7 [+159.0, +∞]"),  # upper bound past a score of 1: unbounded
])
def test_sprt_line_shows_no_inf_or_nan(results, games, shown):
    """`arbiter match --sprt` (and a tournament's SPRT stop) printed Python's "+inf"/"-inf"/"nan":
    now the report's notation, ∞ for a bound without limit and - for none."""
    from arbiter.cli import sprt_line

    line = sprt_line({**sprt(results, 0, 150), "test": "pairs" if len(results) == 5 else "games"}, games)
    assert line.endswith(shown), line
    assert "inf" not in line and "nan" not in line
    assert f"after {games} game{'s' if games != 1 else ''}" in line


# --- Bradley–Terry ----------------------------------------------------------------------------

def simulate_games(rng, true_elo, n_games, h_elo=0.0, draw_band=0.0):
    n = len(true_elo)
    f = rng.integers(0, n, n_games)
    s = rng.integers(0, n - 1, n_games)
    s = np.where(s >= f, s + 1, s)
    p = 1 / (1 + 10 ** (-(true_elo[f] - true_elo[s] + h_elo) / 400))
    u = rng.random(n_games)
    score = (u < p).astype(float)
    if draw_band:
        score[np.abs(u - p) < draw_band] = 0.5
    return f, s, score


def test_rating_intervals_cover_the_true_ratings():
    """Over 40 simulated tournaments of 20 players (≈200 games each) the 95% intervals contain
    the true (centred) rating for at least 93% of the 800 player-simulations."""
    rng = np.random.default_rng(20240611)
    hits = total = 0
    h_hits = 0
    for _ in range(40):
        true = rng.normal(0, 200, 20)
        true -= true.mean()
        f, s, score = simulate_games(rng, true, 2000, h_elo=35, draw_band=0.05)
        fit = fit_bradley_terry(f, s, score, 20)
        hits += int(np.sum((fit.lo <= true) & (true <= fit.hi)))
        total += 20
        h_hits += abs(fit.first_move_elo - 35) <= 1.96 * fit.first_move_se
    assert hits / total >= 0.93, hits / total
    assert h_hits >= 35  # the first-move term is recovered as well (≥ 35 of 40)


def test_fit_recovers_ratings_and_first_move_advantage_with_many_games():
    rng = np.random.default_rng(3)
    true = np.array([-300.0, -100.0, 0.0, 150.0, 250.0])
    true -= true.mean()
    f, s, score = simulate_games(rng, true, 40000, h_elo=60)
    fit = fit_bradley_terry(f, s, score, 5, names=list("abcde"))
    assert np.max(np.abs(fit.elo - true)) < 15
    assert fit.first_move_elo == pytest.approx(60, abs=10)
    assert fit.elo.sum() == pytest.approx(0, abs=1e-6)
    los = fit.los()
    assert los[4, 0] > 0.999 and los[0, 4] < 0.001
    off = ~np.eye(5, dtype=bool)
    assert np.allclose((los + los.T)[off], 1)
    table = fit.table()
    assert [r["engine"] for r in table] == list("edcba")


def test_anchor_shifts_ratings_and_zeroes_the_anchor_variance():
    rng = np.random.default_rng(4)
    true = np.array([0.0, 100.0, 200.0])
    f, s, score = simulate_games(rng, true, 3000)
    free = fit_bradley_terry(f, s, score, 3)
    anchored = fit_bradley_terry(f, s, score, 3, anchor=(0, 1500.0))
    assert anchored.elo[0] == 1500.0 and anchored.se[0] == 0
    assert anchored.elo[2] - anchored.elo[0] == pytest.approx(free.elo[2] - free.elo[0], abs=1e-9)
    var_diff = free.cov[0, 0] + free.cov[2, 2] - 2 * free.cov[0, 2]
    assert anchored.se[2] == pytest.approx(math.sqrt(var_diff), rel=1e-6)


def test_perfect_scores_stay_finite():
    f = np.array([0, 1] * 10)
    s = np.array([1, 0] * 10)
    score = np.array([1.0, 0.0] * 10)  # player 0 always wins
    fit = fit_bradley_terry(f, s, score, 2)
    assert np.all(np.isfinite(fit.elo)) and fit.elo[0] > fit.elo[1] + 200


def test_cluster_robust_covariance_uses_the_pair_as_the_unit():
    """Duplicate pairs where the dice decide most games: each pair splits 1-1 far more often than
    independent games would, so the pair-based error bars are narrower than the per-game ones."""
    rng = np.random.default_rng(5)
    n_pairs = 4000
    first, second, score, clusters = [], [], [], []
    for c in range(n_pairs):
        a, b = rng.choice(4, 2, replace=False)
        dice_favour_first = rng.random() < 0.5
        skill = rng.random() < 0.2  # 20% of the time the stronger... simply a coin for 'a'
        for g, (x, y) in enumerate(((a, b), (b, a))):
            first_wins = dice_favour_first if not skill else (x == a)
            first.append(x)
            second.append(y)
            score.append(1.0 if first_wins else 0.0)
            clusters.append(c)
    args = (np.array(first), np.array(second), np.array(score), 4)
    model = fit_bradley_terry(*args)
    robust = fit_bradley_terry(*args, clusters=np.array(clusters))
    assert robust.covariance == "cluster-robust" and model.covariance == "model"
    assert np.allclose(robust.elo, model.elo)
    assert np.all(robust.se < 0.8 * model.se)


def test_fit_of_100_players_over_100k_games_recovers_their_strengths():
    """At the scale of a big event. Its speed (target < 1 s) is a benchmark's: bench/bench_tournaments.py."""
    rng = np.random.default_rng(6)
    true = rng.normal(0, 200, 100)
    f, s, score = simulate_games(rng, true, 100_000, h_elo=30)
    fit = fit_bradley_terry(f, s, score, 100)
    assert np.corrcoef(fit.elo, true)[0, 1] > 0.99


# --- multiplayer, solo, paired ----------------------------------------------------------------

def test_openskill_ranks_a_consistently_better_player_first():
    rng = np.random.default_rng(7)
    games = []
    for _ in range(60):
        seating = tuple(int(x) for x in rng.permutation(4)[:3])
        returns = tuple(float(3 - e + rng.random()) for e in seating)  # lower index is better
        games.append((seating, returns))
    rows = openskill_ratings(games, ["p0", "p1", "p2", "p3"])
    assert [r["engine"] for r in rows] == ["p0", "p1", "p2", "p3"]
    assert all(r["sigma"] < 8.33 for r in rows) and rows[0]["lo"] < rows[0]["mu"] < rows[0]["hi"]



def aachess_returns(seating, sides):
    """A&A Chess returns: the side with engine 3 wins (Allies when it plays both), 1 to each seat of it."""
    winner = sides[seating.index(3)] if 3 in seating else 0
    return tuple(1.0 if side == winner else -1.0 for side in sides)


@pytest.mark.parametrize("seats, expected_sides", [(3, (0, 1, 0)), (4, (0, 1, 0, 1)), (5, (0, 1, 0, 1, 0))])
def test_openskill_rates_allied_seats_as_one_team(seats, expected_sides):
    """A&A Chess with 3-5 seats: the Allies' seats win or lose together, and so do the Axis's.
    OpenSkill rated every seat as a player of its own (a 4-seat game as a 4-player free-for-all
    with two ties); now each side is one team of its engines, as openskill's own ``rate`` with
    teams and ranks computes it."""
    from openskill.models import PlackettLuce

    from arbiter.games import load_game
    from tournaments.ratings import seat_sides

    sides = seat_sides(load_game("aachess", seats=seats))
    assert sides == expected_sides
    rng = np.random.default_rng(seats)
    names = [f"e{i}" for i in range(6)]
    games = []
    for _ in range(20):
        seating = tuple(int(x) for x in rng.permutation(6)[:seats])
        games.append((seating, aachess_returns(seating, sides)))
    model = PlackettLuce()
    expected = {i: model.rating(name=name) for i, name in enumerate(names)}
    for seating, returns in games:
        teams = [[s for s in range(seats) if sides[s] == side] for side in (0, 1)]
        ranks = [1 if returns[team[0]] > 0 else 2 for team in teams]
        rated = model.rate([[expected[seating[s]] for s in team] for team in teams], ranks=ranks)
        for team, new in zip(teams, rated):
            for s, rating in zip(team, new):
                expected[seating[s]] = rating
    rows = {r["engine"]: r for r in openskill_ratings(games, names, sides)}
    for i, name in enumerate(names):
        assert rows[name]["mu"] == pytest.approx(expected[i].mu, abs=1e-9)
        assert rows[name]["sigma"] == pytest.approx(expected[i].sigma, abs=1e-9)
    assert rows["e3"]["rank"] == 1


def test_a_table_events_report_rates_allied_seats_as_one_team(tmp_path):
    """The report of a 4-seat A&A Chess event (its standings, quick ratings and timeline) rates
    each side as a team: the same numbers as openskill's ``rate`` with the two sides as teams."""
    from openskill.models import PlackettLuce

    from tournaments.report import build_report, quick_ratings
    from tournaments.api import config_from_db
    from tournaments.db import TournamentDB

    text = (f'game = "aachess"\ngame_options = {{ seats = 4 }}\ngames = 12\nseed = 3\n'
            f'output = "{tmp_path}/t.sqlite"\n' + "".join(f'[[engines]]\nname = "e{i}"\ncommand = "x"\n' for i in range(4)))
    sides = (0, 1, 0, 1)
    db = synthetic_tournament(tmp_path, text, returns_for=lambda seating: aachess_returns(seating, sides))
    report = build_report(db)
    model = PlackettLuce()
    expected = {i: model.rating() for i in range(4)}
    database = TournamentDB(db)
    try:
        cfg, _ = config_from_db(database, check_paths=False)
        games = sorted(database.game_rows(), key=lambda row: row[1])
    finally:
        database.close()
    assert len(games) == 12
    for _, _, players, returns, _, _ in games:
        seating = [int(p[1:]) for p in players]
        teams = [[0, 2], [1, 3]]
        rated = model.rate([[expected[seating[s]] for s in team] for team in teams],
                           ranks=[1 if returns[team[0]] > 0 else 2 for team in teams])
        for team, new in zip(teams, rated):
            for s, rating in zip(team, new):
                expected[seating[s]] = rating
    mus = {r["engine"]: r["mu"] for r in report["standings"]}
    for i in range(4):
        assert mus[f"e{i}"] == pytest.approx(expected[i].mu, abs=1e-9)
    quick = quick_ratings(cfg, [f"e{i}" for i in range(4)],
                          [{"seating": [int(p[1:]) for p in g[2]], "returns": g[3]} for g in games])
    assert quick[1]["e3"][0] == pytest.approx(expected[3].mu, abs=1e-9)

# --- reports from synthetic databases (no engines) --------------------------------------------

def synthetic_tournament(tmp_path, text: str, seed: int = 1, first_mover_wins: bool = False, returns_for=None):
    """Start a tournament and commit made-up games for every game the director asks for
    (stronger engines win more; one game in ten is lost on time; or every first mover wins; or
    ``returns_for(seating)``)."""
    import random

    from arbiter.records import GameRecord
    from tournaments import api
    from tournaments.config import parse_config
    from tournaments.director import GameResult

    rng = random.Random(seed)
    opened = api.start(parse_config(text, str(tmp_path / "t.toml")))
    runner_names = [e.name for e in opened.cfg.engines]
    from tournaments.runner import Runner

    runner = Runner(opened.cfg, opened.db, opened.seed)
    plan = runner.load()
    while not plan.finished:
        spec = plan.ready[0]
        k = len(spec.seating)
        if k == 2 and opened.cfg.kind == "match":
            a, b = spec.seating
            p_a = 1 / (1 + 10 ** ((b - a) * 60 / 400))  # higher index = stronger
            returns = [1.0, -1.0] if rng.random() < p_a else [-1.0, 1.0]
        else:
            returns = [float(rng.randrange(5) + e) for e in spec.seating]
        reason, fseat = "normal", None
        if returns_for is not None:
            returns = list(returns_for(spec.seating))
        elif first_mover_wins:
            returns = [1.0, -1.0]
        elif rng.random() < 0.1 and k > 1:
            fseat = rng.randrange(k)
            reason = "time"
            returns = [-1.0 if s == fseat else 1.0 for s in range(k)]
        record = GameRecord(game_id=f"{spec.match_id}.{spec.number}", match_id=spec.match_id,
                            game_number=spec.number, game=opened.cfg.game, options=opened.cfg.game_options,
                            players=[runner_names[e % len(runner_names)] for e in spec.seating],
                            seat_roles=["x"] * k, time_control="180", margin_ms=50, started_at=0.0, ended_at=1.0,
                            returns=returns, reason=reason, forfeit_seat=fseat, dice_stream=spec.stream)
        opened.db.commit([record])
        runner.results[spec.key] = GameResult(spec.seating, tuple(returns), reason, fseat)
        plan = runner.replan()
    path = opened.db.path
    opened.db.close()
    return path


ENGINES = "".join(f'[[engines]]\nname = "e{i}"\ncommand = "x"\n' for i in range(7))


@pytest.mark.parametrize("fmt, extra", [
    ("swiss", 'rounds = 4\nmatch = "olympiad"\nduplicate_dice = true\n'),
    ("knockout", 'match = "games=2"\nseeding = "random"\n'),
    ("gauntlet", 'match = "bo3"\ncandidates = ["e6"]\nanchor = { engine = "e0", elo = 1000 }\n'),
])
def test_reports_for_match_formats(tmp_path, fmt, extra):
    from tournaments.report import build_report, plot, render_text, to_json, write_csv

    head = f'game = "einstein"\nformat = "{fmt}"\nseed = 4\noutput = "{tmp_path}/t.sqlite"\n'
    db = synthetic_tournament(tmp_path, head + extra + ENGINES)
    report = build_report(db)
    assert report["tournament"]["finished"]
    text = render_text(report)
    assert "Standings" in text and "Crosstable" in text and "time (own)" in text and "time (opponent)" in text
    names = {r["engine"] for r in report["standings"]}
    assert names == {f"e{i}" for i in range(7)}
    terminations = report["terminations"]
    own = sum(r["L"] for r in terminations if r["reason"] == "time (own)")
    opp = sum(r["W"] for r in terminations if r["reason"] == "time (opponent)")
    assert own == opp > 0  # every time forfeit is a loss for one side and a win for the other
    if fmt == "swiss":
        assert all("buchholz" in r for r in report["standings"])
        assert sum(1 for m in report["matches"] if m.get("bye")) == 4  # 7 engines: one bye a round
        assert all("pentanomial" in r for r in report["sprt"])
    if fmt == "knockout":
        assert report["champion"] in names
        assert report["standings"][0]["engine"] == report["champion"]
    if fmt == "gauntlet":
        assert report["ratings"]["anchor"] == {"engine": "e0", "elo": 1000.0}
        e0 = next(r for r in report["ratings"]["table"] if r["engine"] == "e0")
        assert e0["elo"] == 1000.0
        assert len(report["matches"]) == 6
    json.loads(to_json(report))
    assert write_csv(report, tmp_path / "csv")
    assert plot(report, tmp_path / "r.svg").stat().st_size > 1000


def test_knockout_standings_break_ties_by_seed_not_by_file_order(tmp_path):
    """Engines knocked out in the same round with the same game points were listed in file
    order; with random seeding that is no ranking at all. They are listed by seed, as the
    bracket ranks them (the higher seed advances from an all-drawn match too)."""
    from tournaments.report import build_report
    from tournaments.schedule import seeded_order

    head = (f'game = "einstein"\nformat = "knockout"\nmatch = "games=1"\nseeding = "random"\nseed = 11\n'
            f'output = "{tmp_path}/t.sqlite"\n')
    engines = "".join(f'[[engines]]\nname = "e{i}"\ncommand = "x"\n' for i in range(8))
    # the engine listed later always wins: every loser of a round has 0 points in it
    db = synthetic_tournament(tmp_path, head + engines,
                              returns_for=lambda seating: (1.0, -1.0) if seating[0] > seating[1] else (-1.0, 1.0))
    report = build_report(db)
    seed_rank = {e: r for r, e in enumerate(seeded_order(8, "11", "seeding"))}
    rows = report["standings"]
    assert rows[0]["engine"] == report["champion"] == "e7"
    first_round_losers = [int(r["engine"][1:]) for r in rows[4:]]
    assert all(r["points"] == 0 for r in rows[4:])
    assert first_round_losers == sorted(first_round_losers, key=seed_rank.get), (first_round_losers, seed_rank)


def test_report_when_every_first_mover_won(tmp_path):
    """A short event where every first mover won has no finite first-move term: `report` (and the
    report at the end of `run`) crashed on a singular matrix; now it reports all else and says why
    there are no ratings, and `--plot` is one error line, exit 2."""
    import subprocess
    import sys

    head = f'game = "einstein"\nformat = "gauntlet"\nmatch = "games=2"\nseed = 1\noutput = "{tmp_path}/t.sqlite"\n'
    db = synthetic_tournament(tmp_path, head + ENGINES, first_mover_wins=True)
    run = subprocess.run([sys.executable, "-m", "tournaments", "report", str(db), "--json", str(tmp_path / "r.json")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "Standings" in run.stdout and "Ratings: none yet: every first mover has won" in run.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    assert "ratings" not in report and "first mover" in report["ratings_unavailable"]
    assert all(r["elo"] is None for r in report["standings"]) and report["tournament"]["games_played"] == 12
    drawn = subprocess.run([sys.executable, "-m", "tournaments", "report", str(db), "-q", "--plot",
                            str(tmp_path / "r.png")], capture_output=True, text=True, timeout=120)
    assert drawn.returncode == 2 and "Traceback" not in drawn.stderr
    assert drawn.stderr.strip().splitlines() == [
        "error: --plot: no ratings to plot: " + report["ratings_unavailable"] + "; nothing written"]
    assert not (tmp_path / "r.png").exists()


def test_a_fit_runs_openblas_on_one_thread_and_gives_its_threads_back():
    """The fit sets the thread count of numpy's OpenBLAS to one for its duration and restores it
    after; the libraries are looked up once per process (a web view's standings fit ~50 times)."""
    from tournaments.ratings import _openblas_thread_controls, single_threaded_blas

    controls = _openblas_thread_controls()
    if not controls:
        pytest.skip("numpy here uses no OpenBLAS")
    before = [get() for get, _ in controls]
    with single_threaded_blas():
        assert [get() for get, _ in controls] == [1] * len(controls)
    assert [get() for get, _ in controls] == before
    assert _openblas_thread_controls() is controls


@pytest.mark.parametrize("first_mover_score", [1.0, 0.0])
def test_no_finite_first_move_term_when_one_side_of_the_board_won_every_game(first_mover_score):
    """Every first mover won, or every second mover did: the first-move advantage's maximum
    likelihood is at ±∞, so there is no fit (LinAlgError, which the report turns into
    ``ratings_unavailable``). When every second mover won the fit used to give up after 100 Newton
    steps and return h ≈ -17,581 Elo with a standard error of ~10^24, which the report printed."""
    f, s = np.array([0, 1, 0]), np.array([1, 0, 1])
    with pytest.raises(np.linalg.LinAlgError):
        fit_bradley_terry(f, s, np.full(3, first_mover_score), 2)
    # one game the other way, or a draw, pins it down again
    for last in (1 - first_mover_score, 0.5):
        fit = fit_bradley_terry(f, s, np.array([first_mover_score, first_mover_score, last]), 2)
        assert math.isfinite(fit.first_move_elo) and abs(fit.first_move_elo) < 2000 and fit.first_move_se < 2000


def test_report_when_every_second_mover_won(tmp_path):
    """As when every first mover won: no ratings, the reason said, not a first-move advantage of
    -17,581 Elo [-9e23, 9e23]."""
    from tournaments.report import build_report, render_text

    head = f'game = "einstein"\nformat = "gauntlet"\nmatch = "games=2"\nseed = 1\noutput = "{tmp_path}/t.sqlite"\n'
    db = synthetic_tournament(tmp_path, head + ENGINES, returns_for=lambda seating: [-1.0, 1.0])
    report = build_report(db)
    assert "ratings" not in report and "every second mover has won" in report["ratings_unavailable"]
    assert all(r["elo"] is None for r in report["standings"])
    assert all(v is None for values in report["rating_timeline"]["ratings"].values() for v in values)
    assert "Ratings: none yet: every second mover has won" in render_text(report)
