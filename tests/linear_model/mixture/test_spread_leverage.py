"""Issue 30, round 13: from 4 to 8 rows per coefficient, where the small-sample path's test of spread fires, it is
asked again without the rows the MM fit rejects far out in ``x`` (``_selection.leverage_rows_left_out``,
``SPREAD_LEVERAGE_LEVEL``), and the Tukey step is kept unless it fires there too."""

import numpy as np
import pytest
from scipy import stats

import sklearn_bayes.linear_model._mixture._selection as mv
from sklearn_bayes import MixtureMEstimatorRegressor

BETA = np.array([1.0, 0.0, -1.0])


def _hetero(rep, n=30):
    """The benchmark's heteroscedastic cell (``bench_mixture_m.make_cell("hetero |x1|", n, 3, rep)``: the same
    stream): three normal slopes with true coefficients 0, errors with sd proportional to ``|x_1|``."""
    rng = np.random.default_rng([15, n, 3, rep])
    X = rng.normal(size=(n, 3))
    z = rng.normal(size=n)
    return X, z * np.abs(X[:, 0]) / np.sqrt(2.0 / np.pi)


def _problem(X, y):
    return np.column_stack([X, np.ones(len(y))]), y, np.ones(len(y)), np.arange(X.shape[1])


@pytest.mark.parametrize(("m", "k"), [(27, 3), (12, 2), (20, 1)])
def test_prediction_cut_has_its_level(m, k):
    """Draw ``m + 1`` rows of a ``k``-variate normal law 20000 times; the last row's squared distance from the mean
    and covariance of the first ``m`` exceeds ``prediction_cut(m, k, level)`` with probability ``level / m``.  At
    ``level = 0.1 m`` (a 10 % tail, where 20000 draws resolve it): within four binomial SEs (0.0085)."""
    rng = np.random.default_rng(7)
    R = 20000
    Z = rng.normal(size=(R, m + 1, k))
    mean = Z[:, :m].mean(axis=1)
    D = Z[:, :m] - mean[:, None]
    S = np.einsum("rij,rik->rjk", D, D) / (m - 1)
    d = Z[:, m] - mean
    d2 = np.einsum("rj,rj->r", d, np.linalg.solve(S, d[..., None])[..., 0])
    rate = np.mean(d2 > mv.prediction_cut(m, k, 0.1 * m))
    assert abs(rate - 0.1) < 4 * np.sqrt(0.1 * 0.9 / R)
    assert mv.prediction_cut(27, 3, 0.025) == pytest.approx(25.8, abs=0.05)
    assert mv.prediction_cut(27, 3, 0.025) > stats.chi2.ppf(1 - 0.025 / 27, 3)  # heavier than chi-square


def test_leverage_rows_left_out_reads_only_rejected_rows_beyond_the_cut(monkeypatch, bad_leverage):
    """MM fit = the true coefficients at scale 1.  One row on the leverage line (residual about 20, squared distance
    about 100 from the other rows): weight 0, the others unchanged.  The same residual at ordinary ``x``, or the
    row far out in ``x`` with an ordinary residual (a good leverage point): the weights themselves (the same
    object).  ``level=None`` with ``SPREAD_LEVERAGE_LEVEL = None``: never."""
    X, y = bad_leverage(30, 0)
    Xa, y, sw, slopes = _problem(X, y)
    mm = (np.r_[BETA, 0.0], 1.0)
    w = mv.leverage_rows_left_out(Xa, y, sw, mm, slopes)
    np.testing.assert_array_equal(w, np.r_[0.0, np.ones(29)])
    assert sw[0] == 1.0  # not modified in place
    y_good = y.copy()
    y_good[0] = Xa[0] @ mm[0] + 0.5
    assert mv.leverage_rows_left_out(Xa, y_good, sw, mm, slopes) is sw
    Xo, yo = bad_leverage(30, 0, k=0)
    Xao, yo, _, _ = _problem(Xo, yo)
    yo[0] += 20.0
    assert mv.leverage_rows_left_out(Xao, yo, sw, mm, slopes) is sw
    assert mv.leverage_rows_left_out(Xa, y, sw, mm, slopes, level=0.025) is not sw
    assert mv.SPREAD_LEVERAGE_LEVEL == 0.025
    monkeypatch.setattr(mv, "SPREAD_LEVERAGE_LEVEL", None)
    assert mv.leverage_rows_left_out(Xa, y, sw, mm, slopes) is sw


