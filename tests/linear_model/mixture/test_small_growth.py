"""Issue 30, round 11: below 8 rows per coefficient the small-sample path's test of spread also reads the one-sided
maximum (``_selection.spread_growth``) where the Huber fit is not drawn towards a row the MM fit rejects
(``_selection.not_drawn``, ``SMALL_N_GROWTH_PULL``)."""

import numpy as np
import pytest

import sklearn_bayes.linear_model._mixture._selection as mv
from sklearn_bayes import MixtureMEstimatorRegressor
from sklearn_bayes.linear_model._mixture._lts_start import weighted_median, wls

BETA = np.array([1.0, 0.0, -1.0])


def _data(n, seed, spread=1.0, leverage=False):
    """``n`` rows, three normal slopes ``BETA``; errors N(0, 1) times ``|x_1| ** spread``; ``leverage``: row 0 moved
    to ``x_1 = 10`` with a residual of 20 (a bad leverage point, as the error-law grid's)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = X @ BETA + rng.normal(size=n) * np.abs(X[:, 0]) ** spread
    if leverage:
        X[0, 0] = 10.0
        y[0] = X[0] @ BETA + 20.0
    return X, y


def test_not_drawn_reads_only_the_rows_the_mm_fit_rejects():
    """A row at 6 MM scales (rejected: beyond 4.685) left 60 % of its MM residual by the fit is not drawn at share
    0.5, at 40 % it is; a row at 3 MM scales (kept by the MM fit) does not count however the fit treats it; no
    rejected row: not drawn."""
    Xa = np.column_stack([np.arange(10.0), np.ones(10)])
    theta_mm = np.array([1.0, 0.0])
    y = Xa @ theta_mm
    y[3] += 3.0  # kept by the MM fit (scale 1)
    assert mv.not_drawn(Xa, y, theta_mm + [0.0, 3.0], (theta_mm, 1.0))  # the fit goes through row 3: no matter
    y[7] += 6.0  # rejected by the MM fit
    through = np.array([1.0, 0.0])
    assert mv.not_drawn(Xa, y, through + [0.0, 2.4], (theta_mm, 1.0), share=0.5)  # residual 3.6 = 0.6 of 6
    assert not mv.not_drawn(Xa, y, through + [0.0, 3.6], (theta_mm, 1.0), share=0.5)  # 2.4 = 0.4 of 6
    assert mv.not_drawn(Xa, y, through + [0.0, 3.6], (theta_mm, 1.0), share=0.3)
    assert mv.not_drawn(Xa, Xa @ theta_mm, theta_mm + [0.5, 0.0], (theta_mm, 1.0))  # nothing rejected
    assert mv.SMALL_N_GROWTH_PULL == 0.5


def test_one_sided_test_fits_huber_1_where_round_10_kept_tukey(monkeypatch):
    """30 rows, 3 slopes (7.5 rows per coefficient: the small-sample path), sd proportional to |x_1|, seed 19: on
    the Huber (1.345) residuals round 3's two-sided chi-square does not reject at 0.05 but the one-sided maximum
    does, the MM fit rejects no row the Huber fit is drawn to, so the default fits Huber (1.0); with
    SMALL_N_GROWTH_PULL = None (round 10) the same sample ends in the Tukey step.  The flags and the MM fit (which
    the flags read) are the same."""
    X, y = _data(30, 19)
    Xa = np.column_stack([X, np.ones(30)])
    sw, slopes = np.ones(30), np.arange(3)
    th, _, _ = mv.huber_with_own_scale(Xa, y, sw, np.zeros(4), 1.0, mv.HuberT(1.345), wls, weighted_median, 1e-12)
    r = y - Xa @ th
    assert mv.spread_dependence(Xa, r, sw, slopes)[2] >= 0.05 > mv.spread_growth(Xa, r, sw, slopes)[2]
    new = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    assert new.selected_loss_ == "huber(c=1)"
    monkeypatch.setattr(mv, "SMALL_N_GROWTH_PULL", None)
    old = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    assert old.selected_loss_ == "tukey(c=4.685)"
    np.testing.assert_array_equal(new.mm_coef_, old.mm_coef_)
    np.testing.assert_array_equal(new.flag_outliers(X, y), old.flag_outliers(X, y))


@pytest.mark.parametrize("seed", [2, 4])
def test_a_huber_fit_drawn_to_a_bad_leverage_point_keeps_the_tukey_step(monkeypatch, seed):
    """Normal errors, one bad leverage point (x_1 = 10, residual 20), both tests of spread forced to reject: the Huber
    (1.345) fit flags the point (so the guard passes) but is drawn towards it, to less than half its MM residual,
    so the default keeps the Tukey step (squared slope error below 0.1); without the pull condition (share 0) it
    fits Huber (1.0), which the point pulls (squared slope error above 1)."""
    X, y = _data(30, seed, spread=0.0, leverage=True)
    monkeypatch.setattr(mv, "spread_dependence", lambda *a: (0.0, 1, 1.0))
    monkeypatch.setattr(mv, "spread_growth", lambda *a: (5.0, 3, 0.0))
    kept = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    assert kept.selected_loss_ == "tukey(c=4.685)" and np.sum((kept.coef_ - BETA) ** 2) < 0.1
    monkeypatch.setattr(mv, "SMALL_N_GROWTH_PULL", 0.0)
    pulled = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    assert pulled.selected_loss_ == "huber(c=1)" and np.sum((pulled.coef_ - BETA) ** 2) > 1.0


@pytest.mark.slow
def test_small_sample_tests_of_spread_keep_their_level_on_fitted_residuals():
    """I.i.d. t3 errors, 30 rows, three normal slopes, 600 draws, the residuals of the Huber (1.345) fit with its own
    scale (the ones the small-sample path tests): the one-sided maximum rejects at 0.05 in at most 5 % of the draws
    and either test (round 3's chi-square or the maximum: the path's firing rule when nothing is rejected) in at
    most 10 % (the union bound), each within 3 binomial standard errors; a fitted residual is not exactly
    exchangeable, so this checks the level where the rule runs."""
    rng = np.random.default_rng(111)
    n, reps, slopes = 30, 600, np.arange(3)
    growth = either = 0
    for _ in range(reps):
        X = rng.normal(size=(n, 3))
        Xa = np.column_stack([X, np.ones(n)])
        y = X @ BETA + rng.standard_t(3, size=n)
        th, _, _ = mv.huber_with_own_scale(Xa, y, np.ones(n), np.zeros(4), 1.0, mv.HuberT(1.345), wls,
                                           weighted_median, 1e-12)  # fmt: skip
        r = y - Xa @ th
        g = mv.spread_growth(Xa, r, np.ones(n), slopes)[2] < 0.05
        growth += g
        either += g or mv.spread_dependence(Xa, r, np.ones(n), slopes)[2] < 0.05
    assert growth / reps <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / reps)
    assert either / reps <= 0.10 + 3 * np.sqrt(0.10 * 0.90 / reps)


@pytest.mark.parametrize("n", [32, 48, 100])
def test_fits_from_eight_rows_per_coefficient_are_unchanged_by_round_11(unchanged_without, n):
    """From 8 rows per coefficient on (32 rows and 4 coefficients: the band; 48, 100: the variance rule) the new
    firing rule is never reached: bit-identical coefficients, loss and flags with SMALL_N_GROWTH_PULL = None."""
    for seed in (10, 11):
        X, y = _data(n, seed)
        unchanged_without("SMALL_N_GROWTH_PULL", None, X, y)


def test_paper_variant_is_unchanged_by_round_11(unchanged_without):
    """variant="paper" (the chapter's ML mixture) does not take the small-sample path: bit-identical at 30 rows."""
    X, y = _data(30, 19)
    unchanged_without("SMALL_N_GROWTH_PULL", None, X, y, flags=False, variant="paper")
