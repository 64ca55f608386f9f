"""MixtureMEstimatorRegressor and gross values in X and y (H30Y: HQP's findings M1, M2, M4).

M1: gross values in several cells of a column (10 cells of 1e15 among 100 standard normals) carried the column's
mean and sd; standardising there rounded the other rows away and the fit came out ``coef_ = 0`` with standard error
0, "least squares", silently.  Such a *far* column (sd more than ``FAR_MEAN`` robust scales) is now standardised by
its median and MAD, and the fit does not depend on how gross the cells are.  A whole row times 1e9 ... 1e99 (a bad
leverage point) is fitted as at 1e3 times instead of refused; beyond ``FAR_REFUSE`` robust scales it is refused.

M2: with more than half the targets tied the robust scale of ``y`` fell back to the sd, which one gross target
carries (one y of 1e20: ``coef_`` of order 1e8 where the others give 0).

M4: least squares' ``psi^2`` of a gross target overflowed and its products with zeros leaked ~1500
``RuntimeWarning`` s a fit from the sandwich.
"""

import warnings

import numpy as np
import pytest

from sklearn_bayes import MixtureMEstimatorRegressor
from sklearn_bayes._glm._base import _column_offset_scale
from sklearn_bayes.linear_model._mixture._dead_columns import FAR_REFUSE
from sklearn_bayes.linear_model._mixture._norms import LeastSquares
from sklearn_bayes.linear_model._mixture._selection import sandwich_core
from sklearn_bayes.linear_model._mixture._units import column_units
from tests.linear_model.mixture.test_extreme_rows import _data  # shared with the lead's gross-row tests


def _cells(mag):
    # HQP's xcells: n = 100, p = 3, 10 cells (5, 2 and 3 per column) set to ``mag``
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 3))
    y = 1.0 + X @ np.array([1.0, 2.0, 3.0]) + rng.normal(size=100)
    rows = np.random.default_rng(5).choice(100, 10, replace=False)
    X[rows, np.random.default_rng(5).integers(0, 3, 10)] = mag
    return X, y


def _se(est):
    return np.sqrt(np.diag(est.coef_covariance_)[: len(est.coef_)])


def _fit(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning of any kind: these fits are ordinary once the units are right
        return MixtureMEstimatorRegressor(random_state=0, **kw).fit(X, y)


@pytest.mark.parametrize("mag", [1e9, 1e15, 1e50, 1e99])
def test_gross_cells_give_the_fit_of_moderate_ones(mag):
    # at 1e6 the columns are standardised by mean and sd as always and the cells are rejected; far beyond, the fit
    # must be the same up to the EM's tolerance (measured: 1e-4 SE in coef_, 3e-6 relative in the SEs); before,
    # 1e15 gave coef_ 0 with SE 0
    ref = _fit(*_cells(1e6))
    est = _fit(*_cells(mag))
    assert np.all(np.abs(est.coef_ - ref.coef_) < 0.01 * _se(ref))
    assert np.allclose(_se(est), _se(ref), rtol=1e-3, atol=0)
    assert est.selected_loss_ == ref.selected_loss_


def test_ordinary_columns_keep_their_mean_and_sd_units():
    X, _ = _cells(1e6)  # sd about 2e5 robust scales: below FAR_MEAN, not far
    for fit_intercept in (True, False):
        offset, scale, constant, far, reach = column_units(X, np.ones(len(X)), fit_intercept)
        assert not far.any() and np.isnan(reach).all()
        ref = _column_offset_scale(X, np.ones(len(X)), fit_intercept)  # the mean/sd units, bit for bit
        assert np.array_equal(offset, ref[0]) and np.array_equal(scale, ref[1]) and np.array_equal(constant, ref[2])
    X, _ = _cells(1e15)
    offset, scale, constant, far, reach = column_units(X, np.ones(len(X)), True)
    assert far.all()
    assert np.all(scale < 10) and np.all(np.abs(offset) < 1)  # median and 1.4826 MAD of ~90 standard normals


_row = _data  # 60 normal rows, y = X [1, 2, 3] + noise, row 0 times ``scale``


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("scale", [1e9, 1e10, 1e50, 1e99])
def test_a_gross_row_is_fitted_as_a_bad_leverage_point(scale, fit_intercept):
    # before: refused (one row holds the whole spread); its columns are now far and keep the other rows' digits:
    # the fit is the one at 1e3 times (measured 7e-7 SE with an intercept, 4e-6 without), the row flagged
    ref = _fit(*_row(1e3), fit_intercept=fit_intercept)
    est = _fit(*_row(scale), fit_intercept=fit_intercept)
    assert np.all(np.abs(est.coef_ - ref.coef_) < 0.01 * _se(ref))
    assert np.allclose(_se(est), _se(ref), rtol=1e-3, atol=0)
    assert est.outlier_mask_[0]


@pytest.mark.parametrize("scale", [1e120, 1e160, 1e300])
def test_beyond_far_refuse_the_row_is_refused_naming_x(scale):
    # 1e160: the standardised squares overflow (NaN standard errors and ~1500 warnings before this limit)
    X, y = _row(scale)
    est = MixtureMEstimatorRegressor(random_state=0)
    with pytest.raises(ValueError, match=r"^X: column \d has a value .* robust scales \(1.4826 MAD\) from its median"):
        est.fit(X, y)
    assert not hasattr(est, "coef_")
    assert FAR_REFUSE < scale


def test_an_aliased_copy_of_a_far_column_is_still_set_aside():
    # aliasing is checked on the robust units with an explicit intercept and rows scaled to at most 1: the copy is
    # dead (coef 0, NaN SE) and the fit is that without it, bit for bit; a full set of dummies loses its last level
    X, y = _cells(1e15)
    X[:, 1:] = np.random.default_rng(1).normal(size=(100, 2))  # only column 0 is far
    X[:, 0] = np.where(X[:, 0] == 1e15, 1e15, X[:, 0])
    a = _fit(X, y)
    b = _fit(np.column_stack([X, X[:, 0]]), y)
    assert np.array_equal(b.coef_[:3], a.coef_) and b.coef_[3] == 0.0
    assert np.isnan(b.coef_covariance_[3, 3])
    g = np.random.default_rng(1).integers(0, 3, 100)
    c = _fit(np.column_stack([X, (g[:, None] == np.arange(3)).astype(float)]), y)
    assert c.coef_[5] == 0.0 and np.isnan(c.coef_covariance_[5, 5]) and np.all(np.isfinite(_se(c)[:5]))


def test_a_dummy_with_a_gross_level_and_most_rows_tied_is_still_refused():
    # MAD 0 (more than half the rows tie): the column is not far, and one row holds its whole spread
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = X @ np.array([1.0, 2.0, 3.0]) + rng.normal(size=60)
    X[:40, 2] = 0.0
    X[0, 2] = 1e12
    with pytest.raises(ValueError, match=r"^X: in column 2 one row holds nearly all the spread"):
        MixtureMEstimatorRegressor(random_state=0).fit(X, y)


def _tied(mag):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(100, 3))
    y = 1 + X @ np.array([1.0, 2.0, 3.0]) + rng.normal(size=100)
    y[rng.random(100) < 0.55] = 0.0
    if mag is not None:
        y[np.flatnonzero(y != 0)[0]] = mag
    return X, y