@pytest.mark.parametrize("seed", [0, 1, 44])
def test_one_bad_leverage_point_keeps_the_tukey_step(monkeypatch, seed, bad_leverage):
    """30 rows, three slopes (7.5 rows per coefficient), one row on the leverage line.  Round 11b's small-sample
    path reads its large residual at a large distance in ``x`` as spread growing with ``x`` and fits Huber (1.0),
    which the row draws (squared slope error above 0.3); asked again without it, the test does not fire and the
    Tukey step is kept (below 0.1).  The MM fit and the flags are the same."""
    X, y = bad_leverage(30, seed)
    new = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    monkeypatch.setattr(mv, "SPREAD_LEVERAGE_LEVEL", None)
    old = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    assert old.selected_loss_ == "huber(c=1)" and np.sum((old.coef_ - BETA) ** 2) > 0.3
    assert new.selected_loss_ == "tukey(c=4.685)" and np.sum((new.coef_ - BETA) ** 2) < 0.1
    np.testing.assert_array_equal(new.mm_coef_, old.mm_coef_)
    np.testing.assert_array_equal(new.flag_outliers(X, y), old.flag_outliers(X, y))


@pytest.mark.parametrize("rep", [30, 36, 80, 97, 119, 179])
def test_heteroscedastic_draws_with_rejected_rows_far_in_x_are_unchanged(monkeypatch, unchanged_without, rep):
    """Heteroscedastic draws (30 rows, three slopes) where the test of spread fires and the MM fit rejects a row
    beyond chi-square's 97.5 % point in ``x`` (round 11b's "far"; squared distances 10.3-24.6): none is beyond the
    prediction cut (25.2-25.8 here), so nothing is left out and the fit is bit-identical with SPREAD_LEVERAGE_LEVEL =
    None (leaving out the rows beyond chi-square's 97.5 % point changed these draws' losses)."""
    seen = []
    inner = mv.leverage_rows_left_out

    def spy(Xa, y, sw, mm, slopes, level=None):
        out, d2, k, _ = mv._rejected_distances(Xa, y, sw, mm, slopes)
        w = inner(Xa, y, sw, mm, slopes, level)
        seen.append(d2 is not None and np.any(d2[out] > stats.chi2.ppf(0.975, k)) and w is sw)
        return w

    monkeypatch.setattr(mv, "leverage_rows_left_out", spy)
    X, y = _hetero(rep)
    new = unchanged_without("SPREAD_LEVERAGE_LEVEL", None, X, y)
    assert seen[0]  # the rule was reached, a rejected row was far by chi-square, and nothing was left out
    assert new.selected_loss_ == "huber(c=1)"


@pytest.mark.parametrize("n", [15, 40, 100])
def test_fits_outside_four_to_eight_rows_per_coefficient_are_unchanged_by_round_13(unchanged_without, n, bad_leverage):
    """Below 4 rows per coefficient (15 rows, 4 coefficients: the MM fit interpolates, nothing is left out) and from
    8 on (40, 100: no small-sample path) the rule is never reached, even with rows on the leverage line:
    bit-identical coefficients, loss and flags with SPREAD_LEVERAGE_LEVEL = None."""
    for seed in range(3):
        X, y = bad_leverage(n, seed, max(1, n // 30))
        unchanged_without("SPREAD_LEVERAGE_LEVEL", None, X, y)


def test_paper_variant_is_unchanged_by_round_13(unchanged_without, bad_leverage):
    """variant="paper" (the chapter's ML mixture) never reaches the small-sample path."""
    X, y = bad_leverage(30, 0)
    unchanged_without("SPREAD_LEVERAGE_LEVEL", None, X, y, flags=False, variant="paper")


def test_zero_weight_rows_do_not_count_as_kept_or_left_out(bad_leverage):
    """One leverage row (seed 0: the rule keeps the Tukey step) plus three rows of weight 0 on the leverage line
    and two wild ones (ten times the spread of ``x``): the same loss, MM fit and coefficients to rounding as without
    them (test_estimator's promise: weight 0 = the row dropped), and the rows left out are the one leverage row of
    positive weight."""
    X, y = bad_leverage(30, 0)
    rng = np.random.default_rng(21)
    Xz = np.r_[rng.normal(size=(3, 3)), rng.normal(size=(2, 3)) * 10]
    Xz[:3, 0] = 10.0 + rng.normal(size=3)
    yz = np.r_[Xz[:3] @ BETA + 2.0 * Xz[:3, 0], rng.normal(size=2) * 30]
    ref = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    got = MixtureMEstimatorRegressor(random_state=0).fit(np.r_[X, Xz], np.r_[y, yz],
                                                         sample_weight=np.r_[np.ones(30), np.zeros(5)])  # fmt: skip
    assert got.selected_loss_ == ref.selected_loss_ == "tukey(c=4.685)"
    np.testing.assert_allclose(got.mm_coef_, ref.mm_coef_, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got.coef_, ref.coef_, rtol=1e-10, atol=1e-10)
    Xa, yy, _, slopes = _problem(np.r_[X, Xz], np.r_[y, yz])
    sw = np.r_[np.ones(30), np.zeros(5)]
    w = mv.leverage_rows_left_out(Xa, yy, sw, (np.r_[BETA, 0.0], 1.0), slopes)
    np.testing.assert_array_equal(w, np.r_[0.0, np.ones(29), np.zeros(5)])