@pytest.mark.parametrize("mag", [1e20, 1e100])
def test_one_gross_target_among_ties_gives_the_fit_of_the_ties(mag):
    # 55 % of the targets are 0: the robust fit is the exact fit of the ties (coef_ 0 up to rounding, 5e-17 without
    # the gross target); before, 1e20 gave coef_ of order 1e8 and 1e100 of order 1e81
    with pytest.warns(UserWarning, match="more than half"):
        clean = MixtureMEstimatorRegressor(random_state=0).fit(*_tied(None))
    with pytest.warns(UserWarning, match="more than half"):
        est = MixtureMEstimatorRegressor(random_state=0).fit(*_tied(mag))
    assert np.all(np.abs(clean.coef_) < 1e-12)
    assert np.all(np.abs(est.coef_) < 1e-12) and abs(est.intercept_) < 1e-12


@pytest.mark.parametrize("value", [1e160, 1e300, 1.7e308, -1e300])
def test_gross_targets_raise_no_runtime_warning(value):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = X @ np.array([1.0, 2.0, 3.0]) + rng.normal(size=60)
    y[0] = value
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        est = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    assert est.outlier_mask_[0] and np.all(np.isfinite(est.coef_covariance_))


def test_sandwich_core_overflow_is_none_and_nan_is_not_hidden():
    rng = np.random.default_rng(0)
    Xa = np.column_stack([rng.normal(size=20), np.ones(20)])
    r = rng.normal(size=20)
    sw = np.ones(20)
    assert np.all(np.isfinite(sandwich_core(Xa, r, sw, 1.0, LeastSquares())))
    r[0] = 1e300  # psi^2 overflows: an infinite variance, reported as None (the selection reads inf)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with np.errstate(over="ignore"):
            assert sandwich_core(Xa, r, sw, 1.0, LeastSquares()) is None
    r[0] = np.nan  # a NaN is a defect upstream: it propagates
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        V = sandwich_core(Xa, r, sw, 1.0, LeastSquares())
    assert V is not None and np.isnan(V).any()


def test_summary_names_the_least_squares_fallback():
    # M5: 80 % of the targets tie, so coef_covariance_ is the least-squares HC3 sandwich (with a warning); summary()
    # said "sandwich (HC, selected loss) x Huber's K^2", which it is not (no K either: the fallback skips it)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(100, 3))
    y = np.where(rng.random(100) < 0.8, 0.0, 1 + X @ np.array([1.0, 2.0, 3.0]) + rng.normal(size=100))
    with pytest.warns(UserWarning, match="least-squares"):
        est = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    label = est.summary().info["covariance"]
    assert label == "least-squares sandwich (HC3; fallback: more than half the rows fitted exactly)"
    del est._fitted_with["fallback"]  # a fit pickled before the kind was recorded keeps the old label
    assert est.summary().info["covariance"].startswith("sandwich (HC, selected loss)")


def test_summary_label_of_an_ordinary_fit_is_unchanged():
    X, y = _row(1.0)
    est = _fit(X, y)
    assert est._fitted_with["fallback"] == []
    assert est.summary().info["covariance"].startswith("sandwich (HC, selected loss)")


@pytest.mark.parametrize("scale", [1e6, 1e7, 3e7, 1e8])
def test_least_squares_is_not_selected_past_a_rejected_leverage_point(scale):
    # a row 1e6-1e8 times the others (mean/sd units: not far): least squares' A counted the rejected row's x x^T,
    # its sandwich came out smallest and it was selected, 17 SEs off (coef_ [0.83, 2.99, 0.41] where the data give
    # [0.87, 2.17, 3.41]); the rule now leaves it out where the MM fit rejects a row of leverage > 0.5
    ref = _fit(*_row(1e3))
    est = _fit(*_row(scale))
    assert est.selected_loss_ != "least squares"
    assert np.all(np.abs(est.coef_ - ref.coef_) < 0.01 * _se(ref))
